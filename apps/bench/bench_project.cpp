// Projects the step time and throughput of a model of identical blocks on K stages from measured
// per-op costs, with the calibrated timeline simulator (pipeline::project_blocks). Prints a table;
// scripts/bench/project.sh measures the costs and runs it.
//
//   bench_project --blocks 8 --batch 256 --micro-batches 8 --stages "1 2" --forward-ms 0.61
//                 --backward-ms 1.3 --transfer-ms 0.02 --update-ms 1.1 [--label predicted]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/simulator.h"

int main(int argc, char** argv) {
  using mpipe::pipeline::BlockCosts;
  CLI::App app{"bench_project: calibrated pipeline projection"};
  int blocks = 8, micro_batches = 1;
  int64_t batch = 256;
  std::string stages = "1 2", label = "predicted";
  double forward_ms = 0, backward_ms = 0, head_forward_ms = 0, head_backward_ms = 0;
  double transfer_ms = 0, update_ms = 0, overhead_ms = 0;
  app.add_option("--blocks", blocks, "identical blocks of the model")->required();
  app.add_option("--batch", batch, "mini-batch size")->required();
  app.add_option("--micro-batches", micro_batches, "M")->required();
  app.add_option("--stages", stages, "stage counts to project, space-separated");
  app.add_option("--forward-ms", forward_ms, "one block's forward of one micro-batch")->required();
  app.add_option("--backward-ms", backward_ms, "one block's backward (with recompute)")->required();
  app.add_option("--head-forward-ms", head_forward_ms, "the last stage's extra layers and loss");
  app.add_option("--head-backward-ms", head_backward_ms, "their backward");
  app.add_option("--transfer-ms", transfer_ms, "one message between neighbouring stages");
  app.add_option("--update-ms", update_ms, "per block per step: zero grads, optimizer update");
  app.add_option("--overhead-ms", overhead_ms, "per step on every stage, whatever K");
  app.add_option("--label", label, "what the figures are: predicted, projected ...");
  CLI11_PARSE(app, argc, argv);

  const BlockCosts costs{.forward_s = 1e-3 * forward_ms,
                         .backward_s = 1e-3 * backward_ms,
                         .head_forward_s = 1e-3 * head_forward_ms,
                         .head_backward_s = 1e-3 * head_backward_ms,
                         .transfer_s = 1e-3 * transfer_ms,
                         .update_s = 1e-3 * update_ms,
                         .step_overhead_s = 1e-3 * overhead_ms};
  fmt::print(
      "costs per micro-batch of {} rows: block F {:.3f} ms, B {:.3f} ms; head F {:.3f} B {:.3f} "
      "ms; transfer {:.3f} ms; update {:.3f} ms per block; overhead {:.3f} ms per step\n",
      batch / micro_batches, forward_ms, backward_ms, head_forward_ms, head_backward_ms,
      transfer_ms, update_ms, overhead_ms);
  fmt::print("{:>3} {:>4} {:>12} {:>12} {:>8} {:>10}   {}\n", "K", "M", "step ms", "samples/s",
             "bubble", "vs K=1", "");
  std::istringstream list(stages);
  double first = 0;
  for (int k = 0; list >> k;) {
    const auto p = mpipe::pipeline::project_blocks(costs, blocks, k, micro_batches, batch);
    if (first == 0) first = p.samples_per_s;
    fmt::print("{:>3} {:>4} {:>12.1f} {:>12.0f} {:>7.0f}% {:>9.2f}x   {}\n", k, micro_batches,
               1e3 * p.step_s, p.samples_per_s, 100 * p.bubble_fraction, p.samples_per_s / first,
               label);
  }
  return 0;
}
