// Attention through batched oneDNN matmuls (kernels/matmul.h) and oneDNN softmax, with the
// causal and key-padding masks applied to the scores between them.
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

void check_shape(const AttentionShape& s, const AttentionMask& mask) {
  check(s.batch >= 0 && s.heads > 0 && s.q_len > 0 && s.kv_len > 0 && s.head_dim > 0,
        "attention: bad shape batch={} heads={} q_len={} kv_len={} head_dim={}", s.batch, s.heads,
        s.q_len, s.kv_len, s.head_dim);
  check(s.kv_heads >= 0 && s.heads % kv_heads_of(s) == 0,
        "attention: kv_heads {} does not divide heads {}", s.kv_heads, s.heads);
  check(!mask.causal || s.q_len == s.kv_len,
        "attention: a causal mask needs q_len == kv_len, got {} and {}", s.q_len, s.kv_len);
}

int64_t slices(const AttentionShape& s) { return s.batch * s.heads; }

// The matrix products run over one slice per key/value head: the query heads of a group are
// consecutive in q (and their probabilities in probs), so the group's queries are the rows of
// one [group * q_len, head_dim] matrix against its head's k and v.
int64_t kv_slices(const AttentionShape& s) { return s.batch * kv_heads_of(s); }
int64_t group_rows(const AttentionShape& s) { return s.heads / kv_heads_of(s) * s.q_len; }

// The rows of all score matrices, one softmax each: [slices * q_len, kv_len].
memory::desc rows_desc(const AttentionShape& s) {
  return memory::desc({slices(s) * s.q_len, s.kv_len}, memory::data_type::f32,
                      memory::format_tag::ab);
}

dnnl::softmax_forward::primitive_desc softmax_pd(KernelContext& ctx, const AttentionShape& s) {
  const std::string key =
      fmt::format("attention_softmax_fwd_pd:{}:{}", slices(s) * s.q_len, s.kv_len);
  return ctx.cached<dnnl::softmax_forward::primitive_desc>(key, [&] {
    dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, rows_desc(s), 1);
    return dnnl::softmax_forward::primitive_desc(desc, ctx.engine());
  });
}

// In place: scores → probabilities, row by row. scores: [slices * q_len, kv_len].
void softmax_rows(KernelContext& ctx, const AttentionShape& s, float* scores) {
  const std::string key = fmt::format("attention_softmax_fwd:{}:{}", slices(s) * s.q_len, s.kv_len);
  auto& prim = ctx.cached<dnnl::softmax_forward>(
      key, [&] { return dnnl::softmax_forward(softmax_pd(ctx, s)); });
  memory mem(rows_desc(s), ctx.engine(), scores);
  prim.execute(ctx.stream(), {{DNNL_ARG_SRC, mem}, {DNNL_ARG_DST, mem}});
  ctx.stream().wait();
}

