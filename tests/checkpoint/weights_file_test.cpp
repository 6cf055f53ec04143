// Tests for a weights file's metadata: the tied matrix and its copies named from a run's settings,
// and written as "tied_weights" only when there is one; the model's settings as "model".
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
  EXPECT_EQ(weights_file_metadata("exp.yaml", settings, tied).at("tied_weights"),
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
  EXPECT_EQ(weights_file_metadata("exp.yaml", settings, tied).at("tied_weights"),
            R"({"layers.12.weight":"layers.0.token","layers.7.token":"layers.0.token"})");
}

TEST(WeightsFile, NoTieWithoutATiedLayer) {
  const std::map<std::string, std::string> settings = {{"model.layers[0].type", "embedding"},
                                                       {"model.layers[1].type", "linear"}};
  EXPECT_FALSE(tied_names_in_settings(settings).has_value());
  EXPECT_EQ(
      weights_file_metadata("exp.yaml", settings, std::nullopt),
      (std::map<std::string, std::string>{
          {"format", "pt"},
          {"producer", "mpipe"},
          {"config", "exp.yaml"},
          {"model", R"({"model.layers[0].type":"embedding","model.layers[1].type":"linear"})"}}));
}

TEST(WeightsFile, RecordsTheModelsSettingsAloneAsAJsonObjectOfStrings) {
  const std::map<std::string, std::string> settings = {{"data.seq_len", "16"},
                                                       {"model.loss", "cross_entropy"},
                                                       {"model.layers[0].type", "embedding"},
                                                       {"model.layers[0].vocab", "64"},
                                                       {"model.layers[1].rotary", "true"},
                                                       {"optimizer.lr", "0.01"}};
  EXPECT_EQ(weights_file_metadata("exp.yaml", settings, std::nullopt).at("model"),
            R"({"model.layers[0].type":"embedding","model.layers[0].vocab":"64",)"
            R"("model.layers[1].rotary":"true","model.loss":"cross_entropy"})");
}

}  // namespace
}  // namespace mpipe::checkpoint
