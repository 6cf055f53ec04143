// Model FLOPs utilization: the planner's FLOP counts, the ranks' peak and their ratio.
#include "train/flop_utilization.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

#include "kernels/gemm_peak.h"

namespace mpipe::train {
namespace {

std::string gflops(double flops_per_s) {
  return flops_per_s >= 1e11 ? fmt::format("{:.0f}", flops_per_s / 1e9)
                             : fmt::format("{:.3g}", flops_per_s / 1e9);
}

}  // namespace

StepFlops step_flops(const plan::PipelinePlan& plan, int num_replicas) {
  StepFlops flops;
  for (const plan::StagePlan& stage : plan.stages) {
    flops.model += stage.forward_flops + stage.backward_flops;
    flops.hardware += stage.forward_flops + stage.backward_flops + stage.recompute_flops;
  }
  flops.model *= num_replicas;
  flops.hardware *= num_replicas;
  return flops;
}

WorldPeak world_peak(const log::LogConfig& config, kernels::KernelContext& kernels,
                     const comm::Communicator& world) {
  WorldPeak peak;
  peak.ranks = world.size();
  double mine = config.peak_flops;
  if (config.peak_flops <= 0) {
    const kernels::GemmPeak gemm = kernels::measure_gemm_peak(kernels);
    mine = gemm.flops_per_s;
    peak.measured = true;
    peak.gemm_size = gemm.size;
    peak.threads = gemm.threads;
    peak.gemm_seconds = gemm.seconds;
  }
  const std::vector<double> all = world.allgatherv(std::span<const double>(&mine, 1));
  for (double rank : all) peak.flops_per_s += rank;
  peak.slowest_rank = *std::ranges::min_element(all);
  peak.fastest_rank = *std::ranges::max_element(all);
  return peak;
}

std::string describe_peak(const WorldPeak& peak, const StepFlops& flops,
                          const std::string& precision) {
  const std::string source =
      peak.measured
          ? fmt::format("measured: {}^3 {} GEMM, {} thread{}, {:.2f} s", peak.gemm_size, precision,
                        peak.threads, peak.threads == 1 ? "" : "s", peak.gemm_seconds)
          : std::string("log.peak_flops");
  const std::string spread =
      peak.ranks > 1 && peak.measured
          ? fmt::format("; ranks {}-{}", gflops(peak.slowest_rank), gflops(peak.fastest_rank))
          : std::string();
  return fmt::format(
      "peak {} GFLOP/s per rank ({}{}), {} GFLOP/s over {} rank{}; a step is {:.3g} GFLOP of the "
      "model ({:.3g} with recompute; MFU counts the model's, HFU also the recomputes)",
      gflops(peak.flops_per_s / peak.ranks), source, spread, gflops(peak.flops_per_s), peak.ranks,
      peak.ranks == 1 ? "" : "s", flops.model / 1e9, flops.hardware / 1e9);
}

log::FlopUtilization flop_utilization(const StepFlops& flops, const WorldPeak& peak, double steps,
                                      double seconds) {
  if (steps <= 0 || seconds <= 0 || peak.flops_per_s <= 0) return {};
  const double achievable = peak.flops_per_s * seconds;
  return {.mfu = steps * flops.model / achievable, .hfu = steps * flops.hardware / achievable};
}

}  // namespace mpipe::train
