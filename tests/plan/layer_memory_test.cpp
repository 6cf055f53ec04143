// Tests for the memory model's per-layer temporaries: every layer kind, at a small and a realistic
// shape, runs its forward, backward and evaluation the way a pipeline stage does (a layer that
// reads values beside the values it reads, as a stage of its own), and the high-water mark of
// tensor bytes it reaches above what was alive before is compared with the model's prediction for
// that moment: never below it, and at most 2% above it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/memory_account.h"
#include "core/tensor.h"
#include "kernels/context.h"
#include "model/layer_factory.h"
#include "nn/param_buffer.h"
#include "plan/cost_model.h"
#include "plan/memory_model.h"
#include "support/layer_spec.h"
#include "support/random_tensor.h"

namespace mpipe::plan {
namespace {

struct Case {
  std::string kind;
  std::map<std::string, model::AttrValue> attrs;
  Shape input;  // one example
  int64_t rows;
};

model::LayerSpec spec_of(const Case& c) { return testing::layer_spec(c.kind, c.attrs); }

// Every layer kind at a small shape and at the shapes of the e2e memory tests' models (a
// Fashion-MNIST CNN, a character Transformer with T = 64, d = 64), and the Transformer block with
// RMS norms, a SwiGLU MLP and rotary position embeddings.
std::vector<Case> cases() {
  using A = std::map<std::string, model::AttrValue>;
  const A conv{{"channels", int64_t{8}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}};
  const A attention{{"heads", int64_t{4}}};
  const A block{{"heads", int64_t{4}}, {"dropout", 0.1}};
  const A modern_block{{"heads", int64_t{4}},
                       {"dropout", 0.1},
                       {"norm", std::string("rms_norm")},
                       {"mlp", std::string("swiglu")},
                       {"rotary", true}};
  A grouped_block = modern_block;
  grouped_block["kv_heads"] = int64_t{2};
  const A identity{{"channels", int64_t{16}}};
  const A projection{{"channels", int64_t{16}}, {"stride", int64_t{2}}};
  const A bottleneck{{"channels", int64_t{16}}, {"bottleneck", true}};
  const A bottleneck_projection{
      {"channels", int64_t{32}}, {"bottleneck", true}, {"stride", int64_t{2}}};
  return {
      {"linear", A{{"units", int64_t{64}}}, Shape{96}, 8},
      {"linear", A{{"units", int64_t{256}}}, Shape{784}, 64},
      {"relu", {}, Shape{512}, 8},
      {"gelu", {}, Shape{64, 256}, 8},
      {"tanh", {}, Shape{512}, 8},
      {"dropout", A{{"rate", 0.5}}, Shape{512}, 8},
      {"dropout", A{{"rate", 0.1}}, Shape{64, 64}, 8},
      {"flatten", {}, Shape{8, 8, 8}, 8},
      {"conv2d", conv, Shape{4, 8, 8}, 4},
      {"conv2d", conv, Shape{1, 28, 28}, 16},
      {"batch_norm2d", {}, Shape{8, 8, 8}, 4},
      {"batch_norm2d", {}, Shape{8, 28, 28}, 16},
      {"max_pool2d", A{{"kernel", int64_t{2}}}, Shape{8, 8, 8}, 4},
      {"max_pool2d", A{{"kernel", int64_t{2}}}, Shape{8, 28, 28}, 16},
      {"avg_pool2d", A{{"kernel", int64_t{2}}}, Shape{8, 8, 8}, 4},
      {"global_avg_pool", {}, Shape{16, 7, 7}, 16},
      {"upsample", {}, Shape{8, 4, 4}, 4},
      {"upsample", {}, Shape{8, 14, 14}, 16},
      {"residual_block", identity, Shape{16, 8, 8}, 4},
      {"residual_block", identity, Shape{16, 7, 7}, 16},
      {"residual_block", projection, Shape{8, 8, 8}, 4},
      {"residual_block", projection, Shape{8, 14, 14}, 16},
      {"residual_block", bottleneck, Shape{16, 8, 8}, 4},
      {"residual_block", bottleneck_projection, Shape{16, 14, 14}, 16},
      {"separable_cell", A{{"channels", int64_t{16}}}, Shape{8, 8, 8}, 4},
      {"separable_cell", A{{"channels", int64_t{16}}, {"stride", int64_t{2}}}, Shape{8, 14, 14},
       16},
      {"embedding", A{{"vocab", int64_t{64}}, {"dim", int64_t{32}}}, Shape{16}, 8},
      {"embedding", A{{"vocab", int64_t{64}}, {"dim", int64_t{64}}}, Shape{64}, 8},
      {"layer_norm", {}, Shape{16, 32}, 8},
      {"layer_norm", {}, Shape{64, 64}, 8},
      {"attention", attention, Shape{16, 32}, 2},
      {"attention", attention, Shape{16, 32}, 8},
      {"attention", attention, Shape{64, 64}, 8},
      {"transformer_block", block, Shape{16, 32}, 2},
      {"transformer_block", block, Shape{16, 32}, 8},
      {"transformer_block", block, Shape{64, 64}, 8},
      {"rms_norm", {}, Shape{16, 32}, 8},
      {"rms_norm", {}, Shape{64, 64}, 8},
      {"transformer_block", modern_block, Shape{16, 32}, 2},
      {"transformer_block", modern_block, Shape{64, 64}, 8},
      {"transformer_block", A{{"heads", int64_t{4}}, {"mlp", std::string("swiglu")}}, Shape{16, 32},
       8},
      // Grouped-query attention: k and v of 2 heads, and of 1; in the block with dropout.
      {"attention", A{{"heads", int64_t{4}}, {"kv_heads", int64_t{2}}}, Shape{16, 32}, 8},
      {"attention", A{{"heads", int64_t{4}}, {"kv_heads", int64_t{1}}, {"rotary", true}},
       Shape{64, 64}, 8},
      {"transformer_block", grouped_block, Shape{64, 64}, 8},
  };
}

// A value a reading layer reads: one example's shape, and whether it holds token ids (data, which
// takes no gradient; the others are layers' outputs, which take one, as a skip or a memory does).
struct Read {
  Shape shape;
  bool ids = false;
};

// A layer that reads values (model::reading_layer_kinds()), with its main input and its reads.
struct ReadingCase {
  std::string kind;
  std::map<std::string, model::AttrValue> attrs;
  Shape input;  // one example
  std::vector<Read> reads;
  int64_t rows;
};

// Every reading kind at a small shape and at its e2e or configured model's: the U-Net's last
// concat at its evaluation's rows (unet_tiny.yaml), and translate_bible.yaml's residual add,
// encoder attention over the source's padding and decoder cross-attention (d = 128, 4 heads,
// T = S = 64, 8 rows a micro-batch); cross-attention with a memory longer and shorter than its
// queries, with dropout, and without the memory's ids.
std::vector<ReadingCase> reading_cases() {
  using A = std::map<std::string, model::AttrValue>;
  const A encoder{{"heads", int64_t{4}}, {"causal", false}};
  const A cross{{"heads", int64_t{4}}};
  const A cross_dropout{{"heads", int64_t{4}}, {"dropout", 0.1}};
  return {
      {"add", {}, Shape{16, 32}, {{Shape{16, 32}}, {Shape{16, 32}}}, 2},
      {"add", {}, Shape{64, 128}, {{Shape{64, 128}}}, 8},
      {"concat", {}, Shape{4, 8, 8}, {{Shape{8, 8, 8}}, {Shape{2, 8, 8}}}, 4},
      {"concat", {}, Shape{8, 28, 28}, {{Shape{4, 28, 28}}}, 16},
      {"attention",
       A{{"heads", int64_t{4}}, {"dropout", 0.1}},
       Shape{16, 32},
       {{Shape{16}, true}},
       2},
      {"attention", encoder, Shape{64, 128}, {{Shape{64}, true}}, 8},
      {"cross_attention", cross_dropout, Shape{16, 32}, {{Shape{8, 32}}}, 4},
      {"cross_attention", cross, Shape{8, 32}, {{Shape{16, 32}}, {Shape{16}, true}}, 4},
      {"cross_attention", cross, Shape{64, 128}, {{Shape{64, 128}}, {Shape{64}, true}}, 8},
  };
}

// The case as a model whose last layer is the reading layer: its main input the output of a relu
// of the data input `main`, each value it reads (token ids aside, which are data) the output of a
// relu of a data input of its own, saved. A stage of that layer alone receives them all.
struct ReadingModel {
  model::ModelSpec spec;
  model::ModelInputs inputs;
};

ReadingModel reading_model(const ReadingCase& c) {
  const auto ref = [](const std::string& name) {
    return model::ValueRef{name, {"exp.yaml", 2, "model.layers"}};
  };
  ReadingModel m;
  m.inputs.push_back({"main", c.input});
  std::vector<std::string> reads;
  for (size_t k = 0; k < c.reads.size(); ++k) {
    const std::string data = "data" + std::to_string(k);
    m.inputs.push_back({data, c.reads[k].shape});
    if (c.reads[k].ids) {
      reads.push_back(data);
      continue;
    }
    model::LayerSpec relu = testing::layer_spec("relu", {});
    relu.input = ref(data);
    relu.save = ref("read" + std::to_string(k));
    reads.push_back(relu.save->name);
    m.spec.layers.push_back(relu);
  }
  model::LayerSpec main = testing::layer_spec("relu", {});
  main.input = ref("main");
  m.spec.layers.push_back(main);
  m.spec.layers.push_back(testing::reading_layer_spec(c.kind, c.attrs, reads));
  return m;
}

// The tensor bytes `run` leaves alive (as the account counts them: each block's usable size).
template <typename F>
int64_t held(F&& run) {
  const int64_t before = MemoryAccount::process().live_bytes();
  run();
  return MemoryAccount::process().live_bytes() - before;
}

// Peak tensor bytes reached while `run` runs, above the live bytes before it.
template <typename F>
int64_t peak_above(F&& run) {
  MemoryAccount& account = MemoryAccount::process();
  const int64_t before = account.live_bytes();
  account.reset_peak();
  run();
  return account.peak_bytes() - before;
}

// What the layer allocates at the three moments the memory model predicts, measured on a real
// layer run the way pipeline::Stage runs it. Each is the peak above the stage's stash (which the
// model counts apart) and counts the tensors the moment holds from outside the layer (the input
// a forward reads, the output gradient a backward reads).
struct Measured {
  int64_t forward = 0;            // a forward that copies its input (a stage's first layer)
  int64_t forward_consuming = 0;  // a forward handed its predecessor's output
  int64_t backward = 0;           // backward from its saved tensors
  int64_t backward_input = 0;     // its I op (zero-bubble schedules) from its saved tensors
  int64_t per_layer = 0;          // recompute from the kept input, then backward
  int64_t evaluation = 0;         // an evaluation's forward, handed its input (keeps nothing)
};

class LayerRun {
 public:
  // `layer` on `rows` examples of `input` (token ids when `token_ids`), reading `reads`.
  LayerRun(std::unique_ptr<nn::Layer> layer, const Shape& input, int64_t rows, bool token_ids,
           const std::vector<Read>& reads = {})
      : layer_(std::move(layer)),
        ctx_{.kernels = kernels_, .seed = 1, .step = 0},
        x_shape_(input.batched(rows)),
        dy_shape_(layer_->output_shape().batched(rows)),
        token_ids_(token_ids) {
    nn::Layer* raw = layer_.get();
    params_ = std::make_unique<nn::ParamBuffer>(std::span<nn::Layer* const>(&raw, 1));
    params_->initialize(5);
    for (const Read& read : reads) reads_.push_back({read.shape.batched(rows), read.ids});
  }

