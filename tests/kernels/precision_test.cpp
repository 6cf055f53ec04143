// Precision names and the /proc/cpuinfo check for bf16, on sample cpuinfo texts.
#include "kernels/precision.h"

#include <gtest/gtest.h>

namespace mpipe::kernels {
namespace {

constexpr const char* kWithBf16 =
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n"
    "flags\t\t: fpu avx512f avx512bw avx512_bf16 amx_bf16 amx_tile\n\n"
    "processor\t: 1\nflags\t\t: fpu avx512f avx512bw avx512_bf16 amx_bf16 amx_tile\n";
constexpr const char* kWithoutBf16 =
    "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx512bw avx512_vnni\n";

TEST(Precision, NamesAreTheConfigSpellings) {
  EXPECT_EQ(to_string(Precision::kF32), "f32");
  EXPECT_EQ(to_string(Precision::kBf16), "bf16");
}

TEST(Precision, Bf16NeedsTheAvx512Bf16FlagAndF32NeedsNothing) {
  EXPECT_EQ(missing_cpu_flag(Precision::kBf16, kWithBf16), std::nullopt);
  EXPECT_EQ(missing_cpu_flag(Precision::kBf16, kWithoutBf16), "avx512_bf16");
  EXPECT_EQ(missing_cpu_flag(Precision::kF32, kWithoutBf16), std::nullopt);
  EXPECT_EQ(missing_cpu_flag(Precision::kBf16, ""), "avx512_bf16");
}

TEST(Precision, FlagMustBeAWholeWordOnAFlagsLine) {
  EXPECT_EQ(missing_cpu_flag(Precision::kBf16, "flags\t: avx512_bf16x\n"), "avx512_bf16");
  EXPECT_EQ(missing_cpu_flag(Precision::kBf16, "model name\t: avx512_bf16\n"), "avx512_bf16");
}

}  // namespace
}  // namespace mpipe::kernels
