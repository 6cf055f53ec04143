// bf16 copies of f32 kernel operands, made by a oneDNN reorder into scratch memory of the context.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

// data: [n] f32 → a bf16 copy (round to nearest even, same element order) in the scratch
// memory cached under `slot`, valid until the next call with the same slot.
void* bf16_copy(KernelContext& ctx, const std::string& slot, const float* data, int64_t n);

}  // namespace mpipe::kernels
