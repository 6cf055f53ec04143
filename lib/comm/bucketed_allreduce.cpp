// BucketedAllreduce: per-bucket MPI_Iallreduce, started from the last bucket.
#include "comm/bucketed_allreduce.h"

#include <fmt/format.h>

#include <bit>

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
    : levels_(std::move(levels)), buckets_(std::move(buckets)) {
  check(!levels_.empty(), "BucketedAllreduce: no communicator");
  next_ = buckets_.size();
  requests_.resize(levels_.size());
  for (auto& level : requests_) level.reserve(buckets_.size());
}

void BucketedAllreduce::start(size_t level, size_t k) {
  requests_[level].push_back(levels_[level]->iallreduce_sum(buckets_[buckets_.size() - 1 - k]));
}

void BucketedAllreduce::start_from(size_t first) {
  while (next_ > first) {
    --next_;
    start(0, buckets_.size() - 1 - next_);
  }
}

void BucketedAllreduce::progress() {
  for (size_t level = 0; level < levels_.size(); ++level) {
    std::vector<Request>& requests = requests_[level];
    for (Request& request : requests) {
      if (!request.test()) break;  // one MPI_Test drives the progress of all of them
    }
    if (level + 1 == levels_.size()) break;
    // The next level's buckets start in the same order as this level's, each once it is summed
    // here.
    while (requests_[level + 1].size() < requests.size() &&
           !requests[requests_[level + 1].size()].active()) {
      start(level + 1, requests_[level + 1].size());
    }
  }
}

size_t BucketedAllreduce::num_completed() const {
  size_t done = 0;
  for (const Request& request : requests_.back()) done += request.active() ? 0 : 1;
  return done;
}

void BucketedAllreduce::finish() {
  start_from(0);
  for (size_t level = 0; level < levels_.size(); ++level) {
    std::vector<Request>& requests = requests_[level];
    for (size_t k = 0; k < requests.size(); ++k) {
      requests[k].wait();
      if (level + 1 < levels_.size() && requests_[level + 1].size() == k) start(level + 1, k);
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