// dscores = probs * (dprobs - sum_j probs * dprobs), row by row. All: [slices * q_len, kv_len].
void softmax_rows_backward(KernelContext& ctx, const AttentionShape& s, const float* probs,
                           const float* dprobs, float* dscores) {
  const std::string key = fmt::format("attention_softmax_bwd:{}:{}", slices(s) * s.q_len, s.kv_len);
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

// Sets the entries above the diagonal (j > i) of every [T, T] slice to -inf.
void apply_causal_mask(const AttentionShape& s, float* scores) {
  const int64_t T = s.q_len;
  const float minus_inf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (int64_t slice = 0; slice < slices(s); ++slice) {
    float* m = scores + slice * T * T;
    for (int64_t i = 0; i < T; ++i) std::fill(m + i * T + i + 1, m + (i + 1) * T, minus_inf);
  }
}

// The first key of example b that is not padding (kv_len when every key is).
int64_t first_kept_key(const AttentionShape& s, const uint8_t* key_keep, int64_t b) {
  const uint8_t* keep = key_keep + b * s.kv_len;
  return std::find_if(keep, keep + s.kv_len, [](uint8_t k) { return k != 0; }) - keep;
}

// Whether query i of an example whose first kept key is `first_kept` sees any key.
bool row_sees_a_key(const AttentionShape& s, const AttentionMask& mask, int64_t first_kept,
                    int64_t i) {
  return first_kept <= (mask.causal ? i : s.kv_len - 1);
}

// Sets the scores of padding keys to -inf. A row left with no key gets scores of 0 instead (a
// softmax over -inf alone is NaN); clear_rows_without_keys zeroes its probabilities afterwards.
void apply_key_mask(const AttentionShape& s, const AttentionMask& mask, float* scores) {
  const int64_t Tq = s.q_len, Tk = s.kv_len;
  const float minus_inf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(static)
  for (int64_t slice = 0; slice < slices(s); ++slice) {
    const int64_t b = slice / s.heads;
    const uint8_t* keep = mask.key_keep + b * Tk;
    const int64_t first_kept = first_kept_key(s, mask.key_keep, b);
    for (int64_t i = 0; i < Tq; ++i) {
      float* row = scores + (slice * Tq + i) * Tk;
      if (!row_sees_a_key(s, mask, first_kept, i)) {
        std::fill(row, row + Tk, 0.0f);
        continue;
      }
      for (int64_t j = 0; j < Tk; ++j) {
        if (keep[j] == 0) row[j] = minus_inf;
      }
    }
  }
}

// Zeroes the probabilities of every row that sees no key (apply_key_mask).
void clear_rows_without_keys(const AttentionShape& s, const AttentionMask& mask, float* probs) {
  const int64_t Tq = s.q_len, Tk = s.kv_len;
#pragma omp parallel for schedule(static)
  for (int64_t slice = 0; slice < slices(s); ++slice) {
    const int64_t first_kept = first_kept_key(s, mask.key_keep, slice / s.heads);
    for (int64_t i = 0; i < Tq; ++i) {
      float* row = probs + (slice * Tq + i) * Tk;
      if (!row_sees_a_key(s, mask, first_kept, i)) std::fill(row, row + Tk, 0.0f);
    }
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

void attention_forward(KernelContext& ctx, const AttentionShape& shape, const AttentionMask& mask,
                       const float* q, const float* k, const float* v, const float* dropout_mask,
                       float* probs, float* out) {
  check_shape(shape, mask);
  if (shape.batch == 0) return;
  const int64_t Tq = group_rows(shape), Tk = shape.kv_len, D = shape.head_dim, S = kv_slices(shape);
  const int64_t n = S * Tq * Tk;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // scores = q · k^T / sqrt(D): [S, Tq, Tk] (Tq: a group's queries), masked, then softmax in place.
  matmul(ctx, {.batch = S, .m = Tq, .k = D, .n = Tk, .transpose_b = true}, q, k, probs, scale);
  if (mask.causal) apply_causal_mask(shape, probs);
  if (mask.key_keep) apply_key_mask(shape, mask, probs);
  softmax_rows(ctx, shape, probs);
  if (mask.key_keep) clear_rows_without_keys(shape, mask, probs);
  const float* p = probs;
  std::unique_ptr<float[]> dropped;
  if (dropout_mask) {
    dropped = scratch(n);
    multiply(probs, dropout_mask, dropped.get(), n);
    p = dropped.get();
  }
  // out = p · v: [S, Tq, D].
  matmul(ctx, {.batch = S, .m = Tq, .k = Tk, .n = D}, p, v, out);
}

void attention_backward(KernelContext& ctx, const AttentionShape& shape, const float* q,
                        const float* k, const float* v, const float* probs,
                        const float* dropout_mask, const float* dout, float* dq, float* dk,
                        float* dv) {
  check_shape(shape, {});
  if (shape.batch == 0) return;
  const int64_t Tq = group_rows(shape), Tk = shape.kv_len, D = shape.head_dim, S = kv_slices(shape);
  const int64_t n = S * Tq * Tk;
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
  // dv = p^T · dout: [S, Tk, D] (summed over a group's queries); dprobs = dout · v^T: [S, Tq, Tk].
  matmul(ctx, {.batch = S, .m = Tk, .k = Tq, .n = D, .transpose_a = true}, p, dout, dv);
  matmul(ctx, {.batch = S, .m = Tq, .k = D, .n = Tk, .transpose_b = true}, dout, v, dprobs.get());
  if (dropout_mask) multiply(dprobs.get(), dropout_mask, dprobs.get(), n);
  // Masked probabilities are 0, so their scores get no gradient.
  softmax_rows_backward(ctx, shape, probs, dprobs.get(), dscores.get());
  // dq = dscores · k / sqrt(D): [S, Tq, D]; dk = dscores^T · q / sqrt(D): [S, Tk, D].
  matmul(ctx, {.batch = S, .m = Tq, .k = Tk, .n = D}, dscores.get(), k, dq, scale);
  matmul(ctx, {.batch = S, .m = Tk, .k = Tq, .n = D, .transpose_a = true}, dscores.get(), q, dk,
         scale);
}

}  // namespace mpipe::kernels
