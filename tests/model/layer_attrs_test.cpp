// Tests for LayerAttrs: typed reads with defaults, and every error message with file and line;
// SourceRef's location and prefix.
#include "model/layer_attrs.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "support/input_error_of.h"

namespace mpipe::model {
namespace {

// A layer entry at exp.yaml:12 (model.layers[3]); each attribute sits on its own later line.
LayerSpec spec(std::string kind, std::map<std::string, AttrValue> values) {
  LayerSpec s{.kind = std::move(kind),
              .attrs = {},
              .where = {.file = "exp.yaml", .line = 12, .path = "model.layers[3]"}};
  int line = 13;
  for (auto& [key, value] : values) {
    s.attrs[key] =
        Attr{.value = std::move(value),
             .where = {.file = "exp.yaml", .line = line++, .path = "model.layers[3]." + key}};
  }
  return s;
}

TEST(SourceRef, NamesFileAndLineOrTheCommandLine) {
  const SourceRef in_file{.file = "exp.yaml", .line = 14, .path = "model.layers[3].units"};
  EXPECT_EQ(in_file.location(), "exp.yaml:14");
  EXPECT_EQ(in_file.prefix(), "exp.yaml:14: model.layers[3].units");
  const SourceRef from_set{.file = "--set", .line = 0, .path = "pipeline.memory_limit"};
  EXPECT_EQ(from_set.location(), "--set");
  EXPECT_EQ(from_set.prefix(), "--set pipeline.memory_limit");
}

TEST(LayerAttrs, ReadsPresentValuesAndFallsBackForMissingOnes) {
  const LayerSpec s = spec(
      "linear",
      {{"units", int64_t{64}}, {"bias", false}, {"rate", 0.25}, {"init", std::string("xavier")}});
  LayerAttrs attrs(s);
  EXPECT_EQ(attrs.integer("units", 1), 64);
  EXPECT_FALSE(attrs.flag("bias", true));
  EXPECT_DOUBLE_EQ(attrs.number("rate", 0.1, 0.0, 1.0), 0.25);
  EXPECT_EQ(attrs.text("init", "kaiming", {"kaiming", "xavier"}), "xavier");
  EXPECT_EQ(attrs.integer("heads", 8, 1), 8);
  EXPECT_TRUE(attrs.flag("causal", true));
  EXPECT_DOUBLE_EQ(attrs.number("eps", 1e-5, 0.0, 1.0), 1e-5);
  EXPECT_EQ(attrs.text("mode", "sum", {"sum"}), "sum");
  EXPECT_NO_THROW(attrs.finish());
}

TEST(LayerAttrs, NumberAcceptsAnInteger) {
  const LayerSpec s = spec("dropout", {{"rate", int64_t{0}}});
  LayerAttrs attrs(s);
  EXPECT_EQ(attrs.number("rate", 0.1, 0.0, 0.999), 0.0);
}

TEST(LayerAttrs, MissingRequiredAttrNamesTheLayerEntry) {
  const LayerSpec s = spec("linear", {});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.integer("units", 1); }),
            "exp.yaml:12: model.layers[3].units: required for layer 'linear'");
}

TEST(LayerAttrs, WrongTypeNamesTheAttributeLineAndValue) {
  const LayerSpec s = spec("linear", {{"units", std::string("ten")},
                                      {"bias", int64_t{3}},
                                      {"rate", std::string("high")},
                                      {"size", 2.5}});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.integer("units", 1); }),
            "exp.yaml:16: model.layers[3].units: expected an integer, got 'ten'");
  EXPECT_EQ(testing::input_error_of([&] { attrs.flag("bias", true); }),
            "exp.yaml:13: model.layers[3].bias: expected true or false, got 3");
  EXPECT_EQ(testing::input_error_of([&] { attrs.number("rate", 0.1, 0.0, 1.0); }),
            "exp.yaml:14: model.layers[3].rate: expected a number, got 'high'");
  EXPECT_EQ(testing::input_error_of([&] { attrs.integer("size", 0, 1); }),
            "exp.yaml:15: model.layers[3].size: expected an integer, got 2.5");
}

TEST(LayerAttrs, IntegerBelowMinimumIsRejected) {
  const LayerSpec s = spec("linear", {{"units", int64_t{0}}});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.integer("units", 1); }),
            "exp.yaml:13: model.layers[3].units: must be >= 1, got 0");
}

TEST(LayerAttrs, NumberOutOfRangeIsRejected) {
  const LayerSpec s = spec("dropout", {{"rate", 1.5}});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.number("rate", 0.1, 0.0, 0.999); }),
            "exp.yaml:13: model.layers[3].rate: must be in [0, 0.999], got 1.5");
}

TEST(LayerAttrs, TextNotInTheAllowedListIsRejected) {
  const LayerSpec s = spec("linear", {{"init", std::string("he")}});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] {
              attrs.text("init", "kaiming", {"kaiming", "xavier"});
            }),
            "exp.yaml:13: model.layers[3].init: must be one of kaiming, xavier, got 'he'");
}

TEST(LayerAttrs, FinishReportsAnUnreadKeyWithTheKnownOnes) {
  const LayerSpec s = spec("linear", {{"units", int64_t{4}}, {"unitz", int64_t{4}}});
  LayerAttrs attrs(s);
  attrs.integer("units", 1);
  attrs.flag("bias", true);
  attrs.text("init", "kaiming", {"kaiming", "xavier"});
  EXPECT_EQ(testing::input_error_of([&] { attrs.finish(); }),
            "exp.yaml:14: model.layers[3].unitz: unknown key for layer 'linear' "
            "(known: bias, init, units)");
}

TEST(LayerAttrs, FinishReportsAnyKeyForALayerWithNoAttributes) {
  const LayerSpec s = spec("relu", {{"inplace", true}});
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.finish(); }),
            "exp.yaml:13: model.layers[3].inplace: unknown key: layer 'relu' takes no attributes");
}

TEST(LayerAttrs, OverriddenAttributeIsNamedByItsCommandLineKey) {
  LayerSpec s = spec("linear", {{"units", int64_t{-2}}});
  s.attrs["units"].where = {.file = "--set", .line = 0, .path = "model.layers[3].units"};
  LayerAttrs attrs(s);
  EXPECT_EQ(testing::input_error_of([&] { attrs.integer("units", 1); }),
            "--set model.layers[3].units: must be >= 1, got -2");
}

}  // namespace
}  // namespace mpipe::model
