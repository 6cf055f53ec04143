// LayerAttrs: typed, validated access to one LayerSpec's attributes; every error names the
// YAML file, line and key path, and attributes nobody read are reported as unknown keys.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/layer_spec.h"

namespace mpipe::model {

// An attribute error; its message already names the attribute's own file, line and key.
class AttributeError : public InputError {
 public:
  using InputError::InputError;
};

class LayerAttrs {
 public:
  explicit LayerAttrs(const LayerSpec& spec) : spec_(spec) {}

  int64_t integer(const std::string& key, int64_t min);  // required
  int64_t integer(const std::string& key, int64_t fallback, int64_t min);
  double number(const std::string& key, double fallback, double min, double max);
  bool flag(const std::string& key, bool fallback);
  std::string text(const std::string& key, const std::string& fallback,
                   const std::vector<std::string>& allowed);
  // Throws for any attribute that was never read: an unknown key for this layer kind.
  void finish() const;

 private:
  const Attr* find(const std::string& key);
  [[noreturn]] void fail(const Attr& attr, const std::string& message) const;

  const LayerSpec& spec_;
  std::set<std::string> read_;
};

}  // namespace mpipe::model
