// Tensor: an owning, 64-byte aligned, row-major f32 array with a shape.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "core/shape.h"

namespace mpipe {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given shape.
  explicit Tensor(Shape shape);
  // Tensor of the given shape whose values are unspecified, for outputs that a kernel overwrites
  // in full: it skips the zero-fill pass of Tensor(Shape) over the whole new buffer.
  static Tensor uninitialized(Shape shape);
  Tensor(Shape shape, std::span<const float> values);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;

  const Shape& shape() const { return shape_; }
  int64_t numel() const { return numel_; }  // 0 when default-constructed
  int64_t dim(int axis) const { return shape_[axis]; }
  bool empty() const { return numel() == 0 || !data_; }
  size_t bytes() const { return static_cast<size_t>(numel()) * sizeof(float); }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::span<float> span() { return {data_.get(), static_cast<size_t>(numel())}; }
  std::span<const float> span() const { return {data_.get(), static_cast<size_t>(numel())}; }
  float& operator[](int64_t i) { return data_.get()[i]; }
  float operator[](int64_t i) const { return data_.get()[i]; }

  // Same data, new shape with the same number of elements.
  Tensor reshaped(Shape shape) &&;
  void fill(float value);
  // Rows [begin, begin + count) of the outermost dimension, copied.
  Tensor slice_rows(int64_t begin, int64_t count) const;

 private:
  struct Uninitialized {};
  Tensor(Shape shape, Uninitialized);

  struct FreeDeleter {
    void operator()(float* p) const;
  };
  Shape shape_;
  int64_t numel_ = 0;  // cached: element loops call numel() often
  std::unique_ptr<float[], FreeDeleter> data_;
};

// Makes the C library's allocator keep freed memory for reuse: every block comes from the heap
// (no block gets its own mmap, however large) and freed heap memory is not given back to the
// system. Without it, each step's large tensors are mapped, page-faulted in (zeroed by the kernel)
// and unmapped again; glibc maps every block of 32 MiB or more whatever its mmap threshold, such
// as a 4096-way head's logits of 2048 positions, unless mapping is switched off (M_MMAP_MAX).
// A program calls it once, at start-up, before any tensor. A user's own setting wins: with
// MALLOC_MMAP_MAX_, MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ in the environment it changes
// nothing and returns false. So it does under AddressSanitizer, whose allocator (with its own
// reuse) refuses every mallopt.
bool reuse_freed_tensor_memory();

// True in a build with AddressSanitizer (the asan preset): its allocator replaces glibc's malloc,
// and a block's usable size is then exactly the bytes asked for.
#if defined(__SANITIZE_ADDRESS__)  // defined by -fsanitize=address
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace mpipe
