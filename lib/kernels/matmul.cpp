// Matrix products through the oneDNN matmul primitive, cached per shape; transposes are expressed
// as memory-descriptor strides (no copies) and accumulation (beta = 1) as a sum post-op. In bf16
// precision a and b are copied to bf16 (same layout) and the primitive accumulates and writes f32.
#include "kernels/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "kernels/bf16_copy.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;

// A primitive with the memory descriptors its arguments are wrapped in.
struct MatmulPrimitive {
  dnnl::matmul primitive;
  memory::desc a, b, c, bias;
};

// Logical [batch, rows, cols] (or [rows, cols] when batch == 1), stored transposed if asked.
memory::desc operand_desc(int64_t batch, int64_t rows, int64_t cols, bool transposed,
                          memory::data_type type = memory::data_type::f32) {
  const memory::dim row_stride = transposed ? 1 : cols;
  const memory::dim col_stride = transposed ? rows : 1;
  if (batch == 1) return {{rows, cols}, type, {row_stride, col_stride}};
  return {{batch, rows, cols}, type, {rows * cols, row_stride, col_stride}};
}

memory::data_type operand_type(Precision precision) {
  return precision == Precision::kBf16 ? memory::data_type::bf16 : memory::data_type::f32;
}

MatmulPrimitive make_matmul(const dnnl::engine& engine, Precision precision, const MatmulShape& s,
                            float alpha, float beta, bool with_bias) {
  MatmulPrimitive p;
  p.a = operand_desc(s.batch, s.m, s.k, s.transpose_a, operand_type(precision));
  p.b = operand_desc(s.batch, s.k, s.n, s.transpose_b, operand_type(precision));
  p.c = operand_desc(s.batch, s.m, s.n, false);
  dnnl::primitive_attr attr;
  if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  if (with_bias) {
    // bias: [1, n] (or [1, 1, n]), broadcast over rows and batch.
    p.bias = s.batch == 1 ? memory::desc({1, s.n}, memory::data_type::f32, {s.n, 1})
                          : memory::desc({1, 1, s.n}, memory::data_type::f32, {s.n, s.n, 1});
    dnnl::matmul::desc desc(p.a, p.b, p.bias, p.c);
    p.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, engine));
  } else {
    dnnl::matmul::desc desc(p.a, p.b, p.c);
    p.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, engine));
  }
  return p;
}

memory wrap(const memory::desc& desc, const dnnl::engine& engine, const void* data) {
  return memory(desc, engine, const_cast<void*>(data));
}

// b_is_weight: b is a parameter (its bf16 copy may be reused within a WeightsFixed scope).
// a_bf16: in bf16 precision, a's bf16 copy when the caller made it (for several products).
void run_matmul(KernelContext& ctx, const MatmulShape& s, const float* a, const float* b,
                const float* bias, float* c, float alpha, float beta, bool b_is_weight = false,
                const void* a_bf16 = nullptr) {
  check(s.batch >= 0 && s.m >= 0 && s.k >= 0 && s.n >= 0, "matmul: negative size");
  check(beta == 0.0f || beta == 1.0f, "matmul: beta must be 0 or 1, got {}", beta);
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) {  // empty sum: c = beta * c + bias
    for (int64_t i = 0; i < s.batch * s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        c[i * s.n + j] = (beta == 0.0f ? 0.0f : c[i * s.n + j]) + (bias ? bias[j] : 0.0f);
      }
    }
    return;
  }
  const Precision precision = ctx.precision();
  const std::string key = fmt::format("matmul {} b{} m{} k{} n{} ta{} tb{} alpha{} beta{} bias{}",
                                      to_string(precision), s.batch, s.m, s.k, s.n, s.transpose_a,
                                      s.transpose_b, alpha, beta, bias != nullptr);
  const auto& p = ctx.cached<MatmulPrimitive>(
      key, [&] { return make_matmul(ctx.engine(), precision, s, alpha, beta, bias != nullptr); });
  const void* a_data = a;
  const void* b_data = b;
  if (precision == Precision::kBf16) {
    a_data = a_bf16 ? a_bf16 : bf16_copy(ctx, key + " a", a, s.batch * s.m * s.k);
    b_data = b_is_weight ? bf16_weight_copy(ctx, b, s.batch * s.k * s.n)
                         : bf16_copy(ctx, key + " b", b, s.batch * s.k * s.n);
  }
  const dnnl::engine& engine = ctx.engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(p.a, engine, a_data)},
                                       {DNNL_ARG_WEIGHTS, wrap(p.b, engine, b_data)},
                                       {DNNL_ARG_DST, wrap(p.c, engine, c)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, wrap(p.bias, engine, bias));
  p.primitive.execute(ctx.stream(), args);
  ctx.stream().wait();
}

