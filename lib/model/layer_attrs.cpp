// Typed attribute access with file:line error messages.
#include "model/layer_attrs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"

namespace mpipe::model {
namespace {

std::string describe(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return fmt::format("[{}]", fmt::join(v, ", "));
        } else if constexpr (std::is_same_v<T, std::string>) {
          return "'" + v + "'";
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

}  // namespace

const Attr* LayerAttrs::find(const std::string& key) {
  read_.insert(key);
  auto it = spec_.attrs.find(key);
  return it == spec_.attrs.end() ? nullptr : &it->second;
}

void LayerAttrs::fail(const Attr& attr, const std::string& message) const {
  throw AttributeError(fmt::format("{}: {}", attr.where.prefix(), message));
}

int64_t LayerAttrs::integer(const std::string& key, int64_t min) {
  if (!find(key)) {  // (an AttributeError: it names the key's own line)
    throw AttributeError(
        fmt::format("{}.{}: required for layer '{}'", spec_.where.prefix(), key, spec_.kind));
  }
  return integer(key, 0, min);
}

int64_t LayerAttrs::integer(const std::string& key, int64_t fallback, int64_t min) {
  const Attr* attr = find(key);
  if (!attr) return fallback;
  const auto* value = std::get_if<int64_t>(&attr->value);
  if (!value) fail(*attr, fmt::format("expected an integer, got {}", describe(attr->value)));
  if (*value < min) fail(*attr, fmt::format("must be >= {}, got {}", min, *value));
  return *value;
}

double LayerAttrs::number(const std::string& key, double fallback, double min, double max) {
  const Attr* attr = find(key);
  if (!attr) return fallback;
  double value = 0;
  if (const auto* d = std::get_if<double>(&attr->value)) {
    value = *d;
  } else if (const auto* i = std::get_if<int64_t>(&attr->value)) {
    value = static_cast<double>(*i);
  } else {
    fail(*attr, fmt::format("expected a number, got {}", describe(attr->value)));
  }
  if (value < min || value > max) {
    fail(*attr, fmt::format("must be in [{}, {}], got {}", min, max, value));
  }
  return value;
}

bool LayerAttrs::flag(const std::string& key, bool fallback) {
  const Attr* attr = find(key);
  if (!attr) return fallback;
  const auto* value = std::get_if<bool>(&attr->value);
  if (!value) fail(*attr, fmt::format("expected true or false, got {}", describe(attr->value)));
  return *value;
}

std::string LayerAttrs::text(const std::string& key, const std::string& fallback,
                             const std::vector<std::string>& allowed) {
  const Attr* attr = find(key);
  if (!attr) return fallback;
  const auto* value = std::get_if<std::string>(&attr->value);
  if (!value || std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    fail(*attr,
         fmt::format("must be one of {}, got {}", fmt::join(allowed, ", "), describe(attr->value)));
  }
  return *value;
}

void LayerAttrs::finish() const {
  for (const auto& [key, attr] : spec_.attrs) {
    if (!read_.contains(key)) {
      fail(attr, read_.empty()
                     ? fmt::format("unknown key: layer '{}' takes no attributes", spec_.kind)
                     : fmt::format("unknown key for layer '{}' (known: {})", spec_.kind,
                                   fmt::join(read_, ", ")));
    }
  }
}

}  // namespace mpipe::model
