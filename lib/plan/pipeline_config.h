// Pipeline settings (the `pipeline:` section of an experiment) and the names of their choices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/enum_names.h"

namespace mpipe::plan {

enum class ScheduleKind {
  kGpipe,
  kOneFOneB,
  kZbH1,         // 1F1B with the backward split into I and W, W ops filling the bubble (schedule.h)
  kInterleaved,  // interleaved 1F1B: v chunks per rank (virtual stages, schedule.h)
  kZbv,          // ZB-V: 2 chunks per rank in a V, backwards split into I and W (schedule.h)
  kAuto,  // the planner's choice among the others (pipeline/planner.h); never reaches a Stage
};
// What a stage stores per micro-batch between forward and backward (torchgpipe's checkpoint).
enum class Recompute {
  kAlways,      // only the stage input; forward re-run before backward
  kExceptLast,  // like kAlways but the last micro-batch keeps everything
  kNever,       // everything the layers return from forward
  kPerLayer,    // every layer's input; backward re-runs one layer's forward at a time
  kAuto,        // the planner's choice (pipeline/planner.h); never reaches a Stage
};

// How the layers with weights sum their weight gradients over a step's micro-batches (kBatched,
// kGrouped: linear layers; the others accumulate).
enum class WeightGrads {
  kAccumulate,  // added to the gradients micro-batch by micro-batch (one accumulating GEMM each)
  kBatched,     // one GEMM over all micro-batches after the last backward (holds their operands)
  // One GEMM per group of `weight_group` consecutive micro-batches (plan/weight_groups.h), after
  // the group's last backward, the groups added in ascending order (holds one group's operands).
  kGrouped,
  kTree,  // each micro-batch's gradients apart, summed in a fixed pairwise tree (GradientTree)
  // kBatched under GPipe with recompute never as configured (every micro-batch's activations are
  // kept until the backwards anyway), else kGrouped with weight_group: auto; on a resumed run, what
  // its checkpoint ran (PipelineConfig::resumed_weight_grads).
  kAuto,
};

// How the layers are split into stages.
enum class PartitionMode {
  kAuto,     // the exact min-max partition of the predicted stage times, within memory_limit
  kUniform,  // by layer count: counts differ by at most one, earlier stages get the extra layers
  kManual,   // the counts in `partition`
};

// What the `auto` partition balances.
enum class Balance {
  kPredicted,  // the planner's predicted times, once at start-up
  kMeasured,   // then the layers' times measured on the ranks: re-partitioned at run time
};

// The words of experiment files and logs (core/enum_names.h).
inline constexpr EnumNames<ScheduleKind, 6> kScheduleNames{
    {{"gpipe", ScheduleKind::kGpipe},
     {"1f1b", ScheduleKind::kOneFOneB},
     {"zb_h1", ScheduleKind::kZbH1},
     {"interleaved", ScheduleKind::kInterleaved},
     {"zbv", ScheduleKind::kZbv},
     {"auto", ScheduleKind::kAuto}}};
// The schedules `pipeline.schedule: auto` chooses among, in the order that breaks ties.
inline constexpr ScheduleKind kConcreteSchedules[] = {ScheduleKind::kGpipe, ScheduleKind::kOneFOneB,
                                                      ScheduleKind::kZbH1};
inline constexpr EnumNames<Recompute, 5> kRecomputeNames{{{"always", Recompute::kAlways},
                                                          {"except_last", Recompute::kExceptLast},
                                                          {"never", Recompute::kNever},
                                                          {"per_layer", Recompute::kPerLayer},
                                                          {"auto", Recompute::kAuto}}};
inline constexpr EnumNames<WeightGrads, 5> kWeightGradsNames{
    {{"accumulate", WeightGrads::kAccumulate},
     {"batched", WeightGrads::kBatched},
     {"grouped", WeightGrads::kGrouped},
     {"tree", WeightGrads::kTree},
     {"auto", WeightGrads::kAuto}}};
inline constexpr EnumNames<Balance, 2> kBalanceNames{
    {{"predicted", Balance::kPredicted}, {"measured", Balance::kMeasured}}};
inline constexpr EnumNames<PartitionMode, 3> kPartitionModeNames{
    {{"auto", PartitionMode::kAuto},
     {"uniform", PartitionMode::kUniform},
     {"manual", PartitionMode::kManual}}};

struct PipelineConfig {
  int stages = 1;         // K; 0 = auto (world size / data_parallel)
  int data_parallel = 1;  // D; 0 = auto (world size / stages)
  int micro_batches = 1;  // M
  // v: model chunks per rank (interleaved: chunk c of rank r is stage r + c·K of K·v stages;
  // zbv: 2, the V of pipeline/placement.h, implied when the key is absent).
  int virtual_stages = 1;
  ScheduleKind schedule = ScheduleKind::kGpipe;
  Recompute recompute = Recompute::kAuto;
  WeightGrads weight_grads = WeightGrads::kAuto;
  // Micro-batches per weight-gradient group under weight_grads: grouped (1 to M); 0 = auto
  // (plan::auto_weight_group, resolved by plan_pipeline).
  int weight_group = 0;
  // Not a setting: on a resumed run whose weight_grads is auto, what its checkpoint's run resolved
  // it to (train::resumed_weight_grads; kAuto: none, a new run) and its group under kGrouped (0
  // otherwise). auto keeps it, so that the weights go on as they were trained.
  WeightGrads resumed_weight_grads = WeightGrads::kAuto;
  int resumed_weight_group = 0;
  PartitionMode partition_mode = PartitionMode::kAuto;
  std::vector<int> partition;  // layers per stage, K·v of them (kManual only)
  int64_t memory_limit = 0;    // predicted peak bytes allowed per rank; 0 = no limit
  Balance balance = Balance::kPredicted;
  // Under kMeasured: the steps measured before the first re-partition, the steps between later
  // re-measurements (0: none), and the most moves of layers the run makes.
  int balance_after = 3;
  int balance_every = 0;
  int balance_moves = 1;
};

// Their names in experiment files: "always", "except_last", "never", "per_layer", "auto";
// "accumulate", "batched", "grouped", "tree", "auto"; "auto", "uniform", "manual".
std::string to_string(Recompute recompute);
std::string to_string(WeightGrads weight_grads);
std::string to_string(PartitionMode mode);
std::string to_string(Balance balance);

// weight_grads with auto resolved from the schedule and recompute mode as configured (not as the
// planner resolves schedule: auto or recompute: auto), so that the choice, and with it the
// result's bits, is the same at every stage count and memory limit: batched under gpipe with
// recompute never, else grouped (its weight_group resolved by plan_pipeline); on a resumed run the
// resumed choice, unless its group is over M.
// plan_pipeline calls it once and keeps the result (PipelinePlan::weight_grads), which
// everything after it reads.
WeightGrads resolve_weight_grads(const PipelineConfig& config);

// Whether resolve_weight_grads takes config.resumed_weight_grads.
bool keeps_resumed_weight_grads(const PipelineConfig& config);

}  // namespace mpipe::plan
