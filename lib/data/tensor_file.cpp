// Reading `inputs` and `targets` from a safetensors file into f32 examples, checked.
#include "data/tensor_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "checkpoint/safetensors.h"
#include "core/error.h"

namespace mpipe::data {
namespace {

constexpr const char* kInputs = "inputs";
constexpr const char* kTargets = "targets";

// The stored values as floats (U8 and I64 converted as they are).
std::vector<float> to_floats(const checkpoint::StoredTensor& tensor) {
  const auto count = static_cast<size_t>(tensor.shape.numel());
  std::vector<float> values(count);
  const std::byte* bytes = tensor.bytes.data();
  if (tensor.dtype == "F32") {
    std::memcpy(values.data(), bytes, count * sizeof(float));
  } else if (tensor.dtype == "U8") {
    for (size_t i = 0; i < count; ++i)
      values[i] = static_cast<float>(std::to_integer<uint8_t>(bytes[i]));
  } else {  // I64
    for (size_t i = 0; i < count; ++i) {
      int64_t value = 0;
      std::memcpy(&value, bytes + i * sizeof(int64_t), sizeof(int64_t));
      values[i] = static_cast<float>(value);
    }
  }
  return values;
}

// The label at `index` of an I64 tensor, exactly (a float may round it).
int64_t stored_integer(const checkpoint::StoredTensor& tensor, size_t index) {
  int64_t value = 0;
  std::memcpy(&value, tensor.bytes.data() + index * sizeof(int64_t), sizeof(int64_t));
  return value;
}

}  // namespace

TensorFileDataset::TensorFileDataset(const DataConfig& config) {
  const std::string& path = config.path;
  const auto tensors = checkpoint::read_stored_tensors(path, {kInputs, kTargets});
  const checkpoint::StoredTensor& inputs = tensors[0];
  const checkpoint::StoredTensor& targets = tensors[1];
  check_input(inputs.shape.rank() >= 2,
              "{}: tensor '{}' has shape {}; it needs [rows, ...one example's shape]", path,
              kInputs, inputs.shape);
  check_input(targets.shape.rank() == 1, "{}: tensor '{}' has shape {}; class labels need [rows]",
              path, kTargets, targets.shape);
  const int64_t rows = inputs.shape.dims()[0];
  check_input(targets.shape.dims()[0] == rows, "{}: tensor '{}' has {} rows, '{}' has {}", path,
              kTargets, targets.shape.dims()[0], kInputs, rows);
  example_ =
      Shape(std::vector<int64_t>(inputs.shape.dims().begin() + 1, inputs.shape.dims().end()));

  inputs_ = to_floats(inputs);
  const auto bad_input =
      std::find_if(inputs_.begin(), inputs_.end(), [](float v) { return !std::isfinite(v); });
  check_input(bad_input == inputs_.end(),
              "{}: tensor '{}' holds a non-finite value ({}) at index {}", path, kInputs,
              bad_input == inputs_.end() ? 0.0f : *bad_input, bad_input - inputs_.begin());

  targets_ = to_floats(targets);
  float largest = 0.0f;
  for (size_t i = 0; i < targets_.size(); ++i) {
    const float label = targets_[i];
    const bool is_label =
        targets.dtype == "I64"
            ? stored_integer(targets, i) >= 0 && stored_integer(targets, i) < (int64_t{1} << 24)
            : label >= 0 && label == std::floor(label) && label < static_cast<float>(1 << 24);
    if (!is_label) {
      const std::string shown = targets.dtype == "I64" ? std::to_string(stored_integer(targets, i))
                                                       : fmt::format("{}", label);
      throw InputError(fmt::format(
          "{}: tensor '{}' holds {} at index {}; class labels must be integers in [0, 2^24)", path,
          kTargets, shown, i));
    }
    largest = std::max(largest, label);
  }
  classes_ = static_cast<int64_t>(largest) + 1;

  rows_.num_test =
      static_cast<int64_t>(std::floor(static_cast<double>(rows) * config.val_fraction));
  rows_.num_train = rows - rows_.num_test;
  check_input(rows_.num_test >= 1 && rows_.num_train >= 1,
              "{}: {} rows leave {} for validation at data.val_fraction {} (at least 1 each "
              "for training and validation)",
              path, rows, rows_.num_test, config.val_fraction);
}

int64_t TensorFileDataset::size(Split split) const { return rows_.size(split); }

Tensor TensorFileDataset::inputs(Split split, std::span<const int64_t> indices, uint64_t /*seed*/,
                                 int64_t /*step*/) const {
  const auto count = static_cast<int64_t>(indices.size());
  const int64_t width = example_.numel();
  Tensor out(example_.batched(count));  // [n, ...example]
  for (int64_t r = 0; r < count; ++r) {
    std::copy_n(
        inputs_.data() + rows_.row(split, indices[static_cast<size_t>(r)], "tensors") * width,
        width, out.data() + r * width);
  }
  return out;
}

Tensor TensorFileDataset::targets(Split split, std::span<const int64_t> indices) const {
  const auto count = static_cast<int64_t>(indices.size());
  Tensor out(Shape{count});  // [n] class indices
  for (int64_t r = 0; r < count; ++r) {
    out.data()[r] =
        targets_[static_cast<size_t>(rows_.row(split, indices[static_cast<size_t>(r)], "tensors"))];
  }
  return out;
}

}  // namespace mpipe::data
