// Skips a bf16 kernel test on a CPU without avx512_bf16, where preflight refuses bf16 runs and
// oneDNN 2.6 has no bf16 primitives (convolution fails to create one).
#pragma once

#include <gtest/gtest.h>

#include "kernels/precision.h"

#define MPIPE_SKIP_WITHOUT_BF16_CPU()                                                       \
  if (const auto missing_flag = ::mpipe::kernels::missing_cpu_flag(                         \
          ::mpipe::kernels::Precision::kBf16, ::mpipe::kernels::read_cpuinfo())) {          \
    GTEST_SKIP() << "this CPU has no " << *missing_flag << " (bf16 runs are refused here)"; \
  }
