// WeightGroups: which of a step's micro-batches share one weight-gradient product (pipeline
// weight_grads: batched and grouped), decided in one place from M and the group size alone.
#pragma once

#include "plan/pipeline_config.h"

namespace mpipe::plan {

// Groups of `size` consecutive micro-batches: [0, size), [size, 2·size), ..., the last shorter
// when size does not divide M. Each group's linear layers stack its micro-batches' rows into one
// product, and the groups' products are added into the gradients in ascending group order, so
// the arithmetic depends on M and the size only (never on K, the schedule, the partition or
// recompute). batched is one group of M; accumulate, tree and grouped with a size of 1 defer
// nothing (each micro-batch's product is its own).
struct WeightGroups {
  int micro_batches = 1;
  int size = 1;
  // Whether backwards copy their operands for a group's product (a group op, OpKind::
  // kWeightGradsBatched, per group): groups of more than one micro-batch.
  bool deferred() const { return size > 1; }
  int count() const { return (micro_batches + size - 1) / size; }
  int group_of(int micro_batch) const { return micro_batch / size; }
  int first(int group) const { return group * size; }
  int last(int group) const;  // its last micro-batch
  int size_of(int group) const { return last(group) - first(group) + 1; }
};

// The groups `weight_grads` (resolved, not kAuto) makes of `micro_batches`: batched one of all,
// grouped of `weight_group` (resolved: 1 to M), the others of one.
WeightGroups weight_groups(WeightGrads weight_grads, int micro_batches, int weight_group);

// `pipeline.weight_group: auto`: the fewest micro-batches whose stacked rows reach 256, where a
// micro-batch's weight-gradient product has `product_rows` rows (its examples times the positions
// of the model's main linear layer); at most M. It depends on the model and M alone, never on K,
// so grouped runs stay bit-identical across K. (256 rows: scaling_mlp's 1024 x 1024 weight
// gradient runs at 79-90 GFLOP/s there, 43 at 16 rows; zb_h1 and interleaved at K = 2, M = 8 ran
// fastest with groups of 8 of 32 rows: docs/benchmarks.md, "Grouped weight gradients".)
int auto_weight_group(long product_rows, int micro_batches);

}  // namespace mpipe::plan
