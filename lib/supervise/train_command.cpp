// The `train CONFIG [options]` a supervisor runs under mpirun (see train_command.h).
#include "supervise/train_command.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/error.h"
#include "supervise/job_command.h"

namespace mpipe::supervise {

namespace {

constexpr std::array<std::string_view, 5> kValueOptions = {"--set", "--run-dir", "--export-weights",
                                                           "--init-weights", "--init-skip"};
constexpr std::array<std::string_view, 2> kResumeFlags = {"--resume", "--resume-or-start"};

bool is_one_of(std::string_view name, const auto& names) {
  return std::ranges::find(names, name) != names.end();
}

}  // namespace

TrainCommand parse_train_command(const std::vector<std::string>& command) {
  check_job_command(command, "train");
  TrainCommand train;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (!arg.starts_with("--")) {
      check_input(train.config_path.empty(), "supervise: train takes one config, got '{}' and '{}'",
                  train.config_path, arg);
      train.config_path = arg;
      train.args.push_back(arg);
      continue;
    }
    if (is_one_of(arg, kResumeFlags)) continue;  // every relaunch resumes
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    check_input(is_one_of(name, kValueOptions),
                "supervise: train option '{}' is not one the supervisor knows (--set, --run-dir, "
                "--export-weights, --init-weights, --init-skip, --resume, --resume-or-start)",
                name);
    std::string value;
    train.args.push_back(arg);
    if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else {
      check_input(i + 1 < command.size(), "supervise: train option {} needs a value", name);
      value = command[++i];
      train.args.push_back(value);
    }
    if (name == "--set") train.overrides.push_back(value);
    if (name == "--run-dir") train.run_dir = value;
  }
  check_input(!train.config_path.empty(), "supervise: train needs a config (train CONFIG ...)");
  return train;
}

std::vector<std::string> relaunch_command(const TrainCommand& command, const Layout& layout,
                                          bool auto_partition) {
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), command.args.begin(), command.args.end());
  args.push_back("--resume-or-start");
  for (std::string& setting : layout_settings(layout, auto_partition)) {
    args.push_back("--set");
    args.push_back(std::move(setting));
  }
  return args;
}

}  // namespace mpipe::supervise
