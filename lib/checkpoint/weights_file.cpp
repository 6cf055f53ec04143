// The metadata of a weights file, and a run's tied matrix read from its settings.
#include "checkpoint/weights_file.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

namespace mpipe::checkpoint {
namespace {

// The index i of a key "model.layers[i].<field>", or nullopt for any other key.
std::optional<int64_t> layer_of(const std::string& key, const std::string& field) {
  const std::string prefix = "model.layers[";
  const std::string suffix = "]." + field;
  if (!key.starts_with(prefix) || !key.ends_with(suffix)) return std::nullopt;
  const std::string index = key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(index);
}

}  // namespace

std::map<std::string, std::string> weights_file_metadata(
    const std::string& config_source, const std::map<std::string, std::string>& settings,
    const std::optional<TiedNames>& tied) {
  nlohmann::json model = nlohmann::json::object();
  for (const auto& [key, value] : settings) {
    if (key.starts_with("model.")) model[key] = value;
  }
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"producer", "mpipe"}, {"config", config_source}, {"model", model.dump()}};
  if (tied) {
    nlohmann::json names = nlohmann::json::object();
    for (const std::string& copy : tied->copies) names[copy] = tied->stored;
    metadata["tied_weights"] = names.dump();
  }
  return metadata;
}

std::optional<TiedNames> tied_names_in_settings(
    const std::map<std::string, std::string>& settings) {
  std::set<int64_t> ties;  // in layer order
  std::map<int64_t, std::string> type;
  std::optional<int64_t> embedding;
  for (const auto& [key, value] : settings) {
    if (auto i = layer_of(key, "tie"); i && value == "embedding") ties.insert(*i);
    if (auto i = layer_of(key, "type")) {
      type[*i] = value;
      if (value == "embedding" && (!embedding || *i < *embedding)) embedding = *i;
    }
  }
  if (ties.empty() || !embedding) return std::nullopt;
  TiedNames names{.copies = {}, .stored = fmt::format("layers.{}.token", *embedding)};
  for (int64_t i : ties) {
    names.copies.push_back(
        fmt::format("layers.{}.{}", i, type[i] == "embedding" ? "token" : "weight"));
  }
  return names;
}

std::optional<std::map<std::string, std::string>> model_settings_in_metadata(
    const std::map<std::string, std::string>& metadata, const std::string& path) {
  const auto model = metadata.find("model");
  if (model == metadata.end()) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(model->second, nullptr, false);
  check_input(json.is_object(), "{}: metadata 'model' is not a JSON object", path);
  std::map<std::string, std::string> settings;
  for (const auto& [key, value] : json.items()) {
    check_input(value.is_string(), "{}: metadata 'model': {} is not a string", path, key);
    settings[key] = value.get<std::string>();
  }
  return settings;
}

}  // namespace mpipe::checkpoint
