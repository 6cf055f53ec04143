// data.dataset: tensors: examples brought as a safetensors file (written from numpy or PyTorch).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/data_config.h"
#include "data/dataset.h"
#include "data/split_rows.h"

namespace mpipe::data {

// The file at data.path holds `inputs`, [rows, ...one example's shape], F32, U8 or I64 (real
// values, converted to f32 as they are, not scaled), and `targets`, [rows], class labels: U8,
// I64, or F32 holding integers, each >= 0. The classes are the largest label + 1. The last
// floor(rows x data.val_fraction) rows are the validation split (at least one, and one row at
// least is left to train). Throws InputError with one line naming the file and the tensor for a
// missing tensor, another dtype, rows that disagree, a label that is not an integer >= 0, or a
// non-finite input.
class TensorFileDataset : public Dataset {
 public:
  explicit TensorFileDataset(const DataConfig& config);

  Shape input_shape() const override { return example_; }
  Shape target_shape() const override { return Shape{}; }
  int64_t num_classes() const override { return classes_; }
  int64_t input_vocab() const override { return 0; }
  std::string_view name() const override { return "tensors"; }
  int64_t size(Split split) const override;
  Tensor inputs(Split split, std::span<const int64_t> indices, uint64_t seed,
                int64_t step) const override;
  Tensor targets(Split split, std::span<const int64_t> indices) const override;

 private:
  Shape example_;  // one input
  SplitRows rows_;
  int64_t classes_ = 0;
  std::vector<float> inputs_;   // [rows, example_.numel()]
  std::vector<float> targets_;  // [rows]
};

}  // namespace mpipe::data
