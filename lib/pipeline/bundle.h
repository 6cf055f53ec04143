// Bundle: the tensors that cross one cut for one micro-batch, in the order of the cut's live set
// (model::ModelGraph::live_set), and their packing into one message. A chain's bundles hold one
// tensor, which travels as itself.
#pragma once

#include <span>
#include <vector>

#include "core/shape.h"
#include "core/tensor.h"

namespace mpipe::pipeline {

using Bundle = std::vector<Tensor>;

// A bundle of the one tensor `tensor`, moved in (a braced list would copy it).
Bundle bundle_of(Tensor tensor);
// Bytes of every tensor in `bundle`.
size_t bundle_bytes(const Bundle& bundle);
// The shape of the message carrying a bundle of `rows` examples of `shapes` (one example's each):
// the one tensor's batched shape, or [total values] for the values back to back.
Shape message_shape(std::span<const Shape> shapes, int64_t rows);
// One message of `bundle`: its one tensor itself (no copy), or its tensors back to back.
Tensor pack(Bundle bundle);
// The bundle of `rows` examples of `shapes` that `message` carries (pack's inverse).
Bundle unpack(Tensor message, std::span<const Shape> shapes, int64_t rows);

}  // namespace mpipe::pipeline
