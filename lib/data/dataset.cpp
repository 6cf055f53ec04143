// The dataset factory: DataConfig -> the configured Dataset.
#include "data/dataset.h"

#include "core/error.h"
#include "data/fashion_mnist.h"
#include "data/parallel_dataset.h"
#include "data/synthetic.h"
#include "data/tensor_file.h"
#include "data/text_corpus.h"
#include "data/token_dataset.h"

namespace mpipe::data {

DataSchema Dataset::schema() const {
  return DataSchema{.name = std::string(name()),
                    .inputs = data_inputs(),
                    .target = target_shape(),
                    .classes = num_classes(),
                    .pad_target = pad_target()};
}

std::vector<DataInput> Dataset::data_inputs() const {
  return {{.name = kMainInputName, .shape = input_shape(), .vocab = input_vocab()}};
}

std::vector<Tensor> Dataset::input_tensors(Split split, std::span<const int64_t> indices,
                                           uint64_t seed, int64_t step) const {
  std::vector<Tensor> tensors;
  tensors.push_back(inputs(split, indices, seed, step));
  return tensors;
}

std::string_view held_out_split_name(DatasetKind kind) {
  return kind == DatasetKind::kFashionMnist || kind == DatasetKind::kSynthetic ? "test" : "val";
}

std::unique_ptr<Dataset> make_dataset(const DataConfig& config, uint64_t seed) {
  switch (config.kind) {
    case DatasetKind::kFashionMnist:
      return std::make_unique<FashionMnist>(config);
    case DatasetKind::kSynthetic:
      return std::make_unique<SyntheticDataset>(config, seed);
    case DatasetKind::kText:
      return std::make_unique<TextCorpus>(config);
    case DatasetKind::kTokens:
      return std::make_unique<TokenDataset>(config);
    case DatasetKind::kTensors:
      return std::make_unique<TensorFileDataset>(config);
    case DatasetKind::kPairs:
      return std::make_unique<ParallelDataset>(config);
  }
  throw Error("make_dataset: unknown dataset kind");
}

double configured_dataset_bytes(const DataConfig& config) {
  if (config.kind != DatasetKind::kSynthetic) return 0.0;
  // Inputs and targets of every example, as floats.
  const double per_example = config.tokens ? 2.0 * static_cast<double>(config.seq_len)
                                           : static_cast<double>(config.features) + 1.0;
  return static_cast<double>(config.num_examples) * per_example * sizeof(float);
}

}  // namespace mpipe::data
