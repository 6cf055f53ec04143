// Benchmark of mpipe's communication under mpirun -n 2 (shared memory, or `--mca btl tcp,self`):
// transfer time by message size (ping-pong), and the share of transfer time hidden behind
// compute, for a stage's activation exchange and its bucketed gradient allreduce: without
// progress, with tests between layers (what the executor does), and with the MPI progress thread
// (comm::ProgressThread, calling into MPI every `pause_us` microseconds; 0 = spin) instead of the
// tests. Prints tables; asserts nothing about time.
//
//   mpirun -n 2 --bind-to core build/release/apps/bench/bench_comm [rows=32] [blocks=4]
//       [pause_us=comm::ProgressThread::kDefaultPause]
//
// The progress thread needs a core of its own to pay off: bind each rank to two cores
// (`--map-by slot:PE=2`, OMP_NUM_THREADS=1) where the machine has them.
//
// hidden share = 1 - (overlapped - compute alone) / transfer alone, clamped to [0, 1], each time
// the fastest of the repeats (run interleaved): how much of the transfer's own time no longer adds
// to the step. Where the transfer alone is far shorter than the noise of the compute (activations
// on shared memory), read the milliseconds rather than the share.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "comm/bucketed_allreduce.h"
#include "comm/communicator.h"
#include "comm/progress_thread.h"
#include "kernels/context.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "pipeline/executor.h"
#include "pipeline/stage.h"

namespace {

using namespace mpipe;
using Clock = std::chrono::steady_clock;

constexpr int kRepeats = 15;
constexpr int64_t kWidth = 1024;

// One measured way of running something: `prepare` (untimed, may be empty), then `body` (timed),
// then `finish` (untimed, may be empty).
struct Variant {
  std::function<void()> prepare;
  std::function<void()> body;
  std::function<void()> finish = {};
};

// Starts and stops a progress thread around a variant's body.
class ThreadSwitch {
 public:
  explicit ThreadSwitch(std::chrono::microseconds pause) : pause_(pause) {}
  void on() { thread_.emplace(pause_); }
  void off() { thread_.reset(); }

 private:
  std::chrono::microseconds pause_;
  std::optional<comm::ProgressThread> thread_;
};

// The fastest time of each variant over kRepeats rounds. Each round runs every variant once in
// turn (interleaved, so a slow spell of a shared machine hits all of them alike), each started
// together on both ranks (a barrier); per variant, the slower rank's best (a step ends when both
// are done).
std::vector<double> fastest(const comm::Communicator& world, const std::vector<Variant>& variants) {
  std::vector<double> best(variants.size(), 1e30);
  for (int r = 0; r < kRepeats; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (variants[v].prepare) variants[v].prepare();
      world.barrier();
      const auto start = Clock::now();
      variants[v].body();
      best[v] = std::min(best[v], std::chrono::duration<double>(Clock::now() - start).count());
      if (variants[v].finish) variants[v].finish();
    }
  }
  for (double& b : best) {
    const std::vector<double> both = world.allgatherv(std::vector<double>{b});
    b = *std::max_element(both.begin(), both.end());
  }
  return best;
}

double fastest(const comm::Communicator& world, const std::function<void()>& body) {
  return fastest(world, std::vector<Variant>{{.prepare = {}, .body = body}}).front();
}

// One-way time of a message of `floats` floats: half a ping-pong round trip.
double one_way_seconds(const comm::Communicator& world, size_t floats) {
  std::vector<float> buffer(floats, 1.0f);
  const int peer = 1 - world.rank();
  return 0.5 * fastest(world, [&] {
           if (world.rank() == 0) {
             world.isend(buffer, peer, 1).wait();
             world.irecv(buffer, peer, 2).wait();
           } else {
             world.irecv(buffer, peer, 1).wait();
             world.isend(buffer, peer, 2).wait();
           }
         });
}

// `blocks` x (Linear(1024, 1024) + ReLU), as one stage of configs/scaling_mlp.yaml.
std::unique_ptr<pipeline::Stage> make_stage(int blocks) {
  std::vector<std::unique_ptr<nn::Layer>> layers;
  for (int b = 0; b < blocks; ++b) {
    layers.push_back(std::make_unique<nn::Linear>(2 * b, Shape{kWidth}, kWidth));
    layers.push_back(
        std::make_unique<nn::Activation>(2 * b + 1, Shape{kWidth}, kernels::EltwiseKind::kRelu));
  }
  auto stage = std::make_unique<pipeline::Stage>(std::move(layers), plan::Recompute::kNever, 1);
  stage->params().initialize(1);
  return stage;
}

