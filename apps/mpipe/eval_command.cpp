// `mpipe eval`: evaluates a checkpoint or weights file on a split of the data, pipelined over
// the ranks as training is.
#include "eval_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "config/byte_size.h"
#include "core/error.h"
#include "job/eval_job.h"
#include "option_checks.h"

namespace mpipe::app {
namespace {

// A byte size as config::parse_byte_size reads it: "1GiB", "512MiB", "4096".
const CLI::Validator kByteSize(
    [](const std::string& text) {
      try {
        config::parse_byte_size(text);
        return std::string();
      } catch (const InputError& e) {
        return std::string(e.what());
      }
    },
    "");

}  // namespace

EvalCommand::EvalCommand(CLI::App& app) {
  app_ = app.add_subcommand(
      "eval",
      "Evaluate a checkpoint or weights file on a split of the data: loss, accuracy, perplexity "
      "or bits, a translation model's BLEU and chrF (under mpirun, pipelined over the ranks as "
      "training is)");
  app_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  auto* weights = app_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
                      ->check(kNotEmpty);
  app_->add_option("--checkpoint", checkpoint_run_dir_,
                   "A run directory (its newest committed checkpoint) or one of its "
                   "checkpoints/step_N folders, instead")
      ->check(kNotEmpty)
      ->excludes(weights);
  app_->add_option("--split", split_,
                   "train, or the held-out split by its name: val (a validation split) or test "
                   "(a test set; default: the data's held-out split)");
  app_->add_option("--losses", losses_,
                   "Write each example's loss to this file: a line per example, its index, loss "
                   "(mean over its tokens) and tokens, tab-separated")
      ->check(kNotEmpty);
  app_->add_option("--logits", logits_,
                   "Write the model's outputs to this safetensors file: one f32 tensor 'logits' "
                   "[examples, ...output shape], in example order")
      ->check(kNotEmpty);
  app_->add_option("--logits-limit", logits_limit_,
                   "The largest --logits file to write, e.g. 512MiB or 4GiB (rank 0 holds it in "
                   "memory); more is refused before evaluating")
      ->check(kByteSize)
      ->type_name("SIZE")
      ->capture_default_str();
  app_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  app_->callback([this] {
    if (weights_path_.empty() && checkpoint_run_dir_.empty()) {
      throw CLI::RequiredError("--weights or --checkpoint");
    }
  });
}

int EvalCommand::run(const comm::Communicator& world) {
  const train::WeightsEvaluation done =
      job::run_eval_job({.config_path = config_path_,
                         .overrides = overrides_,
                         .source = {.checkpoint = checkpoint_run_dir_, .weights = weights_path_},
                         .split = split_,
                         .files = {.losses = losses_,
                                   .logits = logits_,
                                   .logits_limit = config::parse_byte_size(logits_limit_)}},
                        world);
  if (world.rank() != 0) return 0;
  // The loss in full (the shortest text that reads back as the same double, as metrics.jsonl's).
  std::string line = fmt::format("{}: {} loss {}", done.source, done.split, done.report.loss);
  if (done.report.accuracy) {  // a classifying loss's only
    line += fmt::format(" | {} accuracy {:.2f}%", done.split, 100.0 * *done.report.accuracy);
  }
  const train::EvalMeasures& measures = done.measures;
  if (measures.perplexity) line += fmt::format(" | perplexity {:.4f}", *measures.perplexity);
  if (measures.bits_per_char) line += fmt::format(" | {:.4f} bits/char", *measures.bits_per_char);
  if (measures.bits_per_byte) line += fmt::format(" | {:.4f} bits/byte", *measures.bits_per_byte);
  if (done.translation) {
    line += fmt::format(" | BLEU {:.2f} | chrF2 {:.2f} ({} sentences)", done.translation->bleu,
                        done.translation->chrf, done.translation->sentences);
  }
  std::printf("%s | %lld examples\n", line.c_str(), static_cast<long long>(done.report.examples));
  return 0;
}

}  // namespace mpipe::app
