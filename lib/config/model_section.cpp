// The `model:` section: the loss and its label smoothing, the initialization and the list of
// layers.
#include <fmt/format.h>

#include "config/bounded.h"
#include "config/layer_list.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

model::ModelSpec parse_model(const Field& section) {
  const MapReader map(section, {"loss", "label_smoothing", "init", "layers"});
  model::ModelSpec spec;
  spec.where = section.source().ref(section.path(), section.mark());
  spec.loss_where = section.source().ref(section.path() + ".loss", section.mark());
  if (auto f = map.get("loss")) {
    spec.loss = std::string(
        f->as_choice<std::string_view>({{"cross_entropy", "cross_entropy"}, {"mse", "mse"}}));
    spec.loss_where = f->source().ref(f->path(), f->mark());
  }
  if (auto f = map.get("label_smoothing")) {
    spec.label_smoothing = read_double(*f, half_open(0.0, 1.0));
    if (spec.loss != "cross_entropy" && spec.label_smoothing > 0.0) {
      f->fail(fmt::format("smooths cross_entropy's targets; the loss is {}", spec.loss));
    }
  }
  if (auto f = map.get("init")) spec.init = f->as_choice(model::kModelInitNames);
  spec.layers = expand_layers(map.required("layers"));
  return spec;
}

}  // namespace mpipe::config
