// Key padding: which keys of an attention are padding, from the token ids of their sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace mpipe::nn {

// An attention's keys are padding where their token's id is pad_id.
struct KeyPadding {
  int64_t pad_id = 0;
};

// ids: [batch, len] token ids (as floats) → [batch, len]: 0 where the id is pad_id, else 1 (the
// kernels' AttentionMask::key_keep).
std::vector<uint8_t> key_keep(const Tensor& ids, int64_t len, const KeyPadding& padding);

}  // namespace mpipe::nn
