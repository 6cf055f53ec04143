// RowNorm: a normalization over the last axis (layer_norm, rms_norm), the interface a Transformer
// block holds its two norms by, and the choice between them.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "core/enum_names.h"
#include "nn/input_saving_layer.h"

namespace mpipe::nn {

enum class NormKind { kLayerNorm, kRmsNorm };
inline constexpr EnumNames<NormKind, 2> kNormNames{
    {{"layer_norm", NormKind::kLayerNorm}, {"rms_norm", NormKind::kRmsNorm}}};

class RowNorm : public InputSavingLayer {
 public:
  using InputSavingLayer::InputSavingLayer;

  Tensor backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override {
    return backward_from(dy, saved.tensors, ctx);
  }
  // backward() with the saved tensors given as a span, for composite layers that keep several
  // sub-layers' tensors in one Saved.
  virtual Tensor backward_from(const Tensor& dy, std::span<const Tensor> saved,
                               const LayerContext& ctx) const = 0;
  // How many tensors a training forward saves (x first).
  virtual size_t saved_tensors() const = 0;

  // The split backward (both norms split), for composite layers in the same way:
  // backward_weight() with what backward_input left given as a span, how many tensors that is,
  // and whether backward_weight reads its output gradient (a composite keeps it for the W op
  // only then; otherwise it may pass an empty tensor).
  void backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) override {
    backward_weight_from(dy, saved.tensors, ctx);
  }
  virtual void backward_weight_from(const Tensor& dy, std::span<const Tensor> kept,
                                    const LayerContext& ctx) const = 0;
  virtual size_t weight_kept_tensors() const = 0;
  virtual bool weight_reads_output_grad() const = 0;
};

// The norm of `kind` over the last axis of `input_shape`, with its default eps.
std::unique_ptr<RowNorm> make_row_norm(NormKind kind, int global_index, const Shape& input_shape);

}  // namespace mpipe::nn
