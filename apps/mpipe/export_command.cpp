// `mpipe export`: writes a committed checkpoint's weights as a safetensors file (one process).
#include "export_command.h"

#include <cstdio>
#include <optional>

#include "checkpoint/checkpoint_export.h"
#include "core/byte_format.h"
#include "option_checks.h"
#include "train/checkpoint_model.h"

namespace mpipe::app {

ExportCommand::ExportCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "export",
      "Write a committed checkpoint's weights as the safetensors file --export-weights writes "
      "(one process)");
  app_->add_option("run_dir", run_dir_, "Run directory")->required()->check(kNotEmpty);
  app_->add_option("out", weights_path_, "Weights file to write (.safetensors)")
      ->required()
      ->check(kNotEmpty);
  app_->add_option("--step", step_,
                   "The checkpoint's step (default: the newest committed checkpoint)")
      ->check(non_negative_integer());
}

int ExportCommand::run() {
  const checkpoint::CheckpointExport done =
      checkpoint::export_checkpoint(run_dir_, step_ >= 0 ? std::optional(step_) : std::nullopt,
                                    weights_path_, train::check_checkpoint_model);
  std::printf("exported step %lld of %s (%lld tensors, %s) to %s\n",
              static_cast<long long>(done.step), run_dir_.c_str(),
              static_cast<long long>(done.num_tensors),
              format_bytes(static_cast<double>(done.digest.size)).c_str(), weights_path_.c_str());
  return 0;
}

}  // namespace mpipe::app
