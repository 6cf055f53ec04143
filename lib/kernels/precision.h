// Arithmetic precision of the GEMM and convolution kernels, and the CPU check for bf16.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace mpipe::kernels {

// kF32: every kernel in f32. kBf16: matmul, linear and convolution read their operands rounded
// to bf16 (round to nearest even) and accumulate and write in f32; parameters, gradients,
// optimizer state and every other kernel stay f32.
enum class Precision { kF32, kBf16 };
inline constexpr EnumNames<Precision, 2> kPrecisionNames{
    {{"f32", Precision::kF32}, {"bf16", Precision::kBf16}}};

// "f32" or "bf16": the spelling of train.precision.
std::string to_string(Precision precision);

// The CPU flag that `precision` needs and `cpuinfo` (the text of /proc/cpuinfo) lacks, or
// nullopt when nothing is missing. bf16 needs avx512_bf16 (AMX, amx_bf16, is used when present).
std::optional<std::string> missing_cpu_flag(Precision precision, std::string_view cpuinfo);

// The text of /proc/cpuinfo (empty when it cannot be read).
std::string read_cpuinfo();

}  // namespace mpipe::kernels
