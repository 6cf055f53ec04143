// Tests for the model graph: each mistake's exact error, the values layers consume, and the live
// set of every cut (main stream first, then by producer).
#include "model/model_graph.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model_builder.h"

namespace mpipe::model {
namespace {

// model.layers[index] at exp.yaml line 10 + 3 * index, with its edges on the next lines.
struct Edges {
  std::optional<std::string> save = std::nullopt;
  std::vector<std::string> reads = {};
  std::optional<std::string> input = std::nullopt;
};

LayerSpec layer(int index, std::string kind, Edges edges = {}) {
  const std::string path = "model.layers[" + std::to_string(index) + "]";
  const int line = 10 + 3 * index;
  LayerSpec s{.kind = std::move(kind), .attrs = {}, .where = {"exp.yaml", line, path}};
  if (edges.save) s.save = ValueRef{*edges.save, {"exp.yaml", line + 1, path + ".save"}};
  if (edges.input) s.input = ValueRef{*edges.input, {"exp.yaml", line + 1, path + ".input"}};
  for (size_t i = 0; i < edges.reads.size(); ++i) {
    s.reads.push_back(ValueRef{edges.reads[i],
                               {"exp.yaml", line + 2, path + ".read[" + std::to_string(i) + "]"}});
  }
  return s;
}

ModelSpec model(std::vector<LayerSpec> layers) {
  ModelSpec spec;
  spec.layers = std::move(layers);
  return spec;
}

std::string error_of(const ModelSpec& spec) {
  try {
    model_graph(spec, one_input(Shape{1}));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<int> consumed(const ModelGraph& graph, int layer) {
  const auto inputs = graph.inputs_of(layer);
  return {inputs.begin(), inputs.end()};
}

TEST(ModelGraph, AChainHasTheMainStreamAloneAtEveryCut) {
  const ModelGraph graph =
      model_graph(model({layer(0, "a"), layer(1, "b"), layer(2, "c")}), one_input(Shape{1}));
  EXPECT_TRUE(graph.is_chain());
  ASSERT_EQ(graph.values().size(), 4u);  // the data input, then one value per layer
  EXPECT_EQ(consumed(graph, 0), std::vector<int>{0});
  EXPECT_EQ(consumed(graph, 2), std::vector<int>{graph.output_of(1)});
  EXPECT_EQ(graph.live_set(1), std::vector<int>{graph.output_of(0)});
  EXPECT_EQ(graph.live_set(2), std::vector<int>{graph.output_of(1)});
  EXPECT_EQ(graph.live_set(0), std::vector<int>{0});                   // the data input
  EXPECT_EQ(graph.live_set(3), std::vector<int>{graph.output_of(2)});  // for the loss
  EXPECT_EQ(graph.last_use(graph.output_of(2)), 3);
}

// 0 saves "skip"; 3 reads it: cuts 1 to 3 carry the main stream and then "skip".
TEST(ModelGraph, ASkipCrossesEveryCutBetweenItsSaveAndItsRead) {
  const ModelGraph graph =
      model_graph(model({layer(0, "a", {.save = "skip"}), layer(1, "b"), layer(2, "c"),
                         layer(3, "add", {.reads = {"skip"}}), layer(4, "d")}),
                  one_input(Shape{1}));
  EXPECT_FALSE(graph.is_chain());
  const int skip = graph.output_of(0);
  EXPECT_EQ(graph.label(skip), "skip");
  EXPECT_EQ(graph.label(graph.output_of(2)), "layers.2");
  EXPECT_EQ(consumed(graph, 3), (std::vector<int>{graph.output_of(2), skip}));
  EXPECT_EQ(graph.live_set(1), std::vector<int>{skip});  // the main stream is the skip itself
  EXPECT_EQ(graph.live_set(2), (std::vector<int>{graph.output_of(1), skip}));
  EXPECT_EQ(graph.live_set(3), (std::vector<int>{graph.output_of(2), skip}));
  EXPECT_EQ(graph.live_set(4), std::vector<int>{graph.output_of(3)});
}

// An encoder-decoder's shape: the encoder's output is saved, the decoder starts from a data input
// and reads the encoder's output twice; cuts inside the decoder carry it beside the main stream,
// ordered by producer.
TEST(ModelGraph, ADecoderStartsFromItsOwnInputAndReadsTheEncodersOutput) {
  ModelSpec spec =
      model({layer(0, "enc", {.input = "source"}), layer(1, "enc2", {.save = "memory"}),
             layer(2, "emb", {.input = "target_in"}), layer(3, "dec", {.reads = {"memory"}}),
             layer(4, "dec", {.reads = {"memory"}})});
  const std::string inputs[] = {"input", "source", "target_in"};
  const ModelGraph graph(spec, inputs);
  const int memory = graph.output_of(1);
  EXPECT_EQ(graph.live_set(0), (std::vector<int>{1, 2}));  // `input` is read by no layer
  EXPECT_EQ(graph.last_use(0), -1);
  EXPECT_EQ(consumed(graph, 0), std::vector<int>{1});
  EXPECT_EQ(consumed(graph, 2), std::vector<int>{2});
  EXPECT_EQ(graph.live_set(1), (std::vector<int>{graph.output_of(0), 2}));
  EXPECT_EQ(graph.live_set(2), (std::vector<int>{memory, 2}));
  EXPECT_EQ(graph.live_set(3), (std::vector<int>{graph.output_of(2), memory}));
  EXPECT_EQ(graph.live_set(4), (std::vector<int>{graph.output_of(3), memory}));
  EXPECT_FALSE(graph.values()[2].needs_grad());  // a data input
  EXPECT_TRUE(graph.values()[static_cast<size_t>(memory)].needs_grad());
}

TEST(ModelGraph, RefusesAFirstLayerWithoutInputWhenTheDataHasNoMainInput) {
  const std::string inputs[] = {"source", "target_in"};
  const ModelSpec spec = model({layer(0, "emb"), layer(1, "dec")});
  try {
    ModelGraph(spec, inputs);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "exp.yaml:10: model.layers[0]: the data has no input called 'input' (its inputs: "
                 "source, target_in): say which one this layer takes with `input:`");
  }
}

TEST(ModelGraph, RefusesAReadBeforeItsSave) {
  EXPECT_EQ(error_of(model({layer(0, "a", {.reads = {"skip"}}), layer(1, "b", {.save = "skip"}),
                            layer(2, "c", {.reads = {"skip"}})})),
            "exp.yaml:12: model.layers[0].read[0]: reads 'skip' before model.layers[1] saves it");
}

TEST(ModelGraph, RefusesAReadOfItsOwnSave) {
  EXPECT_EQ(error_of(model({layer(0, "a"), layer(1, "b", {.save = "x", .reads = {"x"}}),
                            layer(2, "c", {.reads = {"x"}})})),
            "exp.yaml:15: model.layers[1].read[0]: reads 'x' before model.layers[1] saves it");
}

TEST(ModelGraph, RefusesANameNothingSaves) {
  EXPECT_EQ(error_of(model({layer(0, "a"), layer(1, "b", {.reads = {"skp"}})})),
            "exp.yaml:15: model.layers[1].read[0]: no earlier layer saves 'skp', and no data "
            "input is called that");
}

TEST(ModelGraph, RefusesASaveOverwrittenBeforeAnyRead) {
  EXPECT_EQ(error_of(model({layer(0, "a", {.save = "x"}), layer(1, "b", {.save = "x"}),
                            layer(2, "c", {.reads = {"x"}})})),
            "exp.yaml:11: model.layers[0].save: no layer reads 'x' before model.layers[1] saves it "
            "again");
}

// A residual stream as a `repeat:` block writes it: each block's `add` reads the stream and saves
// its sum under the same name, which the next block's `add` reads.
TEST(ModelGraph, ASavedNameRebindsForTheLayersAfterTheSave) {
  const ModelGraph graph = model_graph(
      model({layer(0, "emb", {.save = "x"}), layer(1, "f"),
             layer(2, "add", {.save = "x", .reads = {"x"}}), layer(3, "g"),
             layer(4, "add", {.save = "x", .reads = {"x"}}), layer(5, "g"), layer(6, "head")}),
      one_input(Shape{1}));
  EXPECT_EQ(consumed(graph, 2), (std::vector<int>{graph.output_of(1), graph.output_of(0)}));
  EXPECT_EQ(consumed(graph, 4), (std::vector<int>{graph.output_of(3), graph.output_of(2)}));
  // The last save is read by no layer, as in a `repeat:` block's last repetition: it is no
  // error, since an earlier save of the name was read.
  EXPECT_EQ(graph.live_set(4), (std::vector<int>{graph.output_of(3), graph.output_of(2)}));
}

TEST(ModelGraph, RefusesADataInputsNameAsASave) {
  EXPECT_EQ(error_of(model({layer(0, "a", {.save = "input"}), layer(1, "b")})),
            "exp.yaml:11: model.layers[0].save: 'input' is the name of a data input");
}

TEST(ModelGraph, RefusesASaveNoLaterLayerReads) {
  EXPECT_EQ(error_of(model({layer(0, "a"), layer(1, "b", {.save = "unused"}), layer(2, "c")})),
            "exp.yaml:14: model.layers[1].save: no later layer reads 'unused'");
}

TEST(ModelGraph, RefusesANameReadTwiceByOneLayer) {
  EXPECT_EQ(error_of(model({layer(0, "a", {.save = "x"}), layer(1, "b"),
                            layer(2, "c", {.reads = {"x", "x"}})})),
            "exp.yaml:18: model.layers[2].read[1]: reads 'x' twice");
}

TEST(ModelGraph, RefusesAnInputThatLeavesThePreviousOutputUnused) {
  EXPECT_EQ(error_of(model({layer(0, "a"), layer(1, "b", {.input = "input"})})),
            "exp.yaml:14: model.layers[1].input: the output of model.layers[0] is never used "
            "(this layer's input is 'input'): save it for a later layer, or remove this input");
}

TEST(ModelBuilder, RefusesAReadByALayerKindThatTakesNoExtraInputs) {
  ModelSpec spec = model({layer(0, "linear", {.save = "x"}), layer(1, "relu", {.reads = {"x"}})});
  spec.layers[0].attrs["units"] = Attr{.value = int64_t{4}, .where = {"exp.yaml", 11, "u"}};
  try {
    plan_model(spec, Shape{3});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "exp.yaml:15: model.layers[1].read[0]: relu takes no extra inputs (layers that "
                 "read: add, attention, concat, cross_attention)");
  }
}

// `input:` picks the main input's shape: a layer after the one that saves starts from the data.
TEST(ModelBuilder, ALayerWithAnInputTakesThatValuesShape) {
  ModelSpec spec = model(
      {layer(0, "linear", {.save = "h"}), layer(1, "linear", {.input = "h"}), layer(2, "linear")});
  // units 4, 5, 6: the shapes show which value each layer's main input is
  for (int i = 0; i < 3; ++i) {
    spec.layers[static_cast<size_t>(i)].attrs["units"] =
        Attr{.value = int64_t{4 + i}, .where = {"exp.yaml", 40 + i, "u"}};
  }
  const ModelPlan plan = plan_model(spec, Shape{3});
  EXPECT_EQ(plan.layers[1].input, Shape{4});
  EXPECT_EQ(plan.layers[2].input, Shape{5});
  EXPECT_EQ(plan.live_bytes(1), 4 * 4);  // h, the main stream
  EXPECT_EQ(plan.live_bytes(2), 5 * 4);
}

}  // namespace
}  // namespace mpipe::model
