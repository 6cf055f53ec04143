// Keeping the copies of a tied matrix equal: initial values, summed gradients, the norm.
#include "train/tied_copies.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>

#include "core/error.h"
#include "core/tensor.h"
#include "model/model_builder.h"
#include "nn/init.h"
#include "optim/replica_shard.h"

namespace mpipe::train {
namespace {

// The trainable tensor `name` of global layer `layer` in `params`, or nullptr.
const nn::ParamBuffer::Entry* param_entry(const nn::ParamBuffer& params, int layer,
                                          const std::string& name) {
  for (const auto& entry : params.entries()) {
    if (entry.global_layer == layer && entry.trainable && entry.name == name) return &entry;
  }
  return nullptr;
}

std::span<float> view(std::span<float> storage, const nn::ParamBuffer::Entry* entry) {
  return storage.subspan(static_cast<size_t>(entry->offset),
                         static_cast<size_t>(entry->shape.numel()));
}

int stage_of(const std::vector<plan::LayerRange>& ranges, int layer) {
  for (size_t s = 0; s < ranges.size(); ++s) {
    if (ranges[s].begin <= layer && layer < ranges[s].end) return static_cast<int>(s);
  }
  throw Error(fmt::format("TiedCopies: layer {} is on no stage", layer));
}

// Writes ((parts[0] + parts[1]) + parts[2]) + ... of the first `length` elements into every
// span of `copies`, which may be among the parts. A block of sums on the stack, one part at a
// time, so that each pass is a contiguous loop the compiler vectorises (the same additions in the
// same order as one element at a time); a block is written only once every part's has been read.
void add_in_use_order(const std::vector<std::span<const float>>& parts, size_t length,
                      const std::vector<std::span<float>>& copies) {
  constexpr size_t kBlock = 1024;
  std::array<float, kBlock> sum;
  for (size_t first = 0; first < length; first += kBlock) {
    const size_t n = std::min(kBlock, length - first);
    std::copy_n(parts[0].data() + first, n, sum.data());
    for (size_t u = 1; u < parts.size(); ++u) {
      const float* part = parts[u].data() + first;
      for (size_t i = 0; i < n; ++i) sum[i] += part[i];
    }
    for (const std::span<float>& copy : copies) std::copy_n(sum.data(), n, copy.data() + first);
  }
}

}  // namespace

TiedCopies::TiedCopies(std::optional<model::TiedWeights> tied,
                       const std::vector<plan::LayerRange>& ranges,
                       const plan::Placement& placement, int rank,
                       const comm::Communicator* pipeline,
                       const std::vector<pipeline::Stage*>& chunks,
                       std::optional<ReplicaShards> shards)
    : tied_(std::move(tied)), rank_(rank), shards_(std::move(shards)) {
  if (!tied_) return;
  uses_ = tied_->uses();
  std::vector<int> ranks;  // each use's pipeline rank
  // With shards: per use held here, its offset and its chunk's shard begins.
  std::vector<double> places_here;
  for (size_t u = 0; u < uses_.size(); ++u) {
    ranks.push_back(placement.rank_of(stage_of(ranges, uses_[u].layer)));
    for (pipeline::Stage* stage : chunks) {
      auto& params = stage->params();
      if (const auto* entry = param_entry(params, uses_[u].layer, uses_[u].param)) {
        held_.push_back({.use = u,
                         .stage = stage,
                         .grad = view(params.grads(), entry),
                         .values = view(params.values(), entry)});
        if (!shards_) continue;
        places_here.insert(places_here.end(),
                           {static_cast<double>(u), static_cast<double>(entry->offset)});
        for (const int64_t begin : optim::shard_begins(params.norm_block_begins(),
                                                       params.num_params(), shards_->replicas)) {
          places_here.push_back(static_cast<double>(begin));
        }
      }
    }
  }
  std::vector<int> holders = ranks;  // the group's ranks, in pipeline rank order
  std::ranges::sort(holders);
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  check(holders.size() == 1 || pipeline != nullptr,
        "TiedCopies: the tied matrix's uses are on {} ranks, but no pipeline", holders.size());
  if (shards_) {
    // Every use's place, from the rank holding it (offsets and begins are exact in a double).
    const std::vector<double> all =
        holders.size() == 1 ? places_here : pipeline->allgatherv(places_here);
    if (held_.empty()) return;
    places_.resize(uses_.size());
    const auto entry_size = static_cast<size_t>(shards_->replicas) + 3;
    for (size_t at = 0; at + entry_size <= all.size(); at += entry_size) {
      const auto use = static_cast<size_t>(all[at]);
      TiedCopyPlace& place = places_.at(use);
      place.pipeline_rank = ranks.at(use);
      place.offset = static_cast<int64_t>(all[at + 1]);
      for (size_t i = at + 2; i < at + entry_size; ++i) {
        place.shard_begins.push_back(static_cast<int64_t>(all[i]));
      }
    }
    transfers_ = tied_shard_transfers(places_, tied_->matrix.numel(), shards_->replicas);
    return;
  }
  if (holders.size() == 1) return;
  for (int r : ranks) {
    use_rank_.push_back(static_cast<int>(std::ranges::find(holders, r) - holders.begin()));
  }
  group_ = pipeline->split(held_.empty() ? 1 : 0, rank, "the ranks of the tied weights");
}

void TiedCopies::initialize(uint64_t seed, const model::ModelSpec& spec,
                            const model::ModelInputs& inputs) {
  if (!tied_) return;
  const auto embedding = model::build_layers(spec, inputs, tied_->embedding, tied_->embedding + 1);
  const int index = model::param_index(*embedding.front(), model::TiedWeights::kEmbeddingParam);
  for (const Held& held : held_) {
    if (held.use == 0) continue;  // the embedding's own draw
    nn::initialize_param(held.values, embedding.front()->param_specs()[static_cast<size_t>(index)],
                         seed, tied_->embedding, index);
  }
}

void TiedCopies::sum_gradients() {
  if (held_.empty()) return;  // no tie, or a rank between the uses
  if (shards_) {
    sum_on_shards();
    return;
  }
  const size_t size = static_cast<size_t>(tied_->matrix.numel());
  // Chunks bound the extra memory to one chunk received per use held elsewhere, whatever the
  // vocabulary (model::tied_exchange_bytes, which the planner counts).
  constexpr auto kChunk = static_cast<size_t>(model::kTiedExchangeFloats);
  std::vector<const Held*> held_as(uses_.size(), nullptr);
  for (const Held& held : held_) held_as[held.use] = &held;
  const size_t elsewhere = uses_.size() - held_.size();
  Tensor received;
  if (elsewhere > 0) {
    received =
        Tensor::uninitialized(Shape{static_cast<int64_t>(elsewhere * std::min(kChunk, size))});
  }
  std::vector<std::span<const float>> parts(uses_.size());
  for (size_t begin = 0; begin < size; begin += kChunk) {
    const size_t length = std::min(kChunk, size - begin);
    std::vector<comm::Request> requests;
    size_t slot = 0;
    for (size_t u = 0; u < uses_.size(); ++u) {
      if (held_as[u] != nullptr) {
        parts[u] = held_as[u]->grad.subspan(begin, length);
        continue;
      }
      const std::span<float> into = received.span().subspan(slot++ * length, length);
      requests.push_back(
          group_->irecv(into, use_rank_[u], static_cast<int>(u), "the tied weights' gradient"));
      parts[u] = into;
    }
    if (group_) {
      for (const Held& held : held_) {
        for (int peer = 0; peer < group_->size(); ++peer) {
          if (peer == group_->rank()) continue;
          requests.push_back(group_->isend(parts[held.use], peer, static_cast<int>(held.use),
                                           "the tied weights' gradient"));
        }
      }
    }
    for (comm::Request& request : requests) request.wait();
    std::vector<std::span<float>> copies;
    for (const Held& held : held_) copies.push_back(held.grad.subspan(begin, length));
    add_in_use_order(parts, length, copies);
  }
}

void TiedCopies::sum_on_shards() {
  const ReplicaShards& shards = *shards_;
  const size_t size = static_cast<size_t>(tied_->matrix.numel());
  const size_t num_uses = uses_.size();
  const int me = shards.replica;
  const auto here = [&](int replica, size_t use) {
    return replica == me && places_[use].pipeline_rank == rank_;
  };
  const auto world_rank = [&](int replica, size_t use) {
    return replica * shards.pipeline_ranks + places_[use].pipeline_rank;
  };
  // The part of each held copy this replica's shard holds; every other use's elements of it wait
  // in a slot of `others` (received, or copied when held here), window after window of at most
  // kChunk elements, which bounds the memory as the whole exchange does (one window per pair of a
  // held use and another use: model::tied_exchange_bytes).
  constexpr auto kChunk = static_cast<size_t>(model::kTiedExchangeFloats);
  const size_t window_size = std::min(kChunk, size);
  std::vector<MatrixPart> mine;  // per held copy
  for (const Held& held : held_) {
    mine.push_back(owned_part(places_[held.use], static_cast<int64_t>(size), me, shards.replicas));
  }
  const auto held_index = [&](size_t use) {
    for (size_t h = 0; h < held_.size(); ++h) {
      if (held_[h].use == use) return h;
    }
    throw Error(fmt::format("TiedCopies: use {} is not held here", use));
  };
  // Slot (h, v): held copy h's elements of use v (v != held_[h].use).
  const auto slot_of = [&](size_t h, size_t v) {
    return h * (num_uses - 1) + (v < held_[h].use ? v : v - 1);
  };
  Tensor others = Tensor::uninitialized(
      Shape{static_cast<int64_t>(held_.size() * (num_uses - 1) * window_size)});
  std::shared_ptr<const void> in_place;  // sends read the gradient, which outlives them
  for (size_t begin = 0; begin < size; begin += kChunk) {
    const MatrixPart window{static_cast<int64_t>(begin),
                            static_cast<int64_t>(std::min(begin + kChunk, size))};
    const auto clip = [&window](MatrixPart part) {
      return MatrixPart{std::max(part.begin, window.begin), std::min(part.end, window.end)};
    };
    std::vector<comm::Request> requests;
    for (const TiedTransfer& t : transfers_) {
      const MatrixPart part = clip(t.part);
      if (part.empty()) continue;
      const auto from = static_cast<size_t>(t.from_use), to = static_cast<size_t>(t.to_use);
      const bool to_here = here(t.to_replica, to), from_here = here(t.from_replica, from);
      if (!to_here && !from_here) continue;
      const auto length = static_cast<size_t>(part.end - part.begin);
      std::span<float> into;
      if (to_here) {
        const size_t h = held_index(to);
        const int64_t first = std::max(mine[h].begin, window.begin);  // the slot's element 0
        into = others.span().subspan(
            slot_of(h, from) * window_size + static_cast<size_t>(part.begin - first), length);
      }
      const int tag = shards.tags->tied({.from_use = t.from_use, .to_use = t.to_use});
      if (from_here) {
        const std::span<const float> out =
            held_[held_index(from)].grad.subspan(static_cast<size_t>(part.begin), length);
        if (to_here) {
          std::ranges::copy(out, into.begin());
          continue;
        }
        requests.push_back(
            shards.world->isend(out, std::shared_ptr<const void>(in_place, out.data()),
                                world_rank(t.to_replica, to), tag, "the tied weights' gradient"));
      } else {
        requests.push_back(shards.world->irecv(into, world_rank(t.from_replica, from), tag,
                                               "the tied weights' gradient"));
      }
    }
    for (comm::Request& request : requests) request.wait();
    // The sum of each element this replica holds, in use order; the other uses' parts were
    // copied or received before any copy is written.
    for (size_t h = 0; h < held_.size(); ++h) {
      const MatrixPart part = clip(mine[h]);
      if (part.empty()) continue;
      std::vector<std::span<const float>> parts(num_uses);
      for (size_t v = 0; v < num_uses; ++v) {
        parts[v] =
            v == held_[h].use
                ? std::span<const float>(held_[h].grad).subspan(static_cast<size_t>(part.begin))
                : std::span<const float>(others.span().subspan(slot_of(h, v) * window_size));
      }
      const auto length = static_cast<size_t>(part.end - part.begin);
      add_in_use_order(parts, length,
                       {held_[h].grad.subspan(static_cast<size_t>(part.begin), length)});
    }
  }
}

std::vector<nn::ParamBuffer::Elements> TiedCopies::uncounted(const pipeline::Stage& stage) const {
  std::vector<nn::ParamBuffer::Elements> out;
  for (const Held& held : held_) {
    if (held.use == 0 || held.stage != &stage) continue;  // the embedding's counts the matrix
    const int64_t begin = held.grad.data() - stage.params().grads().data();
    out.push_back({begin, begin + static_cast<int64_t>(held.grad.size())});
  }
  std::ranges::sort(out, {}, &nn::ParamBuffer::Elements::begin);
  return out;
}

}  // namespace mpipe::train
