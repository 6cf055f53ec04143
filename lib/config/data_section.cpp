// The `data:` section: which dataset, where it is, and its shape and augmentation settings.
#include <optional>

#include "config/bounded.h"
#include "config/map_reader.h"
#include "config/sections.h"

namespace mpipe::config {

data::DataConfig parse_data(const Field& section) {
  const MapReader map(section, {"dataset", "path", "flatten", "normalize", "augment_crop_padding",
                                "augment_flip", "num_examples", "features", "classes", "seq_len",
                                "val_fraction", "vocab", "tokens"});
  data::DataConfig config;
  const std::optional<Field> dataset = map.get("dataset");
  if (dataset) config.kind = dataset->as_choice(data::kDatasetNames);
  if (auto f = map.get("path")) config.path = f->as_string();
  if (config.kind == data::DatasetKind::kTensors && config.path.empty()) {
    dataset->fail("tensors needs data.path: a .safetensors file holding 'inputs' and 'targets'");
  }
  if (auto f = map.get("flatten")) config.flatten = f->as_bool();
  if (auto f = map.get("normalize")) config.normalize = f->as_bool();
  if (auto f = map.get("augment_crop_padding")) {
    config.augment_crop_padding = read_int(*f, at_least(0));
  }
  if (auto f = map.get("augment_flip")) config.augment_flip = f->as_bool();
  if (auto f = map.get("num_examples")) config.num_examples = read_int(*f, at_least(1));
  if (auto f = map.get("features")) config.features = read_int(*f, at_least(1));
  if (auto f = map.get("classes")) config.classes = read_int(*f, at_least(0));
  if (auto f = map.get("seq_len")) config.seq_len = read_int(*f, at_least(1));
  if (auto f = map.get("val_fraction")) config.val_fraction = read_double(*f, open_interval(0, 1));
  if (auto f = map.get("vocab")) config.vocab = read_int(*f, at_least(2));
  if (auto f = map.get("tokens")) config.tokens = f->as_bool();
  return config;
}

}  // namespace mpipe::config
