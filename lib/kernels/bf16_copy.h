// bf16 copies of f32 kernel operands, made by a oneDNN reorder into scratch memory of the context.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/context.h"

namespace mpipe::kernels {

// data: [n] f32 → a bf16 copy (round to nearest even, same element order) in the scratch
// memory cached under `slot`, valid until the next call with the same slot.
void* bf16_copy(KernelContext& ctx, const std::string& slot, const float* data, int64_t n);

// The same for a weight (a parameter): inside a WeightsFixed scope the copy is made on the first
// call of the scope and reused (keyed by the weight's address); outside one, on every call.
const void* bf16_weight_copy(KernelContext& ctx, const float* weight, int64_t n);

// Whether the converted copy of `weight` cached under `slot` is current: true inside a
// WeightsFixed scope when this scope already converted it (then nothing needs doing); otherwise
// records that the caller converts it now.
bool weight_copy_is_current(KernelContext& ctx, const std::string& slot);

}  // namespace mpipe::kernels
