// KernelContext: the oneDNN CPU engine and stream, and the cache of primitives built per shape.
#pragma once

#include <any>
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
  std::map<std::string, std::any> cache_;
};

}  // namespace mpipe::kernels
