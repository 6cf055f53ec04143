// 2-D pooling through the oneDNN pooling primitives, cached per shape; max pooling's backward
// reads the workspace (positions of the maxima) its training forward wrote.
#include "kernels/pooling.h"

#include <fmt/format.h>

#include <unordered_map>

#include "core/error.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

dnnl::algorithm algorithm_for(PoolKind kind) {
  switch (kind) {
    case PoolKind::kMax:
      return dnnl::algorithm::pooling_max;
    case PoolKind::kAvgIncludePadding:
      return dnnl::algorithm::pooling_avg_include_padding;
    case PoolKind::kAvgExcludePadding:
      return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  throw Error("pool2d: unknown pooling kind");
}

memory::desc src_desc(const Pool2dShape& s) {
  return {{s.batch, s.channels, s.height, s.width}, kF32, Tag::nchw};
}

memory::desc dst_desc(const Pool2dShape& s) {
  return {{s.batch, s.channels, s.out_height(), s.out_width()}, kF32, Tag::nchw};
}

dnnl::pooling_forward::primitive_desc forward_pd(const dnnl::engine& engine, const Pool2dShape& s,
                                                 bool training) {
  const memory::dims padding{s.pad_h, s.pad_w};
  const dnnl::pooling_forward::desc desc(
      training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
      algorithm_for(s.kind), src_desc(s), dst_desc(s), {s.stride_h, s.stride_w},
      {s.kernel_h, s.kernel_w}, padding, padding);
  return {desc, engine};
}

// The primitive and its workspace layout for one shape and mode.
struct PoolForward {
  dnnl::pooling_forward primitive;
  memory::desc workspace;
};

const PoolForward& cached_forward(KernelContext& ctx, const Pool2dShape& s, bool training) {
  s.validate();
  return ctx.cached<PoolForward>(
      fmt::format("pool2d_forward {} training{}", s.key(), training), [&] {
        const auto pd = forward_pd(ctx.engine(), s, training);
        return PoolForward{dnnl::pooling_forward(pd), pd.workspace_desc()};
      });
}

bool needs_workspace(const Pool2dShape& s) { return s.kind == PoolKind::kMax; }

memory wrap(const memory::desc& desc, const dnnl::engine& engine, const void* data) {
  return {desc, engine, const_cast<void*>(data)};
}

}  // namespace

void Pool2dShape::validate() const {
  check(batch >= 1 && channels >= 1 && height >= 1 && width >= 1 && kernel_h >= 1 &&
            kernel_w >= 1 && stride_h >= 1 && stride_w >= 1 && pad_h >= 0 && pad_w >= 0,
        "pool2d: invalid shape {}", key());
  check(pad_h < kernel_h && pad_w < kernel_w,
        "pool2d: padding must be smaller than the kernel ({})", key());
  check(height + 2 * pad_h >= kernel_h && width + 2 * pad_w >= kernel_w,
        "pool2d: kernel larger than the padded input ({})", key());
}

std::string Pool2dShape::key() const {
  return fmt::format("n{} c{} h{} w{} k{}x{} s{}x{} p{}x{} kind{}", batch, channels, height, width,
                     kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, static_cast<int>(kind));
}

size_t pool2d_workspace_bytes(KernelContext& ctx, const Pool2dShape& shape) {
  if (!needs_workspace(shape)) return 0;
  return cached_forward(ctx, shape, true).workspace.get_size();
}

void pool2d_forward(KernelContext& ctx, const Pool2dShape& shape, const float* x, float* y,
                    void* workspace) {
  const bool training = workspace != nullptr && needs_workspace(shape);
  const PoolForward& forward = cached_forward(ctx, shape, training);
  const dnnl::engine& engine = ctx.engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(src_desc(shape), engine, x)},
                                       {DNNL_ARG_DST, wrap(dst_desc(shape), engine, y)}};
  if (training) args.emplace(DNNL_ARG_WORKSPACE, wrap(forward.workspace, engine, workspace));
  forward.primitive.execute(ctx.stream(), args);
  ctx.stream().wait();
}

void pool2d_backward(KernelContext& ctx, const Pool2dShape& shape, const float* dy,
                     const void* workspace, float* dx) {
  const bool with_workspace = needs_workspace(shape);
  check(!with_workspace || workspace != nullptr, "pool2d: max pooling backward needs a workspace");
  const PoolForward& forward = cached_forward(ctx, shape, with_workspace);
  const auto& primitive =
      ctx.cached<dnnl::pooling_backward>(fmt::format("pool2d_backward {}", shape.key()), [&] {
        const memory::dims padding{shape.pad_h, shape.pad_w};
        const dnnl::pooling_backward::desc desc(algorithm_for(shape.kind), src_desc(shape),
                                                dst_desc(shape), {shape.stride_h, shape.stride_w},
                                                {shape.kernel_h, shape.kernel_w}, padding, padding);
        return dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
            desc, ctx.engine(), forward_pd(ctx.engine(), shape, true)));
      });
  const dnnl::engine& engine = ctx.engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, wrap(dst_desc(shape), engine, dy)},
                                       {DNNL_ARG_DIFF_SRC, wrap(src_desc(shape), engine, dx)}};
  if (with_workspace) args.emplace(DNNL_ARG_WORKSPACE, wrap(forward.workspace, engine, workspace));
  primitive.execute(ctx.stream(), args);
  ctx.stream().wait();
}

}  // namespace mpipe::kernels
