// The choice between the row norms.
#include "nn/row_norm.h"

#include "nn/layer_norm.h"
#include "nn/rms_norm.h"

namespace mpipe::nn {

std::unique_ptr<RowNorm> make_row_norm(NormKind kind, int global_index, const Shape& input_shape) {
  if (kind == NormKind::kRmsNorm) return std::make_unique<RmsNorm>(global_index, input_shape);
  return std::make_unique<LayerNorm>(global_index, input_shape);
}

}  // namespace mpipe::nn