  Measured measure() {
    Measured m;
    // Copying forward: the stage keeps its input; the layer's saved tensors go to the stash.
    Tensor x;
    const int64_t x_bytes = held([&] { x = input(); });
    nn::Saved saved;
    m.forward = x_bytes + peak_above([&] { saved = layer_->forward(x, ctx_).saved; });
    x = Tensor();
    saved = {};
    x = input();
    m.forward_consuming =
        x_bytes + peak_above([&] { saved = layer_->forward_consuming(std::move(x), ctx_).saved; });
    // Backward: the stash holds what forward saved; the output gradient was received.
    Tensor dy;
    const int64_t dy_bytes = held([&] { dy = gradient(); });
    m.backward = dy_bytes + peak_above([&] { layer_->backward(dy, saved, ctx_); });
    // (backward_input may replace what it is handed: a copy, made before the measurement.)
    nn::Saved split = saved;
    m.backward_input = dy_bytes + peak_above([&] { layer_->backward_input(dy, split, ctx_); });
    split = {};
    saved = {};
    // Per-layer recompute: the layer's kept input is recomputed, freed, then backward runs.
    nn::LayerContext recompute = ctx_;
    recompute.recompute = true;
    Tensor kept = input();
    m.per_layer = x_bytes + dy_bytes + peak_above([&] {
                    nn::Saved again = layer_->forward(kept, recompute).saved;
                    kept = Tensor();
                    layer_->backward(dy, again, ctx_);
                  });
    // Evaluation (pipeline::Stage::evaluate): the layer is handed its input as in training, but
    // saves nothing, so it holds its input, output and internals until it returns.
    nn::LayerContext evaluation = ctx_;
    evaluation.training = false;
    x = input();
    m.evaluation =
        x_bytes + peak_above([&] { layer_->forward_consuming(std::move(x), evaluation); });
    return m;
  }

