// Key padding: the keep mask of an attention's keys from their token ids.
#include "nn/key_padding.h"

#include "core/error.h"

namespace mpipe::nn {

std::vector<uint8_t> key_keep(const Tensor& ids, int64_t len, const KeyPadding& padding) {
  check(ids.shape().rank() == 2 && ids.dim(1) == len, "key padding: ids {} are not [batch, {}]",
        ids.shape(), len);
  const auto pad = static_cast<float>(padding.pad_id);
  std::vector<uint8_t> keep(static_cast<size_t>(ids.numel()));
  for (int64_t i = 0; i < ids.numel(); ++i) keep[static_cast<size_t>(i)] = ids[i] != pad;
  return keep;
}

}  // namespace mpipe::nn
