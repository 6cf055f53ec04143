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

}  // namespace mpipe::kernels
