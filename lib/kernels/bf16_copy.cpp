// bf16 copies through a cached oneDNN reorder (f32 → bf16 over a flat [n] buffer).
#include "kernels/bf16_copy.h"

#include <fmt/format.h>

namespace mpipe::kernels {

void* bf16_copy(KernelContext& ctx, const std::string& slot, const float* data, int64_t n) {
  using dnnl::memory;
  const memory::desc from({n}, memory::data_type::f32, memory::format_tag::a);
  const memory::desc to({n}, memory::data_type::bf16, memory::format_tag::a);
  memory copy = ctx.cached<memory>(slot, [&] { return memory(to, ctx.engine()); });
  auto& reorder = ctx.cached<dnnl::reorder>(fmt::format("bf16_copy n{}", n), [&] {
    return dnnl::reorder(dnnl::reorder::primitive_desc(ctx.engine(), from, ctx.engine(), to));
  });
  memory source(from, ctx.engine(), const_cast<float*>(data));
  reorder.execute(ctx.stream(), source, copy);
  return copy.get_data_handle();
}

bool weight_copy_is_current(KernelContext& ctx, const std::string& slot) {
  uint64_t& converted_in = ctx.cached<uint64_t>(slot + " version", [] { return uint64_t{0}; });
  const uint64_t now = ctx.weights_version();
  if (now != 0 && converted_in == now) return true;
  converted_in = now;
  return false;
}

const void* bf16_weight_copy(KernelContext& ctx, const float* weight, int64_t n) {
  const std::string slot = fmt::format("bf16_weight {} n{}", static_cast<const void*>(weight), n);
  if (weight_copy_is_current(ctx, slot)) {
    return ctx.cached<dnnl::memory>(slot, [] { return dnnl::memory(); }).get_data_handle();
  }
  return bf16_copy(ctx, slot, weight, n);
}

}  // namespace mpipe::kernels
