// Field: typed reading of one YAML value.
#include "config/field.h"

#include <fmt/format.h>

#include <cmath>

namespace mpipe::config {

Field::Field(const Source& source, std::string path)
    : source_(&source),
      node_(YAML::NodeType::Undefined),
      mark_(YAML::Mark::null_mark()),
      path_(std::move(path)) {}

Field::Field(const Source& source, YAML::Node node, YAML::Mark mark, std::string path)
    : source_(&source), node_(std::move(node)), mark_(mark), path_(std::move(path)) {}

void Field::fail(std::string_view message) const { source_->fail(path_, mark_, message); }

std::string Field::describe() const {
  if (!node_.IsDefined() || node_.IsNull()) return "nothing";
  if (node_.IsSequence()) return "a list";
  if (node_.IsMap()) return "a map";
  return "'" + node_.Scalar() + "'";
}

int64_t Field::as_int() const {
  int64_t value = 0;
  if (!node_.IsScalar() || !YAML::convert<int64_t>::decode(node_, value)) {
    fail("expected an integer, got " + describe());
  }
  return value;
}

uint64_t Field::as_uint() const {
  uint64_t value = 0;
  if (!node_.IsScalar() || !YAML::convert<uint64_t>::decode(node_, value)) {
    fail("expected a non-negative integer, got " + describe());
  }
  return value;
}

double Field::as_double() const {
  double value = 0;
  if (!node_.IsScalar() || !YAML::convert<double>::decode(node_, value)) {
    fail("expected a number, got " + describe());
  }
  // yaml-cpp reads .inf, .nan and numbers beyond double's range (1e999 -> inf): none is a
  // setting anyone means.
  if (!std::isfinite(value)) fail("expected a finite number, got " + describe());
  return value;
}

bool Field::as_bool() const {
  bool value = false;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, value)) {
    fail("expected true or false, got " + describe());
  }
  return value;
}

std::string Field::as_string() const {
  if (!node_.IsScalar()) fail("expected a string, got " + describe());
  return node_.Scalar();
}

std::vector<Field> Field::elements(std::string_view what) const {
  if (!node_.IsSequence()) fail(fmt::format("expected {}, got {}", what, describe()));
  std::vector<Field> out;
  for (size_t i = 0; i < node_.size(); ++i) {
    const YAML::Node element = node_[i];
    out.emplace_back(*source_, element, element.Mark(), fmt::format("{}[{}]", path_, i));
  }
  return out;
}

}  // namespace mpipe::config