  // The same moments of a layer that reads values, as pipeline::Stage runs it in a stage of its
  // own: the stage's input holds its main input and what it reads (the value table), and
  // forward_reading reads them in place wherever the layer sits (so there is no forward handed
  // its input: forward_consuming stays 0). The stage runs backward_reading whole, in an I op too
  // (backward_input is the backward's), and holds each gradient it returns.
  Measured measure_reading() {
    Measured m;
    Tensor x;
    std::vector<Tensor> reads;
    const int64_t x_bytes = held([&] { x = input(); });
    const int64_t read_bytes = held([&] { reads = read_values(); });
    nn::Saved saved;
    m.forward = x_bytes + read_bytes + peak_above([&] {
                  saved = layer_->forward_reading(x, pointers(reads), ctx_).saved;
                });
    Tensor dy;
    const int64_t dy_bytes = held([&] { dy = gradient(); });
    m.backward = dy_bytes + peak_above([&] {
                   const std::vector<Tensor> grads = layer_->backward_reading(dy, saved, ctx_);
                 });
    m.backward_input = m.backward;
    saved = {};
    // Per-layer recompute: the stage keeps the values the layer reads, recomputes it, frees them
    // (what the layer saved holds what it needs), then runs its backward.
    nn::LayerContext recompute = ctx_;
    recompute.recompute = true;
    m.per_layer = x_bytes + read_bytes + dy_bytes + peak_above([&] {
                    nn::Saved again = layer_->forward_reading(x, pointers(reads), recompute).saved;
                    x = Tensor();
                    reads.clear();
                    const std::vector<Tensor> grads = layer_->backward_reading(dy, again, ctx_);
                  });
    // Evaluation: the stage's first layer reads its input in place (the stage holds it); the
    // values read are held beside it.
    nn::LayerContext evaluation = ctx_;
    evaluation.training = false;
    x = input();
    reads = read_values();
    m.evaluation =
        read_bytes + peak_above([&] { layer_->forward_reading(x, pointers(reads), evaluation); });
    return m;
  }

