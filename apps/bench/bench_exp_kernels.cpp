// Benchmark of mpipe's kernels that take exp (SwiGLU forward and backward, the softmax
// cross-entropy with its gradient) at gpt_kjv's shapes, next to Eigen's and oneDNN's eltwise exp
// over the same logits for comparison, in ms of CPU time per call. Prints a table; asserts nothing
// about time.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cstdint>
#include <ctime>
#include <dnnl.hpp>
#include <functional>

#include "bench_timing.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "kernels/softmax_cross_entropy.h"
#include "kernels/swiglu.h"

namespace {

using namespace mpipe;

// n values uniform in [low, high), in a Tensor: 64-byte aligned, as mpipe's activations are.
Tensor random_values(int64_t n, uint64_t stream, float low, float high) {
  Tensor t(Shape{n});
  CounterRng(1, RngPurpose::kData, 0, stream).fill_uniform(t.span());
  for (float& v : t.span()) v = low + (high - low) * v;
  return t;
}

// Seconds of this process's CPU time per call (repeated for at least `min_seconds` of it): on a
// loaded machine the time the process waits for a core does not count, as it would in wall time.
double cpu_seconds_per_call(const std::function<void()>& call, double min_seconds) {
  const auto cpu_seconds = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  call();
  call();
  int calls = 0;
  const double start = cpu_seconds();
  double elapsed = 0.0;
  do {
    call();
    ++calls;
    elapsed = cpu_seconds() - start;
  } while (elapsed < min_seconds || calls < 3);
  return elapsed / calls;
}

}  // namespace

int main(int argc, char** argv) {
  // gpt_kjv at K = 1, M = 1: 16 sequences of 128 tokens, SwiGLU hidden 3 · 128, 4096 classes.
  int64_t rows = 2048, hidden = 384, classes = 4096;
  double min_seconds = 1.0;
  CLI::App app("Times mpipe's exp-taking kernels (SwiGLU, softmax cross-entropy)");
  app.add_option("--rows", rows, "rows (positions) per call");
  app.add_option("--hidden", hidden, "SwiGLU's hidden width");
  app.add_option("--classes", classes, "classes of the cross-entropy");
  app.add_option("--min-seconds", min_seconds, "each timing repeats for at least this long");
  CLI11_PARSE(app, argc, argv);

  kernels::KernelContext ctx;
  const auto gate_up = random_values(rows * 2 * hidden, 1, -6.0f, 6.0f);
  const auto dout = random_values(rows * hidden, 2, -1.0f, 1.0f);
  Tensor out(Shape{rows * hidden}), dgate_up(Shape{rows * 2 * hidden});
  const auto logits = random_values(rows * classes, 3, -8.0f, 8.0f);
  auto targets = random_values(rows, 4, 0.0f, static_cast<float>(classes));
  for (float& t : targets.span()) t = static_cast<float>(static_cast<int64_t>(t));
  Tensor grad(Shape{rows * classes});

  const auto ms = [&](const std::function<void()>& call) {
    return 1e3 * cpu_seconds_per_call(call, min_seconds);
  };
  fmt::print("exp-taking kernels, {} thread(s), rows {}, hidden {}, classes {}\n",
             bench::thread_count(), rows, hidden, classes);
  fmt::print("{:<40} {:>10}\n", "kernel", "cpu ms/call");
  fmt::print("{:<40} {:>10.3f}\n", "swiglu_forward",
             ms([&] { kernels::swiglu_forward(gate_up.data(), out.data(), rows, hidden); }));
  fmt::print("{:<40} {:>10.3f}\n", "swiglu_backward", ms([&] {
               kernels::swiglu_backward(gate_up.data(), dout.data(), dgate_up.data(), rows, hidden);
             }));
  fmt::print("{:<40} {:>10.3f}\n", "softmax_cross_entropy (with gradient)", ms([&] {
               kernels::softmax_cross_entropy(ctx, logits.data(), targets.data(), rows, classes,
                                              1.0f, grad.data());
             }));

  // For comparison, the gradient's exp alone over the logits: Eigen's and oneDNN's eltwise.
  fmt::print("{:<40} {:>10.3f}\n", "Eigen exp over the logits", ms([&] {
               Eigen::Map<Eigen::ArrayXf>(grad.data(), rows * classes) =
                   Eigen::Map<const Eigen::ArrayXf>(logits.data(), rows * classes).exp();
             }));
  using dnnl::memory;
  const memory::desc desc({rows, classes}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::eltwise_forward exp_primitive(dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_exp,
                                  desc),
      ctx.engine()));
  memory src(desc, ctx.engine(), const_cast<float*>(logits.data()));
  memory dst(desc, ctx.engine(), grad.data());
  fmt::print("{:<40} {:>10.3f}\n", "oneDNN eltwise exp over the logits", ms([&] {
               exp_primitive.execute(ctx.stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
               ctx.stream().wait();
             }));
  return 0;
}
