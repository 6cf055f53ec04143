// Element-wise Eigen expressions into 64-byte-aligned rows, so that each column of a row takes
// the same (vector or scalar) path whatever the row's address.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mpipe::kernels {

using RowMap = Eigen::Map<Eigen::ArrayXf>;

// Eigen assigns an expression to a row of dynamic length one value at a time up to the row's
// first value aligned to its packets (16 floats, 64 bytes, with AVX-512), in packets from there,
// and one at a time again after the last whole packet; its scalar exp (libm's expf) and its packet
// exp differ in the last bit for some inputs. Into a 64-byte-aligned row, the packets are the
// same columns whatever the row's address, so a value's bits depend on its inputs and its column
// alone.
//
// with_aligned_rows calls f(rows) with `out`'s Out rows of n values: each row itself where all
// start on a 64-byte boundary, else rows in `scratch` (grown as needed) that do, copied to `out`
// after f returns. Where `copy_in`, a scratch row starts as a copy of its row, for expressions
// that update a row in place.
template <size_t Out, typename F>
void with_aligned_rows(int64_t n, const std::array<float*, Out>& out, std::vector<float>& scratch,
                       bool copy_in, F&& f) {
  constexpr int64_t kAlign = 16;  // floats: 64 bytes
  const auto aligned = [](const float* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; };
  const auto maps = [n]<size_t... I>(const std::array<float*, Out>& starts,
                                     std::index_sequence<I...>) {
    return std::array<RowMap, Out>{RowMap(starts[I], n)...};
  };
  if (std::all_of(out.begin(), out.end(), aligned)) {
    auto rows = maps(out, std::make_index_sequence<Out>());
    f(rows);
    return;
  }
  const int64_t stride = (n + kAlign - 1) / kAlign * kAlign;
  scratch.resize(std::max(scratch.size(), static_cast<size_t>(Out * stride + kAlign)));
  float* base = scratch.data();
  while (!aligned(base)) ++base;
  std::array<float*, Out> starts;
  for (size_t o = 0; o < Out; ++o) starts[o] = base + o * stride;
  auto rows = maps(starts, std::make_index_sequence<Out>());
  if (copy_in) {
    for (size_t o = 0; o < Out; ++o) rows[o] = RowMap(out[o], n);
  }
  f(rows);
  for (size_t o = 0; o < Out; ++o) RowMap(out[o], n) = rows[o];
}

}  // namespace mpipe::kernels
