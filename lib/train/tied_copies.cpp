// Keeping the copies of a tied matrix equal: initial values, summed gradients, the norm.
#include "train/tied_copies.h"

#include <algorithm>

#include "core/error.h"
#include "core/tensor.h"
#include "model/model_builder.h"
#include "nn/init.h"

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

}  // namespace

TiedCopies::TiedCopies(std::optional<model::TiedWeights> tied,
                       const std::vector<plan::LayerRange>& ranges,
                       const plan::Placement& placement, int rank,
                       const comm::Communicator* pipeline,
                       const std::vector<pipeline::Stage*>& chunks)
    : tied_(std::move(tied)) {
  if (!tied_) return;
  uses_ = tied_->uses();
  std::vector<int> ranks;  // each use's pipeline rank
  for (size_t u = 0; u < uses_.size(); ++u) {
    ranks.push_back(placement.rank_of(stage_of(ranges, uses_[u].layer)));
    for (pipeline::Stage* stage : chunks) {
      auto& params = stage->params();
      if (const auto* entry = param_entry(params, uses_[u].layer, uses_[u].param)) {
        held_.push_back({.use = u,
                         .stage = stage,
                         .grad = view(params.grads(), entry),
                         .values = view(params.values(), entry)});
      }
    }
  }
  std::vector<int> holders = ranks;  // the group's ranks, in pipeline rank order
  std::ranges::sort(holders);
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  if (holders.size() == 1) return;
  check(pipeline != nullptr, "TiedCopies: the tied matrix's uses are on {} ranks, but no pipeline",
        holders.size());
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
    for (size_t i = 0; i < length; ++i) {
      float sum = parts[0][i];  // ((g0 + g1) + g2) + ...: use order, whatever the layout
      for (size_t u = 1; u < parts.size(); ++u) sum += parts[u][i];
      for (const Held& held : held_) held.grad[begin + i] = sum;
    }
  }
}

void TiedCopies::count_once(std::vector<std::pair<int, double>>& per_layer) const {
  for (const Held& held : held_) {
    if (held.use == 0) continue;  // the embedding's counts the matrix
    const model::TiedUse& use = uses_[held.use];
    double others = 0.0;  // the layer's parameters other than its copy, in layer order
    const auto& params = held.stage->params();
    for (const auto& entry : params.entries()) {
      if (entry.global_layer != use.layer || !entry.trainable || entry.name == use.param) continue;
      for (size_t i = 0; i < static_cast<size_t>(entry.shape.numel()); ++i) {
        const double v = params.grads()[static_cast<size_t>(entry.offset) + i];
        others += v * v;
      }
    }
    for (auto& [layer, square_sum] : per_layer) {
      if (layer == use.layer) square_sum = others;
    }
  }
}

}  // namespace mpipe::train
