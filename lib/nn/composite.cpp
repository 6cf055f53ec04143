// Prefixed parameter specs and view slicing for composite layers.
#include "nn/composite.h"

namespace mpipe::nn {

void append_prefixed(std::vector<ParamSpec>& out, std::vector<ParamSpec> specs,
                     const std::string& prefix) {
  for (ParamSpec& spec : specs) {
    spec.name = prefix + spec.name;
    out.push_back(std::move(spec));
  }
}

std::vector<std::span<float>> views(const std::vector<std::span<float>>& all, size_t begin,
                                    size_t count) {
  return {all.begin() + static_cast<ptrdiff_t>(begin),
          all.begin() + static_cast<ptrdiff_t>(begin + count)};
}

}  // namespace mpipe::nn
