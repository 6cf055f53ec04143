// Stage peak memory from prefix sums of the layers' costs.
#include "plan/memory_model.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <optional>

#include "core/error.h"

namespace mpipe::plan {
namespace {

std::vector<double> prefix_sums(const std::vector<LayerCost>& costs, auto value) {
  std::vector<double> prefix(costs.size() + 1, 0.0);
  for (size_t i = 0; i < costs.size(); ++i) prefix[i + 1] = prefix[i] + value(costs[i]);
  return prefix;
}

// Sparse table of range maxima: table[k][i] = max of values[i, i + 2^k).
std::vector<std::vector<double>> range_max_table(std::vector<double> values) {
  std::vector<std::vector<double>> table;
  table.push_back(std::move(values));
  for (size_t width = 2; width <= table.front().size(); width *= 2) {
    const std::vector<double>& prev = table.back();
    std::vector<double> next(table.front().size() - width + 1);
    for (size_t i = 0; i < next.size(); ++i) next[i] = std::max(prev[i], prev[i + width / 2]);
    table.push_back(std::move(next));
  }
  return table;
}

double range_max(const std::vector<std::vector<double>>& table, int begin, int end) {
  const auto width = static_cast<unsigned>(end - begin);
  const auto level = static_cast<size_t>(std::bit_width(width) - 1);
  const std::vector<double>& row = table[level];
  return std::max(row[static_cast<size_t>(begin)],
                  row[static_cast<size_t>(end) - (size_t{1} << level)]);
}

// What layer c holds while a per-layer recompute re-runs its forward, beside the inputs kept: what
// it saves, its output and the gradient waiting for it, and its forward's internals.
double per_layer_recompute_blocks(const LayerCost& c, int64_t rows,
                                  const AllocatorModel& allocator) {
  const auto r = static_cast<double>(rows);
  return c.kept_block_bytes(rows, allocator) + 2.0 * allocator.block_bytes(r * c.output_bytes) +
         allocator.blocks_bytes(r * c.forward_workspace_bytes, r * c.smallest_temporary_bytes);
}

}  // namespace

MemoryModel::MemoryModel(std::vector<LayerCost> costs, int64_t rows, int optimizer_slots,
                         AllocatorModel allocator, ValueCosts values, int optimizer_shards)
    : costs_(std::move(costs)),
      values_(std::move(values)),
      rows_(rows),
      optimizer_slots_(optimizer_slots),
      optimizer_shards_(optimizer_shards),
      allocator_(allocator) {
  check(rows_ >= 1 && optimizer_slots_ >= 0 && optimizer_shards_ >= 1,
        "MemoryModel: rows {}, optimizer slots {} and shards {}", rows_, optimizer_slots_,
        optimizer_shards_);
  params_ = prefix_sums(costs_, [](const LayerCost& c) { return c.param_bytes; });
  buffers_ = prefix_sums(costs_, [](const LayerCost& c) { return c.buffer_bytes; });
  kept_ = prefix_sums(costs_,
                      [this](const LayerCost& c) { return c.kept_block_bytes(rows_, allocator_); });
  // A layer's temporaries while it runs: in backward its input and output gradients and a
  // composite layer's internals; in forward its input, output and internals (attention's
  // masks), plus what it saves when a discarding forward drops that after the layer (otherwise
  // it is in the stash); a per-layer recompute's first forward drops what each layer saves but
  // keeps its input in the stash.
  // A stage's first layer copies its input (the stage keeps it, or the caller holds it); the
  // others are handed theirs (Layer::forward_consuming).
  std::vector<double> backward, forward, discarding, per_layer_forward, forward_consumed,
      discarding_consumed, evaluation;
  for (const LayerCost& c : costs_) {
    const double kept = c.kept_block_bytes(rows_, allocator_);
    backward.push_back(c.backward_block_bytes(rows_, allocator_));
    evaluation.push_back(c.evaluation_block_bytes(rows_, allocator_));
    backward_input_at_.push_back(c.backward_input_block_bytes(rows_, allocator_));
    forward.push_back(c.forward_block_bytes(rows_, false, allocator_));
    discarding.push_back(forward.back() + kept);
    forward_consumed.push_back(c.forward_block_bytes(rows_, true, allocator_));
    discarding_consumed.push_back(forward_consumed.back() + kept);
  }
  inputs_ = prefix_sums(costs_, [this](const LayerCost& c) { return block(c.input_bytes); });
  pending_weight_blocks_ = prefix_sums(
      costs_, [this](const LayerCost& c) { return c.weight_work_block_bytes(rows_, allocator_); });
  // In its I, a micro-batch's layers done so far hold their W's tensors (their output gradients
  // among them) in place of what they saved: under per-layer recompute the stash holds only
  // their inputs (freed by then), otherwise it counts what they saved.
  for (const LayerCost& c : costs_) {
    const double held = c.weight_work_block_bytes(rows_, allocator_);
    weight_work_held_.push_back(held);
    weight_work_beyond_saved_.push_back(
        c.splits_backward ? held - c.kept_block_bytes(rows_, allocator_) : 0.0);
  }
  // At layer i of a per-layer recompute's first forward, the micro-batch has kept the inputs of
  // layers up to i (the later ones are not there yet) and holds layer i's temporaries.
  for (size_t i = 0; i < costs_.size(); ++i) {
    per_layer_forward.push_back(inputs_[i + 1] + discarding[i] - block(costs_[i].input_bytes));
  }
  // At layer i of a per-layer backward: while it is recomputed, the inputs of the layers up to i,
  // its output, what it saves (and its forward internals) and the gradient waiting for it;
  // then, its input freed, the inputs before i, what it saved and its backward temporaries.
  // (The same for a micro-batch's I: its layer's I temporaries.)
  std::vector<double> per_layer_backward;
  for (size_t i = 0; i < costs_.size(); ++i) {
    const LayerCost& c = costs_[i];
    const double kept = c.kept_block_bytes(rows_, allocator_);
    const double recomputing = inputs_[i + 1] + per_layer_recompute_blocks(c, rows_, allocator_);
    per_layer_backward.push_back(std::max(recomputing, inputs_[i] + kept + backward[i]));
    per_layer_backward_input_at_.push_back(
        std::max(recomputing, inputs_[i] + kept + backward_input_at_[i]));
  }
  std::vector<double> recompute_forward;
  for (size_t i = 0; i < costs_.size(); ++i) {
    recompute_forward.push_back(kept_[i + 1] + forward_consumed[i]);
  }
  recompute_forward_ = range_max_table(std::move(recompute_forward));
  per_layer_backward_ = range_max_table(std::move(per_layer_backward));
  backward_ = range_max_table(std::move(backward));
  forward_ = range_max_table(std::move(forward));
  discarding_ = range_max_table(std::move(discarding));
  forward_consumed_ = range_max_table(std::move(forward_consumed));
  discarding_consumed_ = range_max_table(std::move(discarding_consumed));
  evaluation_ = range_max_table(std::move(evaluation));
  per_layer_forward_ = range_max_table(std::move(per_layer_forward));
  if (allocator_.rounds) {
    tensors_ = std::make_shared<const MemoryModel>(
        costs_, rows_, optimizer_slots_, AllocatorModel::exact(), values_, optimizer_shards_);
  }
}

double MemoryModel::block(double bytes_per_example) const {
  return allocator_.block_bytes(static_cast<double>(rows_) * bytes_per_example);
}

double MemoryModel::layer_inputs(int begin, int end) const { return sum(inputs_, begin, end); }

double MemoryModel::per_layer_backward(int begin, int end) const {
  return range_max(per_layer_backward_, begin, end) - inputs_[static_cast<size_t>(begin)];
}

double MemoryModel::recompute_forward(int begin, int end) const {
  // The stage's first layer copies its input (the stash keeps it), the others take theirs over.
  const auto b = static_cast<size_t>(begin);
  double most = kept_[b + 1] + range_max(forward_, begin, begin + 1);
  if (end - begin > 1) most = std::max(most, range_max(recompute_forward_, begin + 1, end));
  return most - kept_[static_cast<size_t>(end)] +
         block(costs_[static_cast<size_t>(end - 1)].output_bytes);
}

double MemoryModel::splitting_backward(int begin, int end, const std::vector<double>& at,
                                       double offset, const std::vector<double>& beyond) const {
  double most = 0.0, done = 0.0;
  for (auto i = static_cast<size_t>(end); i-- > static_cast<size_t>(begin);) {
    most = std::max(most, at[i] - offset + done);
    done += beyond[i];
  }
  return most;
}

double MemoryModel::sum(const std::vector<double>& prefix, int begin, int end) const {
  return prefix[static_cast<size_t>(end)] - prefix[static_cast<size_t>(begin)];
}

double MemoryModel::full_micro_batch(int begin, int end) const { return sum(kept_, begin, end); }

StageMemory MemoryModel::stage(int begin, int end, const StashProfile& stash, bool first_stage,
                               bool last_stage) const {
  if (!tensors_) return stage_in_blocks(begin, end, stash, first_stage, last_stage);
  StageMemory m = tensors_->stage(begin, end, stash, first_stage, last_stage);
  m.allocator_rounding =
      stage_in_blocks(begin, end, stash, first_stage, last_stage).total() - m.total();
  return m;
}

StageMemory MemoryModel::stage_in_blocks(int begin, int end, const StashProfile& stash,
                                         bool first_stage, bool last_stage) const {
  check(0 <= begin && begin < end && end <= num_layers(),
        "MemoryModel::stage: layers [{}, {}) of {}", begin, end, num_layers());
  const LayerCost& first = costs_[static_cast<size_t>(begin)];
  const LayerCost& last = costs_[static_cast<size_t>(end - 1)];
  // A model that is not a chain: what the stage's value and gradient tables hold beside the
  // layers' own tensors (walk_stage).
  std::optional<StageValues> walk;
  if (!values_.empty()) walk = this->walk(begin, end);
  // Every tensor as the allocator's block (AllocatorModel): one micro-batch's stage input (every
  // value of its live set) and output, a micro-batch in full.
  const double input = walk ? walk->input : block(first.input_bytes);
  const double output = block(last.output_bytes);
  const double full = full_micro_batch(begin, end);
  StageMemory m;
  // The stage's values, gradients, each optimizer slot and its buffers are a tensor each.
  m.params = allocator_.block_bytes(sum(params_, begin, end));
  m.grads = m.params;
  m.gradient_partials = stash.gradient_partials * m.grads;
  // Sharded, the slots hold a D-th, counted as the last shard from (D-1)·n/D: shards are cut at
  // the gradient norm's blocks (optim::shard_begins, 4096 floats), so each replica's is within a
  // block of n/D.
  const auto floats = static_cast<int64_t>(sum(params_, begin, end) / sizeof(float));
  const int64_t last_begin = (optimizer_shards_ - 1) * floats / optimizer_shards_;
  m.optimizer_state =
      optimizer_slots_ *
      allocator_.block_bytes(static_cast<double>((floats - last_begin) * int64_t{sizeof(float)}));
  m.buffers = allocator_.block_bytes(sum(buffers_, begin, end));
  for (int i = begin; i < end && stash.weight_grad_micro_batches > 0; ++i) {
    m.weight_grad_operands += weight_grad_operand_blocks(i, stash.weight_grad_micro_batches);
  }
  const double pending_weights =
      stash.pending_weight_micro_batches * sum(pending_weight_blocks_, begin, end);
  m.weight_grad_operands += pending_weights;
  const bool splitting = stash.backward && stash.splitting_backward;
  m.kept_activations = stash.inputs * input + stash.full * full;
  m.recompute_workspace = stash.recompute ? full : 0.0;
  m.kept_activations +=
      stash.layer_inputs * (walk ? graph_first_kept(*walk) : layer_inputs(begin, end));
  using Copy = StashProfile::Copy;
  if (stash.copy == Copy::kActivationIn) {
    m.transient = walk ? walk->input + walk->input_message : input;
  } else if (stash.copy == Copy::kActivationOut) {
    m.transient = walk ? walk->output + walk->output_message : output;
  } else if (stash.copy == Copy::kGradientIn) {
    m.transient = walk ? walk->output_grads + walk->output_grad_message : output;
  } else if (stash.copy == Copy::kGradientOut) {
    m.transient = walk ? walk->input_grads + walk->input_grad_message : input;
  } else if (stash.idle) {
    // Another chunk of the rank runs: nothing of this stage's is in use.
  } else if (stash.weight_op) {
    // This micro-batch's W work beside the group's operands as the W copies into them.
    m.weight_grad_operands =
        pending_weights +
        weight_op(begin, end, stash.weight_grad_micro_batches, stash.weight_grad_operands_filling);
  } else if (stash.layer_recompute && stash.weight_grad_operands_filling &&
             stash.weight_grad_micro_batches > 0 && !splitting) {
    // The first backward of a step (a group) with deferred weight gradients, one layer at a time:
    // each linear allocates its operands in its backward, after its recompute.
    const auto [recomputing, backward] =
        per_layer_backward_phases(begin, end, walk ? &*walk : nullptr, /*input_only=*/false);
    const auto [operands, workspace] =
        filling_backward(begin, end, backward, stash.weight_grad_micro_batches, 0.0, recomputing);
    m.weight_grad_operands = operands + pending_weights;
    m.recompute_workspace += workspace;
  } else if (stash.layer_recompute) {
    // One layer at a time: its temporaries are those of the layer where the sum peaks.
    if (walk) {
      const std::vector<double> at =
          graph_per_layer_backward_at(begin, end, *walk, /*input_only=*/splitting);
      m.recompute_workspace +=
          splitting ? splitting_backward(begin, end, at, 0.0, weight_work_held_)
                    : *std::ranges::max_element(at.begin() + begin, at.begin() + end);
    } else {
      m.recompute_workspace +=
          splitting ? splitting_backward(begin, end, per_layer_backward_input_at_,
                                         inputs_[static_cast<size_t>(begin)], weight_work_held_)
                    : per_layer_backward(begin, end);
    }
  } else if (stash.loss) {
    // The output beside what the loss holds (its gradient and the targets).
    m.transient = output;
    for (double bytes : last.loss_tensor_bytes) m.transient += block(bytes);
  } else if (stash.backward) {
    // Each layer's backward temporaries (indexed by global layer).
    const std::vector<double> at = walk ? graph_backward_at(begin, end, *walk, splitting)
                                        : (splitting ? backward_input_at_ : backward_.front());
    m.transient = splitting ? splitting_backward(begin, end, at, 0.0, weight_work_beyond_saved_)
                            : *std::ranges::max_element(at.begin() + begin, at.begin() + end);
    // A recompute's forward holds part of the workspace beside the gradient waiting for the
    // backward, which may be the larger (a large-vocabulary head's logits beside their gradient).
    const double recomputing = !stash.recompute ? 0.0
                               : walk ? graph_recompute_forward(begin, end, *walk, last_stage)
                                      : recompute_forward(begin, end);
    if (stash.weight_grad_operands_filling && stash.weight_grad_micro_batches > 0 && !splitting) {
      const auto [operands, transient] =
          filling_backward(begin, end, at, stash.weight_grad_micro_batches, recomputing);
      m.weight_grad_operands = operands + pending_weights;
      m.transient = transient;
    } else if (stash.recompute) {
      m.transient = std::max(m.transient, recomputing);
    }
  } else if (stash.layer_inputs > 0) {
    // kept_activations counts the forwarded micro-batch's every layer input: less those of the
    // layers after the one where it peaks.
    if (walk) {
      double most = 0.0;
      for (int i = begin; i < end; ++i) {
        const LayerCost& c = costs_[static_cast<size_t>(i)];
        const auto at = static_cast<size_t>(i - begin);
        most = std::max(most, walk->per_layer_forward_held[at] +
                                  c.forward_block_bytes(rows_, false, allocator_) +
                                  c.kept_block_bytes(rows_, allocator_) - block(c.input_bytes));
      }
      m.transient = most - graph_first_kept(*walk);
    } else {
      m.transient = range_max(per_layer_forward_, begin, end) - inputs_[static_cast<size_t>(end)];
    }
  } else if (walk) {
    m.transient = graph_forward(begin, end, *walk, stash.discarding, stash.evaluating);
    // The forward holds its input's values to its end; unless the micro-batch is kept as its
    // input (recomputed), they are temporaries beside the first layer's main input.
    if (stash.full > 0 || stash.inputs == 0) m.transient += walk->input_beside_main;
  } else {
    // The first layer copies its input, the others take theirs over.
    // (Evaluating: the first layer reads the held input, the others hold theirs to their end.)
    const auto& first_layer = stash.discarding   ? discarding_
                              : stash.evaluating ? evaluation_
                                                 : forward_;
    m.transient = range_max(first_layer, begin, begin + 1) - (stash.evaluating ? input : 0.0);
    if (end - begin > 1) {
      m.transient = std::max(m.transient, range_max(stash.discarding   ? discarding_consumed_
                                                    : stash.evaluating ? evaluation_
                                                                       : forward_consumed_,
                                                    begin + 1, end));
    }
  }
  // Receive buffers posted ahead and the tensors of sends not yet retired, of activations (the
  // stage's input and output) and gradients (of its output and input), and the last stage's loss
  // gradients. The received gradient a backward is using is its last layer's output gradient
  // (Stage::backward takes it over and frees it after that layer): a temporary of that layer's
  // backward. A message of several tensors is one packed tensor (pipeline::pack).
  const double activation = first_stage ? 0.0 : input;
  const double gradient = last_stage ? 0.0 : output;
  if (walk) {
    m.communication = first_stage ? 0.0
                                  : stash.posted_activations * walk->input_message +
                                        stash.sent_gradients * walk->input_grad_message;
    if (!last_stage) {
      m.communication += stash.posted_gradients * walk->output_grad_message +
                         stash.sent_activations * walk->output_message;
    }
    m.communication += stash.loss_grads * output;
  } else {
    m.communication = (stash.posted_activations + stash.sent_gradients) * activation +
                      (stash.posted_gradients + stash.sent_activations) * gradient +
                      stash.loss_grads * output;
  }
  return m;
}

StageValues MemoryModel::walk(int begin, int end) const {
  const std::lock_guard lock(last_walk_->mutex);
  if (last_walk_->begin != begin || last_walk_->end != end) {
    last_walk_->walk =
        walk_stage(values_, begin, end, [this](double bytes) { return block(bytes); });
    last_walk_->begin = begin;
    last_walk_->end = end;
  }
  return last_walk_->walk;
}

double MemoryModel::weight_grad_operand_blocks(int layer, int micro_batches) const {
  const LayerCost& c = costs_[static_cast<size_t>(layer)];
  if (c.weight_grad_operand_bytes <= 0.0) return 0.0;
  // A copy of the input and one of the output gradient (nn::Linear), of all micro-batches' rows.
  const double rows = micro_batches * static_cast<double>(rows_);
  return allocator_.block_bytes(rows * c.input_bytes) +
         allocator_.block_bytes(rows * (c.weight_grad_operand_bytes - c.input_bytes));
}

std::pair<double, double> MemoryModel::filling_backward(int begin, int end,
                                                        const std::vector<double>& at,
                                                        int micro_batches, double recompute_forward,
                                                        const std::vector<double>& before) const {
  std::pair<double, double> most{0.0, recompute_forward};
  double operands = 0.0;
  const auto consider = [&most](double held, double transient) {
    if (held + transient > most.first + most.second) most = {held, transient};
  };
  for (int i = end; i-- > begin;) {
    if (!before.empty()) consider(operands, before[static_cast<size_t>(i)]);
    operands += weight_grad_operand_blocks(i, micro_batches);
    consider(operands, at[static_cast<size_t>(i)]);
  }
  return most;
}

std::pair<std::vector<double>, std::vector<double>> MemoryModel::per_layer_backward_phases(
    int begin, int end, const StageValues* walk, bool input_only) const {
  std::vector<double> recomputing(static_cast<size_t>(end), 0.0);
  std::vector<double> backward(static_cast<size_t>(end), 0.0);
  // What the micro-batch keeps for layers [begin, i): their inputs, or a graph's kept values.
  double kept_before = 0.0;
  for (int i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i - begin);
    const auto at = static_cast<size_t>(i);
    const LayerCost& c = costs_[at];
    const double own = walk ? walk->first_kept[k] : block(c.input_bytes);
    const double held = walk ? walk->backward_held[k] : 0.0;
    recomputing[at] = kept_before + own + per_layer_recompute_blocks(c, rows_, allocator_) + held;
    backward[at] = kept_before + c.kept_block_bytes(rows_, allocator_) +
                   (input_only ? c.backward_input_block_bytes(rows_, allocator_)
                               : c.backward_block_bytes(rows_, allocator_)) +
                   held;
    kept_before += own;
  }
  return {recomputing, backward};
}

