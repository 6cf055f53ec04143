// Packing a cut's tensors into one message and back.
#include "pipeline/bundle.h"

#include <algorithm>

#include "core/error.h"

namespace mpipe::pipeline {

Bundle bundle_of(Tensor tensor) {
  Bundle bundle;
  bundle.push_back(std::move(tensor));
  return bundle;
}

size_t bundle_bytes(const Bundle& bundle) {
  size_t bytes = 0;
  for (const Tensor& t : bundle) bytes += t.bytes();
  return bytes;
}

Shape message_shape(std::span<const Shape> shapes, int64_t rows) {
  check(!shapes.empty(), "a message of no tensors");
  if (shapes.size() == 1) return shapes.front().batched(rows);
  int64_t values = 0;
  for (const Shape& shape : shapes) {
    values = checked_add(values, checked_mul(rows, shape.numel(), "message size"), "message size");
  }
  return Shape{values};
}

Tensor pack(Bundle bundle) {
  check(!bundle.empty(), "a message of no tensors");
  if (bundle.size() == 1) return std::move(bundle.front());
  int64_t values = 0;
  for (const Tensor& t : bundle) values += t.numel();
  Tensor message = Tensor::uninitialized(Shape{values});
  float* at = message.data();
  for (Tensor& t : bundle) {
    at = std::copy_n(t.data(), t.numel(), at);
    t = Tensor();  // freed as it is copied: the peak is one tensor above the message
  }
  return message;
}

Bundle unpack(Tensor message, std::span<const Shape> shapes, int64_t rows) {
  check(message.shape() == message_shape(shapes, rows),
        "a message of shape {} where {} was expected", message.shape(),
        message_shape(shapes, rows));
  Bundle bundle;
  if (shapes.size() == 1) {
    bundle.push_back(std::move(message));
    return bundle;
  }
  const float* at = message.data();
  for (const Shape& shape : shapes) {
    Tensor t = Tensor::uninitialized(shape.batched(rows));
    std::copy_n(at, t.numel(), t.data());
    at += t.numel();
    bundle.push_back(std::move(t));
  }
  return bundle;
}

}  // namespace mpipe::pipeline
