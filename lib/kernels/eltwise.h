// Element-wise activations (ReLU, GELU, tanh) forward and backward through oneDNN eltwise.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/enum_names.h"
#include "kernels/context.h"

namespace mpipe::kernels {

enum class EltwiseKind {
  kRelu,
  kGelu,  // tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kTanh,
};
inline constexpr EnumNames<EltwiseKind, 3> kEltwiseNames{
    {{"relu", EltwiseKind::kRelu}, {"gelu", EltwiseKind::kGelu}, {"tanh", EltwiseKind::kTanh}}};

// "relu", "gelu", "tanh" → kind; anything else throws InputError.
EltwiseKind parse_eltwise_kind(std::string_view name);
std::string_view eltwise_kind_name(EltwiseKind kind);

// x, y: [n]. y may equal x (in place).
void eltwise_forward(KernelContext& ctx, EltwiseKind kind, const float* x, float* y, int64_t n);
// dx = f'(x) * dy, where x is the forward input. x, dy, dx: [n]; dx may equal dy.
void eltwise_backward(KernelContext& ctx, EltwiseKind kind, const float* x, const float* dy,
                      float* dx, int64_t n);

}  // namespace mpipe::kernels
