// `mpipe compare`: compares two safetensors weight files tensor by tensor (one process).
#include "compare_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <utility>

#include "checkpoint/safetensors.h"
#include "checkpoint/weight_diff.h"
#include "core/error.h"
#include "option_checks.h"

namespace mpipe::app {
namespace {

// The diffs whose tensor name matches `pattern` (all of them when it is empty); at least one.
std::vector<checkpoint::TensorDiff> only_matching(std::vector<checkpoint::TensorDiff> diffs,
                                                  const std::string& pattern) {
  if (pattern.empty()) return diffs;
  std::regex regex;
  try {
    regex = std::regex(pattern);
  } catch (const std::regex_error&) {
    throw InputError(fmt::format("--only '{}': not a valid regular expression", pattern));
  }
  std::erase_if(diffs, [&](const auto& d) { return !std::regex_search(d.name, regex); });
  check_input(!diffs.empty(), "--only '{}': no tensor name matches", pattern);
  return diffs;
}

}  // namespace

CompareCommand::CompareCommand(CLI::App& app) {
  app_ = app.add_subcommand("compare", "Compare two safetensors weight files");
  app_->add_option("files", paths_, "Two .safetensors files")
      ->required()
      ->expected(2)
      ->check(kNotEmpty);
  app_->add_option("--rtol", rtol_,
                   "Largest relative L2 difference per tensor, ||a-b||/max(||a||,||b||), accepted "
                   "(0: must be bit-identical)")
      ->check(non_negative_number("0 = bit-identical"))
      ->capture_default_str();
  app_->add_option("--only", only_,
                   "Compare only the tensors whose name matches this regular expression "
                   "(ECMAScript, anywhere in the name), e.g. 'running_'");
}

int CompareCommand::run() {
  const auto& [a, b] = std::pair(paths_.at(0), paths_.at(1));
  auto diffs = only_matching(checkpoint::diff_weights(checkpoint::read_safetensors(a), a,
                                                      checkpoint::read_safetensors(b), b),
                             only_);
  bool ok = true;
  double worst = 0.0;
  for (const auto& d : diffs) {
    const bool within = rtol_ == 0.0 ? d.identical : d.rel <= rtol_;
    ok = ok && within;
    worst = std::max(worst, d.rel);
    if (!within) {
      std::printf("%-40s max abs %.3e  relative L2 %.3e\n", d.name.c_str(), d.max_abs, d.rel);
    }
  }
  std::printf("%s: %zu tensors, largest relative L2 difference %.3e (%s)\n",
              ok ? "same" : "DIFFERENT", diffs.size(), worst,
              rtol_ == 0.0 ? "bit-identical required" : "rtol given");
  return ok ? 0 : 1;
}

}  // namespace mpipe::app
