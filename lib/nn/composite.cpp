// Prefixed parameter specs, buffer updates and view slicing for composite layers.
#include "nn/composite.h"

namespace mpipe::nn {

void append_prefixed(std::vector<ParamSpec>& out, std::vector<ParamSpec> specs,
                     const std::string& prefix) {
  for (ParamSpec& spec : specs) {
    spec.name = prefix + spec.name;
    out.push_back(std::move(spec));
  }
}

void append_buffer_update(Forward& composite, const Forward& sub_layer) {
  composite.buffer_update.insert(composite.buffer_update.end(), sub_layer.buffer_update.begin(),
                                 sub_layer.buffer_update.end());
}

std::vector<std::span<float>> views(const std::vector<std::span<float>>& all, size_t begin,
                                    size_t count) {
  return {all.begin() + static_cast<ptrdiff_t>(begin),
          all.begin() + static_cast<ptrdiff_t>(begin + count)};
}

}  // namespace mpipe::nn
