// Benchmark of one TransformerBlock (forward and forward+backward GFLOP/s) next to the oneDNN
// GEMM peak at the same thread count. Prints a table; asserts nothing about time.
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "kernels/matmul.h"
#include "nn/param_buffer.h"
#include "nn/transformer_block.h"

namespace {

using namespace mpipe;

// Each timing repeats for at least this long.
constexpr double kMinSeconds = 1.0;

double seconds_per_call(const std::function<void()>& call) {
  return bench::seconds_per_call(call, kMinSeconds);
}

Tensor random_tensor(Shape shape, uint64_t stream) {
  Tensor t(std::move(shape));
  CounterRng(1, RngPurpose::kData, 0, stream).fill_uniform(t.span());
  for (float& v : t.span()) v = 2.0f * v - 1.0f;
  return t;
}

// The GEMM peak: c[n, n] = a[n, n] · b[n, n] through the oneDNN matmul kernel, in GFLOP/s.
double gemm_gflops(kernels::KernelContext& ctx, int64_t n) {
  const Tensor a = random_tensor({n, n}, 1), b = random_tensor({n, n}, 2);
  Tensor c(Shape{n, n});
  const double seconds = seconds_per_call(
      [&] { kernels::matmul(ctx, {.m = n, .k = n, .n = n}, a.data(), b.data(), c.data()); });
  return 2.0 * static_cast<double>(n * n * n) / seconds * 1e-9;
}

struct BlockSize {
  int64_t batch, seq, width, heads;
};

}  // namespace

int main() {
  kernels::KernelContext kernels;
  constexpr int64_t kGemmSize = 2048;
  const double peak = gemm_gflops(kernels, kGemmSize);
  fmt::print("bench_transformer: f32, threads {}\n", bench::thread_count());
  fmt::print("oneDNN GEMM {}^3: {:.1f} GFLOP/s\n", kGemmSize, peak);
  fmt::print("{:>28} {:>12} {:>12} {:>12} {:>12} {:>10}\n", "block (batch x T x d, heads)",
             "fwd ms", "fwd GF/s", "f+b ms", "f+b GF/s", "% of GEMM");
  const std::vector<BlockSize> sizes = {{8, 128, 512, 8}, {8, 128, 1024, 8}};
  for (const BlockSize& s : sizes) {
    nn::TransformerBlock block(0, Shape{s.seq, s.width}, s.heads, 4, 0.0);
    nn::Layer* layers[] = {&block};
    nn::ParamBuffer params(layers);
    params.initialize(1);
    const Tensor x = random_tensor({s.batch, s.seq, s.width}, 3);
    const Tensor dy = random_tensor({s.batch, s.seq, s.width}, 4);
    const nn::LayerContext ctx{.kernels = kernels};
    const double forward = seconds_per_call([&] { (void)block.forward(x, ctx); });
    const double forward_backward = seconds_per_call([&] {
      const nn::Forward f = block.forward(x, ctx);
      (void)block.backward(dy, f.saved, ctx);
    });
    // Backward does about twice the forward's matrix products: 3x forward flops in all.
    const double flops = block.forward_flops_per_example() * static_cast<double>(s.batch);
    const double fb_gflops = 3.0 * flops / forward_backward * 1e-9;
    fmt::print("{:>28} {:>12.2f} {:>12.1f} {:>12.2f} {:>12.1f} {:>9.0f}%\n",
               fmt::format("{} x {} x {}, {}", s.batch, s.seq, s.width, s.heads), forward * 1e3,
               flops / forward * 1e-9, forward_backward * 1e3, fb_gflops, 100.0 * fb_gflops / peak);
  }
  return 0;
}
