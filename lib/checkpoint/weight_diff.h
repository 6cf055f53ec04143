// Weight comparison: how far apart two weight files are, tensor by tensor.
#pragma once

#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace mpipe::checkpoint {

struct TensorDiff {
  std::string name;
  double max_abs = 0.0;   // max |a - b|
  double rel = 0.0;       // ||a - b|| / max(||a||, ||b||) (L2 norms; 0 when both are zero)
  bool identical = true;  // bit-identical
};

// Compares tensors by name. Throws InputError naming the files when the names or shapes differ.
std::vector<TensorDiff> diff_weights(const SafetensorsFile& a, const std::string& a_name,
                                     const SafetensorsFile& b, const std::string& b_name);

}  // namespace mpipe::checkpoint
