// Nearest-neighbour upsampling through the oneDNN resampling primitives, cached per shape.
#include "kernels/resampling.h"

#include <fmt/format.h>

#include <unordered_map>

#include "core/error.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

memory::desc src_desc(const Upsample2dShape& s) {
  return {{s.batch, s.channels, s.height, s.width}, kF32, Tag::nchw};
}

memory::desc dst_desc(const Upsample2dShape& s) {
  return {{s.batch, s.channels, s.height * s.scale, s.width * s.scale}, kF32, Tag::nchw};
}

dnnl::resampling_forward::primitive_desc forward_pd(const dnnl::engine& engine,
                                                    const Upsample2dShape& s) {
  const dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::resampling_nearest, src_desc(s),
                                            dst_desc(s));
  return {desc, engine};
}

memory wrap(const memory::desc& desc, const dnnl::engine& engine, const void* data) {
  return {desc, engine, const_cast<void*>(data)};
}

}  // namespace

void Upsample2dShape::validate() const {
  check(batch >= 1 && channels >= 1 && height >= 1 && width >= 1 && scale >= 1,
        "upsample2d: invalid shape {}", key());
}

std::string Upsample2dShape::key() const {
  return fmt::format("n{} c{} h{} w{} scale{}", batch, channels, height, width, scale);
}

void upsample2d_forward(KernelContext& ctx, const Upsample2dShape& shape, const float* x,
                        float* y) {
  shape.validate();
  const auto& primitive = ctx.cached<dnnl::resampling_forward>(
      fmt::format("upsample2d_forward {}", shape.key()),
      [&] { return dnnl::resampling_forward(forward_pd(ctx.engine(), shape)); });
  const dnnl::engine& engine = ctx.engine();
  primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, wrap(src_desc(shape), engine, x)},
                                   {DNNL_ARG_DST, wrap(dst_desc(shape), engine, y)}});
  ctx.stream().wait();
}

void upsample2d_backward(KernelContext& ctx, const Upsample2dShape& shape, const float* dy,
                         float* dx) {
  shape.validate();
  const auto& primitive = ctx.cached<dnnl::resampling_backward>(
      fmt::format("upsample2d_backward {}", shape.key()), [&] {
        const dnnl::resampling_backward::desc desc(dnnl::algorithm::resampling_nearest,
                                                   src_desc(shape), dst_desc(shape));
        return dnnl::resampling_backward(dnnl::resampling_backward::primitive_desc(
            desc, ctx.engine(), forward_pd(ctx.engine(), shape)));
      });
  const dnnl::engine& engine = ctx.engine();
  primitive.execute(ctx.stream(), {{DNNL_ARG_DIFF_DST, wrap(dst_desc(shape), engine, dy)},
                                   {DNNL_ARG_DIFF_SRC, wrap(src_desc(shape), engine, dx)}});
  ctx.stream().wait();
}

}  // namespace mpipe::kernels
