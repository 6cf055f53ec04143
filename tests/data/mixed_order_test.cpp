// Tests for MixedOrder (a weighted mix of lists, one position at a time) and the sampler's
// batches of a mix: the shares, the draws' proportions, each list's epochs, determinism.
#include "data/mixed_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "data/sampler.h"

namespace mpipe::data {
namespace {

// How many of positions [first, first + count) each part of `parts` gives.
std::vector<int64_t> draws_per_part(const MixedOrder& order, const std::vector<MixPart>& parts,
                                    int64_t first, int64_t count) {
  std::vector<int64_t> ends;
  int64_t end = 0;
  for (const MixPart& part : parts) ends.push_back(end += part.size);
  std::vector<int64_t> draws(parts.size(), 0);
  for (int64_t position = first; position < first + count; ++position) {
    const int64_t example = order(position);
    ++draws[static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), example) -
                                ends.begin())];
  }
  return draws;
}

TEST(MixedOrder, SharesAreTheWeightsInUnitsOf2To20AndAtLeastOne) {
  const MixedOrder three_to_one(1, {{.size = 5, .weight = 3}, {.size = 9, .weight = 1}});
  EXPECT_EQ(three_to_one.share(0), 786432);
  EXPECT_EQ(three_to_one.share(1), 262144);
  const MixedOrder thirds(1, {{.size = 5, .weight = 0.2}, {.size = 9, .weight = 0.1}});
  EXPECT_EQ(thirds.share(0), 699051);  // round(2^20 * 2/3)
  EXPECT_EQ(thirds.share(1), 349525);
  const MixedOrder tiny(1, {{.size = 5, .weight = 1}, {.size = 9, .weight = 1e-9}});
  EXPECT_EQ(tiny.share(1), 1);
}

TEST(MixedOrder, DealsWeights3And1AsDesignMdSays) {
  // Parts of 100 examples: part 1's are [100, 200).
  const MixedOrder order(2, {{.size = 100, .weight = 3}, {.size = 100, .weight = 1}});
  std::vector<int> parts;
  for (int64_t position = 0; position < 8; ++position) parts.push_back(order(position) >= 100);
  EXPECT_EQ(parts, (std::vector<int>{1, 0, 0, 0, 1, 0, 0, 0}));
}

TEST(MixedOrder, EachListsShareOfTheDrawsIsItsWeightsWithinTheBinomialBound) {
  const std::vector<MixPart> parts{
      {.size = 50, .weight = 5}, {.size = 30, .weight = 3}, {.size = 7, .weight = 2}};
  const MixedOrder order(3, parts);
  const int64_t count = 20000;
  // From the start, and from deep into the run (about 10^12 examples in).
  for (const int64_t first : {int64_t{0}, int64_t{1'000'000'000'003}}) {
    const std::vector<int64_t> draws = draws_per_part(order, parts, first, count);
    for (size_t part = 0; part < parts.size(); ++part) {
      const double share = parts[part].weight / 10;
      const double expected = share * static_cast<double>(count);
      // Four standard deviations of a binomial draw of `count` with this share...
      EXPECT_LE(std::abs(static_cast<double>(draws[part]) - expected),
                4 * std::sqrt(expected * (1 - share)))
          << "part " << part << " from " << first;
      // ... which the dealing keeps far inside: within 2(l + 1) of any consecutive positions.
      EXPECT_LE(std::abs(static_cast<double>(draws[part]) - expected),
                2.0 * static_cast<double>(part + 1))
          << "part " << part << " from " << first;
    }
  }
}

TEST(MixedOrder, EachListsDrawsGoThroughItsExamplesOncePerEpoch) {
  const std::vector<MixPart> parts{{.size = 7, .weight = 1}, {.size = 5, .weight = 2}};
  const MixedOrder order(8, parts);
  std::vector<std::vector<int64_t>> drawn(2);  // each part's examples, in position order
  for (int64_t position = 0; position < 300; ++position) {
    const int64_t example = order(position);
    drawn[example < 7 ? 0 : 1].push_back(example);
  }
  for (size_t part = 0; part < 2; ++part) {
    const int64_t size = parts[part].size;
    const int64_t first = part == 0 ? 0 : 7;
    std::vector<int64_t> all(static_cast<size_t>(size));
    std::iota(all.begin(), all.end(), first);
    std::vector<std::vector<int64_t>> epochs;
    for (size_t start = 0; start + static_cast<size_t>(size) <= drawn[part].size();
         start += static_cast<size_t>(size)) {
      std::vector<int64_t> epoch(drawn[part].begin() + static_cast<std::ptrdiff_t>(start),
                                 drawn[part].begin() + static_cast<std::ptrdiff_t>(start) + size);
      epochs.push_back(epoch);
      std::sort(epoch.begin(), epoch.end());
      EXPECT_EQ(epoch, all) << "part " << part << ", epoch " << epochs.size() - 1;
    }
    ASSERT_GE(epochs.size(), 10u);
    EXPECT_NE(epochs[0], epochs[1]) << "part " << part << ": each epoch its own order";
  }
}

TEST(MixedOrder, IsAFunctionOfTheSeedAndThePositionAlone) {
  const std::vector<MixPart> parts{{.size = 40, .weight = 1}, {.size = 25, .weight = 1}};
  const MixedOrder order(5, parts);
  const MixedOrder again(5, parts);
  const MixedOrder other_seed(6, parts);
  std::vector<int64_t> forward, backward, other;
  for (int64_t position = 0; position < 200; ++position) {
    forward.push_back(order(position));
    other.push_back(other_seed(position));
  }
  for (int64_t position = 199; position >= 0; --position) backward.push_back(again(position));
  std::reverse(backward.begin(), backward.end());
  EXPECT_EQ(forward, backward);
  EXPECT_NE(forward, other);
}

TEST(EpochSampler, AMixsBatchesAreItsPositionsWhateverTheCutOrTheReplicas) {
  const std::vector<MixPart> parts{{.size = 30, .weight = 3}, {.size = 20, .weight = 1}};
  const MixedOrder order(4, parts);
  EpochSampler sampler(4, 50, ExampleOrder::kKeyed, parts);
  // The global batch of step 3 (batch 16) is positions [48, 64); replicas take rows of it, so
  // the batches of 8 that two replicas or a resume at step 6 would compute are its halves.
  std::vector<int64_t> positions;
  for (int64_t position = 48; position < 64; ++position) positions.push_back(order(position));
  const std::vector<int64_t> batch = sampler.batch(3, 16);
  EXPECT_EQ(batch, positions);
  EpochSampler resumed(4, 50, ExampleOrder::kKeyed, parts);
  std::vector<int64_t> halves = resumed.batch(7, 8);
  const std::vector<int64_t> first_half = resumed.batch(6, 8);
  halves.insert(halves.begin(), first_half.begin(), first_half.end());
  EXPECT_EQ(halves, batch);
}

}  // namespace
}  // namespace mpipe::data