double MemoryModel::weight_op(int begin, int end, int micro_batches, bool opens_group) const {
  double operands = 0.0;
  for (int i = begin; i < end && !opens_group; ++i) {
    operands += weight_grad_operand_blocks(i, micro_batches);
  }
  double most = operands + sum(pending_weight_blocks_, begin, end);
  for (int i = end; i-- > begin;) {
    if (opens_group) operands += weight_grad_operand_blocks(i, micro_batches);
    most = std::max(most, operands + sum(pending_weight_blocks_, begin, i + 1));
  }
  return most;
}

double MemoryModel::graph_first_kept(const StageValues& walk) const {
  return std::accumulate(walk.first_kept.begin(), walk.first_kept.end(), 0.0);
}

std::vector<double> MemoryModel::graph_per_layer_backward_at(int begin, int end,
                                                             const StageValues& walk,
                                                             bool input_only) const {
  // As the constructor's per_layer_backward, with the values kept for layers [begin, i] in place
  // of their inputs, and the gradients the stage holds beside (indexed by global layer).
  auto [at, backward] = per_layer_backward_phases(begin, end, &walk, input_only);
  for (int i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i);
    at[k] = std::max(at[k], backward[k]);
  }
  return at;
}

double MemoryModel::graph_recompute_forward(int begin, int end, const StageValues& walk,
                                            bool last_stage) const {
  // As recompute_forward: at layer i, what layers [begin, i] have saved, its forward's
  // temporaries and the values the forward holds, less all the stage saves (the workspace), and
  // the output gradients waiting for the backward (the loss's on the last stage).
  double most = 0.0;
  for (int i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i - begin);
    const LayerCost& c = costs_[static_cast<size_t>(i)];
    most = std::max(most, kept_[static_cast<size_t>(i) + 1] +
                              c.forward_block_bytes(rows_, walk.consumed[k], allocator_) +
                              walk.forward_held[k]);
  }
  const double waiting =
      last_stage ? block(costs_[static_cast<size_t>(end - 1)].output_bytes) : walk.output_grads;
  return most - kept_[static_cast<size_t>(end)] + waiting;
}