 private:
  Tensor input() const {
    Tensor x = testing::uniform_tensor(x_shape_, CounterRng(3, RngPurpose::kData, 0, 0));
    if (token_ids_) x.fill(2.0f);
    return x;
  }
  Tensor gradient() const {
    return testing::uniform_tensor(dy_shape_, CounterRng(4, RngPurpose::kData, 0, 0));
  }
  std::vector<Tensor> read_values() const {
    std::vector<Tensor> values;
    for (size_t k = 0; k < reads_.size(); ++k) {
      values.push_back(testing::uniform_tensor(
          reads_[k].shape, CounterRng(5, RngPurpose::kData, static_cast<uint32_t>(k), 0)));
      if (reads_[k].ids) values.back().fill(2.0f);
    }
    return values;
  }
  static std::vector<const Tensor*> pointers(const std::vector<Tensor>& values) {
    std::vector<const Tensor*> out;
    for (const Tensor& t : values) out.push_back(&t);
    return out;
  }

  std::unique_ptr<nn::Layer> layer_;
  kernels::KernelContext kernels_;
  nn::LayerContext ctx_;
  std::unique_ptr<nn::ParamBuffer> params_;
  Shape x_shape_, dy_shape_;
  bool token_ids_ = false;
  std::vector<Read> reads_;  // batched
};

// The model's prediction for the same moments, from a one-layer MemoryModel.
struct Predicted {
  double forward = 0.0;            // the layer's forward temporaries and what it saves
  double forward_consuming = 0.0;  // the same, for a forward handed its input
  double backward = 0.0;           // the layer's backward temporaries
  double backward_input = 0.0;     // the same in its I op
  double per_layer = 0.0;          // one layer's per-layer recompute and backward
  double evaluation = 0.0;         // an evaluation's forward of a layer after a stage's first
};

Predicted predict(const LayerCost& cost, int64_t rows,
                  AllocatorModel allocator = AllocatorModel::exact()) {
  // (Without its parameters and buffers, which the moments measured here do not hold.)
  LayerCost temporaries_only = cost;
  temporaries_only.param_bytes = 0.0;
  temporaries_only.buffer_bytes = 0.0;
  const MemoryModel model({temporaries_only}, rows, 0, allocator);
  StashProfile backward;
  StashProfile discarding{.backward = false, .discarding = true};
  // (A stage's first layer copies its input, the others are handed theirs: see the test below.)
  // (The moments hold nothing but the layer's temporaries: the stage's rounding is theirs.)
  const auto temporaries = [&](const StashProfile& moment) {
    const StageMemory m = model.stage(0, 1, moment, true, true);
    return m.transient + m.allocator_rounding;
  };
  // An evaluation's later layer: behind a first layer that holds nothing (the stage's first
  // layer reads the stage's input in place, which the stage holds).
  const MemoryModel behind({LayerCost{.kind = "nothing"}, temporaries_only}, rows, 0, allocator);
  const StageMemory evaluation =
      behind.stage(0, 2, {.backward = false, .evaluating = true}, true, true);
  return {.forward = temporaries(discarding),
          .forward_consuming = cost.forward_block_bytes(rows, true, allocator) +
                               cost.kept_block_bytes(rows, allocator),
          .backward = temporaries(backward),
          .backward_input = temporaries({.backward = true, .splitting_backward = true}),
          .per_layer = model.per_layer_backward(0, 1),
          .evaluation = evaluation.transient + evaluation.allocator_rounding};
}

// The same moments of the reading layer of `plan` (its last), from the model of the whole graph
// (value_costs: what a stage's value and gradient tables hold beside each layer), queried for a
// stage of that layer alone. Its input, the layer's main input and the values it reads, counts
// in each moment as the measurement does: beside a forward (inputs 0, so the walk counts what is
// held beside the main input), and in the per-layer recompute's kept values.
Predicted predict_reading(const model::ModelPlan& plan, int64_t rows, AllocatorModel allocator) {
  std::vector<LayerCost> costs = layer_costs(plan);
  for (LayerCost& cost : costs) cost.param_bytes = cost.buffer_bytes = 0.0;
  const MemoryModel model(costs, rows, 0, allocator, value_costs(plan));
  const int layer = model.num_layers() - 1;
  const auto activations = [&](const StashProfile& moment) {
    return model.stage(layer, layer + 1, moment, true, true).activations();
  };
  return {.forward = activations({.backward = false, .discarding = true}),
          .backward = activations({.backward = true}),
          .backward_input = activations({.backward = true, .splitting_backward = true}),
          .per_layer = activations({.layer_recompute = true, .backward = true}),
          .evaluation = activations({.backward = false, .evaluating = true})};
}

// An allowance for the allocator: the account counts each block's usable size, which can exceed
// the request by up to 64 bytes (alignment); no moment holds more than 32 blocks.
constexpr double kAllocatorSlack = 32 * 64;
// How far above the measurement a prediction may be: the model follows each layer's steps, so
// every moment here is within 0.1%; 2% leaves room for rounding (bytes packed into floats), and
// any tensor the model counts that a layer does not allocate is more than that.
constexpr double kOverPrediction = 0.02;
// With the allocator's rounding, the model counts the most a block can be rounded up for each of
// the temporaries it knows only in sum (LayerCost::smallest_temporary_bytes): 103 bytes from the
// heap, which is 2.3% of a residual block's backward at the smallest shape here, and a page when
// mapped: 3 pages of the SwiGLU block's evaluation temporaries (224 KiB in sum, of which the
// account saw 2 or no block mapped as the heap's history had it), 3.8% to 5.4% of its 256 KiB.
constexpr double kRoundedOverPrediction = 0.03;
constexpr double kMappedOverPrediction = 0.06;

// Checks one moment's prediction against its measurement: never below it (less `slack`), at most
// `over` above it.
void check_moment(const std::string& what, const char* moment, double predicted, int64_t measured,
                  double slack, double over) {
  const auto measured_bytes = static_cast<double>(measured);
  std::printf("%-56s %-17s predicted %10.0f measured %10lld  %+6.1f%%\n", what.c_str(), moment,
              predicted, static_cast<long long>(measured),
              100.0 * (predicted - measured_bytes) / measured_bytes);
  EXPECT_GE(predicted + slack, measured_bytes) << what << " " << moment;
  EXPECT_LE(predicted, (1.0 + over) * measured_bytes) << what << " " << moment;
}

// Checks every moment a stage can meet a layer at (the handed-input forward only where
// `handed_input`: a stage never hands a reading layer its input).
void check_moments(const std::string& what, const Predicted& p, const Measured& m,
                   bool handed_input, double slack, double over) {
  check_moment(what, "forward", p.forward, m.forward, slack, over);
  if (handed_input) {
    check_moment(what, "forward_consuming", p.forward_consuming, m.forward_consuming, slack, over);
  }
  check_moment(what, "backward", p.backward, m.backward, slack, over);
  check_moment(what, "backward_input", p.backward_input, m.backward_input, slack, over);
  check_moment(what, "per_layer", p.per_layer, m.per_layer, slack, over);
  check_moment(what, "evaluation", p.evaluation, m.evaluation, slack, over);
}

// Runs every case and checks the model (with `allocator`) against the account: never below it
// (less `slack`), at most `over` above it.
void check_every_layer(AllocatorModel allocator, double slack, double over) {
  std::vector<std::string> covered, covered_reading;
  for (const Case& c : cases()) {
    const model::LayerSpec spec = spec_of(c);
    model::ModelSpec model;
    model.layers = {spec};
    const model::ModelPlan plan = model::plan_model(model, c.input);
    LayerCost cost = cost_of(plan.layers[0]);
    cost.index = 1;
    const Measured m =
        LayerRun(model::make_layer(spec, c.input, 1), c.input, c.rows, c.kind == "embedding")
            .measure();
    const Predicted p = predict(cost, c.rows, allocator);
    const std::string what = c.kind + " " + c.input.str() + " x" + std::to_string(c.rows);
    check_moments(what, p, m, /*handed_input=*/true, slack, over);
    covered.push_back(c.kind);
  }
  for (const ReadingCase& c : reading_cases()) {
    const ReadingModel graph = reading_model(c);
    const model::ModelPlan plan = model::plan_model(graph.spec, graph.inputs);
    const int layer = static_cast<int>(plan.layers.size()) - 1;
    // A stage never hands a reading layer its input nor splits its backward; the model agrees.
    const LayerCost cost = cost_of(plan.layers.back());
    EXPECT_FALSE(cost.keeps_consumed_input) << c.kind;
    EXPECT_FALSE(cost.splits_backward) << c.kind;
    std::vector<std::unique_ptr<nn::Layer>> built =
        model::build_layers(graph.spec, graph.inputs, layer, layer + 1);
    const Measured m =
        LayerRun(std::move(built.front()), c.input, c.rows, false, c.reads).measure_reading();
    const Predicted p = predict_reading(plan, c.rows, allocator);
    std::string what = c.kind + " " + c.input.str() + " reads";
    for (const Read& read : c.reads)
      what += fmt::format(" {}{}", read.shape, read.ids ? " ids" : "");
    what += fmt::format(" x{}", c.rows);
    check_moments(what, p, m, /*handed_input=*/false, slack, over);
    covered_reading.push_back(c.kind);
  }
  for (const std::string& kind : model::known_layer_kinds()) {
    EXPECT_TRUE(std::ranges::count(covered, kind) + std::ranges::count(covered_reading, kind) > 0)
        << "no per-layer memory case for layer kind " << kind;
  }
  for (const std::string& kind : model::reading_layer_kinds()) {
    EXPECT_NE(std::ranges::count(covered_reading, kind), 0)
        << "no per-layer memory case for layer kind " << kind << " reading values";
  }
}

TEST(LayerMemory, ModelCoversWhatEveryLayerAllocatesAndAtMostTwoPercentMore) {
  reuse_freed_tensor_memory();  // as mpipe does: no mmap per large tensor (page rounding)
  check_every_layer(AllocatorModel::exact(), kAllocatorSlack, kOverPrediction);
}

// With the allocator's rounding the model covers the account's own bytes, without any slack:
// under mpipe's setting (every block from the heap, a few bytes over its tensor) ...
TEST(LayerMemory, WithTheAllocatorModelCoversTheAccountExactly) {
  reuse_freed_tensor_memory();
  check_every_layer(AllocatorModel{}, 0.0, kRoundedOverPrediction);
}

// ... and with glibc's mmap threshold at 64 KiB (scripts/bench/largest_model.sh's
// MALLOC_MMAP_THRESHOLD_), where each tensor of 64 KiB or more is mapped in whole pages: the
// realistic Transformer shapes' activations (128 KiB) count 4032 bytes more each.
TEST(LayerMemory, WithTheAllocatorModelCoversMappedBlocks) {
  if (kAddressSanitizer) GTEST_SKIP() << "measures glibc's malloc, which AddressSanitizer replaces";
  constexpr int kThreshold = 64 * 1024;
  constexpr int kGlibcMmapMax = 65536;  // glibc's default: mpipe's setting switched mapping off
  ASSERT_EQ(mallopt(M_MMAP_MAX, kGlibcMmapMax), 1);
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, kThreshold), 1);
  // A block over the threshold is mapped only when the heap cannot serve it: keep the heap's top
  // trimmed (mpipe's setting never trims it), so that what the earlier cases and the process
  // freed there does not serve it instead, a page smaller, depending on the process's history
  // (seen: the command line alone moved a measurement by 8 KiB).
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 0), 1);
  ASSERT_EQ(mallopt(M_TOP_PAD, 0), 1);
  malloc_trim(0);
  // kAllocatorSlack below: where aligned_alloc places a heap block (and so its usable size)
  // still depends on the process's history here, though mapped blocks no longer do: the same
  // binary measured residual_block [8,14,14]'s I at 202848 or 204672 bytes run directly or by
  // ctest, against 203039 predicted.
  check_every_layer(AllocatorModel{.mmap_threshold = kThreshold}, kAllocatorSlack,
                    kMappedOverPrediction);
  reuse_freed_tensor_memory();  // back to mpipe's setting for the other tests
}

