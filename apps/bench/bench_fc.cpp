// Benchmark of the fully connected path: raw oneDNN matmul vs Linear forward vs forward+backward,
// then the matmul at micro-batch row counts with one weight reused or 8 in turn, in GFLOP/s. Prints
// tables; asserts nothing about time.
#include <fmt/format.h>

#include <cstdint>
#include <dnnl.hpp>
#include <functional>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "nn/linear.h"
#include "nn/param_buffer.h"

namespace {

using namespace mpipe;

struct Size {
  int64_t batch, in, out;
};

// Each timing repeats for at least this long.
constexpr double kMinSeconds = 0.5;

double seconds_per_call(const std::function<void()>& call) {
  return bench::seconds_per_call(call, kMinSeconds);
}

// A plain oneDNN matmul y[batch, out] = x[batch, in] · w[in, out], built directly, over `weights`
// distinct weights in turn, as a stage's layers call it: with one weight it stays in the caches
// between calls; with several whose bytes exceed the L2 cache, each call streams its weight from
// L3 or memory, as in a pipeline's forward of one micro-batch.
double rotating_matmul_seconds(kernels::KernelContext& ctx, const Size& s, int weights) {
  using dnnl::memory;
  const memory::desc a({s.batch, s.in}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b({s.in, s.out}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c({s.batch, s.out}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul primitive(
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), ctx.engine()));
  Tensor x(Shape{s.batch, s.in}), y(Shape{s.batch, s.out});
  x.fill(0.5f);
  std::vector<Tensor> w;
  std::vector<memory> wm;
  for (int i = 0; i < weights; ++i) {
    w.emplace_back(Shape{s.in, s.out}).fill(0.25f);
    wm.emplace_back(b, ctx.engine(), w.back().data());
  }
  const memory xm(a, ctx.engine(), x.data()), ym(c, ctx.engine(), y.data());
  int next = 0;
  return seconds_per_call([&] {
    primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, xm},
                                     {DNNL_ARG_WEIGHTS, wm[static_cast<size_t>(next)]},
                                     {DNNL_ARG_DST, ym}});
    ctx.stream().wait();
    next = (next + 1) % weights;
  });
}

void print_micro_batch_rows(kernels::KernelContext& kernels) {
  constexpr int kColdWeights = 8;
  fmt::print(
      "\nmatmul at micro-batch rows: one weight reused (cached if it fits) vs {} weights in turn\n",
      kColdWeights);
  fmt::print("{:>22} {:>14} {:>14} {:>10}\n", "rows x in -> out", "1 weight GF/s",
             fmt::format("{} weights GF/s", kColdWeights), "ratio");
  for (const int64_t width : {1024, 512}) {
    for (const int64_t rows : {256, 64, 32}) {
      const Size s{rows, width, width};
      const double flops = 2.0 * static_cast<double>(rows * width * width);
      const double hot = flops / rotating_matmul_seconds(kernels, s, 1) * 1e-9;
      const double cold = flops / rotating_matmul_seconds(kernels, s, kColdWeights) * 1e-9;
      fmt::print("{:>22} {:>14.1f} {:>14.1f} {:>10.2f}\n",
                 fmt::format("{} x {} -> {}", rows, width, width), hot, cold, cold / hot);
    }
  }
}

}  // namespace

int main() {
  kernels::KernelContext kernels;
  const std::vector<Size> sizes = {{256, 1024, 1024}, {2048, 2048, 2048}};
  fmt::print("bench_fc: f32, threads {}\n", bench::thread_count());
  fmt::print("{:>22} {:>14} {:>14} {:>14}\n", "batch x in -> out", "matmul GF/s", "fwd GF/s",
             "fwd+bwd GF/s");
  for (const Size& s : sizes) {
    const double flops =
        2.0 * static_cast<double>(s.batch) * static_cast<double>(s.in) * static_cast<double>(s.out);
    const double raw = rotating_matmul_seconds(kernels, s, 1);

    nn::Linear layer(0, Shape{s.in}, s.out, /*bias=*/false);
    nn::Layer* layers[] = {&layer};
    nn::ParamBuffer params(layers);
    params.initialize(1);
    Tensor x(Shape{s.batch, s.in}), dy(Shape{s.batch, s.out});
    x.fill(0.5f);
    dy.fill(0.01f);
    const nn::LayerContext ctx{.kernels = kernels};
    const double forward = seconds_per_call([&] { (void)layer.forward(x, ctx); });
    const double forward_backward = seconds_per_call([&] {
      const nn::Forward f = layer.forward(x, ctx);
      (void)layer.backward(dy, f.saved, ctx);
    });
    fmt::print("{:>22} {:>14.1f} {:>14.1f} {:>14.1f}\n",
               fmt::format("{} x {} -> {}", s.batch, s.in, s.out), flops / raw * 1e-9,
               flops / forward * 1e-9, 3.0 * flops / forward_backward * 1e-9);
  }
  print_micro_batch_rows(kernels);
  return 0;
}
