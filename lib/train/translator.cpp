// Beam search (greedy at width 1) over an encoder-decoder's next-position logits.
#include "train/translator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <span>

#include "core/error.h"
#include "model/model_builder.h"
#include "model/tied_weights.h"
#include "pipeline/stage.h"
#include "train/stage_tensors.h"

namespace mpipe::train {

// One sentence's search: its live hypotheses and the best that has ended.
struct Translator::Search {
  const std::vector<int>* source = nullptr;
  std::vector<Hypothesis> live;
  std::optional<Hypothesis> best;
  double best_normalized = 0;  // best's score / its length
  int64_t ended = 0;

  void end(Hypothesis hypothesis, int64_t length) {
    const double normalized = hypothesis.score / static_cast<double>(length);
    ++ended;
    if (best && normalized <= best_normalized) return;
    best = std::move(hypothesis);
    best_normalized = normalized;
  }
};

Tensor logits_at_position(const Tensor& logits, int64_t position) {
  const int64_t rows = logits.shape()[0];
  const int64_t positions = logits.shape()[1];
  const int64_t vocab = logits.shape()[2];
  Tensor at(Shape{rows, vocab});
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(logits.data() + (r * positions + position) * vocab, vocab, at.data() + r * vocab);
  }
  return at;
}

Translator::Translator(int64_t source_len, int64_t target_len, int64_t vocab, SpecialTokens tokens,
                       NextLogits next_logits)
    : source_len_(source_len),
      target_len_(target_len),
      tokens_(tokens),
      vocab_(vocab),
      next_logits_(std::move(next_logits)) {}

Translator::Translator(const model::ModelSpec& spec, int64_t source_len, int64_t target_len,
                       SpecialTokens tokens, const std::vector<checkpoint::NamedTensor>& weights,
                       const std::string& weights_source, kernels::KernelContext& kernels)
    : source_len_(source_len), target_len_(target_len), tokens_(tokens) {
  const model::ModelInputs inputs{{.name = "source", .shape = Shape{source_len}},
                                  {.name = "target_in", .shape = Shape{target_len}}};
  auto layers = model::build_layers(spec, inputs, 0, static_cast<int>(spec.layers.size()));
  const std::optional<model::TiedWeights> tied = model::find_tied_weights(spec, layers);
  auto model = std::make_shared<pipeline::Stage>(
      std::move(layers), plan::Recompute::kNever, 1, plan::WeightGrads::kAccumulate,
      std::make_shared<const model::ModelGraph>(model::model_graph(spec, inputs)));
  load_stage_weights(*model, weights, weights_source, tied);
  const Shape output = model->layers().back()->output_shape();
  check_input(output.rank() == 2 && output[0] == target_len,
              "{}: the model's output {} is not [data.target_len {}, vocab] logits", weights_source,
              output, target_len);
  vocab_ = output[1];
  next_logits_ = [model, &kernels](std::vector<Tensor> data, int64_t position) {
    // In the order of the stage's input bundle (data inputs are the graph's first values).
    pipeline::Bundle input;
    for (const int value : model->input_values()) {
      input.push_back(std::move(data.at(static_cast<size_t>(value))));
    }
    return logits_at_position(model->evaluate(input, {.kernels = kernels, .training = false}).at(0),
                              position);
  };
}

std::vector<double> Translator::next_log_probs(const std::vector<const std::vector<int>*>& sources,
                                               const std::vector<const Hypothesis*>& prefixes,
                                               int64_t step) {
  const auto rows = static_cast<int64_t>(prefixes.size());
  Tensor source(Shape{rows, source_len_});
  Tensor target_in(Shape{rows, target_len_});
  source.fill(static_cast<float>(tokens_.pad));
  target_in.fill(static_cast<float>(tokens_.pad));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = static_cast<size_t>(r);
    std::copy(sources[row]->begin(), sources[row]->end(), source.data() + r * source_len_);
    float* prefix = target_in.data() + r * target_len_;
    prefix[0] = static_cast<float>(tokens_.bos);
    std::copy(prefixes[row]->ids.begin(), prefixes[row]->ids.end(), prefix + 1);
  }
  std::vector<Tensor> data;
  data.push_back(std::move(source));
  data.push_back(std::move(target_in));
  // Causal self-attention: position `step` sees the prefix alone, not the padding after it.
  const Tensor logits = next_logits_(std::move(data), step);
  std::vector<double> log_probs(static_cast<size_t>(rows * vocab_));
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = logits.data() + r * vocab_;
    double* out = log_probs.data() + r * vocab_;
    const double top = *std::max_element(in, in + vocab_);
    double sum = 0;
    for (int64_t v = 0; v < vocab_; ++v) sum += std::exp(in[v] - top);
    const double log_sum = top + std::log(sum);
    for (int64_t v = 0; v < vocab_; ++v) out[v] = in[v] - log_sum;
  }
  return log_probs;
}

