// Tests for ids_before: a pair tensor's padded row back to the ids a translation reads or scores.
#include "train/translation_scores.h"

#include <gtest/gtest.h>

#include <vector>

namespace mpipe::train {
namespace {

constexpr int kEos = 3;
constexpr int kPad = 0;

TEST(IdsBefore, ASourceKeepsItsEosAndDropsThePadding) {
  const std::vector<float> row = {7, 12, 9, kEos, kPad, kPad};
  EXPECT_EQ(ids_before(row, kEos, true), (std::vector<int>{7, 12, 9, kEos}));
}

TEST(IdsBefore, ATargetEndsBeforeItsEos) {
  const std::vector<float> row = {12, 7, kEos, kPad, kPad, kPad};
  EXPECT_EQ(ids_before(row, kEos, false), (std::vector<int>{12, 7}));
}

TEST(IdsBefore, TheFirstEosEndsTheRow) {
  const std::vector<float> row = {5, kEos, 6, kEos};
  EXPECT_EQ(ids_before(row, kEos, false), (std::vector<int>{5}));
}

TEST(IdsBefore, ARowWithoutEosIsKeptWhole) {
  const std::vector<float> row = {5, 6, 7};
  EXPECT_EQ(ids_before(row, kEos, true), (std::vector<int>{5, 6, 7}));
}

TEST(IdsBefore, AnEmptyTargetHasNoIds) {
  const std::vector<float> row = {kEos, kPad, kPad};
  EXPECT_TRUE(ids_before(row, kEos, false).empty());
}

}  // namespace
}  // namespace mpipe::train
