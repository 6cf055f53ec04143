// KernelContext: the oneDNN CPU engine and stream, and the cache of primitives built per shape.
#pragma once

#include <any>
#include <cstdint>
#include <dnnl.hpp>
#include <functional>
#include <map>
#include <string>

#include "kernels/precision.h"

namespace mpipe::kernels {

// One per process, created in main (or a test) and passed down; never a global.
// Primitives are created once per (operation, shapes) key and reused. The precision says how
// the GEMM and convolution kernels compute (kernels/precision.h); it is fixed for the context's
// life, so cached primitives never mix precisions.
class KernelContext {
 public:
  explicit KernelContext(Precision precision = Precision::kF32)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), precision_(precision) {}
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  const dnnl::engine& engine() const { return engine_; }
  dnnl::stream& stream() { return stream_; }
  Precision precision() const { return precision_; }

  // Nonzero while a WeightsFixed scope is open: the parameters passed as weights to the kernels
  // do not change until it closes, so their bf16 copies can be made once per scope.
  uint64_t weights_version() const { return weights_version_; }

  // The cached value for `key`, built by `make` on first use. T is copyable (oneDNN
  // primitives and primitive descriptors are reference-counted handles).
  template <typename T>
  T& cached(const std::string& key, const std::function<T()>& make) {
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, std::any(make())).first;
    return std::any_cast<T&>(it->second);
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  Precision precision_;
  uint64_t weights_version_ = 0;
  uint64_t weights_scopes_ = 0;
  friend class WeightsFixed;
  std::map<std::string, std::any> cache_;
};

// Promises, for its lifetime, that no parameter passed as a weight (w of linear_forward and
// linear_backward_data, of conv2d_forward and conv2d_backward_data) changes. In bf16 precision
// each weight is then converted once per scope (a training step: every micro-batch's forward,
// recompute and backward), not once per call. Open it around a step's forward and backward
// passes or an evaluation, never around an optimizer update. Scopes do not nest.
class WeightsFixed {
 public:
  explicit WeightsFixed(KernelContext& ctx) : ctx_(ctx) {
    ctx_.weights_version_ = ++ctx_.weights_scopes_;
  }
  ~WeightsFixed() { ctx_.weights_version_ = 0; }
  WeightsFixed(const WeightsFixed&) = delete;
  WeightsFixed& operator=(const WeightsFixed&) = delete;

 private:
  KernelContext& ctx_;
};

}  // namespace mpipe::kernels
