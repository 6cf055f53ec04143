// Layer attributes: a YAML value of a layer entry as a generic model::AttrValue.
#pragma once

#include "config/field.h"
#include "model/layer_spec.h"

namespace mpipe::config {

// A plain scalar becomes the first of bool (exactly `true`/`false`), int64, double that it
// parses as, else a string; a quoted scalar is always a string; a list of integers becomes
// std::vector<int64_t>. Anything else fails "expected a scalar or a list of integers, got ...".
model::AttrValue attr_value(const Field& field);

}  // namespace mpipe::config
