// BucketedAllreduce: sums a float buffer over a communicator in buckets, each started
// (MPI_Iallreduce) as soon as its part of the buffer is final, so the reduction overlaps the
// computation of the rest.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {

// Bucket i is data[begins[i], begins[i + 1]) (the last one ends at data.size()). Buckets are
// started in descending order (the backward pass finalizes a gradient buffer from its end), so
// every rank of the communicator starts the same collectives in the same order whatever the
// timing. Each element is summed by exactly one MPI_Iallreduce of its own bucket: the sum of a
// bucket is the same as if that bucket were reduced alone; with 2 ranks it is a + b, the same
// bits as one allreduce of the whole buffer.
class BucketedAllreduce {
 public:
  // `begins`: strictly ascending offsets into `data`, the first 0 (empty `data`: no buckets).
  BucketedAllreduce(const Communicator& comm, std::span<float> data, std::vector<size_t> begins);
  BucketedAllreduce(const BucketedAllreduce&) = delete;
  BucketedAllreduce& operator=(const BucketedAllreduce&) = delete;

  // Starts every bucket not yet started that begins at or after `offset`: call it when
  // data[offset, end) is final.
  void start_from(size_t offset);
  // Drives MPI's progress (this Open MPI has none of its own) by testing the started buckets.
  void progress();
  // Starts the buckets that are left and waits for all of them (under the watchdog's deadline).
  void finish();

  size_t num_buckets() const { return begins_.size(); }
  size_t num_started() const { return begins_.size() - next_; }
  // Buckets known to be complete (by progress() or finish()).
  size_t num_completed() const;

 private:
  const Communicator& comm_;
  std::span<float> data_;
  std::vector<size_t> begins_;
  size_t next_;                    // buckets [next_, size) have been started
  std::vector<Request> requests_;  // in start order
};

}  // namespace mpipe::comm
