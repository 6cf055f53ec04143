// Benchmark of the fully connected path: raw oneDNN matmul vs Linear forward vs forward+backward,
// then the matmul at micro-batch row counts with one weight reused, 8 in turn, or 8 prepacked, in
// GFLOP/s. Prints tables; asserts nothing about time.
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

// How a matmul y[batch, out] = x[batch, in] · B reads its weight B = [in, out]: stored as
// [in, out] rows (plain: a Linear's backward-data product, dx = dy · w, reads w so), stored
// [out, in] and read transposed (a Linear's forward, y = x · w^T), or reordered beforehand
// into oneDNN's blocked layout for the shape (packed).
enum class WeightLayout { kPlain, kTransposed, kPacked };

dnnl::memory::desc stored_weight_desc(const Size& s, WeightLayout layout) {
  using dnnl::memory;
  if (layout == WeightLayout::kPlain) return {{s.in, s.out}, memory::data_type::f32, {s.out, 1}};
  return {{s.in, s.out}, memory::data_type::f32, {1, s.in}};  // [out, in] rows, read transposed
}

dnnl::matmul::primitive_desc matmul_pd(kernels::KernelContext& ctx, const Size& s,
                                       WeightLayout layout) {
  using dnnl::memory;
  const memory::desc a({s.batch, s.in}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc c({s.batch, s.out}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc b =
      layout == WeightLayout::kPacked
          ? memory::desc({s.in, s.out}, memory::data_type::f32, memory::format_tag::any)
          : stored_weight_desc(s, layout);
  return {dnnl::matmul::desc(a, b, c), ctx.engine()};
}

// The matmul over `weights` distinct weights in turn, as a stage's layers call it: with one weight
// it stays in the caches between calls; with several whose bytes exceed the L2 cache, each call
// streams its weight from L3 or memory, as in a pipeline's forward of one micro-batch. Packed
// weights are reordered from the transposed layout before the timing.
double rotating_matmul_seconds(kernels::KernelContext& ctx, const Size& s, int weights,
                               WeightLayout layout) {
  using dnnl::memory;
  const dnnl::matmul::primitive_desc pd = matmul_pd(ctx, s, layout);
  const dnnl::matmul primitive(pd);
  Tensor x(Shape{s.batch, s.in}), y(Shape{s.batch, s.out});
  x.fill(0.5f);
  std::vector<Tensor> w;
  std::vector<memory> wm;
  for (int i = 0; i < weights; ++i) {
    w.emplace_back(Shape{s.in, s.out}).fill(0.25f);
    const WeightLayout stored = layout == WeightLayout::kPlain ? layout : WeightLayout::kTransposed;
    memory user(stored_weight_desc(s, stored), ctx.engine(), w.back().data());
    if (layout != WeightLayout::kPacked) {
      wm.push_back(user);
      continue;
    }
    memory packed(pd.weights_desc(), ctx.engine());
    dnnl::reorder(user, packed).execute(ctx.stream(), user, packed);
    ctx.stream().wait();
    wm.push_back(packed);
  }
  const memory xm(pd.src_desc(), ctx.engine(), x.data()), ym(pd.dst_desc(), ctx.engine(), y.data());
  int next = 0;
  return seconds_per_call([&] {
    primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, xm},
                                     {DNNL_ARG_WEIGHTS, wm[static_cast<size_t>(next)]},
                                     {DNNL_ARG_DST, ym}});
    ctx.stream().wait();
    next = (next + 1) % weights;
  });
}

// Seconds to reorder one [out, in] weight into the blocked layout of the matmul at `s`, over
// `weights` weights in turn (what packing a stage's weights once per step would cost).
double pack_seconds(kernels::KernelContext& ctx, const Size& s, int weights) {
  using dnnl::memory;
  const dnnl::matmul::primitive_desc pd = matmul_pd(ctx, s, WeightLayout::kPacked);
  const memory::desc stored = stored_weight_desc(s, WeightLayout::kTransposed);
  std::vector<Tensor> w;
  std::vector<memory> user, packed;
  for (int i = 0; i < weights; ++i) {
    w.emplace_back(Shape{s.in, s.out}).fill(0.25f);
    user.emplace_back(stored, ctx.engine(), w.back().data());
    packed.emplace_back(pd.weights_desc(), ctx.engine());
  }
  const dnnl::reorder reorder(user[0], packed[0]);
  int next = 0;
  return seconds_per_call([&] {
    const auto i = static_cast<size_t>(next);
    reorder.execute(ctx.stream(), user[i], packed[i]);
    ctx.stream().wait();
    next = (next + 1) % weights;
  });
}

void print_micro_batch_rows(kernels::KernelContext& kernels) {
  constexpr int kWeights = 8;
  fmt::print(
      "\nmatmul at micro-batch rows, GF/s: a Linear's forward (w^T) with one weight reused (cached "
      "if it fits) or {0} weights in turn, its backward-data product (w) over {0} weights, and the "
      "forward over {0} weights packed beforehand into oneDNN's blocked layout, which costs 'pack "
      "ms' per weight and pays for itself after 'calls' calls\n",
      kWeights);
  fmt::print("{:>22} {:>10} {:>10} {:>7} {:>10} {:>10} {:>8} {:>6}\n", "rows x in -> out",
             "1 weight", fmt::format("{} weights", kWeights), "ratio", "bwd-data", "packed",
             "pack ms", "calls");
  for (const int64_t width : {1024, 512}) {
    for (const int64_t rows : {256, 64, 32}) {
      const Size s{rows, width, width};
      const double flops = 2.0 * static_cast<double>(rows * width * width);
      const double hot = rotating_matmul_seconds(kernels, s, 1, WeightLayout::kTransposed);
      const double cold = rotating_matmul_seconds(kernels, s, kWeights, WeightLayout::kTransposed);
      const double data = rotating_matmul_seconds(kernels, s, kWeights, WeightLayout::kPlain);
      const double packed = rotating_matmul_seconds(kernels, s, kWeights, WeightLayout::kPacked);
      const double pack = pack_seconds(kernels, s, kWeights);
      const std::string calls =
          packed < cold ? fmt::format("{:.1f}", pack / (cold - packed)) : std::string("never");
      fmt::print("{:>22} {:>10.1f} {:>10.1f} {:>7.2f} {:>10.1f} {:>10.1f} {:>8.3f} {:>6}\n",
                 fmt::format("{} x {} -> {}", rows, width, width), flops / hot * 1e-9,
                 flops / cold * 1e-9, hot / cold, flops / data * 1e-9, flops / packed * 1e-9,
                 pack * 1e3, calls);
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
    const double raw = rotating_matmul_seconds(kernels, s, 1, WeightLayout::kPlain);

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
