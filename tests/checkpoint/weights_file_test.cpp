// Tests for a weights file's metadata: the tied matrix and its copies named from a run's settings,
// and written as "tied_weights" only when there is one.
#include "checkpoint/weights_file.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace mpipe::checkpoint {
namespace {

TEST(WeightsFile, NamesTheTieFromTheSettings) {
  const std::map<std::string, std::string> settings = {
      {"model.layers[0].type", "linear"},     {"model.layers[2].type", "embedding"},
      {"model.layers[10].type", "embedding"}, {"model.layers[11].tie", "embedding"},
      {"model.layers[11].type", "linear"},    {"model.layers[1].tie_breaker", "embedding"}};
  const auto tied = tied_names_in_settings(settings);
  ASSERT_TRUE(tied.has_value());
  EXPECT_EQ(tied->copies, std::vector<std::string>{"layers.11.weight"});
  EXPECT_EQ(tied->stored, "layers.2.token");  // the first embedding, by index, not by key order
  EXPECT_EQ(weights_file_metadata("exp.yaml", tied).at("tied_weights"),
            R"({"layers.11.weight":"layers.2.token"})");
}

TEST(WeightsFile, NamesEveryCopyOfAGroup) {
  const std::map<std::string, std::string> settings = {{"model.layers[0].type", "embedding"},
                                                       {"model.layers[7].type", "embedding"},
                                                       {"model.layers[7].tie", "embedding"},
                                                       {"model.layers[12].type", "linear"},
                                                       {"model.layers[12].tie", "embedding"}};
  const auto tied = tied_names_in_settings(settings);
  ASSERT_TRUE(tied.has_value());
  // In layer order, a later embedding's token matrix and the head's weight.
  EXPECT_EQ(tied->copies, (std::vector<std::string>{"layers.7.token", "layers.12.weight"}));
  EXPECT_EQ(tied->stored, "layers.0.token");
  EXPECT_EQ(weights_file_metadata("exp.yaml", tied).at("tied_weights"),
            R"({"layers.12.weight":"layers.0.token","layers.7.token":"layers.0.token"})");
}

TEST(WeightsFile, NoTieWithoutATiedLayer) {
  const std::map<std::string, std::string> settings = {{"model.layers[0].type", "embedding"},
                                                       {"model.layers[1].type", "linear"}};
  EXPECT_FALSE(tied_names_in_settings(settings).has_value());
  EXPECT_EQ(weights_file_metadata("exp.yaml", std::nullopt),
            (std::map<std::string, std::string>{
                {"format", "pt"}, {"producer", "mpipe"}, {"config", "exp.yaml"}}));
}

}  // namespace
}  // namespace mpipe::checkpoint
