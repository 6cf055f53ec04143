// BucketedAllreduce: per-bucket MPI_Iallreduce, started from the end of the buffer.
#include "comm/bucketed_allreduce.h"

#include <fmt/format.h>

#include <bit>

#include "core/error.h"

namespace mpipe::comm {

BucketedAllreduce::BucketedAllreduce(const Communicator& comm, std::span<float> data,
                                     std::vector<size_t> begins)
    : BucketedAllreduce(std::vector<const Communicator*>{&comm}, data, std::move(begins)) {}

BucketedAllreduce::BucketedAllreduce(std::vector<const Communicator*> levels, std::span<float> data,
                                     std::vector<size_t> begins)
    : levels_(std::move(levels)), data_(data), begins_(std::move(begins)) {
  check(!levels_.empty(), "BucketedAllreduce: no communicator");
  if (data_.empty()) begins_.clear();
  check(data_.empty() || (!begins_.empty() && begins_.front() == 0),
        "BucketedAllreduce: the first bucket must begin at 0");
  for (size_t i = 1; i < begins_.size(); ++i) {
    check(begins_[i - 1] < begins_[i] && begins_[i] < data_.size(),
          "BucketedAllreduce: bucket {} begins at {}: begins must ascend within {} values", i,
          begins_[i], data_.size());
  }
  next_ = begins_.size();
  requests_.resize(levels_.size());
  for (auto& level : requests_) level.reserve(begins_.size());
}

void BucketedAllreduce::start(size_t level, size_t k) {
  const size_t bucket = begins_.size() - 1 - k;
  const size_t end = bucket + 1 < begins_.size() ? begins_[bucket + 1] : data_.size();
  requests_[level].push_back(
      levels_[level]->iallreduce_sum(data_.subspan(begins_[bucket], end - begins_[bucket])));
}

void BucketedAllreduce::start_from(size_t offset) {
  while (next_ > 0 && begins_[next_ - 1] >= offset) {
    --next_;
    start(0, begins_.size() - 1 - next_);
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
