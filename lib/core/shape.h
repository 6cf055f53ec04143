// Shape: the dimensions of a row-major tensor, outermost first.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mpipe {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_.at(static_cast<size_t>(axis)); }
  int64_t& operator[](int axis) { return dims_.at(static_cast<size_t>(axis)); }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  // The same shape with the outermost (batch) dimension replaced.
  Shape with_batch(int64_t batch) const;
  // [batch, ...this]: a batch of examples of this shape.
  Shape batched(int64_t batch) const;
  // The shape without its outermost dimension: the shape of one example.
  Shape per_example() const;
  std::string str() const;  // "[2, 3, 4]"

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<int64_t> dims_;
};

}  // namespace mpipe

template <>
struct fmt::formatter<mpipe::Shape> : fmt::formatter<std::string> {
  auto format(const mpipe::Shape& shape, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(shape.str(), ctx);
  }
};
