// Element-wise activations through oneDNN eltwise primitives, cached per (kind, size).
#include "kernels/eltwise.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"

namespace mpipe::kernels {
namespace {

using dnnl::memory;

dnnl::algorithm algorithm_of(EltwiseKind kind) {
  switch (kind) {
    case EltwiseKind::kRelu:
      return dnnl::algorithm::eltwise_relu;
    case EltwiseKind::kGelu:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case EltwiseKind::kTanh:
      return dnnl::algorithm::eltwise_tanh;
  }
  throw Error("unknown eltwise kind");
}

memory::desc flat_desc(int64_t n) { return {{n}, memory::data_type::f32, memory::format_tag::a}; }

dnnl::eltwise_forward::primitive_desc forward_pd(const dnnl::engine& engine, EltwiseKind kind,
                                                 int64_t n) {
  // alpha = 0: plain ReLU (no leak); unused by GELU and tanh.
  dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, algorithm_of(kind),
                                   flat_desc(n), 0.0f, 0.0f);
  return {desc, engine};
}

memory wrap(int64_t n, const dnnl::engine& engine, const float* data) {
  return memory(flat_desc(n), engine, const_cast<float*>(data));
}

}  // namespace

EltwiseKind parse_eltwise_kind(std::string_view name) {
  if (auto kind = value_named(kEltwiseNames, name)) return *kind;
  throw InputError(fmt::format("unknown activation '{}' (expected {})", name,
                               list_names(kEltwiseNames, " or ")));
}

std::string_view eltwise_kind_name(EltwiseKind kind) { return name_of(kEltwiseNames, kind); }

void eltwise_forward(KernelContext& ctx, EltwiseKind kind, const float* x, float* y, int64_t n) {
  check(n >= 0, "eltwise_forward: negative size {}", n);
  if (n == 0) return;
  const dnnl::engine& engine = ctx.engine();
  const auto& primitive = ctx.cached<dnnl::eltwise_forward>(
      fmt::format("eltwise_fwd {} n{}", eltwise_kind_name(kind), n),
      [&] { return dnnl::eltwise_forward(forward_pd(engine, kind, n)); });
  primitive.execute(ctx.stream(),
                    {{DNNL_ARG_SRC, wrap(n, engine, x)}, {DNNL_ARG_DST, wrap(n, engine, y)}});
  ctx.stream().wait();
}

void eltwise_backward(KernelContext& ctx, EltwiseKind kind, const float* x, const float* dy,
                      float* dx, int64_t n) {
  check(n >= 0, "eltwise_backward: negative size {}", n);
  if (n == 0) return;
  const dnnl::engine& engine = ctx.engine();
  const auto& primitive = ctx.cached<dnnl::eltwise_backward>(
      fmt::format("eltwise_bwd {} n{}", eltwise_kind_name(kind), n), [&] {
        dnnl::eltwise_backward::desc desc(algorithm_of(kind), flat_desc(n), flat_desc(n), 0.0f,
                                          0.0f);
        return dnnl::eltwise_backward(
            dnnl::eltwise_backward::primitive_desc(desc, engine, forward_pd(engine, kind, n)));
      });
  primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, wrap(n, engine, x)},
                                   {DNNL_ARG_DIFF_DST, wrap(n, engine, dy)},
                                   {DNNL_ARG_DIFF_SRC, wrap(n, engine, dx)}});
  ctx.stream().wait();
}

}  // namespace mpipe::kernels
