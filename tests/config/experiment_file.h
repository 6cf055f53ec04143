// Test helper: writes experiment YAML to a temporary folder and returns what load_experiment
// makes of it, or the error message with the folder stripped ("exp.yaml:3: ...").
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/error.h"

namespace mpipe::config {

// A minimal valid model section, appended by tests about other sections so their lines
// start at 1.
inline const std::string kModel = "model:\n  layers:\n    - {type: relu}\n";

class ExperimentFile {
 public:
  ExperimentFile() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("mpipe_config_") + test->test_suite_name() + "_" + test->name());
    std::filesystem::create_directories(dir_);
  }
  ~ExperimentFile() { std::filesystem::remove_all(dir_); }
  ExperimentFile(const ExperimentFile&) = delete;
  ExperimentFile& operator=(const ExperimentFile&) = delete;

  std::string write(const std::string& yaml, const std::string& name = "exp.yaml") const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << yaml;
    return path;
  }

  Experiment load(const std::string& yaml, const std::vector<std::string>& overrides = {}) const {
    return load_experiment(write(yaml), overrides);
  }

  // The InputError message of loading `yaml`, with the folder removed from the file name;
  // "(no error)" when it loads.
  std::string error(const std::string& yaml, const std::vector<std::string>& overrides = {}) const {
    try {
      load(yaml, overrides);
    } catch (const InputError& e) {
      std::string message = e.what();
      const std::string folder = dir_.string() + "/";
      if (message.starts_with(folder)) message.erase(0, folder.size());
      return message;
    }
    return "(no error)";
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace mpipe::config
