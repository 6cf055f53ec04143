// Embedding layer: row lookups in forward, scatter-adds in backward, in a fixed order.
#include "nn/embedding.h"

#include <cmath>

#include "core/error.h"

namespace mpipe::nn {

Embedding::Embedding(int global_index, const Shape& input_shape, int64_t vocab, int64_t dim,
                     int64_t max_len)
    : Layer(global_index), seq_(0), vocab_(vocab), dim_(dim), max_len_(max_len) {
  check_input(input_shape.rank() == 1 && input_shape[0] > 0,
              "embedding needs an input of token ids [T], got {}", input_shape);
  check_input(vocab > 0, "embedding vocab must be >= 1, got {}", vocab);
  check_input(dim > 0, "embedding dim must be >= 1, got {}", dim);
  check_input(max_len > 0, "embedding max_len must be >= 1, got {}", max_len);
  seq_ = input_shape[0];
  check_input(seq_ <= max_len, "embedding: sequence length {} exceeds max_len {}", seq_, max_len);
}

std::vector<ParamSpec> Embedding::param_specs() const {
  return {{.name = "token", .shape = {vocab_, dim_}, .init = Init::kNormal, .std = 0.02f},
          {.name = "position", .shape = {max_len_, dim_}, .init = Init::kNormal, .std = 0.02f}};
}

void Embedding::bind(std::vector<std::span<float>> params, std::vector<std::span<float>> grads,
                     std::vector<std::span<float>> buffers) {
  check(params.size() == 2 && grads.size() == 2 && buffers.empty(),
        "Embedding::bind: expected 2 params");
  token_ = params[0], position_ = params[1];
  token_grad_ = grads[0], position_grad_ = grads[1];
}

namespace {

// The integer id at ids[i], checked to lie in [0, vocab).
int64_t token_id(const Tensor& ids, int64_t i, int64_t vocab) {
  const float value = ids[i];
  check_input(value >= 0.0f && value < static_cast<float>(vocab) && std::floor(value) == value,
              "embedding: token id {} at position {} is not an integer in [0, {})", value, i,
              vocab);
  return static_cast<int64_t>(value);
}

}  // namespace

Forward Embedding::forward(const Tensor& ids, const LayerContext& ctx) {
  check(ids.shape().rank() == 2 && ids.dim(1) == seq_,
        "Embedding: input {} is not [batch, {}] token ids", ids.shape(), seq_);
  check(!token_.empty(), "Embedding: forward before bind");
  const int64_t batch = ids.dim(0);
  Tensor y = Tensor::uninitialized(Shape{batch, seq_, dim_});
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_; ++t) {
      const float* token = token_.data() + token_id(ids, b * seq_ + t, vocab_) * dim_;
      const float* position = position_.data() + t * dim_;
      float* out = y.data() + (b * seq_ + t) * dim_;
      for (int64_t j = 0; j < dim_; ++j) out[j] = token[j] + position[j];
    }
  }
  Forward result{.output = std::move(y), .saved = {}};
  if (ctx.training) result.saved.tensors.push_back(ids);
  return result;
}

Tensor Embedding::backward(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  backward_weight(dy, saved, ctx);
  return {};
}

Tensor Embedding::backward_input(const Tensor& dy, Saved& saved, const LayerContext& ctx) {
  (void)dy, (void)saved, (void)ctx;
  return {};
}

void Embedding::backward_weight(const Tensor& dy, const Saved& saved, const LayerContext& ctx) {
  (void)ctx;
  check(saved.tensors.size() == 1, "Embedding::backward: nothing saved (not training?)");
  const Tensor& ids = saved.tensors[0];
  const int64_t batch = ids.dim(0);
  check(dy.shape() == Shape({batch, seq_, dim_}), "Embedding::backward: dy {} is not [{}, {}, {}]",
        dy.shape(), batch, seq_, dim_);
  // Ascending (example, position) order, so the sums are the same on every run.
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_; ++t) {
      const float* g = dy.data() + (b * seq_ + t) * dim_;
      float* token = token_grad_.data() + token_id(ids, b * seq_ + t, vocab_) * dim_;
      float* position = position_grad_.data() + t * dim_;
      for (int64_t j = 0; j < dim_; ++j) token[j] += g[j];
      for (int64_t j = 0; j < dim_; ++j) position[j] += g[j];
    }
  }
}

double Embedding::forward_flops_per_example() const {
  return static_cast<double>(seq_ * dim_);  // one addition per output element
}

LayerNeeds Embedding::needs() const {
  // Keeps a copy of the token ids; computes no input gradient.
  const Shape input{seq_};
  return {.kept_tensor_bytes = {float_bytes(seq_)},
          .smallest_temporary_bytes = smaller_activation_bytes(input, output_shape()),
          .has_input_gradient = false,
          .backward_flops = forward_flops_per_example(),
          .splits_backward = true,
          .weight_grad_flops = forward_flops_per_example(),
          .weight_work_tensor_bytes = {float_bytes(seq_)}};
}

}  // namespace mpipe::nn
