// Tests of the tag layout (pure: no MPI): every field combination has its own tag, tags decode
// to their fields (the tied copies' stream too), rounds wrap, and a layout larger than MPI_TAG_UB
// is refused.
#include "comm/tag_space.h"

#include <gtest/gtest.h>

#include <set>

#include "core/error.h"

namespace mpipe::comm {
namespace {

TEST(TagSpace, EveryMessageAndTensorHasItsOwnTagWhichDecodesToItsFields) {
  const TagSpace tags({.kinds = 3, .micro_batches = 5, .chunks = 3, .tensors = 37});
  std::set<int> seen;
  for (int64_t round = 0; round < (int64_t{1} << TagSpace::kRoundBits); ++round) {
    for (int chunk = 0; chunk < 3; ++chunk) {
      for (int micro_batch = 0; micro_batch < 5; ++micro_batch) {
        for (int kind = 0; kind < 3; ++kind) {
          const MessageTag fields{
              .round = round, .chunk = chunk, .micro_batch = micro_batch, .kind = kind};
          const int tag = tags.message(fields);
          EXPECT_TRUE(seen.insert(tag).second) << "tag " << tag << " made twice";
          EXPECT_GE(tag, 0);
          EXPECT_LE(tag, tags.largest());
          ASSERT_EQ(std::get<MessageTag>(tags.decode(tag)), fields);
        }
      }
    }
  }
  for (int index = 0; index < 37; ++index) {
    const int tag = tags.tensor(index);
    EXPECT_TRUE(seen.insert(tag).second) << "tensor tag " << tag << " is a message's";
    EXPECT_LE(tag, tags.largest());
    EXPECT_EQ(std::get<TensorTag>(tags.decode(tag)), TensorTag{.index = index});
  }
  EXPECT_EQ(*seen.rbegin(), tags.largest());
}

TEST(TagSpace, TiedCopiesPartsHaveAStreamOfTheirOwn) {
  const TagSpace tags({.kinds = 3, .micro_batches = 4, .chunks = 2, .tensors = 5, .tied_uses = 3});
  std::set<int> seen;
  for (int64_t round = 0; round < (int64_t{1} << TagSpace::kRoundBits); ++round) {
    for (int chunk = 0; chunk < 2; ++chunk) {
      for (int micro_batch = 0; micro_batch < 4; ++micro_batch) {
        for (int kind = 0; kind < 3; ++kind) {
          const MessageTag fields{
              .round = round, .chunk = chunk, .micro_batch = micro_batch, .kind = kind};
          ASSERT_TRUE(seen.insert(tags.message(fields)).second);
          ASSERT_EQ(std::get<MessageTag>(tags.decode(tags.message(fields))), fields);
        }
      }
    }
  }
  for (int index = 0; index < 5; ++index) {
    EXPECT_TRUE(seen.insert(tags.tensor(index)).second);
    EXPECT_EQ(std::get<TensorTag>(tags.decode(tags.tensor(index))), TensorTag{.index = index});
  }
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      const TiedTag fields{.from_use = from, .to_use = to};
      const int tag = tags.tied(fields);
      EXPECT_TRUE(seen.insert(tag).second) << "tied tag " << tag << " made twice";
      EXPECT_LE(tag, tags.largest());
      EXPECT_EQ(std::get<TiedTag>(tags.decode(tag)), fields);
    }
  }
  EXPECT_EQ(*seen.rbegin(), tags.largest());
  // Two stream bits, 2 kind, 2 micro-batch, 1 chunk, 8 round.
  EXPECT_EQ(tags.bits(), 15);
  EXPECT_THROW(tags.tied({.from_use = 3}), Error);
  EXPECT_THROW(tags.tied({.to_use = -1}), Error);
  // Without tied uses there is no such stream.
  EXPECT_THROW(TagSpace({.kinds = 3}).tied({}), Error);
  EXPECT_EQ(tags.problem(1000),
            "message tags need 15 bits (8 round, 1 chunk, 2 micro-batch, 2 kind, 2 stream; 5 for 5 "
            "tensors; 6 for 3 tied uses), but this MPI library's MPI_TAG_UB is 1000 (10 bits)");
}

TEST(TagSpace, RoundsWrapAndKeepTheirOtherFields) {
  const TagSpace tags({.kinds = 3, .micro_batches = 4});
  const int64_t period = int64_t{1} << TagSpace::kRoundBits;
  const MessageTag late{.round = 7 * period + 5, .chunk = 0, .micro_batch = 3, .kind = 2};
  EXPECT_EQ(tags.message(late), tags.message({.round = 5, .micro_batch = 3, .kind = 2}));
  EXPECT_NE(tags.message(late), tags.message({.round = 6, .micro_batch = 3, .kind = 2}));
}

TEST(TagSpace, FieldsAreOnlyAsWideAsTheRunNeeds) {
  // 1 stream bit, 2 kind bits, 3 micro-batch bits (M = 8), no chunk bit, 8 round bits.
  const TagSpace tags({.kinds = 3, .micro_batches = 8, .chunks = 1, .tensors = 100});
  EXPECT_EQ(tags.bits(), 14);
  // Round 255, micro-batch 7, kind 2 (binary 10), stream 0: 11111111 111 10 0.
  EXPECT_EQ(tags.largest(), 0b11111111'111'10'0);
  // The default layout of a run fits the bound every MPI library guarantees.
  EXPECT_EQ(tags.problem(kGuaranteedTagUb), std::nullopt);
}

TEST(TagSpace, FieldsOutsideTheirCountsAreRefused) {
  const TagSpace tags({.kinds = 3, .micro_batches = 4, .chunks = 2, .tensors = 10});
  EXPECT_THROW(tags.message({.round = 0, .micro_batch = 4}), Error);
  EXPECT_THROW(tags.message({.round = 0, .chunk = 2}), Error);
  EXPECT_THROW(tags.message({.round = 0, .kind = 3}), Error);
  EXPECT_THROW(tags.message({.round = -1}), Error);
  EXPECT_THROW(tags.tensor(10), Error);
  EXPECT_THROW(tags.tensor(-1), Error);
}

TEST(TagSpace, ALayoutAboveTheBoundIsRefusedWithItsFields) {
  // 4096 micro-batches: 1 + 2 + 12 + 0 + 8 = 23 bits.
  const TagSpace tags({.kinds = 3, .micro_batches = 4096, .chunks = 1, .tensors = 300});
  EXPECT_EQ(tags.problem((1 << 23) - 1), std::nullopt);
  EXPECT_EQ(tags.problem(kGuaranteedTagUb),
            "message tags need 23 bits (8 round, 0 chunk, 12 micro-batch, 2 kind, 1 stream; 10 "
            "for 300 tensors), but this MPI library's MPI_TAG_UB is 32767 (15 bits)");
  // The tensors' field alone can be the one that does not fit.
  const TagSpace many_tensors({.kinds = 3, .micro_batches = 2, .tensors = 1 << 20});
  EXPECT_NE(many_tensors.problem(kGuaranteedTagUb), std::nullopt);
  EXPECT_EQ(many_tensors.problem((1 << 21) - 1), std::nullopt);
}

}  // namespace
}  // namespace mpipe::comm