double MemoryModel::graph_forward(int begin, int end, const StageValues& walk, bool discarding,
                                  bool evaluating) const {
  double most = 0.0;
  for (int i = begin; i < end; ++i) {
    const auto k = static_cast<size_t>(i - begin);
    const LayerCost& c = costs_[static_cast<size_t>(i)];
    const double layer = evaluating
                             ? c.evaluation_block_bytes(rows_, allocator_) -
                                   (i == begin ? block(c.input_bytes) : 0.0)
                             : c.forward_block_bytes(rows_, walk.consumed[k], allocator_) +
                                   (discarding ? c.kept_block_bytes(rows_, allocator_) : 0.0);
    most = std::max(most, layer + walk.forward_held[k]);
  }
  return most;
}

std::vector<double> MemoryModel::graph_backward_at(int begin, int end, const StageValues& walk,
                                                   bool input_only) const {
  std::vector<double> at(static_cast<size_t>(end), 0.0);
  for (int i = begin; i < end; ++i) {
    const LayerCost& c = costs_[static_cast<size_t>(i)];
    at[static_cast<size_t>(i)] = (input_only ? c.backward_input_block_bytes(rows_, allocator_)
                                             : c.backward_block_bytes(rows_, allocator_)) +
                                 walk.backward_held[static_cast<size_t>(i - begin)];
  }
  return at;
}

}  // namespace mpipe::plan
