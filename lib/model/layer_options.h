// Layer options: each layer kind's attributes as a typed struct, read from a LayerSpec with their
// defaults and bounds. The one owner of attribute names, defaults and bounds: the layer factory
// builds layers from these (the cost model reads what the built layers report), and the
// model/data contract reads them.
#pragma once

#include <cstdint>

#include "core/shape.h"
#include "model/layer_attrs.h"
#include "nn/attention.h"
#include "nn/key_padding.h"
#include "nn/layer.h"
#include "nn/row_norm.h"
#include "nn/transformer_block.h"

namespace mpipe::model {

struct LinearOptions {
  int64_t units = 1;
  bool bias = true;
  nn::Init init = nn::Init::kKaimingUniform;
  bool tie =
      false;  // `tie: embedding`: the weight is the first embedding's token matrix (tied_weights.h)
};

struct DropoutOptions {
  double rate = 0.1;
};

struct Conv2dOptions {
  int64_t channels = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};

struct BatchNorm2dOptions {
  double momentum = 0.1;
  double eps = 1e-5;
};

struct PoolOptions {  // max_pool2d and avg_pool2d
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  bool count_include_pad = true;  // avg_pool2d only
};

struct UpsampleOptions {
  int64_t scale = 2;
};

struct ResidualBlockOptions {
  int64_t channels = 1;
  int64_t stride = 1;
  bool bottleneck = false;
};

struct SeparableCellOptions {
  int64_t channels = 1;
  int64_t kernel = 3;
  int64_t stride = 1;
};

struct EmbeddingOptions {
  int64_t vocab = 2;
  int64_t dim = 1;
  int64_t max_len = 1;
  bool tie = false;  // `tie: embedding`: the token matrix is the first embedding's (tied_weights.h)
};

struct LayerNormOptions {  // layer_norm and rms_norm
  double eps = 1e-5;
};

struct AttentionOptions {  // attention and transformer_block
  int64_t heads = 1;
  int64_t kv_heads = 1;   // key/value heads (grouped-query attention); default: heads
  int64_t mlp_ratio = 4;  // transformer_block only: the MLP's hidden width is mlp_ratio x d
  double dropout = 0.0;
  nn::RotaryOptions rotary = {};
  nn::NormKind norm = nn::NormKind::kLayerNorm;  // transformer_block only
  nn::MlpKind mlp = nn::MlpKind::kGelu;          // transformer_block only
  bool causal = true;                            // attention only
  nn::KeyPadding padding = {};  // attention that reads token ids only: their pad id
};

struct CrossAttentionOptions {
  int64_t heads = 1;
  double dropout = 0.0;
  nn::KeyPadding padding = {};  // with a read of the memory's token ids: their pad id
};

// Each reads its kind's keys from `attrs` (which then knows them, for LayerAttrs::finish) and
// throws an AttributeError naming the attribute's file, line and key for a value out of bounds.
// `input` is one example's shape, for defaults that follow it.
LinearOptions read_linear(LayerAttrs& attrs);
DropoutOptions read_dropout(LayerAttrs& attrs);
Conv2dOptions read_conv2d(LayerAttrs& attrs);
BatchNorm2dOptions read_batch_norm2d(LayerAttrs& attrs);
PoolOptions read_max_pool2d(LayerAttrs& attrs);
PoolOptions read_avg_pool2d(LayerAttrs& attrs);
UpsampleOptions read_upsample(LayerAttrs& attrs);
ResidualBlockOptions read_residual_block(LayerAttrs& attrs);
SeparableCellOptions read_separable_cell(LayerAttrs& attrs, const Shape& input);
EmbeddingOptions read_embedding(LayerAttrs& attrs, const Shape& input);
LayerNormOptions read_layer_norm(LayerAttrs& attrs);
LayerNormOptions read_rms_norm(LayerAttrs& attrs);
// `reads_ids`: the layer reads token ids (key padding), so it takes a pad_id.
AttentionOptions read_attention(LayerAttrs& attrs, bool reads_ids);
CrossAttentionOptions read_cross_attention(LayerAttrs& attrs, bool reads_ids);
AttentionOptions read_transformer_block(LayerAttrs& attrs);

}  // namespace mpipe::model
