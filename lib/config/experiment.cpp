// load_experiment: file → YAML tree → --set overrides → section parsers → cross-section checks.
#include "config/experiment.h"

#include "config/cross_checks.h"
#include "config/map_reader.h"
#include "config/overrides.h"
#include "config/sections.h"
#include "config/yaml_file.h"

namespace mpipe::config {
namespace {

// Records where every key below `node` (a map) came from, recursing into maps.
void record_refs(const Source& source, const YAML::Node& node, const std::string& path,
                 std::map<std::string, model::SourceRef>& refs) {
  for (const auto& entry : node) {
    const std::string key = path + "." + entry.first.Scalar();
    refs[key] = source.ref(key, entry.second.Mark());
    if (entry.second.IsMap()) record_refs(source, entry.second, key, refs);
  }
}

// Fails unless the file's `tree` is a map of sections (or empty).
void require_map(const std::string& path, const YAML::Node& tree) {
  if (tree.IsNull() || tree.IsMap()) return;
  const Source file_only(path, {});
  const Field whole(file_only, tree, tree.Mark(), "");
  whole.fail("expected a map of sections, got " + whole.describe());
}

// The sections of an experiment file, as `root`'s map (unknown ones refused).
MapReader read_sections(const Field& root) {
  return MapReader(
      root, {"model", "data", "train", "optimizer", "pipeline", "checkpoint", "log", "comm"});
}

}  // namespace

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node tree = read_yaml_file(path);
  require_map(path, tree);
  const Source source(path, apply_overrides(tree, overrides));
  const Field root(source, tree, tree.Mark(), "");
  const MapReader sections = read_sections(root);

  Experiment experiment;
  experiment.source = path;
  experiment.model = parse_model(sections.child("model"));
  experiment.data = parse_data(sections.child("data"));
  experiment.train = parse_train(sections.child("train"));
  experiment.optimizer = parse_optimizer(sections.child("optimizer"));
  experiment.pipeline = parse_pipeline(sections.child("pipeline"));
  experiment.checkpoint = parse_checkpoint(sections.child("checkpoint"));
  experiment.log = parse_log(sections.child("log"));
  experiment.comm = parse_comm(sections.child("comm"));
  check_cross_sections(root, experiment);
  if (tree.IsMap()) {
    for (const auto& section : tree) {
      if (section.second.IsMap() && section.first.Scalar() != "model") {
        record_refs(source, section.second, section.first.Scalar(), experiment.refs);
      }
    }
  }
  return experiment;
}

comm::CommConfig load_comm_section(const std::string& path,
                                   const std::vector<std::string>& overrides) {
  YAML::Node tree = read_yaml_file(path);
  require_map(path, tree);
  const Source source(path, apply_overrides(tree, overrides));
  return parse_comm(read_sections(Field(source, tree, tree.Mark(), "")).child("comm"));
}

}  // namespace mpipe::config
