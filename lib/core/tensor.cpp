// Tensor storage: aligned allocation, copies, reshapes and row slices.
#include "core/tensor.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "core/error.h"
#include "core/memory_account.h"

namespace mpipe {
namespace {

constexpr size_t kAlignment = 64;

// Counts the block in the process's MemoryAccount (its usable size, which free() gives back);
// frees it again when that passes the memory limit.
void track_allocation(void* p) {
  try {
    MemoryAccount::process().allocate(malloc_usable_size(p));
  } catch (...) {
    std::free(p);
    throw;
  }
}

// Zero-filled unless `zero` is false (then the caller writes every value).
float* allocate(int64_t numel, bool zero = true) {
  if (numel <= 0) return nullptr;
  size_t bytes =
      (static_cast<size_t>(numel) * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, bytes);
  if (!p) throw std::bad_alloc();
  track_allocation(p);
  if (zero) std::memset(p, 0, bytes);
  return static_cast<float*>(p);
}

}  // namespace

bool reuse_freed_tensor_memory() {
  if (kAddressSanitizer) return false;  // its mallopt refuses every setting
  for (const char* name :
       {"MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}) {
    if (std::getenv(name)) return false;
  }
  check(mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1,
        "mallopt failed: cannot configure the allocator");
  return true;
}

void Tensor::FreeDeleter::operator()(float* p) const {
  if (p) MemoryAccount::process().release(malloc_usable_size(p));
  std::free(p);
}

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (int64_t d : shape_.dims()) check(d >= 0, "negative dimension in shape {}", shape_);
  data_.reset(allocate(shape_.numel()));
  numel_ = data_ ? shape_.numel() : 0;
}

Tensor::Tensor(Shape shape, Uninitialized) : shape_(std::move(shape)) {
  for (int64_t d : shape_.dims()) check(d >= 0, "negative dimension in shape {}", shape_);
  data_.reset(allocate(shape_.numel(), /*zero=*/false));
  numel_ = data_ ? shape_.numel() : 0;
}

Tensor Tensor::uninitialized(Shape shape) { return Tensor(std::move(shape), Uninitialized{}); }

Tensor::Tensor(Shape shape, std::span<const float> values)
    : Tensor(std::move(shape), Uninitialized{}) {
  check(static_cast<int64_t>(values.size()) == numel(), "Tensor {} given {} values", shape_,
        values.size());
  std::copy(values.begin(), values.end(), data());
}

Tensor::Tensor(const Tensor& other) : shape_(other.shape_) {
  if (!other.data_) return;  // an empty (default) tensor copies as empty
  data_.reset(allocate(shape_.numel(), /*zero=*/false));
  numel_ = other.numel_;
  std::memcpy(data(), other.data(), bytes());
}

Tensor::Tensor(Tensor&& other) noexcept
    : shape_(std::move(other.shape_)),
      numel_(std::exchange(other.numel_, 0)),
      data_(std::move(other.data_)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  shape_ = std::move(other.shape_);
  numel_ = std::exchange(other.numel_, 0);
  data_ = std::move(other.data_);
  return *this;
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor Tensor::reshaped(Shape shape) && {
  check(shape.numel() == numel(), "cannot reshape {} to {}", shape_, shape);
  Tensor out = std::move(*this);
  out.shape_ = std::move(shape);
  return out;
}

void Tensor::fill(float value) { std::fill_n(data(), numel(), value); }

Tensor Tensor::slice_rows(int64_t begin, int64_t count) const {
  check(shape_.rank() >= 1 && begin >= 0 && count >= 0 && begin + count <= shape_[0],
        "slice_rows({}, {}) out of range for {}", begin, count, shape_);
  Tensor out = uninitialized(shape_.with_batch(count));
  const int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  if (out.numel() > 0) std::memcpy(out.data(), data() + begin * row, out.bytes());
  return out;
}

}  // namespace mpipe
