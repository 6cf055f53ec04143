// Every enum's name table (core/enum_names.h) reads each of its words back to its value, names
// each value once, and lists its words for messages.
#include "core/enum_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "comm/communicator.h"
#include "config/train_config.h"
#include "data/data_config.h"
#include "kernels/eltwise.h"
#include "kernels/precision.h"
#include "optim/optimizer_config.h"
#include "plan/pipeline_config.h"

namespace mpipe {
namespace {

// Words unique, values unique, and each word reads back as its value and is its value's name.
template <typename E, std::size_t N>
void expect_round_trip(const EnumNames<E, N>& names) {
  std::set<std::string_view> words;
  std::set<E> values;
  for (const auto& [word, value] : names) {
    EXPECT_TRUE(words.insert(word).second) << "word twice: " << word;
    EXPECT_TRUE(values.insert(value).second) << "value twice, second as " << word;
    EXPECT_EQ(value_named(names, word), value) << word;
    EXPECT_EQ(name_of(names, value), word);
  }
  EXPECT_EQ(value_named(names, "no-such-word"), std::nullopt);
}

TEST(EnumNames, EveryTableReadsBack) {
  expect_round_trip(plan::kScheduleNames);
  expect_round_trip(plan::kRecomputeNames);
  expect_round_trip(plan::kWeightGradsNames);
  expect_round_trip(plan::kPartitionModeNames);
  expect_round_trip(kernels::kPrecisionNames);
  expect_round_trip(kernels::kEltwiseNames);
  expect_round_trip(comm::kThreadLevelNames);
  expect_round_trip(data::kDatasetNames);
  expect_round_trip(optim::kOptimizerNames);
  expect_round_trip(optim::kLrScheduleNames);
  expect_round_trip(train::kOnNonFiniteNames);
}

TEST(EnumNames, NameOfAValueTheTableLacksIsAQuestionMark) {
  constexpr EnumNames<int, 2> names{{{"one", 1}, {"two", 2}}};
  EXPECT_EQ(name_of(names, 3), "?");
}

TEST(EnumNames, ListsWordsInTableOrder) {
  EXPECT_EQ(list_names(plan::kRecomputeNames), "always, except_last, never, per_layer, auto");
  EXPECT_EQ(list_names(kernels::kEltwiseNames, " or "), "relu, gelu or tanh");
  EXPECT_EQ(list_names(plan::kScheduleNames, " or "),
            "gpipe, 1f1b, zb_h1, interleaved, zbv or auto");
  constexpr EnumNames<int, 1> one{{{"only", 1}}};
  EXPECT_EQ(list_names(one, " or "), "only");
}

TEST(EnumNames, ToStringUsesTheTable) {
  EXPECT_EQ(plan::to_string(plan::Recompute::kPerLayer), "per_layer");
  EXPECT_EQ(plan::to_string(plan::WeightGrads::kBatched), "batched");
  EXPECT_EQ(plan::to_string(plan::PartitionMode::kUniform), "uniform");
  EXPECT_EQ(kernels::to_string(kernels::Precision::kBf16), "bf16");
  EXPECT_EQ(comm::to_string(comm::ThreadLevel::kSerialized), "MPI_THREAD_SERIALIZED");
}

}  // namespace
}  // namespace mpipe
