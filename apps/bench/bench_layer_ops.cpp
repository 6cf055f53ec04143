// Benchmark of the per-op cost beyond the products: a stage of BLOCKS x (Linear(N) + ReLU) run op
// by op through the layer interface, as a stage runs it, against the bare products on the same
// weights, at several row counts; prints each op's time per layer and its excess over the bare
// product, in ms. Asserts nothing about time.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench_timing.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "kernels/eltwise.h"
#include "kernels/matmul.h"
#include "nn/activation.h"
#include "nn/layer.h"
#include "nn/linear.h"
#include "nn/param_buffer.h"

namespace {

using namespace mpipe;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Per layer of a kind, ms: each layer's fastest op over the passes (a time slice lost to another
// process inflates the slower ones), averaged over the blocks.
struct OpTimes {
  double linear_forward = 0, linear_input = 0, linear_weight = 0;  // through the layers
  double relu_forward = 0, relu_backward = 0;
  double bare_forward = 0, bare_input = 0, bare_weight = 0;  // the kernels alone, same weights
};

OpTimes measure(int64_t rows, int blocks, int64_t n, int passes) {
  kernels::KernelContext kernels;
  std::vector<std::unique_ptr<nn::Layer>> owned;
  for (int b = 0; b < blocks; ++b) {
    owned.push_back(std::make_unique<nn::Linear>(2 * b, Shape{n}, n));
    owned.push_back(
        std::make_unique<nn::Activation>(2 * b + 1, Shape{n}, kernels::EltwiseKind::kRelu));
  }
  std::vector<nn::Layer*> layers;
  for (const auto& l : owned) layers.push_back(l.get());
  nn::ParamBuffer buffer(layers);
  buffer.initialize(1);
  const nn::LayerContext ctx{.kernels = kernels, .need_input_grad = true};
  // [op][block]: the fastest time so far; ops 0-2 linear F, I, W, 3-4 relu F, B, 5-7 bare F, I, W.
  std::vector<std::vector<double>> fastest(8,
                                           std::vector<double>(static_cast<size_t>(blocks), 1e30));
  const auto keep = [&fastest](size_t op, size_t block, double ms) {
    fastest[op][block] = std::min(fastest[op][block], ms);
  };
  Tensor input(Shape{rows, n});
  input.fill(0.5f);
  for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms up
    // The layers, as Stage::forward and a split backward (I then W) run them.
    std::vector<nn::Saved> saved(layers.size());
    Tensor x = input;
    for (size_t i = 0; i < layers.size(); ++i) {
      const Clock::time_point start = Clock::now();
      nn::Forward f = layers[i]->forward_consuming(std::move(x), ctx);
      if (pass > 0) keep(i % 2 == 0 ? 0 : 3, i / 2, ms_since(start));
      x = std::move(f.output);
      saved[i] = std::move(f.saved);
    }
    Tensor dy(Shape{rows, n});
    dy.fill(0.01f);
    for (size_t i = layers.size(); i-- > 0;) {
      Clock::time_point start = Clock::now();
      Tensor dx = layers[i]->backward_input(dy, saved[i], ctx);
      if (pass > 0) keep(i % 2 == 0 ? 1 : 4, i / 2, ms_since(start));
      if (i % 2 == 0) {
        start = Clock::now();
        layers[i]->backward_weight(dy, saved[i], ctx);
        if (pass > 0) keep(2, i / 2, ms_since(start));
      }
      dy = std::move(dx);
    }
    // The bare products on the same weights and gradients, preallocated operands, each kind in a
    // pass of its own over the weights (as calibrate_gemm_rate cycles through its copies).
    Tensor y(Shape{rows, n}), d(Shape{rows, n});
    y.fill(0.01f);
    const float* values = buffer.values().data();
    float* grads = buffer.grads().data();
    const std::function<void(const float*, float*)> products[] = {
        [&](const float* w, float*) {
          kernels::linear_forward(kernels, input.data(), w, nullptr, y.data(), rows, n, n);
        },
        [&](const float* w, float*) {
          kernels::linear_backward_data(kernels, y.data(), w, d.data(), rows, n, n);
        },
        [&](const float*, float* dw) {
          kernels::linear_backward_weights(kernels, input.data(), y.data(), dw, nullptr, rows, n,
                                           n);
        }};
    for (size_t product = 0; product < 3; ++product) {
      size_t block = 0;
      for (const nn::ParamBuffer::Entry& e : buffer.entries()) {
        if (e.shape.rank() != 2) continue;  // the weights; biases aside
        const Clock::time_point start = Clock::now();
        products[product](values + e.offset, grads + e.offset);
        if (pass > 0) keep(5 + product, block, ms_since(start));
        ++block;
      }
    }
  }
  const auto mean = [&fastest](size_t op) {
    double sum = 0.0;
    for (const double ms : fastest[op]) sum += ms;
    return sum / static_cast<double>(fastest[op].size());
  };
  return {.linear_forward = mean(0),
          .linear_input = mean(1),
          .linear_weight = mean(2),
          .relu_forward = mean(3),
          .relu_backward = mean(4),
          .bare_forward = mean(5),
          .bare_input = mean(6),
          .bare_weight = mean(7)};
}

}  // namespace

int main(int argc, char** argv) {
  // As `mpipe train` runs (apps/mpipe/main.cpp): without it each tensor of 128 KiB or more is
  // mapped and its pages faulted in (0.5 ms beyond a 256-row ReLU's 0.15).
  reuse_freed_tensor_memory();
  CLI::App app{"Per-op cost of linear and relu layers beyond their products"};
  std::vector<int64_t> rows = {1, 16, 32, 256};
  int blocks = 24, passes = 20;
  int64_t n = 1024;
  app.add_option("--rows", rows, "row counts (micro-batch rows)");
  app.add_option("--blocks", blocks, "Linear + ReLU blocks in the stage");
  app.add_option("--features", n, "the linear layers' width");
  app.add_option("--passes", passes, "timed passes over the stage per row count");
  CLI11_PARSE(app, argc, argv);
  fmt::print("{} x (Linear({}) + ReLU), {} passes, OMP threads {}; ms per layer, fastest pass\n",
             blocks, n, passes, bench::thread_count());
  fmt::print(
      "| rows | linear F | bare | excess | linear I | bare | excess | linear W | bare | excess | "
      "relu F | relu B |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const int64_t r : rows) {
    const OpTimes t = measure(r, blocks, n, passes);
    fmt::print(
        "| {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | "
        "{:.4f} | {:.4f} |\n",
        r, t.linear_forward, t.bare_forward, t.linear_forward - t.bare_forward, t.linear_input,
        t.bare_input, t.linear_input - t.bare_input, t.linear_weight, t.bare_weight,
        t.linear_weight - t.bare_weight, t.relu_forward, t.relu_backward);
  }
  return 0;
}
