// Batch normalization through the oneDNN batch_normalization primitives (scale and shift as
// separate [channels] arrays), cached per shape; parameter gradients are added (accumulation).
#include "kernels/batch_norm.h"

#include <fmt/format.h>

#include <Eigen/Core>

#include "core/error.h"
#include "core/tensor.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;
using Flags = dnnl::normalization_flags;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

memory::desc data_desc(const BatchNormShape& s) {
  return {{s.batch, s.channels, s.height, s.width}, kF32, Tag::nchw};
}

memory::desc channel_desc(const BatchNormShape& s) { return {{s.channels}, kF32, Tag::x}; }

Flags flags_for(bool batch_statistics) {
  const Flags flags = Flags::use_scale | Flags::use_shift;
  return batch_statistics ? flags : flags | Flags::use_global_stats;
}

dnnl::batch_normalization_forward::primitive_desc forward_pd(const dnnl::engine& engine,
                                                             const BatchNormShape& s,
                                                             bool batch_statistics) {
  const dnnl::batch_normalization_forward::desc desc(
      dnnl::prop_kind::forward_training, data_desc(s), s.eps, flags_for(batch_statistics));
  return {desc, engine};
}

memory wrap(const memory::desc& desc, const dnnl::engine& engine, const float* data) {
  return {desc, engine, const_cast<float*>(data)};
}

// Runs the forward primitive; mean and variance are outputs when batch_statistics, else inputs.
void run_forward(KernelContext& ctx, const BatchNormShape& s, bool batch_statistics, const float* x,
                 const float* gamma, const float* beta, const float* mean, const float* variance,
                 float* y) {
  s.validate();
  const auto& primitive = ctx.cached<dnnl::batch_normalization_forward>(
      fmt::format("batch_norm_forward {} batch_stats{}", s.key(), batch_statistics), [&] {
        return dnnl::batch_normalization_forward(forward_pd(ctx.engine(), s, batch_statistics));
      });
  const dnnl::engine& engine = ctx.engine();
  const memory::desc data = data_desc(s);
  const memory::desc channel = channel_desc(s);
  primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, wrap(data, engine, x)},
                                   {DNNL_ARG_DST, wrap(data, engine, y)},
                                   {DNNL_ARG_SCALE, wrap(channel, engine, gamma)},
                                   {DNNL_ARG_SHIFT, wrap(channel, engine, beta)},
                                   {DNNL_ARG_MEAN, wrap(channel, engine, mean)},
                                   {DNNL_ARG_VARIANCE, wrap(channel, engine, variance)}});
  ctx.stream().wait();
}

void add_into(float* target, const float* values, int64_t n) {
  Eigen::Map<Eigen::ArrayXf>(target, n) += Eigen::Map<const Eigen::ArrayXf>(values, n);
}

}  // namespace

void BatchNormShape::validate() const {
  check(batch >= 1 && channels >= 1 && height >= 1 && width >= 1 && eps >= 0.0f,
        "batch_norm: invalid shape {}", key());
}

std::string BatchNormShape::key() const {
  return fmt::format("n{} c{} h{} w{} eps{}", batch, channels, height, width, eps);
}

void batch_norm_forward_training(KernelContext& ctx, const BatchNormShape& shape, const float* x,
                                 const float* gamma, const float* beta, float* y, float* mean,
                                 float* variance) {
  run_forward(ctx, shape, true, x, gamma, beta, mean, variance, y);
}

void batch_norm_forward_inference(KernelContext& ctx, const BatchNormShape& shape, const float* x,
                                  const float* gamma, const float* beta, const float* mean,
                                  const float* variance, float* y) {
  run_forward(ctx, shape, false, x, gamma, beta, mean, variance, y);
}

void batch_norm_backward_parts(KernelContext& ctx, const BatchNormShape& shape,
                               bool batch_statistics, const float* x, const float* dy,
                               const float* gamma, const float* mean, const float* variance,
                               float* dx, float* dgamma_part, float* dbeta_part) {
  shape.validate();
  const auto& primitive = ctx.cached<dnnl::batch_normalization_backward>(
      fmt::format("batch_norm_backward {} batch_stats{}", shape.key(), batch_statistics), [&] {
        const dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward,
                                                            data_desc(shape), data_desc(shape),
                                                            shape.eps, flags_for(batch_statistics));
        return dnnl::batch_normalization_backward(
            dnnl::batch_normalization_backward::primitive_desc(
                desc, ctx.engine(), forward_pd(ctx.engine(), shape, batch_statistics)));
      });
  const dnnl::engine& engine = ctx.engine();
  const memory::desc data = data_desc(shape);
  const memory::desc channel = channel_desc(shape);
  primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, wrap(data, engine, x)},
                                   {DNNL_ARG_DIFF_DST, wrap(data, engine, dy)},
                                   {DNNL_ARG_SCALE, wrap(channel, engine, gamma)},
                                   // oneDNN 2.6 refuses to run without a shift argument when
                                   // use_shift is set, though backward never reads it.
                                   {DNNL_ARG_SHIFT, wrap(channel, engine, gamma)},
                                   {DNNL_ARG_MEAN, wrap(channel, engine, mean)},
                                   {DNNL_ARG_VARIANCE, wrap(channel, engine, variance)},
                                   {DNNL_ARG_DIFF_SRC, wrap(data, engine, dx)},
                                   {DNNL_ARG_DIFF_SCALE, wrap(channel, engine, dgamma_part)},
                                   {DNNL_ARG_DIFF_SHIFT, wrap(channel, engine, dbeta_part)}});
  ctx.stream().wait();
}

void batch_norm_backward(KernelContext& ctx, const BatchNormShape& shape, bool batch_statistics,
                         const float* x, const float* dy, const float* gamma, const float* mean,
                         const float* variance, float* dx, float* dgamma, float* dbeta) {
  // oneDNN overwrites its outputs: compute this call's parameter gradients apart, then add them.
  Tensor dgamma_part(Shape{shape.channels});
  Tensor dbeta_part(Shape{shape.channels});
  batch_norm_backward_parts(ctx, shape, batch_statistics, x, dy, gamma, mean, variance, dx,
                            dgamma_part.data(), dbeta_part.data());
  add_into(dgamma, dgamma_part.data(), shape.channels);
  add_into(dbeta, dbeta_part.data(), shape.channels);
}

}  // namespace mpipe::kernels
