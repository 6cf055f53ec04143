// BucketedAllreduce: per-bucket MPI_Iallreduce, started from the end of the buffer.
#include "comm/bucketed_allreduce.h"

#include "core/error.h"

namespace mpipe::comm {

BucketedAllreduce::BucketedAllreduce(const Communicator& comm, std::span<float> data,
                                     std::vector<size_t> begins)
    : comm_(comm), data_(data), begins_(std::move(begins)) {
  if (data_.empty()) begins_.clear();
  check(data_.empty() || (!begins_.empty() && begins_.front() == 0),
        "BucketedAllreduce: the first bucket must begin at 0");
  for (size_t i = 1; i < begins_.size(); ++i) {
    check(begins_[i - 1] < begins_[i] && begins_[i] < data_.size(),
          "BucketedAllreduce: bucket {} begins at {}: begins must ascend within {} values", i,
          begins_[i], data_.size());
  }
  next_ = begins_.size();
  requests_.reserve(begins_.size());
}

void BucketedAllreduce::start_from(size_t offset) {
  while (next_ > 0 && begins_[next_ - 1] >= offset) {
    --next_;
    const size_t end = next_ + 1 < begins_.size() ? begins_[next_ + 1] : data_.size();
    requests_.push_back(comm_.iallreduce_sum(data_.subspan(begins_[next_], end - begins_[next_])));
  }
}

void BucketedAllreduce::progress() {
  for (Request& request : requests_) {
    if (!request.test()) return;  // one MPI_Test drives the progress of all of them
  }
}

size_t BucketedAllreduce::num_completed() const {
  size_t done = 0;
  for (const Request& request : requests_) done += request.active() ? 0 : 1;
  return done;
}

void BucketedAllreduce::finish() {
  start_from(0);
  for (Request& request : requests_) request.wait();
}

}  // namespace mpipe::comm
