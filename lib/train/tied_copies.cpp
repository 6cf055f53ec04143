// Keeping the two copies of a tied matrix equal: initial values, summed gradients, the norm.
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
  if (entry == nullptr) return {};
  return storage.subspan(static_cast<size_t>(entry->offset),
                         static_cast<size_t>(entry->shape.numel()));
}

int stage_of(const std::vector<model::LayerRange>& ranges, int layer) {
  for (size_t s = 0; s < ranges.size(); ++s) {
    if (ranges[s].begin <= layer && layer < ranges[s].end) return static_cast<int>(s);
  }
  throw Error(fmt::format("TiedCopies: layer {} is on no stage", layer));
}

}  // namespace

TiedCopies::TiedCopies(std::optional<model::TiedWeights> tied,
                       const std::vector<model::LayerRange>& ranges,
                       const pipeline::Placement& placement, int rank,
                       const comm::Communicator* pipeline,
                       const std::vector<pipeline::Stage*>& chunks)
    : tied_(tied) {
  if (!tied_) return;
  for (pipeline::Stage* stage : chunks) {
    auto& params = stage->params();
    if (const auto* embedding =
            param_entry(params, tied_->embedding, model::TiedWeights::kEmbeddingParam)) {
      embedding_grad_ = view(params.grads(), embedding);
    }
    if (const auto* head = param_entry(params, tied_->head, model::TiedWeights::kHeadParam)) {
      head_stage_ = stage;
      head_grad_ = view(params.grads(), head);
      head_values_ = view(params.values(), head);
    }
  }
  const int embedding_rank = placement.rank_of(stage_of(ranges, tied_->embedding));
  const int head_rank = placement.rank_of(stage_of(ranges, tied_->head));
  if (embedding_rank != head_rank) {
    check(pipeline != nullptr, "TiedCopies: layers {} and {} are on two ranks, but no pipeline",
          tied_->embedding, tied_->head);
    const bool holds_one = rank == embedding_rank || rank == head_rank;
    pair_ = pipeline->split(holds_one ? 0 : 1, rank, "the ranks of the tied weights");
  }
}

void TiedCopies::initialize(uint64_t seed, const model::ModelSpec& spec,
                            const model::ModelInputs& inputs) {
  if (head_values_.empty()) return;
  const auto embedding = model::build_layers(spec, inputs, tied_->embedding, tied_->embedding + 1);
  const int index = model::param_index(*embedding.front(), model::TiedWeights::kEmbeddingParam);
  nn::initialize_param(head_values_, embedding.front()->param_specs()[static_cast<size_t>(index)],
                       seed, tied_->embedding, index);
}

void TiedCopies::sum_gradients() {
  if (!tied_) return;
  if (!embedding_grad_.empty() && !head_grad_.empty()) {  // both uses on this rank
    for (size_t i = 0; i < head_grad_.size(); ++i) {
      embedding_grad_[i] += head_grad_[i];
      head_grad_[i] = embedding_grad_[i];
    }
    return;
  }
  const std::span<float> mine = embedding_grad_.empty() ? head_grad_ : embedding_grad_;
  if (mine.empty()) return;  // a rank between them
  // Chunks bound the extra memory to one chunk received and one sent, whatever the vocabulary.
  constexpr size_t kChunk = size_t{1} << 16;
  const int peer = 1 - pair_->rank();
  Tensor theirs = Tensor::uninitialized(Shape{static_cast<int64_t>(std::min(kChunk, mine.size()))});
  for (size_t begin = 0; begin < mine.size(); begin += kChunk) {
    const std::span<float> part = mine.subspan(begin, std::min(kChunk, mine.size() - begin));
    const std::span<float> received = theirs.span().first(part.size());
    comm::Request receive = pair_->irecv(received, peer, 0, "the tied weights' gradient");
    comm::Request send = pair_->isend(part, peer, 0, "the tied weights' gradient");
    receive.wait();
    send.wait();
    for (size_t i = 0; i < part.size(); ++i) part[i] += received[i];
  }
}

void TiedCopies::count_once(std::vector<std::pair<int, double>>& per_layer) const {
  if (head_grad_.empty()) return;
  double others = 0.0;  // the head's parameters other than the tied weight, in layer order
  const auto& params = head_stage_->params();
  for (const auto& entry : params.entries()) {
    if (entry.global_layer != tied_->head || !entry.trainable ||
        entry.name == model::TiedWeights::kHeadParam) {
      continue;
    }
    for (size_t i = 0; i < static_cast<size_t>(entry.shape.numel()); ++i) {
      const double v = params.grads()[static_cast<size_t>(entry.offset) + i];
      others += v * v;
    }
  }
  for (auto& [layer, square_sum] : per_layer) {
    if (layer == tied_->head) square_sum = others;
  }
}

}  // namespace mpipe::train
