// Layer attributes: converting YAML values to model::AttrValue.
#include "config/layer_attr.h"

namespace mpipe::config {
namespace {

model::AttrValue scalar_value(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted: '5' stays the string "5"
  if (text == "true") return true;
  if (text == "false") return false;
  int64_t integer = 0;
  if (YAML::convert<int64_t>::decode(node, integer)) return integer;
  double number = 0;
  if (YAML::convert<double>::decode(node, number)) return number;
  return text;
}

}  // namespace

model::AttrValue attr_value(const Field& field) {
  const YAML::Node& node = field.node();
  if (node.IsScalar()) return scalar_value(node);
  if (node.IsSequence()) {
    std::vector<int64_t> values;
    for (const Field& element : field.elements("a list")) values.push_back(element.as_int());
    return values;
  }
  field.fail("expected a scalar or a list of integers, got " + field.describe());
}

}  // namespace mpipe::config
