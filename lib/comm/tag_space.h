// comm::TagSpace: the one layout of point-to-point message tags, sized by what a run must tell
// apart and checked against the MPI library's MPI_TAG_UB before the first message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace mpipe::comm {

// The smallest MPI_TAG_UB the MPI standard allows: all a tag may count on without a check.
inline constexpr int kGuaranteedTagUb = 32767;

// What a run's point-to-point messages must tell apart (each count at least 1).
struct TagNeeds {
  int kinds = 1;          // what a pipeline message carries (pipeline::Direction)
  int micro_batches = 1;  // micro-batch indices 0..M-1
  int chunks = 1;         // model chunks per rank (pipeline.virtual_stages)
  int tensors = 1;        // tensors a rank sends one by one (the weight export's)
  // The uses of a tied matrix whose copies' shards exchange their gradients (train::TiedCopies on
  // shards); 0: no such exchange, and no stream for it.
  int tied_uses = 0;
};

// A pipeline message: what it carries, of which micro-batch and chunk, in which round (a training
// step or an evaluation batch), the round modulo 2^TagSpace::kRoundBits.
struct MessageTag {
  int64_t round = 0;
  int chunk = 0;
  int micro_batch = 0;
  int kind = 0;
  bool operator==(const MessageTag&) const = default;
};

// The index-th tensor a rank sends one by one.
struct TensorTag {
  int index = 0;
  bool operator==(const TensorTag&) const = default;
};

// The part of use `from_use`'s copy of a tied matrix that a shard owner sends to the owner of a
// shard of use `to_use`'s copy.
struct TiedTag {
  int from_use = 0;
  int to_use = 0;
  bool operator==(const TiedTag&) const = default;
};

// A tag is a bit field, lowest bits first: the stream (0: pipeline messages, 1: tensors, 2: tied
// copies' shards; one bit, two when the run has the third), then for a pipeline message its kind,
// micro-batch, chunk and round, for a tensor its index, for a tied copy's part its pair of uses
// (from_use · tied_uses + to_use). Each field is as wide as the run needs (the round's is fixed),
// so two different messages never share a tag and the largest tag is known before the job sends
// anything. A receive of a (kind, micro-batch) is posted only after the previous round's has
// completed, and MPI matches equal tags in the order they were sent, so rounds wrapping every
// 2^kRoundBits is safe.
class TagSpace {
 public:
  static constexpr int kRoundBits = 8;

  explicit TagSpace(const TagNeeds& needs);

  // Every field must be within its count (an internal error otherwise); `round` >= 0 wraps.
  int message(const MessageTag& fields) const;
  int tensor(int index) const;
  int tied(const TiedTag& fields) const;
  // The fields of a tag this space made (the round modulo 2^kRoundBits).
  std::variant<MessageTag, TensorTag, TiedTag> decode(int tag) const;

  // The largest tag this space can make, and the bits it takes.
  int largest() const;
  int bits() const;
  // Nothing when every tag is <= `tag_ub`; else why not, in one phrase: "message tags need 18
  // bits (8 round, 0 chunk, 7 micro-batch, 2 kind, 1 stream; 10 for 511 tensors), but MPI_TAG_UB
  // is 32767 (15 bits)" (with tied copies' shards: "...; 10 for 511 tensors; 4 for 2 tied uses)").
  std::optional<std::string> problem(int tag_ub) const;

 private:
  int message_bits() const { return kind_bits_ + micro_batch_bits_ + chunk_bits_ + kRoundBits; }

  TagNeeds needs_;
  int stream_bits_;
  int kind_bits_;
  int micro_batch_bits_;
  int chunk_bits_;
  int index_bits_;
  int tied_bits_;  // 0 without tied copies' shards
};

// This MPI library's MPI_TAG_UB (an attribute of MPI_COMM_WORLD). The environment variable
// MPIPE_TEST_TAG_UB, when set, replaces it (for tests only, like MPIPE_TEST_VERSION).
int tag_upper_bound();

}  // namespace mpipe::comm