// A stage's forward: its first layer copies its input, the later ones are handed theirs, so a
// linear layer after the first holds its output beside what it saves, not its input again.
TEST(LayerMemory, OnlyAStagesFirstLayerCopiesItsInput) {
  constexpr int64_t kRows = 4;
  const LayerCost relu{.kind = "relu",
                       .input_bytes = 32,
                       .output_bytes = 32,
                       .saved_bytes = 32,
                       .keeps_consumed_input = true};
  const LayerCost linear{.kind = "linear",
                         .input_bytes = 32,
                         .output_bytes = 4096,
                         .saved_bytes = 32,
                         .keeps_consumed_input = true};
  const MemoryModel model({relu, linear}, kRows, 0);
  const StashProfile forward{.full = 1, .backward = false};
  EXPECT_EQ(model.stage(0, 2, forward, true, true).transient, kRows * 4096.0);
  EXPECT_EQ(model.stage(1, 2, forward, true, true).transient, kRows * (32.0 + 4096.0));
  const StashProfile discarding{.inputs = 1, .backward = false, .discarding = true};
  EXPECT_EQ(model.stage(0, 2, discarding, true, true).transient, kRows * (4096.0 + 32.0));
  EXPECT_EQ(model.stage(1, 2, discarding, true, true).transient, kRows * (32.0 + 4096.0 + 32.0));
}

