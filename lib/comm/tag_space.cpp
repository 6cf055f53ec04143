// Tags as bit fields: packing, unpacking, and the check against MPI_TAG_UB.
#include "comm/tag_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "comm/mpi_handles.h"
#include "core/error.h"

namespace mpipe::comm {
namespace {

constexpr int kMessageStream = 0;
constexpr int kTensorStream = 1;
constexpr int kTiedStream = 2;

// Bits that hold the values 0..count-1.
int bits_for(int count) {
  check(count >= 1, "TagSpace: a count of {}", count);
  return std::bit_width(static_cast<unsigned>(count - 1));
}

int64_t low_bits(int64_t value, int bits) { return value & ((int64_t{1} << bits) - 1); }

}  // namespace

TagSpace::TagSpace(const TagNeeds& needs)
    : needs_(needs),
      stream_bits_(needs.tied_uses > 0 ? 2 : 1),
      kind_bits_(bits_for(needs.kinds)),
      micro_batch_bits_(bits_for(needs.micro_batches)),
      chunk_bits_(bits_for(needs.chunks)),
      index_bits_(bits_for(needs.tensors)),
      tied_bits_(needs.tied_uses > 0 ? bits_for(needs.tied_uses * needs.tied_uses) : 0) {
  check(needs.tied_uses >= 0, "TagSpace: {} tied uses", needs.tied_uses);
}

int TagSpace::bits() const {
  return stream_bits_ + std::max({message_bits(), index_bits_, tied_bits_});
}

int TagSpace::message(const MessageTag& fields) const {
  check(fields.round >= 0 && 0 <= fields.chunk && fields.chunk < needs_.chunks &&
            0 <= fields.micro_batch && fields.micro_batch < needs_.micro_batches &&
            0 <= fields.kind && fields.kind < needs_.kinds,
        "TagSpace: round {} chunk {} micro-batch {} kind {} outside {} chunks, {} micro-batches, "
        "{} kinds",
        fields.round, fields.chunk, fields.micro_batch, fields.kind, needs_.chunks,
        needs_.micro_batches, needs_.kinds);
  int64_t tag = low_bits(fields.round, kRoundBits);
  tag = (tag << chunk_bits_) | fields.chunk;
  tag = (tag << micro_batch_bits_) | fields.micro_batch;
  tag = (tag << kind_bits_) | fields.kind;
  return static_cast<int>((tag << stream_bits_) | kMessageStream);
}

int TagSpace::tensor(int index) const {
  check(0 <= index && index < needs_.tensors, "TagSpace: tensor {} outside {}", index,
        needs_.tensors);
  return static_cast<int>((int64_t{index} << stream_bits_) | kTensorStream);
}

int TagSpace::tied(const TiedTag& fields) const {
  const int uses = needs_.tied_uses;
  check(
      0 <= fields.from_use && fields.from_use < uses && 0 <= fields.to_use && fields.to_use < uses,
      "TagSpace: tied uses {} and {} outside {}", fields.from_use, fields.to_use, uses);
  const int64_t pair = int64_t{fields.from_use} * uses + fields.to_use;
  return static_cast<int>((pair << stream_bits_) | kTiedStream);
}

std::variant<MessageTag, TensorTag, TiedTag> TagSpace::decode(int tag) const {
  int64_t rest = tag;
  const auto take = [&rest](int bits) {
    const auto field = static_cast<int>(low_bits(rest, bits));
    rest >>= bits;
    return field;
  };
  const int stream = take(stream_bits_);
  if (stream == kTensorStream) return TensorTag{.index = static_cast<int>(rest)};
  if (stream == kTiedStream) {
    const auto pair = static_cast<int>(rest);
    return TiedTag{.from_use = pair / needs_.tied_uses, .to_use = pair % needs_.tied_uses};
  }
  MessageTag fields;
  fields.kind = take(kind_bits_);
  fields.micro_batch = take(micro_batch_bits_);
  fields.chunk = take(chunk_bits_);
  fields.round = take(kRoundBits);
  return fields;
}

int TagSpace::largest() const {
  check(bits() <= 31, "TagSpace: {} bits do not fit in an int", bits());
  const int message_largest = message({.round = (int64_t{1} << kRoundBits) - 1,
                                       .chunk = needs_.chunks - 1,
                                       .micro_batch = needs_.micro_batches - 1,
                                       .kind = needs_.kinds - 1});
  const int largest = std::max(message_largest, tensor(needs_.tensors - 1));
  if (needs_.tied_uses == 0) return largest;
  return std::max(largest,
                  tied({.from_use = needs_.tied_uses - 1, .to_use = needs_.tied_uses - 1}));
}

std::optional<std::string> TagSpace::problem(int tag_ub) const {
  if (bits() <= 31 && largest() <= tag_ub) return std::nullopt;
  const std::string tied =
      needs_.tied_uses == 0
          ? ""
          : fmt::format("; {} for {} tied uses", tied_bits_ + stream_bits_, needs_.tied_uses);
  return fmt::format(
      "message tags need {} bits ({} round, {} chunk, {} micro-batch, {} kind, {} stream; {} for "
      "{} tensors{}), but this MPI library's MPI_TAG_UB is {} ({} bits)",
      bits(), kRoundBits, chunk_bits_, micro_batch_bits_, kind_bits_, stream_bits_,
      index_bits_ + stream_bits_, needs_.tensors, tied, tag_ub,
      std::bit_width(static_cast<unsigned>(std::max(tag_ub, 0))));
}

int tag_upper_bound() {
  if (const char* injected = std::getenv("MPIPE_TEST_TAG_UB"); injected && *injected) {
    return std::atoi(injected);
  }
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr");
  check(found != 0, "MPI_Comm_get_attr: MPI_COMM_WORLD has no MPI_TAG_UB");
  return *static_cast<int*>(value);
}

}  // namespace mpipe::comm