struct Overlap {
  double transfer = 0, compute = 0, without_progress = 0, with_progress = 0, with_thread = 0;
  double hidden(double overlapped) const {
    return std::clamp(1.0 - (overlapped - compute) / transfer, 0.0, 1.0);
  }
};

void print_overlap(const char* what, const Overlap& o) {
  fmt::print(
      "{:<34} {:>10.3f} {:>10.3f} {:>12.3f} {:>8.0f}% {:>12.3f} {:>8.0f}% {:>12.3f} {:>8.0f}%\n",
      what, 1e3 * o.transfer, 1e3 * o.compute, 1e3 * o.without_progress,
      100 * o.hidden(o.without_progress), 1e3 * o.with_progress, 100 * o.hidden(o.with_progress),
      1e3 * o.with_thread, 100 * o.hidden(o.with_thread));
}

// Both ranks exchange one activation-sized message (rows x 1024 floats) each way while running
// a stage's forward, as neighbouring stages do; the receive is posted first, the send goes out in
// place.
Overlap activation_exchange(const comm::Communicator& world, pipeline::Stage& stage,
                            kernels::KernelContext& kernels, int64_t rows, ThreadSwitch& thread) {
  const int peer = 1 - world.rank();
  Tensor values(Shape{rows, kWidth});
  values.fill(0.5f);
  pipeline::Bundle x = pipeline::bundle_of(std::move(values));
  const nn::LayerContext ctx{.kernels = kernels, .training = false};
  auto outgoing = std::make_shared<Tensor>(Shape{rows, kWidth});
  Tensor incoming(Shape{rows, kWidth});
  std::vector<comm::Request> requests;
  auto post = [&] {
    requests.clear();
    requests.push_back(world.irecv(incoming.span(), peer, 3));
    requests.push_back(world.isend(outgoing->span(), outgoing, peer, 3));
  };
  auto wait = [&] {
    for (comm::Request& r : requests) r.wait();
  };
  auto test = [&](int, bool) {
    for (comm::Request& r : requests) r.test();
  };
  auto exchange = [&] {
    post();
    (void)stage.evaluate(x, ctx);
    wait();
  };
  auto no_hook = [&] { stage.set_layer_hook({}); };
  const std::vector<double> t =
      fastest(world, {{.prepare = no_hook,
                       .body =
                           [&] {
                             post();
                             wait();
                           }},
                      {.prepare = no_hook, .body = [&] { (void)stage.evaluate(x, ctx); }},
                      {.prepare = no_hook, .body = exchange},
                      {.prepare = [&] { stage.set_layer_hook(test); }, .body = exchange},
                      {.prepare =
                           [&] {
                             no_hook();
                             thread.on();
                           },
                       .body = exchange,
                       .finish = [&] { thread.off(); }}});
  stage.set_layer_hook({});
  return {.transfer = t[0],
          .compute = t[1],
          .without_progress = t[2],
          .with_progress = t[3],
          .with_thread = t[4]};
}