// A micro-batch in its I (zero-bubble schedules), last layer first: at each layer, its backward
// temporaries and what the layers after it hold for their W (their output gradients and W's
// tensors, in place of what they saved unless per-layer recompute kept only their inputs).
TEST(LayerMemory, AMicroBatchInItsInputBackwardHoldsWhatTheLayersDoneKeepForTheirW) {
  constexpr double kRows = 4;
  const LayerCost first{.kind = "linear",
                        .input_bytes = 32,
                        .output_bytes = 64,
                        .saved_bytes = 32,
                        .keeps_consumed_input = true,
                        .splits_backward = true,
                        .weight_work_tensor_bytes = {32}};
  const LayerCost second{.kind = "composite",
                         .input_bytes = 64,
                         .output_bytes = 16,
                         .saved_bytes = 64,
                         .keeps_consumed_input = true,
                         .splits_backward = true,
                         .weight_work_tensor_bytes = {64, 256}};
  const MemoryModel model({first, second}, static_cast<int64_t>(kRows), 0);
  // The second layer's backward holds 64 + 16 bytes; then the first's (32 + 64) beside the
  // second's W tensors and output gradient (16 + 64 + 256) less what it saved (64).
  const StashProfile in_input_backward{.full = 1, .splitting_backward = true};
  EXPECT_EQ(model.stage(0, 2, in_input_backward, true, true).transient,
            kRows * (32.0 + 64.0 + 16.0 + 64.0 + 256.0 - 64.0));
  // Per-layer recompute: each layer's recompute holds the inputs up to its own, what it saves
  // and its output twice (192 bytes for each); the first's beside the second's W tensors in full.
  const StashProfile per_layer{
      .layer_recompute = true, .backward = true, .splitting_backward = true};
  EXPECT_EQ(model.stage(0, 2, per_layer, true, true).recompute_workspace,
            kRows * (192.0 + 16.0 + 64.0 + 256.0));
}

