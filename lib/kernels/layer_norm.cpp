// Layer normalization kernels: oneDNN layer_normalization primitives, cached per shape.
#include "kernels/layer_norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

dnnl::normalization_flags flags() {
  return dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
}

memory::desc data_desc(int64_t rows, int64_t dim) {
  return memory::desc({rows, dim}, DataType::f32, Tag::ab);
}
memory::desc stat_desc(int64_t rows) { return memory::desc({rows}, DataType::f32, Tag::a); }
memory::desc param_desc(int64_t dim) { return memory::desc({dim}, DataType::f32, Tag::a); }

dnnl::layer_normalization_forward::primitive_desc forward_pd(KernelContext& ctx, int64_t rows,
                                                             int64_t dim, float eps) {
  const std::string key = fmt::format("layer_norm_fwd_pd:{}:{}:{}", rows, dim, eps);
  return ctx.cached<dnnl::layer_normalization_forward::primitive_desc>(key, [&] {
    dnnl::layer_normalization_forward::desc desc(
        dnnl::prop_kind::forward_training, data_desc(rows, dim), stat_desc(rows), eps, flags());
    return dnnl::layer_normalization_forward::primitive_desc(desc, ctx.engine());
  });
}

void check_shape(int64_t rows, int64_t dim) {
  check(rows >= 0 && dim > 0, "layer_norm: bad shape rows={} dim={}", rows, dim);
}

}  // namespace

void layer_norm_forward(KernelContext& ctx, const float* x, const float* gamma, const float* beta,
                        float* y, float* mean, float* variance, int64_t rows, int64_t dim,
                        float eps) {
  check_shape(rows, dim);
  if (rows == 0) return;
  const std::string key = fmt::format("layer_norm_fwd:{}:{}:{}", rows, dim, eps);
  auto& prim = ctx.cached<dnnl::layer_normalization_forward>(
      key, [&] { return dnnl::layer_normalization_forward(forward_pd(ctx, rows, dim, eps)); });
  const auto& engine = ctx.engine();
  auto mem = [&](const memory::desc& desc, const float* p) {
    return memory(desc, engine, const_cast<float*>(p));
  };
  prim.execute(ctx.stream(), {{DNNL_ARG_SRC, mem(data_desc(rows, dim), x)},
                              {DNNL_ARG_DST, mem(data_desc(rows, dim), y)},
                              {DNNL_ARG_SCALE, mem(param_desc(dim), gamma)},
                              {DNNL_ARG_SHIFT, mem(param_desc(dim), beta)},
                              {DNNL_ARG_MEAN, mem(stat_desc(rows), mean)},
                              {DNNL_ARG_VARIANCE, mem(stat_desc(rows), variance)}});
  ctx.stream().wait();
}

void layer_norm_backward_parts(KernelContext& ctx, const float* x, const float* dy,
                               const float* gamma, const float* mean, const float* variance,
                               float* dx, float* dgamma_part, float* dbeta_part, int64_t rows,
                               int64_t dim, float eps) {
  check_shape(rows, dim);
  if (rows == 0) {
    std::fill_n(dgamma_part, dim, 0.0f);
    std::fill_n(dbeta_part, dim, 0.0f);
    return;
  }
  const std::string key = fmt::format("layer_norm_bwd:{}:{}:{}", rows, dim, eps);
  auto& prim = ctx.cached<dnnl::layer_normalization_backward>(key, [&] {
    dnnl::layer_normalization_backward::desc desc(dnnl::prop_kind::backward, data_desc(rows, dim),
                                                  data_desc(rows, dim), stat_desc(rows), eps,
                                                  flags());
    return dnnl::layer_normalization_backward(dnnl::layer_normalization_backward::primitive_desc(
        desc, ctx.engine(), forward_pd(ctx, rows, dim, eps)));
  });
  // oneDNN overwrites the parameter gradients. It also asks for the shift, which the gradients
  // do not depend on: zeros stand in for it.
  const std::vector<float> unused_shift(static_cast<size_t>(dim), 0.0f);
  const auto& engine = ctx.engine();
  auto mem = [&](const memory::desc& desc, const float* p) {
    return memory(desc, engine, const_cast<float*>(p));
  };
  prim.execute(ctx.stream(), {{DNNL_ARG_SRC, mem(data_desc(rows, dim), x)},
                              {DNNL_ARG_DIFF_DST, mem(data_desc(rows, dim), dy)},
                              {DNNL_ARG_DIFF_SRC, mem(data_desc(rows, dim), dx)},
                              {DNNL_ARG_SCALE, mem(param_desc(dim), gamma)},
                              {DNNL_ARG_SHIFT, mem(param_desc(dim), unused_shift.data())},
                              {DNNL_ARG_MEAN, mem(stat_desc(rows), mean)},
                              {DNNL_ARG_VARIANCE, mem(stat_desc(rows), variance)},
                              {DNNL_ARG_DIFF_SCALE, mem(param_desc(dim), dgamma_part)},
                              {DNNL_ARG_DIFF_SHIFT, mem(param_desc(dim), dbeta_part)}});
  ctx.stream().wait();
}

void layer_norm_backward(KernelContext& ctx, const float* x, const float* dy, const float* gamma,
                         const float* mean, const float* variance, float* dx, float* dgamma,
                         float* dbeta, int64_t rows, int64_t dim, float eps) {
  check_shape(rows, dim);
  if (rows == 0) return;
  // Computed aside, then accumulated.
  std::vector<float> dgamma_here(static_cast<size_t>(dim)), dbeta_here(static_cast<size_t>(dim));
  layer_norm_backward_parts(ctx, x, dy, gamma, mean, variance, dx, dgamma_here.data(),
                            dbeta_here.data(), rows, dim, eps);
  for (int64_t j = 0; j < dim; ++j) {
    dgamma[j] += dgamma_here[static_cast<size_t>(j)];
    dbeta[j] += dbeta_here[static_cast<size_t>(j)];
  }
}

}  // namespace mpipe::kernels
