// Stage: one pipeline position: its layer range, its parameter buffer, and what it stores per
// micro-batch between forward and backward (all of it, or only its input under recompute).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "nn/layer.h"
#include "nn/param_buffer.h"
#include "pipeline/pipeline_config.h"

namespace mpipe::pipeline {

class Stage {
 public:
  // `layers` are this stage's contiguous layers in global order.
  Stage(std::vector<std::unique_ptr<nn::Layer>> layers, Recompute recompute, int num_micro_batches);

  nn::ParamBuffer& params() { return *params_; }
  const nn::ParamBuffer& params() const { return *params_; }
  const std::vector<std::unique_ptr<nn::Layer>>& layers() const { return layers_; }

  // Forward of micro-batch `micro_batch` in training mode; stores what its backward needs
  // (the input only when that micro-batch is recomputed).
  Tensor forward(int micro_batch, Tensor input, const nn::LayerContext& ctx);
  // Backward of `micro_batch`: recomputes its forward first if only the input was stored.
  // Returns d loss / d input (empty on the stage that holds layer 0). Frees the stash.
  Tensor backward(int micro_batch, const Tensor& grad_output, const nn::LayerContext& ctx);
  // Forward in evaluation mode; stores nothing.
  Tensor evaluate(const Tensor& input, const nn::LayerContext& ctx);

  // Bytes of activations stored for pending backwards, now and at most since reset_peak().
  size_t stored_bytes() const { return stored_bytes_; }
  size_t peak_stored_bytes() const { return peak_stored_bytes_; }
  void reset_peak() { peak_stored_bytes_ = stored_bytes_; }
  bool recomputes(int micro_batch) const;

 private:
  struct Stash {
    Tensor input;                  // kept when the forward is recomputed
    std::vector<nn::Saved> saved;  // one per layer, kept when it is not
    size_t bytes() const;
  };
  // Runs all layers; appends each layer's Saved to `saved` unless it is null.
  Tensor run_forward(const Tensor& input, const nn::LayerContext& ctx,
                     std::vector<nn::Saved>* saved);

  std::vector<std::unique_ptr<nn::Layer>> layers_;
  std::unique_ptr<nn::ParamBuffer> params_;
  Recompute recompute_;
  int num_micro_batches_;
  std::map<int, Stash> stash_;
  size_t stored_bytes_ = 0;
  size_t peak_stored_bytes_ = 0;
};

}  // namespace mpipe::pipeline