void Translator::advance(Search& search, const double* log_probs, int64_t step,
                         int64_t beam) const {
  const int64_t length = step + 1;  // ids, with this step's
  std::vector<Hypothesis> live = std::move(search.live);
  search.live.clear();
  if (length == target_len_) {  // the last step: each hypothesis ends with its most likely id
    for (size_t h = 0; h < live.size(); ++h) {
      const double* row = log_probs + static_cast<int64_t>(h) * vocab_;
      const auto id = static_cast<int>(std::max_element(row, row + vocab_) - row);
      Hypothesis ended = live[h];
      ended.score += row[id];
      if (id != tokens_.eos) ended.ids.push_back(id);
      search.end(std::move(ended), length);
    }
    return;
  }
  struct Candidate {
    size_t hypothesis;
    int id;
    double score;
  };
  const auto ranked_before = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.hypothesis != b.hypothesis ? a.hypothesis < b.hypothesis : a.id < b.id;
  };
  // A hypothesis's id below its beam + 1 most likely has `beam` live ones above it.
  const int64_t per_hypothesis = std::min(vocab_, beam + 1);
  std::vector<Candidate> candidates;
  std::vector<Candidate> own(static_cast<size_t>(vocab_));
  for (size_t h = 0; h < live.size(); ++h) {
    const double* row = log_probs + static_cast<int64_t>(h) * vocab_;
    for (int v = 0; v < vocab_; ++v) {
      own[static_cast<size_t>(v)] = {h, v, live[h].score + row[v]};
    }
    std::partial_sort(own.begin(), own.begin() + per_hypothesis, own.end(), ranked_before);
    candidates.insert(candidates.end(), own.begin(), own.begin() + per_hypothesis);
  }
  std::sort(candidates.begin(), candidates.end(), ranked_before);
  for (const Candidate& candidate : candidates) {
    if (std::ssize(search.live) == beam) break;
    Hypothesis next{.ids = live[candidate.hypothesis].ids, .score = candidate.score};
    if (candidate.id == tokens_.eos) {
      search.end(std::move(next), length);
    } else {
      next.ids.push_back(candidate.id);
      search.live.push_back(std::move(next));
    }
  }
  if (search.ended >= beam) search.live.clear();
}

std::vector<std::vector<int>> Translator::translate(const std::vector<std::vector<int>>& sources,
                                                    const TranslateOptions& options) {
  check(options.beam >= 1 && options.batch >= 1, "Translator: beam {} and batch {} must be >= 1",
        options.beam, options.batch);
  std::vector<std::vector<int>> translations;
  translations.reserve(sources.size());
  for (size_t first = 0; first < sources.size(); first += static_cast<size_t>(options.batch)) {
    const size_t end = std::min(sources.size(), first + static_cast<size_t>(options.batch));
    std::vector<Search> searches(end - first);
    for (size_t s = first; s < end; ++s) {
      check(!sources[s].empty() && std::ssize(sources[s]) <= source_len_,
            "Translator: source {} has {} ids, not 1 to {}", s, sources[s].size(), source_len_);
      searches[s - first].source = &sources[s];
      searches[s - first].live.emplace_back();
    }
    for (int64_t step = 0; step < target_len_; ++step) {
      std::vector<const std::vector<int>*> row_sources;
      std::vector<const Hypothesis*> prefixes;
      for (const Search& search : searches) {
        for (const Hypothesis& hypothesis : search.live) {
          row_sources.push_back(search.source);
          prefixes.push_back(&hypothesis);
        }
      }
      if (prefixes.empty()) break;
      const std::vector<double> log_probs = next_log_probs(row_sources, prefixes, step);
      int64_t row = 0;
      for (Search& search : searches) {
        const auto rows = std::ssize(search.live);
        if (rows == 0) continue;
        advance(search, log_probs.data() + row * vocab_, step, options.beam);
        row += rows;
      }
    }
    for (Search& search : searches) translations.push_back(std::move(search.best->ids));
  }
  return translations;
}

}  // namespace mpipe::train