// A layer whose I holds other temporaries than its backward (a composite that frees what it
// saved as it goes): a micro-batch's I counts those, its backward the backward's.
TEST(LayerMemory, AMicroBatchInItsInputBackwardHoldsItsLayersInputBackwardTemporaries) {
  constexpr double kRows = 4;
  const LayerCost composite{.kind = "composite",
                            .input_bytes = 64,
                            .output_bytes = 16,
                            .saved_bytes = 64,
                            .workspace_bytes = 128,
                            .workspace_fixed_tensor_bytes = {8},
                            .keeps_consumed_input = true,
                            .splits_backward = true,
                            .weight_work_tensor_bytes = {64},
                            .input_workspace_bytes = 32,
                            .input_workspace_fixed_tensor_bytes = {8, 24}};
  const MemoryModel model({composite}, static_cast<int64_t>(kRows), 0);
  const StashProfile in_backward{.full = 1};
  EXPECT_EQ(model.stage(0, 1, in_backward, true, true).transient,
            kRows * (64.0 + 16.0 + 128.0) + 8.0);
  const StashProfile in_input_backward{.full = 1, .splitting_backward = true};
  EXPECT_EQ(model.stage(0, 1, in_input_backward, true, true).transient,
            kRows * (64.0 + 16.0 + 32.0) + 8.0 + 24.0);
}

