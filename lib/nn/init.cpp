// Parameter initialization: zeros, ones, Kaiming/Xavier uniform and normal from the counter RNG.
#include "nn/init.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/rng.h"

namespace mpipe::nn {
namespace {

// values[i] = U(-bound, bound) from draw i.
void fill_symmetric_uniform(std::span<float> values, const CounterRng& rng, double bound) {
  rng.fill_uniform(values);
  const auto b = static_cast<float>(bound);
  for (float& v : values) v = (2.0f * v - 1.0f) * b;
}

}  // namespace

void initialize_param(std::span<float> values, const ParamSpec& spec, uint64_t seed,
                      int global_layer, int param_index) {
  check(static_cast<int64_t>(values.size()) == spec.shape.numel(),
        "initialize_param: {} has shape {} but {} values", spec.name, spec.shape, values.size());
  const CounterRng rng(seed, RngPurpose::kInit, static_cast<uint32_t>(global_layer),
                       static_cast<uint64_t>(static_cast<uint32_t>(param_index)));
  switch (spec.init) {
    case Init::kZeros:
      std::fill(values.begin(), values.end(), 0.0f);
      return;
    case Init::kOnes:
      std::fill(values.begin(), values.end(), 1.0f);
      return;
    case Init::kKaimingUniform:
      check(spec.fan_in > 0, "initialize_param: {} needs fan_in > 0 for Kaiming init", spec.name);
      fill_symmetric_uniform(values, rng, std::sqrt(6.0 / static_cast<double>(spec.fan_in)));
      return;
    case Init::kXavierUniform:
      check(spec.fan_in + spec.fan_out > 0, "initialize_param: {} needs fans for Xavier init",
            spec.name);
      fill_symmetric_uniform(values, rng,
                             std::sqrt(6.0 / static_cast<double>(spec.fan_in + spec.fan_out)));
      return;
    case Init::kNormal:
      for (size_t i = 0; i < values.size(); ++i) values[i] = spec.std * rng.normal(i);
      return;
  }
  throw Error(fmt::format("initialize_param: unknown init for {}", spec.name));
}

}  // namespace mpipe::nn
