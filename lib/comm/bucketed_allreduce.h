// BucketedAllreduce: sums a float buffer over a communicator in buckets, each started
// (MPI_Iallreduce) as soon as its part of the buffer is final, so the reduction overlaps the
// computation of the rest; or over the levels of a fixed pairwise tree, each bucket reduced
// whole or scattered (recursive halving: each rank ends with the sum of its shard only).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace mpipe::comm {

// Each bucket is a span of floats summed in place by MPI_Iallreduce. Buckets are started from
// the last (the backward pass finalizes a gradient buffer from its end), so every rank of the
// communicator starts the same collectives in the same order whatever the timing. Each element is
// summed by exactly one MPI_Iallreduce of its own bucket: the sum of a bucket is the same as if
// that bucket were reduced alone; with 2 ranks it is a + b, the same bits as one allreduce of the
// whole buffer.
//
// Over a pairwise tree (tree_levels), each bucket is summed over level 0's pair, then level 1's,
// and so on, each level's collectives started in the same bucket order: with 2^k ranks every rank
// ends with ((s0 + s1) + (s2 + s3)) + ..., whatever algorithm MPI picks (each level's sum is one
// IEEE addition, which commutes).
//
// Scattered over the tree (a reduce-scatter by recursive halving), each bucket is cut into 2^k
// shards, and at level i a rank keeps the half of its remaining shards that its bit i selects
// (its rank in level i's pair): it sends the other half to its partner and adds the partner's
// part of its own half into it, one IEEE addition per element per level, in the same bucket
// order. Every element of a rank's final shard is then summed exactly as the tree's allreduce
// sums it, the same bits; the shard is shard_index(group rank) of optim/replica_shard.h (the
// rank's bits reversed), and the rest of the bucket holds partial sums.
class BucketedAllreduce {
 public:
  BucketedAllreduce(const Communicator& comm, std::vector<std::span<float>> buckets);
  // `levels`: the tree's levels, lowest first (each a communicator of 2 ranks), or one
  // communicator of any size (the constructor above).
  BucketedAllreduce(std::vector<const Communicator*> levels, std::vector<std::span<float>> buckets);
  // Scattered: `shards[b]` holds bucket b's 2^k + 1 shard begins in shard order (ascending
  // offsets into the bucket, the first 0, the last its size; shards may be empty), `levels` the
  // tree's k levels (tree_levels). Throws mpipe::Error on other cuts.
  BucketedAllreduce(std::vector<const Communicator*> levels, std::vector<std::span<float>> buckets,
                    std::vector<std::vector<size_t>> shards);
  BucketedAllreduce(const BucketedAllreduce&) = delete;
  BucketedAllreduce& operator=(const BucketedAllreduce&) = delete;

  // Starts every bucket not yet started from bucket `first` on: call it when buckets [first,
  // end) are final.
  void start_from(size_t first);
  // Drives MPI's progress (this Open MPI has none of its own) by testing the started buckets,
  // and starts a bucket's next level once its previous one is done (in bucket order).
  void progress();
  // Starts the buckets that are left and waits for all of them (under the watchdog's deadline).
  void finish();

  size_t num_buckets() const { return buckets_.size(); }
  size_t num_started() const { return buckets_.size() - next_; }
  // Buckets known to be complete at every level (by progress() or finish()).
  size_t num_completed() const;

 private:
  // One bucket's sum at one level: an allreduce in place, or (scattered) the partner's half sent
  // and this rank's half received, then added.
  struct Sum {
    Request request;  // the allreduce, or the receive
    Request send;
    std::vector<float> received;
    std::span<float> into;  // where `received` is added
    bool done = false;
    // Tests (or waits for) the requests; adds what was received once both are complete.
    bool test();
    void wait();
  };
  // Starts level `level` of the `k`-th bucket in start order.
  void start(size_t level, size_t k);
  // The halving exchange of level `level` over `bucket` cut at `shards`.
  Sum exchange(size_t level, std::span<float> bucket, const std::vector<size_t>& shards) const;

  std::vector<const Communicator*> levels_;
  std::vector<std::span<float>> buckets_;
  std::vector<std::vector<size_t>> shards_;  // per bucket when scattered, else empty
  size_t next_;                              // buckets [next_, size) have been started
  std::vector<std::vector<Sum>> sums_;       // per level, in start order
};

// `data` cut into buckets: bucket i is data[begins[i], begins[i + 1]) (the last one ends at
// data.size()). `begins`: strictly ascending offsets into `data`, the first 0 (empty `data`: no
// buckets); else throws mpipe::Error.
std::vector<std::span<float>> cut_into_buckets(std::span<float> data,
                                               const std::vector<size_t>& begins);

// The levels of a pairwise tree over `group` (its size a power of two, at least 2): level i pairs
// rank r with rank r xor 2^i. Collective over `group`.
std::vector<Communicator> tree_levels(const Communicator& group);

}  // namespace mpipe::comm