// A W op of a grouped chunk (zero-bubble schedules), last layer first: each linear copies the
// micro-batch's operands into its group's and then frees the micro-batch's W work of that layer
// (its output gradient and input). The group's first W allocates each layer's operands for the
// whole group before its copy; a later W finds them all there. Two linears, 4 rows, groups of 2:
// the first 8 → 16 bytes per example (operands 2 x 4 x 24 = 192, W work 4 x 24 = 96), the second
// 16 → 4 (operands 2 x 4 x 20 = 160, W work 4 x 20 = 80), one other micro-batch's W work (96 + 80)
// pending. No temporaries.
TEST(LayerMemory, AWeightOpOfAGroupHoldsItsOperandsBesideTheWorkNotYetFreed) {
  constexpr int64_t kRows = 4;
  const auto linear = [](double in, double out) {
    return LayerCost{.kind = "linear",
                     .input_bytes = in,
                     .output_bytes = out,
                     .saved_bytes = in,
                     .keeps_consumed_input = true,
                     .weight_grad_operand_bytes = in + out,
                     .splits_backward = true,
                     .weight_work_tensor_bytes = {in}};
  };
  const MemoryModel model({linear(8, 16), linear(16, 4)}, kRows, 0);
  StashProfile first_w{.backward = false,
                       .weight_grad_micro_batches = 2,
                       .weight_grad_operands_filling = true,
                       .pending_weight_micro_batches = 1,
                       .weight_op = true};
  // At the second layer its operands (160) beside the W work of both (176): 336; at the first,
  // both layers' operands (352) beside its own W work (96): 448, the peak.
  const StageMemory opening = model.stage(0, 2, first_w, true, true);
  EXPECT_EQ(opening.weight_grad_operands, 176.0 + 448.0);
  EXPECT_EQ(opening.transient, 0.0);
  // A later W of the group: every operand (352) beside all its W work (176) from its start.
  StashProfile later_w = first_w;
  later_w.weight_grad_operands_filling = false;
  const StageMemory later = model.stage(0, 2, later_w, true, true);
  EXPECT_EQ(later.weight_grad_operands, 176.0 + 528.0);
  EXPECT_EQ(later.transient, 0.0);
  // The second layer alone as a stage: the first W's peak is at its copy, as a later one's.
  EXPECT_EQ(model.stage(1, 2, first_w, true, true).weight_grad_operands, 80.0 + 160.0 + 80.0);
  EXPECT_EQ(model.stage(1, 2, later_w, true, true).weight_grad_operands, 80.0 + 160.0 + 80.0);
}

// Per-layer recompute, the first backward of a group (not split): last layer first, each layer is
// recomputed (the inputs up to its own, what it saves, its output twice) beside the operands of
// the layers after it, then its backward allocates its own (a linear's) beside its gradients.
// 4 rows, groups of 2, relu-like layers keeping their inputs.
TEST(LayerMemory, APerLayerBackwardFillsTheOperandsLayerByLayer) {
  constexpr int64_t kRows = 4;
  const auto layer = [](double in, double out, bool linear) {
    return LayerCost{.kind = linear ? "linear" : "relu",
                     .input_bytes = in,
                     .output_bytes = out,
                     .saved_bytes = in,
                     .keeps_consumed_input = true,
                     .weight_grad_operand_bytes = linear ? in + out : 0.0};
  };
  const StashProfile first{.layer_recompute = true,
                           .backward = true,
                           .weight_grad_micro_batches = 2,
                           .weight_grad_operands_filling = true};
  // Linears 8 → 16 (operands 192) and 16 → 4 (160). The second's recompute 32 + 64 + 64 + 32 =
  // 192, its backward 32 + 64 + 64 + 16 = 176 beside its operands: 336; the first's recompute
  // 32 + 32 + 128 = 192 beside the second's operands (352), its backward 32 + 32 + 64 = 128
  // beside both: 480, the peak (every operand beside the largest layer, 544, before).
  const MemoryModel linears({layer(8, 16, true), layer(16, 4, true)}, kRows, 0);
  const StageMemory two = linears.stage(0, 2, first, true, true);
  EXPECT_EQ(two.weight_grad_operands, 352.0);
  EXPECT_EQ(two.recompute_workspace, 128.0);
  // A relu 8 → 64 before a linear 64 → 4 (operands 544): the linear's recompute 576 and backward
  // 560 (its operands then 1104 in all); the relu's recompute 32 + 32 + 512 = 576 beside the
  // linear's operands: 1120, the peak.
  const MemoryModel relu_first({layer(8, 64, false), layer(64, 4, true)}, kRows, 0);
  const StageMemory widening = relu_first.stage(0, 2, first, true, true);
  EXPECT_EQ(widening.weight_grad_operands, 544.0);
  EXPECT_EQ(widening.recompute_workspace, 576.0);
}

// optimizer.shard_across_replicas: each slot holds a replica's shard of the stage's parameters,
// counted as the last one's from (D-1)·n/D (1000 floats over 3 replicas: from 666; the cuts on
// the norm's blocks put every shard within a block of this).
TEST(LayerMemory, ShardedOptimizerStateIsTheLastReplicasShardPerSlot) {
  const LayerCost linear{.kind = "linear", .param_bytes = 1000 * 4.0};
  const StashProfile forward{.full = 1, .backward = false};
  const MemoryModel whole({linear}, 1, 2);
  EXPECT_EQ(whole.stage(0, 1, forward, true, true).optimizer_state, 2 * 1000 * 4.0);
  const MemoryModel sharded({linear}, 1, 2, AllocatorModel::exact(), {}, 3);
  EXPECT_EQ(sharded.stage(0, 1, forward, true, true).optimizer_state, 2 * (1000 - 666) * 4.0);
  EXPECT_EQ(sharded.stage(0, 1, forward, true, true).params, 1000 * 4.0);
}

}  // namespace
}  // namespace mpipe::plan