// Both ranks are replicas of one stage: the backward of the step's last micro-batch, then the
// gradient allreduce in per-layer buckets (pipeline::gradient_buckets). Without progress the
// buckets start when the backward is done (one allreduce after the step); with it each layer's
// bucket starts after its backward and the layer hook drives progress, as the executor does; with
// the thread each bucket starts there too, and the thread alone drives progress.
Overlap gradient_allreduce(const comm::Communicator& world, pipeline::Stage& stage,
                           kernels::KernelContext& kernels, int64_t rows, ThreadSwitch& thread) {
  Tensor x(Shape{rows, kWidth}), dy(Shape{rows, kWidth});
  x.fill(0.5f);
  dy.fill(0.01f);
  const nn::LayerContext ctx{.kernels = kernels};
  const pipeline::RankBuckets buckets = pipeline::rank_gradient_buckets({&stage.params()});
  // The timed part is the backward (its forward is run before, untimed); the buffer keeps
  // accumulating, which changes nothing in the time.
  enum class During { kNothing, kStartAndTest, kStart };
  auto backward = [&](During during) {
    comm::BucketedAllreduce reduction(world, buckets.buckets);
    stage.set_layer_hook([&](int layer, bool is_backward) {
      if (during == During::kNothing) return;
      const auto it = buckets.first_of_layer.find(layer);
      if (is_backward && it != buckets.first_of_layer.end()) reduction.start_from(it->second);
      if (during == During::kStartAndTest) reduction.progress();
    });
    (void)stage.backward(0, pipeline::bundle_of(Tensor(dy)), ctx);
    reduction.finish();
    stage.set_layer_hook({});
  };
  auto forward = [&] { (void)stage.forward(0, pipeline::bundle_of(Tensor(x)), ctx); };
  const std::vector<double> t = fastest(
      world, {{.prepare = {},
               .body =
                   [&] {
                     comm::BucketedAllreduce reduction(world, buckets.buckets);
                     reduction.finish();
                   }},
              {.prepare = forward,
               .body = [&] { (void)stage.backward(0, pipeline::bundle_of(Tensor(dy)), ctx); }},
              {.prepare = forward, .body = [&] { backward(During::kNothing); }},
              {.prepare = forward, .body = [&] { backward(During::kStartAndTest); }},
              {.prepare =
                   [&] {
                     forward();
                     thread.on();
                   },
               .body = [&] { backward(During::kStart); },
               .finish = [&] { thread.off(); }}});
  return {.transfer = t[0],
          .compute = t[1],
          .without_progress = t[2],
          .with_progress = t[3],
          .with_thread = t[4]};
}

}  // namespace

int main(int argc, char** argv) {
  comm::Environment environment(&argc, &argv);
  const comm::Communicator world = comm::Communicator::world();
  if (world.size() != 2) {
    if (world.rank() == 0) fmt::print(stderr, "bench_comm: run it with mpirun -n 2\n");
    return 2;
  }
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 32;
  const int blocks = argc > 2 ? std::atoi(argv[2]) : 4;
  const std::chrono::microseconds pause = argc > 3 ? std::chrono::microseconds(std::atoi(argv[3]))
                                                   : comm::ProgressThread::kDefaultPause;
  ThreadSwitch thread(pause);
  const bool print = world.rank() == 0;
  kernels::KernelContext kernels;

  if (print) {
    fmt::print("bench_comm: 2 ranks, threads per rank {}, fastest of {} interleaved runs\n",
               bench::thread_count(), kRepeats);
    fmt::print("\ntransfer time by message size (one way, half a ping-pong):\n");
    fmt::print("{:>12} {:>12} {:>12}\n", "bytes", "us", "GB/s");
  }
  for (size_t floats = 1; floats <= (size_t{1} << 22); floats *= 4) {
    const double s = one_way_seconds(world, floats);
    if (print) fmt::print("{:>12} {:>12.1f} {:>12.2f}\n", 4 * floats, 1e6 * s, 4e-9 * floats / s);
  }

  auto stage = make_stage(blocks);
  const Overlap exchange = activation_exchange(world, *stage, kernels, rows, thread);
  const Overlap allreduce = gradient_allreduce(world, *stage, kernels, rows, thread);
  if (print) {
    fmt::print(
        "\noverlap with compute ({} buckets): {} x (Linear(1024,1024) + ReLU), {} rows; ms; hidden "
        "= 1 - (overlapped - compute) / transfer; progress: tests between layers; thread: the "
        "progress thread (a call every {} us) instead\n",
        pipeline::gradient_buckets(stage->params()).size(), blocks, rows, pause.count());
    fmt::print("{:<34} {:>10} {:>10} {:>12} {:>9} {:>12} {:>9} {:>12} {:>9}\n", "transfer", "alone",
               "compute", "no progress", "hidden", "progress", "hidden", "thread", "hidden");
    print_overlap(fmt::format("activations {} KB each way", rows * kWidth * 4 / 1024).c_str(),
                  exchange);
    print_overlap(
        fmt::format("gradient allreduce {:.1f} MB", 4e-6 * stage->params().grads().size()).c_str(),
        allreduce);
  }
  return 0;
}
