// Tests for the settings text ranks compare at start-up, and the differences it names.
#include "config/settings_text.h"

#include <gtest/gtest.h>

namespace mpipe::config {
namespace {

TEST(SettingsText, IsOneSortedLinePerKey) {
  EXPECT_EQ(settings_text({{"train.steps", "3"}, {"data.path", "a\nb"}}),
            "data.path: a\\nb\ntrain.steps: 3\n");
}

TEST(SettingsText, SameSettingsHaveNoDifference) {
  const std::string text = settings_text({{"a", "1"}, {"b", "2"}});
  EXPECT_EQ(describe_settings_difference(text, text, "rank 0"), std::nullopt);
}

TEST(SettingsText, TheFirstDifferingKeyIsNamedWithBothValues) {
  const std::string rank0 = settings_text({{"optimizer.lr", "0.01"}, {"train.steps", "3"}});
  EXPECT_EQ(describe_settings_difference(
                settings_text({{"optimizer.lr", "0.01"}, {"train.steps", "7"}}), rank0, "rank 0"),
            "train.steps is 7 here, 3 on rank 0");
}

TEST(SettingsText, EveryDifferingKeyIsNamedUpToThreeAndTheRestCounted) {
  const std::string rank0 = settings_text({{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}});
  EXPECT_EQ(describe_settings_difference(settings_text({{"a", "2"}, {"b", "1"}, {"c", "2"}}), rank0,
                                         "rank 0"),
            "a is 2 here, 1 on rank 0; c is 2 here, 1 on rank 0; d is not set here, 1 on rank 0");
  EXPECT_EQ(describe_settings_difference(
                settings_text({{"a", "2"}, {"b", "2"}, {"c", "2"}, {"d", "2"}}), rank0, "rank 0"),
            "a is 2 here, 1 on rank 0; b is 2 here, 1 on rank 0; c is 2 here, 1 on rank 0; and 1 "
            "more");
}

TEST(SettingsText, AKeyOnOneSideOnlyIsNamed) {
  const std::string rank0 = settings_text({{"model.layers[0].type", "relu"}});
  const std::string more =
      settings_text({{"model.layers[0].type", "relu"}, {"model.layers[1].type", "tanh"}});
  EXPECT_EQ(describe_settings_difference(more, rank0, "rank 0"),
            "model.layers[1].type is tanh here, not set on rank 0");
  EXPECT_EQ(describe_settings_difference(rank0, more, "rank 0"),
            "model.layers[1].type is not set here, tanh on rank 0");
}

TEST(SettingsText, LongValuesAreShortened) {
  const std::string rank0 = settings_text({{"data.path", std::string(100, 'a')}});
  EXPECT_EQ(describe_settings_difference(settings_text({{"data.path", "b"}}), rank0, "rank 0"),
            "data.path is b here, " + std::string(60, 'a') + "... on rank 0");
}

}  // namespace
}  // namespace mpipe::config
