// Causal attention through batched oneDNN matmuls (kernels/matmul.h) and oneDNN softmax.
#include "kernels/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/error.h"
#include "kernels/matmul.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;

void check_shape(const AttentionShape& s) {
  check(s.batch >= 0 && s.heads > 0 && s.seq > 0 && s.head_dim > 0,
        "attention: bad shape batch={} heads={} seq={} head_dim={}", s.batch, s.heads, s.seq,
        s.head_dim);
}

int64_t slices(const AttentionShape& s) { return s.batch * s.heads; }

// The rows of all score matrices, one softmax each: [slices * seq, seq].
memory::desc rows_desc(const AttentionShape& s) {
  return memory::desc({slices(s) * s.seq, s.seq}, memory::data_type::f32, memory::format_tag::ab);
}

dnnl::softmax_forward::primitive_desc softmax_pd(KernelContext& ctx, const AttentionShape& s) {
  const std::string key = fmt::format("attention_softmax_fwd_pd:{}:{}", slices(s) * s.seq, s.seq);
  return ctx.cached<dnnl::softmax_forward::primitive_desc>(key, [&] {
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, rows_desc(s), 1);
    return dnnl::softmax_forward::primitive_desc(desc, ctx.engine());
  });
}

// In place: scores → probabilities, row by row. scores: [slices * seq, seq].
void softmax_rows(KernelContext& ctx, const AttentionShape& s, float* scores) {
  const std::string key = fmt::format("attention_softmax_fwd:{}:{}", slices(s) * s.seq, s.seq);
  auto& prim = ctx.cached<dnnl::softmax_forward>(
      key, [&] { return dnnl::softmax_forward(softmax_pd(ctx, s)); });
  memory mem(rows_desc(s), ctx.engine(), scores);
  prim.execute(ctx.stream(), {{DNNL_ARG_SRC, mem}, {DNNL_ARG_DST, mem}});
  ctx.stream().wait();
}

// dscores = probs * (dprobs - sum_j probs * dprobs), row by row. All: [slices * seq, seq].
void softmax_rows_backward(KernelContext& ctx, const AttentionShape& s, const float* probs,
                           const float* dprobs, float* dscores) {
  const std::string key = fmt::format("attention_softmax_bwd:{}:{}", slices(s) * s.seq, s.seq);
  auto& prim = ctx.cached<dnnl::softmax_backward>(key, [&] {
    dnnl::softmax_backward::desc desc(rows_desc(s), rows_desc(s), 1);
    return dnnl::softmax_backward(
        dnnl::softmax_backward::primitive_desc(desc, ctx.engine(), softmax_pd(ctx, s)));
  });
  auto mem = [&](const float* p) {
    return memory(rows_desc(s), ctx.engine(), const_cast<float*>(p));
  };
  prim.execute(ctx.stream(), {{DNNL_ARG_DST, mem(probs)},
                              {DNNL_ARG_DIFF_DST, mem(dprobs)},
                              {DNNL_ARG_DIFF_SRC, mem(dscores)}});
  ctx.stream().wait();
}

// Sets the entries above the diagonal (j > i) of every [seq, seq] slice to -inf.
void apply_causal_mask(const AttentionShape& s, float* scores) {
  const int64_t T = s.seq;
  const float minus_inf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (int64_t slice = 0; slice < slices(s); ++slice) {
    float* m = scores + slice * T * T;
    for (int64_t i = 0; i < T; ++i) std::fill(m + i * T + i + 1, m + (i + 1) * T, minus_inf);
  }
}

// out = a * b elementwise; all: [n].
void multiply(const float* a, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

// Scratch of n floats that the caller overwrites before reading (no zero fill).
std::unique_ptr<float[]> scratch(int64_t n) {
  return std::make_unique_for_overwrite<float[]>(static_cast<size_t>(n));
}

}  // namespace

void causal_attention_forward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                              const float* k, const float* v, const float* dropout_mask,
                              float* probs, float* out) {
  check_shape(shape);
  if (shape.batch == 0) return;
  const int64_t T = shape.seq, D = shape.head_dim, n = slices(shape) * T * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // scores = q · k^T / sqrt(D): [slices, T, T], masked, then softmax in place.
  matmul(ctx, {.batch = slices(shape), .m = T, .k = D, .n = T, .transpose_b = true}, q, k, probs,
         scale);
  apply_causal_mask(shape, probs);
  softmax_rows(ctx, shape, probs);
  const float* p = probs;
  std::unique_ptr<float[]> dropped;
  if (dropout_mask) {
    dropped = scratch(n);
    multiply(probs, dropout_mask, dropped.get(), n);
    p = dropped.get();
  }
  // out = p · v: [slices, T, D].
  matmul(ctx, {.batch = slices(shape), .m = T, .k = T, .n = D}, p, v, out);
}

void causal_attention_backward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                               const float* k, const float* v, const float* probs,
                               const float* dropout_mask, const float* dout, float* dq, float* dk,
                               float* dv) {
  check_shape(shape);
  if (shape.batch == 0) return;
  const int64_t T = shape.seq, D = shape.head_dim, S = slices(shape), n = S * T * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::unique_ptr<float[]> dprobs = scratch(n), dscores = scratch(n);
  // With dropout, out = (probs * mask) · v: dv uses the dropped probabilities and the gradient
  // reaching probs is masked the same way.
  const float* p = probs;
  std::unique_ptr<float[]> dropped;
  if (dropout_mask) {
    dropped = scratch(n);
    multiply(probs, dropout_mask, dropped.get(), n);
    p = dropped.get();
  }
  // dv = p^T · dout: [S, T, D]; dprobs = dout · v^T: [S, T, T].
  matmul(ctx, {.batch = S, .m = T, .k = T, .n = D, .transpose_a = true}, p, dout, dv);
  matmul(ctx, {.batch = S, .m = T, .k = D, .n = T, .transpose_b = true}, dout, v, dprobs.get());
  if (dropout_mask) multiply(dprobs.get(), dropout_mask, dprobs.get(), n);
  softmax_rows_backward(ctx, shape, probs, dprobs.get(), dscores.get());
  // dq = dscores · k / sqrt(D); dk = dscores^T · q / sqrt(D): [S, T, D].
  matmul(ctx, {.batch = S, .m = T, .k = T, .n = D}, dscores.get(), k, dq, scale);
  matmul(ctx, {.batch = S, .m = T, .k = T, .n = D, .transpose_a = true}, dscores.get(), q, dk,
         scale);
}

}  // namespace mpipe::kernels
