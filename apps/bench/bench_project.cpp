// Projects the step time and throughput of a model of identical blocks on K stages from measured
// per-op costs, with the calibrated timeline simulator (plan::project_blocks). Prints a table;
// scripts/bench/project.sh measures the costs and runs it.
//
//   bench_project --blocks 8 --batch 256 --micro-batches 8 --stages "1 2" --forward-ms 0.61
//                 --backward-ms 1.3 --transfer-ms 0.02 --update-ms 1.1 [--label predicted]
//                 [--schedules "gpipe interleaved"] [--virtual-stages 2] [--weight-ms 0.3]
// Each schedule is projected at each K; interleaved with --virtual-stages chunks per rank.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/schedule.h"
#include "plan/simulator.h"

int main(int argc, char** argv) {
  using mpipe::plan::BlockCosts;
  CLI::App app{"bench_project: calibrated pipeline projection"};
  int blocks = 8, micro_batches = 1;
  int64_t batch = 256;
  std::string stages = "1 2", label = "predicted", schedules = "gpipe";
  int virtual_stages = 2;
  double forward_ms = 0, backward_ms = 0, weight_ms = 0, head_forward_ms = 0, head_backward_ms = 0;
  double transfer_ms = 0, update_ms = 0, overhead_ms = 0;
  app.add_option("--blocks", blocks, "identical blocks of the model")->required();
  app.add_option("--batch", batch, "mini-batch size")->required();
  app.add_option("--micro-batches", micro_batches, "M")->required();
  app.add_option("--stages", stages, "stage counts to project, space-separated");
  app.add_option("--forward-ms", forward_ms, "one block's forward of one micro-batch")->required();
  app.add_option("--backward-ms", backward_ms, "one block's backward (with recompute)")->required();
  app.add_option("--weight-ms", weight_ms,
                 "the part of a block's backward its weight gradients take (zb_h1's W op)");
  app.add_option("--schedules", schedules, "schedules to project, space-separated");
  app.add_option("--virtual-stages", virtual_stages, "chunks per rank under interleaved");
  app.add_option("--head-forward-ms", head_forward_ms, "the last stage's extra layers and loss");
  app.add_option("--head-backward-ms", head_backward_ms, "their backward");
  app.add_option("--transfer-ms", transfer_ms, "one message between neighbouring stages");
  app.add_option("--update-ms", update_ms, "per block per step: zero grads, optimizer update");
  app.add_option("--overhead-ms", overhead_ms, "per step on every stage, whatever K");
  app.add_option("--label", label, "what the figures are: predicted, projected ...");
  CLI11_PARSE(app, argc, argv);

  const BlockCosts costs{.forward_s = 1e-3 * forward_ms,
                         .backward_s = 1e-3 * backward_ms,
                         .weight_s = 1e-3 * weight_ms,
                         .head_forward_s = 1e-3 * head_forward_ms,
                         .head_backward_s = 1e-3 * head_backward_ms,
                         .transfer_s = 1e-3 * transfer_ms,
                         .update_s = 1e-3 * update_ms,
                         .step_overhead_s = 1e-3 * overhead_ms};
  fmt::print(
      "costs per micro-batch of {} rows: block F {:.3f} ms, B {:.3f} ms (W {:.3f} ms of it); head "
      "F {:.3f} B {:.3f} ms; transfer {:.3f} ms; update {:.3f} ms per block; overhead {:.3f} ms "
      "per step\n",
      batch / micro_batches, forward_ms, backward_ms, weight_ms, head_forward_ms, head_backward_ms,
      transfer_ms, update_ms, overhead_ms);
  fmt::print("{:<15} {:>3} {:>4} {:>12} {:>12} {:>8} {:>10}   {}\n", "schedule", "K", "M",
             "step ms", "samples/s", "bubble", "vs K=1", "");
  try {
    std::istringstream schedule_list(schedules);
    for (std::string name; schedule_list >> name;) {
      const auto kind = mpipe::plan::parse_schedule_kind(name);
      const int chunks = kind == mpipe::plan::ScheduleKind::kInterleaved ? virtual_stages
                         : kind == mpipe::plan::ScheduleKind::kZbv       ? 2  // the V
                                                                         : 1;
      const std::string title = chunks > 1 ? fmt::format("{} v={}", name, chunks) : name;
      std::istringstream list(stages);
      double first = 0;
      for (int k = 0; list >> k;) {
        if (kind == mpipe::plan::ScheduleKind::kInterleaved && k == 1) continue;  // needs K > 1
        const auto p =
            mpipe::plan::project_blocks(costs, blocks, k, micro_batches, batch, kind, chunks);
        if (first == 0) {
          // Interleaved starts at K = 2: its speedup is against GPipe's K = 1, one stage.
          first = k == 1 ? p.samples_per_s
                         : mpipe::plan::project_blocks(costs, blocks, 1, micro_batches, batch)
                               .samples_per_s;
        }
        fmt::print("{:<15} {:>3} {:>4} {:>12.1f} {:>12.0f} {:>7.0f}% {:>9.2f}x   {}\n", title, k,
                   micro_batches, 1e3 * p.step_s, p.samples_per_s, 100 * p.bubble_fraction,
                   p.samples_per_s / first, label);
      }
    }
  } catch (const mpipe::Error& e) {  // a shape the schedule or the blocks do not allow
    fmt::print(stderr, "bench_project: {}\n", e.what());
    return 2;
  }
  return 0;
}