// dx[rows, in] = dy[rows, out] · w[out, in].
void backward_data(KernelContext& ctx, const float* dy, const void* dy_bf16, const float* w,
                   float* dx, int64_t rows, int64_t in, int64_t out) {
  const MatmulShape shape{.m = rows, .k = out, .n = in};
  run_matmul(ctx, shape, dy, w, nullptr, dx, 1.0f, 0.0f, true, dy_bf16);
}

// dw[out, in] (+)= dy^T (dy stored [rows, out]) · x[rows, in]; dbias[out] (+)= column sums of dy.
void backward_weights(KernelContext& ctx, const float* x, const float* dy, const void* dy_bf16,
                      float* dw, float* dbias, int64_t rows, int64_t in, int64_t out,
                      bool accumulate) {
  const MatmulShape shape{.m = out, .k = rows, .n = in, .transpose_a = true};
  run_matmul(ctx, shape, dy, x, nullptr, dw, 1.0f, accumulate ? 1.0f : 0.0f, false, dy_bf16);
  if (!dbias) return;
  if (!accumulate) std::fill_n(dbias, out, 0.0f);
  // dbias[out] += column sums of dy, rows in ascending order: each thread sums a block of columns
  // over every row (the same order on any thread count), vectorized along the row.
  constexpr int64_t kColumns = 256;
#pragma omp parallel for schedule(static)
  for (int64_t first = 0; first < out; first += kColumns) {
    const int64_t last = std::min(out, first + kColumns);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = dy + r * out;
      for (int64_t o = first; o < last; ++o) dbias[o] += row[o];
    }
  }
}

}  // namespace

void matmul(KernelContext& ctx, const MatmulShape& shape, const float* a, const float* b, float* c,
            float alpha, float beta) {
  run_matmul(ctx, shape, a, b, nullptr, c, alpha, beta);
}

void linear_forward(KernelContext& ctx, const float* x, const float* w, const float* bias, float* y,
                    int64_t rows, int64_t in, int64_t out) {
  // y[rows, out] = x[rows, in] · w^T (w stored [out, in]) + bias.
  const MatmulShape shape{.m = rows, .k = in, .n = out, .transpose_b = true};
  run_matmul(ctx, shape, x, w, bias, y, 1.0f, 0.0f, true);
}

void linear_backward_data(KernelContext& ctx, const float* dy, const float* w, float* dx,
                          int64_t rows, int64_t in, int64_t out) {
  backward_data(ctx, dy, nullptr, w, dx, rows, in, out);
}

void linear_backward_weights(KernelContext& ctx, const float* x, const float* dy, float* dw,
                             float* dbias, int64_t rows, int64_t in, int64_t out, bool accumulate) {
  backward_weights(ctx, x, dy, nullptr, dw, dbias, rows, in, out, accumulate);
}

void linear_backward(KernelContext& ctx, const float* x, const float* dy, const float* w, float* dx,
                     float* dw, float* dbias, int64_t rows, int64_t in, int64_t out,
                     bool accumulate) {
  // In bf16 both products read one copy of dy.
  const void* dy_bf16 = nullptr;
  if (ctx.precision() == Precision::kBf16 && rows > 0 && out > 0) {
    dy_bf16 = bf16_copy(ctx, fmt::format("linear_backward dy n{}", rows * out), dy, rows * out);
  }
  backward_weights(ctx, x, dy, dy_bf16, dw, dbias, rows, in, out, accumulate);
  if (dx) backward_data(ctx, dy, dy_bf16, w, dx, rows, in, out);
}

}  // namespace mpipe::kernels
