// BucketedAllreduce: per-bucket MPI_Iallreduce or halving exchanges, started from the last bucket.
#include "comm/bucketed_allreduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <memory>

#include "core/error.h"

namespace mpipe::comm {

std::vector<std::span<float>> cut_into_buckets(std::span<float> data,
                                               const std::vector<size_t>& begins) {
  if (data.empty()) return {};
  check(!begins.empty() && begins.front() == 0,
        "BucketedAllreduce: the first bucket must begin at 0");
  for (size_t i = 1; i < begins.size(); ++i) {
    check(begins[i - 1] < begins[i] && begins[i] < data.size(),
          "BucketedAllreduce: bucket {} begins at {}: begins must ascend within {} values", i,
          begins[i], data.size());
  }
  std::vector<std::span<float>> buckets;
  for (size_t i = 0; i < begins.size(); ++i) {
    const size_t end = i + 1 < begins.size() ? begins[i + 1] : data.size();
    buckets.push_back(data.subspan(begins[i], end - begins[i]));
  }
  return buckets;
}

BucketedAllreduce::BucketedAllreduce(const Communicator& comm,
                                     std::vector<std::span<float>> buckets)
    : BucketedAllreduce(std::vector<const Communicator*>{&comm}, std::move(buckets)) {}

BucketedAllreduce::BucketedAllreduce(std::vector<const Communicator*> levels,
                                     std::vector<std::span<float>> buckets)
    : BucketedAllreduce(std::move(levels), std::move(buckets), {}) {}

BucketedAllreduce::BucketedAllreduce(std::vector<const Communicator*> levels,
                                     std::vector<std::span<float>> buckets,
                                     std::vector<std::vector<size_t>> shards)
    : levels_(std::move(levels)), buckets_(std::move(buckets)), shards_(std::move(shards)) {
  check(!levels_.empty(), "BucketedAllreduce: no communicator");
  if (!shards_.empty()) {
    check(shards_.size() == buckets_.size(), "BucketedAllreduce: {} buckets, {} cuts",
          buckets_.size(), shards_.size());
    for (const Communicator* level : levels_) {
      check(level->size() == 2, "BucketedAllreduce: a scattered level of {} ranks", level->size());
    }
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const std::vector<size_t>& cuts = shards_[b];
      check(cuts.size() == (size_t{1} << levels_.size()) + 1 && cuts.front() == 0 &&
                cuts.back() == buckets_[b].size() && std::ranges::is_sorted(cuts),
            "BucketedAllreduce: bucket {} of {} floats: {} shard begins over {} levels", b,
            buckets_[b].size(), cuts.size(), levels_.size());
    }
  }
  next_ = buckets_.size();
  sums_.resize(levels_.size());
  for (auto& level : sums_) level.reserve(buckets_.size());
}

bool BucketedAllreduce::Sum::test() {
  if (done) return true;
  const bool received_all = request.test();
  if (!send.test() || !received_all) return false;
  for (size_t i = 0; i < received.size(); ++i) into[i] += received[i];
  received = {};
  done = true;
  return true;
}

void BucketedAllreduce::Sum::wait() {
  request.wait();
  send.wait();
  test();
}

BucketedAllreduce::Sum BucketedAllreduce::exchange(size_t level, std::span<float> bucket,
                                                   const std::vector<size_t>& shards) const {
  // The shards left before this level: those whose top `level` bits are this rank's lower ones
  // reversed; it keeps the half its bit `level` selects.
  const size_t count = shards.size() - 1;
  size_t first = 0;
  for (size_t i = 0; i < level; ++i) {
    first |= static_cast<size_t>(levels_[i]->rank()) << (levels_.size() - 1 - i);
  }
  const size_t half = (count >> level) / 2;
  const int mine = levels_[level]->rank();
  const size_t kept = first + static_cast<size_t>(mine) * half;
  const size_t given = first + static_cast<size_t>(1 - mine) * half;
  const auto part = [&](size_t shard) {
    return bucket.subspan(shards[shard], shards[shard + half] - shards[shard]);
  };
  Sum sum;
  const Communicator& pair = *levels_[level];
  const std::span<float> out = part(given);
  if (!out.empty()) {
    // Sent in place: nothing writes the partner's half again this step, and the gradient buffer
    // outlives the exchange (an owner that owns nothing).
    sum.send =
        pair.isend(out, std::shared_ptr<const void>(std::shared_ptr<const void>(), out.data()),
                   1 - mine, 0, "a gradient bucket's half");
  }
  sum.into = part(kept);
  if (!sum.into.empty()) {
    sum.received.resize(sum.into.size());
    sum.request = pair.irecv(sum.received, 1 - mine, 0, "a gradient bucket's half");
  }
  return sum;
}

void BucketedAllreduce::start(size_t level, size_t k) {
  const size_t b = buckets_.size() - 1 - k;
  if (shards_.empty()) {
    Sum& sum = sums_[level].emplace_back();
    sum.request = levels_[level]->iallreduce_sum(buckets_[b]);
  } else {
    sums_[level].push_back(exchange(level, buckets_[b], shards_[b]));
  }
}

void BucketedAllreduce::start_from(size_t first) {
  while (next_ > first) {
    --next_;
    start(0, buckets_.size() - 1 - next_);
  }
}

void BucketedAllreduce::progress() {
  for (size_t level = 0; level < levels_.size(); ++level) {
    std::vector<Sum>& sums = sums_[level];
    for (Sum& sum : sums) {
      if (!sum.test()) break;  // one MPI_Test drives the progress of all of them
    }
    if (level + 1 == levels_.size()) break;
    // The next level's buckets start in the same order as this level's, each once it is summed
    // here.
    while (sums_[level + 1].size() < sums.size() && sums[sums_[level + 1].size()].done) {
      start(level + 1, sums_[level + 1].size());
    }
  }
}

size_t BucketedAllreduce::num_completed() const {
  size_t done = 0;
  for (const Sum& sum : sums_.back()) done += sum.done ? 1 : 0;
  return done;
}

void BucketedAllreduce::finish() {
  start_from(0);
  for (size_t level = 0; level < levels_.size(); ++level) {
    std::vector<Sum>& sums = sums_[level];
    for (size_t k = 0; k < sums.size(); ++k) {
      sums[k].wait();
      if (level + 1 < levels_.size() && sums_[level + 1].size() == k) start(level + 1, k);
    }
  }
}

std::vector<Communicator> tree_levels(const Communicator& group) {
  const int size = group.size();
  check(size >= 2 && std::has_single_bit(static_cast<unsigned>(size)),
        "tree_levels: {} ranks is not a power of two of at least 2", size);
  std::vector<Communicator> levels;
  for (int bit = 1; bit < size; bit <<= 1) {
    levels.push_back(group.split(group.rank() & ~bit, group.rank(),
                                 fmt::format("the replica pairs {} apart", bit)));
  }
  return levels;
}

}  // namespace mpipe::comm
