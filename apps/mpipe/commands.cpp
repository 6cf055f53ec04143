// Subcommand implementations: train, eval, schedule, plan, compare, export, generate, translate,
// score, and the daemon's serve, submit, status and cancel; tokenize and tokenize-pairs (text to
// token or pair shards, one process).
#include "commands.h"

#include <fmt/ranges.h>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <regex>

#include "checkpoint/checkpoint_export.h"
#include "checkpoint/checkpoint_weights.h"
#include "checkpoint/safetensors.h"
#include "checkpoint/weight_diff.h"
#include "checkpoint/weights_file.h"
#include "comm/agree.h"
#include "comm/watchdog.h"
#include "config/byte_size.h"
#include "config/experiment.h"
#include "config/link_rate.h"
#include "config/stored_settings.h"
#include "core/byte_format.h"
#include "core/error.h"
#include "core/memory_account.h"
#include "data/dataset.h"
#include "job/eval_job.h"
#include "job/train_job.h"
#include "job/translate_job.h"
#include "kernels/context.h"
#include "launcher_rank.h"
#include "log/logging.h"
#include "log/progress.h"
#include "model/model_builder.h"
#include "mpirun_grace.h"
#include "plan/batch_split.h"
#include "plan/grid.h"
#include "plan/schedule.h"
#include "score/bleu.h"
#include "score/chrf.h"
#include "serve/daemon.h"
#include "serve/spool.h"
#include "serve/status_file.h"
#include "serve/submit.h"
#include "startup.h"
#include "text_lines.h"
#include "train/checkpoint_model.h"
#include "train/data_contract.h"
#include "train/generator.h"
#include "train/pipeline_plan.h"
#include "train/plan_calibration.h"
#include "train/plan_report.h"
#include "train/trainer.h"
#include "train/training_run.h"
#include "train/translate_text.h"
#include "train/virtual_stage_rules.h"

namespace mpipe::app {
namespace {

// Set by SIGTERM/SIGUSR1 (Slurm's warning before a time limit or preemption); the training
// loop checkpoints and stops at the next step boundary. A signal handler can only reach
// process-wide state, hence this one global.
std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};  // the signal that set it, for the watchdog's warning

extern "C" void request_stop(int signal) {
  g_stop_signal.store(signal);
  g_stop_requested.store(true);
}

// Ends the whole job from this rank, which cannot reach agreement with its peers (a lost peer,
// or a rank over its memory limit mid-step): logs `line`, then MPI_Abort(code) kills every rank.
[[noreturn]] void end_job(const comm::Communicator& world, const char* line, int code) {
  spdlog::error("{}", line);
  spdlog::default_logger()->flush();
  world.abort(code);
}

// mpipe plan's exit code when the plan does not fit the memory limit (the plan is printed all the
// same): distinct from bad input (2) and from a run over the limit (4).
constexpr int kPlanDoesNotFitExitCode = 5;

// In place on a terminal; but under mpirun a rank's stdout is a pseudo-terminal even when
// mpirun's own output goes to a file, so there we print plain lines.
bool progress_in_place() {
  return log::stream_is_terminal(stdout) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
}

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

// Installs SIGTERM and SIGUSR1 handlers that set g_stop_requested.
const std::atomic<bool>* stop_on_signals() {
  std::signal(SIGTERM, request_stop);
  std::signal(SIGUSR1, request_stop);
  return &g_stop_requested;
}

// `validator` without its name in --help, which then shows the value's type and default alone
// ("--stages INT=4", not "INT:INT in [1 - 64]=4"); the option's text says what it accepts.
CLI::Validator unnamed(const CLI::Validator& validator) { return validator.description(""); }

// Refuses an empty value (`--run-dir ''`), which would otherwise read as not given.
const CLI::Validator kNotEmpty(
    [](const std::string& value) { return value.empty() ? "must not be empty" : std::string(); },
    "");

// A finite number >= 0; `zero` says what 0 means, e.g. "0 = greedy".
CLI::Validator non_negative_number(const std::string& zero) {
  return CLI::Validator(
      [zero](const std::string& text) {
        double value = 0;
        return CLI::detail::lexical_cast(text, value) && value >= 0 && std::isfinite(value)
                   ? std::string()
                   : "must be a number >= 0 (" + zero + "), got " + text;
      },
      "");  // the option's help says what 0 means
}

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

// "30s", "5m", "1.5h" or plain seconds, as seconds > 0.
CLI::Validator duration_in_seconds() {
  const CLI::Validator positive(
      [](const std::string& seconds) {
        double value = 0;
        return CLI::detail::lexical_cast(seconds, value) && value > 0
                   ? std::string()
                   : "must be longer than 0 s, got " + seconds + " s";
      },
      "");
  // --help shows the option's type_name (DURATION), not the validators' "(FLOAT [UNIT]) AND ...".
  return unnamed(
      CLI::AsNumberWithUnit(std::map<std::string, double>{{"s", 1}, {"m", 60}, {"h", 3600}},
                            CLI::AsNumberWithUnit::CASE_SENSITIVE) &
      positive);
}

// Refuses references of another count than the sentences they score: "--ref r.txt: 5 lines,
// but --hyp h.txt has 6".
void check_line_counts(size_t sentences, size_t references, const std::string& sentence_source,
                       const std::string& ref_source) {
  check_input(sentences == references, "{}: {} lines, but {} has {}", ref_source, references,
              sentence_source, sentences);
}

// sacreBLEU's two lines, BLEU and chrF2, for `hypotheses` against `references`, one each.
std::string score_lines(const std::vector<std::string>& hypotheses,
                        const std::vector<std::string>& references) {
  return fmt::format("{}\n{}\n", score::corpus_bleu(hypotheses, references).format(),
                     score::corpus_chrf(hypotheses, references).format());
}

// The SentencePiece model types tokenize and tokenize-pairs train.
std::vector<std::string> tokenizer_model_types() {
  std::vector<std::string> names;
  for (const auto& [name, type] : tokenize::kModelTypeNames) names.emplace_back(name);
  return names;
}

}  // namespace

std::string default_run_dir(const std::string& config_path) {
  return (std::filesystem::path("runs") / std::filesystem::path(config_path).stem()).string();
}

Commands::Commands(CLI::App& app) {
  add_train(app);
  add_schedule(app);
  add_plan(app);
  add_generate(app);
  add_translate(app);
  add_eval(app);
  add_score(app);
  add_serve(app);
  add_submit(app);
  add_status(app);
  add_cancel(app);
  add_tokenize(app);
  add_tokenize_pairs(app);
  add_export(app);
  add_compare(app);
  supervise_ = std::make_unique<SuperviseCommand>(app);
}

void Commands::add_train(CLI::App& app) {
  train_ = app.add_subcommand("train", "Train a model described by an experiment YAML file");
  train_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  train_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  train_->add_option("--run-dir", run_dir_, "Run directory (default: runs/<config name>)")
      ->check(kNotEmpty);
  train_
      ->add_option("--export-weights", export_path_,
                   "Write all weights to this safetensors file at the end "
                   "(default: RUN_DIR/weights.safetensors)")
      ->check(kNotEmpty);
  auto* resume = train_->add_flag(
      "--resume", resume_, "Continue from the newest committed checkpoint in the run directory");
  auto* init_weights =
      train_
          ->add_option("--init-weights", init_weights_.path,
                       "Start a new run from these weights (.safetensors, as --export-weights "
                       "and export write them); a run resumed by --resume-or-start does not read "
                       "them")
          ->check(kNotEmpty)
          ->excludes(resume);
  train_
      ->add_option("--init-skip", init_weights_.skip,
                   "A tensor (layers.5.weight) or prefix (layers.5) of the model that keeps its "
                   "initialisation instead, e.g. a new head (repeatable)")
      ->check(kNotEmpty)
      ->needs(init_weights);
  train_
      ->add_flag("--resume-or-start", resume_or_start_,
                 "Continue from the newest committed checkpoint if there is one, else start a "
                 "new run (for requeued batch jobs)")
      ->excludes(resume);
}

void Commands::add_schedule(CLI::App& app) {
  schedule_ = app.add_subcommand("schedule", "Print a pipeline schedule as a grid");
  std::vector<std::string> schedules;
  for (plan::ScheduleKind kind : plan::kConcreteSchedules) {
    schedules.push_back(plan::to_string(kind));
  }
  schedules.push_back(plan::to_string(plan::ScheduleKind::kInterleaved));
  schedules.push_back(plan::to_string(plan::ScheduleKind::kZbv));
  schedule_
      ->add_option("--schedule", schedule_kind_,
                   fmt::format("The schedule to print: {}", fmt::join(schedules, ", ")))
      ->check(unnamed(CLI::IsMember(schedules)))
      ->capture_default_str();
  schedule_->add_option("--stages", stages_, "Pipeline stages K (1 to 64)")
      ->check(unnamed(CLI::Range(1, 64)))
      ->capture_default_str();
  schedule_->add_option("--micro-batches", micro_batches_, "Micro-batches M (1 to 1024)")
      ->check(unnamed(CLI::Range(1, 1024)))
      ->capture_default_str();
  schedule_
      ->add_option("--virtual-stages", virtual_stages_,
                   "Model chunks per rank v, 1 to 16 (interleaved: chunk c of rank r is stage r + "
                   "c*K; zbv: 2, implied)")
      ->check(unnamed(CLI::Range(1, 16)))
      ->capture_default_str();
  // The schedule's shape is checked with the options, so every rank refuses it alike.
  schedule_->callback([this] {
    const plan::ScheduleKind kind = plan::parse_schedule_kind(schedule_kind_);
    if (kind == plan::ScheduleKind::kZbv && schedule_->count("--virtual-stages") == 0) {
      virtual_stages_ = 2;  // the V
    }
    if (auto problem =
            plan::schedule_shape_problem(kind, stages_, micro_batches_, virtual_stages_)) {
      const bool micro_batches =
          problem->setting == plan::ScheduleShapeProblem::Setting::kMicroBatches;
      throw CLI::ValidationError(micro_batches ? "--micro-batches" : "--virtual-stages",
                                 problem->message);
    }
  });
}

void Commands::add_plan(CLI::App& app) {
  plan_ = app.add_subcommand(
      "plan",
      "Predict each stage's layers, time and peak memory, the bubble, the step time and "
      "samples/s (no MPI, no training)");
  plan_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  plan_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  plan_
      ->add_option("--stages", stages_,
                   "Pipeline stages K (default: from the config; a manual partition becomes auto)")
      ->check(unnamed(CLI::Range(1, 1 << 20)));
  plan_->add_option("--micro-batches", micro_batches_, "Micro-batches M (default: from the config)")
      ->check(unnamed(CLI::Range(1, 1 << 20)));
  plan_->add_option("--memory-limit", plan_memory_limit_,
                    "Predicted peak bytes allowed per rank, e.g. 6GiB, 512MiB, 2G, or none "
                    "(default: pipeline.memory_limit)");
  plan_
      ->add_option("--threads-per-rank", plan_threads_,
                   "OpenMP threads each rank computes on (default: this process's, "
                   "OMP_NUM_THREADS or its cores, as a rank started the same way would have)")
      ->check(unnamed(CLI::Range(1, 1 << 16)));
  plan_->add_option("--link-bandwidth", plan_link_bandwidth_,
                    "The rate of the links between ranks, e.g. 100mbit, 1gbit or 125MB (per "
                    "second; default: shared memory's, 4 GB/s)");
  plan_->add_flag("--calibrate", plan_calibrate_,
                  "Measure this machine's rates longer (0.1 s a product, the batched weight "
                  "gradient, a rank's whole share of the parameters) than the default brief "
                  "measurement");
  plan_
      ->add_flag("--assumed-rates", plan_assumed_rates_,
                 "Predict at the fixed rates the plan is chosen at (the development machine's "
                 "100 GFLOP/s and 4 GB/s per thread) instead of measuring this machine's GEMM "
                 "rate (oneDNN matmuls of the model's main linear shape at the micro-batch's "
                 "rows, else of 1024^3) and memory traffic (the optimizer step over a rank's "
                 "parameters); the same output on every machine")
      ->excludes("--calibrate");
  plan_->add_flag("--json", plan_json_, "Print the plan as one JSON object");
}

void Commands::add_generate(CLI::App& app) {
  generate_ = app.add_subcommand(
      "generate", "Sample text from a trained language model (bytes, or the data's tokenizer)");
  generate_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  generate_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
      ->required()
      ->check(kNotEmpty);
  generate_->add_option("--prompt", generate_options_.prompt,
                        "Text to continue (default: a newline)");
  generate_
      ->add_option("--length", generate_options_.length,
                   "Tokens to generate (bytes for a character-level model), at most 1048576")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{1} << 20)))
      ->capture_default_str();
  generate_
      ->add_option("--temperature", generate_options_.sampling.temperature,
                   "Sampling temperature (0 = greedy: always the most likely token)")
      ->check(non_negative_number("0 = greedy"))
      ->capture_default_str();
  generate_
      ->add_option("--top-k", generate_options_.sampling.top_k,
                   "Draw only from the k most likely tokens (0 = all)")
      ->check(unnamed(CLI::NonNegativeNumber))
      ->capture_default_str();
  generate_
      ->add_option("--top-p", generate_options_.sampling.top_p,
                   "Draw only from the fewest most likely tokens whose probabilities add up to "
                   "at least p, in (0, 1] (1 = all)")
      ->check(unnamed(CLI::Range(0.0, 1.0)))
      ->capture_default_str();
  generate_
      ->add_option("--seed", generate_options_.seed,
                   "Random seed of the draws (docs/design/inference.md, \"Sampling text\")")
      ->capture_default_str();
  generate_->add_option("--set", overrides_, "Override a config key: key.path=value");
}

void Commands::add_translate(CLI::App& app) {
  translate_ = app.add_subcommand(
      "translate",
      "Translate lines of text with a trained translation model (data.dataset: pairs), one "
      "process, or pipelined across the ranks mpirun starts");
  translate_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  auto* translate_weights =
      translate_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
          ->check(kNotEmpty);
  translate_
      ->add_option("--checkpoint", checkpoint_run_dir_,
                   "A run directory: its newest committed checkpoint's weights instead")
      ->check(kNotEmpty)
      ->excludes(translate_weights);
  translate_
      ->add_option("--to", translate_tag_,
                   "The target language's tag, a piece of data.tokenizer: '<2en>' ...")
      ->required()
      ->check(kNotEmpty);
  translate_->add_option("--input", translate_input_,
                         "Sentences to translate, one a line (default: stdin)");
  translate_
      ->add_option("--beam", translate_options_.beam,
                   "Beam width, 1 to 64 (1 = greedy: always the most likely token)")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{64})))
      ->capture_default_str();
  translate_
      ->add_option("--batch", translate_options_.batch, "Sentences decoded together, 1 to 4096")
      ->check(unnamed(CLI::Range(int64_t{1}, int64_t{4096})))
      ->capture_default_str();
  translate_
      ->add_option("--ref", references_path_,
                   "Reference translations, one a line: print BLEU and chrF on stderr")
      ->check(kNotEmpty);
  translate_->add_option("--set", overrides_, "Override a config key: key.path=value");
  translate_->callback([this] {
    if (weights_path_.empty() && checkpoint_run_dir_.empty()) {
      throw CLI::RequiredError("--weights or --checkpoint");
    }
  });
}

void Commands::add_score(CLI::App& app) {
  score_ = app.add_subcommand(
      "score", "Corpus BLEU and chrF of translations against references (sacreBLEU's defaults)");
  score_->add_option("--hyp", hypotheses_path_, "Translations, one a line")
      ->required()
      ->check(kNotEmpty);
  score_->add_option("--ref", references_path_, "References, one a line")
      ->required()
      ->check(kNotEmpty);
}

void Commands::add_serve(CLI::App& app) {
  serve_ = app.add_subcommand(
      "serve", "Run the experiments submitted to a spool, one after another (under mpirun/srun)");
  serve_->add_option("--spool", spool_dir_, "Spool directory (created if needed)")
      ->required()
      ->check(kNotEmpty);
  serve_
      ->add_option("--idle-exit", idle_exit_s_,
                   "Stop after this long with nothing to run: 30s, 5m, 1h (default: never)")
      ->transform(duration_in_seconds())
      ->type_name("DURATION");
}

void Commands::add_submit(CLI::App& app) {
  submit_ = app.add_subcommand("submit", "Check an experiment file and queue it in a spool");
  submit_->add_option("spool", spool_dir_, "Spool directory (created if needed)")
      ->required()
      ->check(kNotEmpty);
  submit_->add_option("config", config_path_, "Experiment YAML file")->required()->check(kNotEmpty);
  submit_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  submit_
      ->add_option("--name", experiment_name_,
                   "Unique name in the spool (default: <config name>-<n>)")
      ->check(kNotEmpty);
}

void Commands::add_status(CLI::App& app) {
  status_ = app.add_subcommand("status", "Print the state of a spool's experiments");
  status_->add_option("spool", spool_dir_, "Spool directory")->required()->check(kNotEmpty);
}

void Commands::add_cancel(CLI::App& app) {
  cancel_ = app.add_subcommand(
      "cancel", "Cancel a queued experiment, or stop the running one with a checkpoint");
  cancel_->add_option("spool", spool_dir_, "Spool directory")->required()->check(kNotEmpty);
  cancel_->add_option("name", experiment_name_, "Experiment name")->required()->check(kNotEmpty);
}

void Commands::add_tokenize(CLI::App& app) {
  tokenize_ = app.add_subcommand(
      "tokenize", "Train or apply a SentencePiece tokenizer and write llm.c token shards");
  tokenize_->add_option("text", tokenize_options_.text_files, "Text files or folders of them")
      ->required()
      ->check(kNotEmpty);
  tokenize_->add_option("--out", tokenize_options_.out_dir, "Output folder (created if needed)")
      ->required()
      ->check(kNotEmpty);
  auto* vocab_size = tokenize_->add_option_function<int64_t>(
      "--vocab-size", [this](int64_t pieces) { tokenize_options_.vocab_size = pieces; },
      "Train a model of this many pieces on the text (written to OUT/tokenizer.model)");
  tokenize_->add_option("--model", tokenize_options_.model, "Apply this existing .model instead")
      ->check(kNotEmpty)
      ->excludes(vocab_size);
  tokenize_
      ->add_option("--model-type", tokenize_model_type_,
                   "Model to train: " + list_names(tokenize::kModelTypeNames, " or "))
      ->check(unnamed(CLI::IsMember(tokenizer_model_types())))
      ->capture_default_str()
      ->needs(vocab_size);
  tokenize_
      ->add_option("--val-fraction", tokenize_options_.val_fraction,
                   "The last part of the text kept for validation (from a line start)")
      ->capture_default_str();
  tokenize_->add_option("--shard-tokens", tokenize_options_.shard_tokens,
                        "At most this many tokens per shard file");
}

void Commands::add_tokenize_pairs(CLI::App& app) {
  tokenize_pairs_ = app.add_subcommand(
      "tokenize-pairs",
      "Train or apply a SentencePiece tokenizer and write pair shards of translation pairs");
  for (const auto& [option, file, what] :
       {std::tuple{"--train", &pairs_options_.train, "Training pairs"},
        {"--val", &pairs_options_.val, "Validation pairs"},
        {"--test", &pairs_options_.test, "Test pairs"}}) {
    auto* added = tokenize_pairs_
                      ->add_option(option, *file,
                                   std::string(what) +
                                       ": a file of SOURCE<TAB>TARGET lines, each source starting "
                                       "with its target language's tag (\"<2en> ...\")")
                      ->check(kNotEmpty);
    if (file != &pairs_options_.test) added->required();
  }
  tokenize_pairs_->add_option("--out", pairs_options_.out_dir, "Output folder (created if needed)")
      ->required()
      ->check(kNotEmpty);
  auto* pairs_vocab = tokenize_pairs_->add_option_function<int64_t>(
      "--vocab-size", [this](int64_t pieces) { pairs_options_.vocab_size = pieces; },
      "Train a model of this many pieces on --text (written to OUT/tokenizer.model)");
  tokenize_pairs_
      ->add_option("--model", pairs_options_.model,
                   "Apply this existing .model (with pad, bos and eos pieces) instead")
      ->check(kNotEmpty)
      ->excludes(pairs_vocab);
  tokenize_pairs_
      ->add_option("--model-type", pairs_model_type_,
                   "Model to train: " + list_names(tokenize::kModelTypeNames, " or "))
      ->check(unnamed(CLI::IsMember(tokenizer_model_types())))
      ->capture_default_str()
      ->needs(pairs_vocab);
  tokenize_pairs_
      ->add_option("--text", pairs_options_.text_files,
                   "Text files or folders the new model learns from (the training sentences)")
      ->check(kNotEmpty)
      ->needs(pairs_vocab);
  tokenize_pairs_
      ->add_option("--tags", pairs_options_.tags,
                   "Target-language tags the new model keeps as pieces of their own: '<2en>' ...")
      ->check(kNotEmpty)
      ->needs(pairs_vocab);
  tokenize_pairs_
      ->add_option("--max-len", pairs_options_.max_len,
                   "Leave out pairs whose source or target with its eos is longer (tokens)")
      ->capture_default_str();
}

void Commands::add_export(CLI::App& app) {
  export_ = app.add_subcommand(
      "export",
      "Write a committed checkpoint's weights as the safetensors file --export-weights writes "
      "(one process)");
  export_->add_option("run_dir", run_dir_, "Run directory")->required()->check(kNotEmpty);
  export_->add_option("out", weights_path_, "Weights file to write (.safetensors)")
      ->required()
      ->check(kNotEmpty);
  export_
      ->add_option("--step", export_step_,
                   "The checkpoint's step (default: the newest committed checkpoint)")
      ->check(unnamed(CLI::NonNegativeNumber));
}

void Commands::add_compare(CLI::App& app) {
  compare_ = app.add_subcommand("compare", "Compare two safetensors weight files");
  compare_->add_option("files", compare_paths_, "Two .safetensors files")
      ->required()
      ->expected(2)
      ->check(kNotEmpty);
  compare_
      ->add_option("--rtol", rtol_,
                   "Largest relative L2 difference per tensor, ||a-b||/max(||a||,||b||), accepted "
                   "(0: must be bit-identical)")
      ->check(non_negative_number("0 = bit-identical"))
      ->capture_default_str();
  compare_->add_option("--only", compare_only_,
                       "Compare only the tensors whose name matches this regular expression "
                       "(ECMAScript, anywhere in the name), e.g. 'running_'");
}

void Commands::add_eval(CLI::App& app) {
  eval_ = app.add_subcommand(
      "eval",
      "Evaluate a checkpoint or weights file on a split of the data: loss, accuracy, perplexity "
      "or bits, a translation model's BLEU and chrF (under mpirun, pipelined over the ranks as "
      "training is)");
  eval_->add_option("config", config_path_, "The experiment YAML file it was trained with")
      ->required()
      ->check(kNotEmpty);
  auto* weights = eval_->add_option("--weights", weights_path_, "Exported weights (.safetensors)")
                      ->check(kNotEmpty);
  eval_
      ->add_option("--checkpoint", checkpoint_run_dir_,
                   "A run directory (its newest committed checkpoint) or one of its "
                   "checkpoints/step_N folders, instead")
      ->check(kNotEmpty)
      ->excludes(weights);
  eval_->add_option("--split", eval_split_,
                    "train, or the held-out split by its name: val (a validation split) or test "
                    "(a test set; default: the data's held-out split)");
  eval_
      ->add_option("--losses", eval_losses_,
                   "Write each example's loss to this file: a line per example, its index, loss "
                   "(mean over its tokens) and tokens, tab-separated")
      ->check(kNotEmpty);
  eval_
      ->add_option("--logits", eval_logits_,
                   "Write the model's outputs to this safetensors file: one f32 tensor 'logits' "
                   "[examples, ...output shape], in example order")
      ->check(kNotEmpty);
  eval_
      ->add_option("--logits-limit", eval_logits_limit_,
                   "The largest --logits file to write, e.g. 512MiB or 4GiB (rank 0 holds it in "
                   "memory); more is refused before evaluating")
      ->check(kByteSize)
      ->type_name("SIZE")
      ->capture_default_str();
  eval_->add_option("--set", overrides_, "Override a config key: key.path=value (repeatable)");
  eval_->callback([this] {
    if (weights_path_.empty() && checkpoint_run_dir_.empty()) {
      throw CLI::RequiredError("--weights or --checkpoint");
    }
  });
}

bool Commands::needs_mpi() const {
  return *train_ || *eval_ || *serve_ || (*translate_ && launcher_size() > 1);
}

int Commands::run(const comm::Communicator& world) {
  try {
    // The experiment's deadlines bound every wait from the first collective on.
    if (*train_ || *eval_ || *translate_) {
      job::use_experiment_deadlines(config_path_, overrides_, world);
    }
    start_up(world);  // the first collective: every rank runs the same mpipe version
    if (*train_) return train(world);
    if (*eval_) return evaluate(world);
    if (*translate_) return translate(world);
    if (*serve_) return serve(world);
    return 1;
  } catch (const AgreedError& e) {
    // Every rank has this error (they agreed on it): each exits, rank 0 alone reports.
    if (world.rank() == 0) spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const comm::WatchdogTimeout& e) {
    // A peer is lost (or hangs while a stop was requested): no agreement is possible.
    end_job(world, e.what(), comm::kWatchdogExitCode);
  } catch (const MemoryLimitExceeded& e) {
    // One rank passed pipeline.memory_limit mid-step while its peers wait for it in receives:
    // no agreement is possible either.
    end_job(world, e.what(), kMemoryLimitExitCode);
  } catch (const InputError& e) {
    // Bad input is usually seen by every rank alike: if all ranks fail, each exits cleanly and
    // rank 0 alone prints the message. If only some fail, the others would wait forever in
    // a collective, so the failing rank aborts the whole job.
    spdlog::error("{}", e.what());
    if (world.size() > 1) world.abort(2);
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    if (world.size() > 1) world.abort(1);
    return 1;
  }
}

int Commands::run_alone() {
  // Started by a launcher on several ranks by mistake: rank 0 runs it, the others do nothing.
  if (launcher_rank() != 0) return 0;
  try {
    if (*schedule_) return schedule();
    if (*plan_) return plan();
    if (*compare_) return compare();
    if (*generate_) return generate();
    if (*translate_) return translate();
    if (*score_) return score();
    if (*export_) return export_checkpoint();
    if (*submit_) return submit();
    if (*status_) return status();
    if (*cancel_) return cancel();
    if (*tokenize_) return tokenize();
    if (*tokenize_pairs_) return tokenize_pairs();
    if (supervise_->parsed()) return supervise_->run();
    return 1;
  } catch (const AgreedError& e) {
    spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

double Commands::startup_timeout_s() const {
  comm::CommConfig deadlines;
  if (*train_) {
    try {
      deadlines = config::load_comm_section(config_path_, overrides_);
    } catch (const InputError&) {
      // The default: preflight reads the file again and reports its problem on every rank.
    }
  }
  return deadlines.startup_timeout_s;
}

int Commands::train(const comm::Communicator& world) {
  // First, so a stop request during start-up is not fatal: it is seen after the first step.
  const std::atomic<bool>* stop_requested = stop_on_signals();
  if (comm::Watchdog* watchdog = world.watchdog()) watchdog->set_stop_signal(&g_stop_signal);
  const std::string run_dir = run_dir_.empty() ? default_run_dir(config_path_) : run_dir_;
  const std::string export_path =
      export_path_.empty() ? run_dir + "/weights.safetensors" : export_path_;
  train::RunOptions options{.run_dir = run_dir,
                            .export_weights = export_path,
                            .resume = resume_            ? train::ResumeMode::kRequired
                                      : resume_or_start_ ? train::ResumeMode::kIfPresent
                                                         : train::ResumeMode::kNever,
                            .settings = {},  // run_train_job records the resolved experiment
                            .progress = stdout,
                            .progress_in_place = progress_in_place(),
                            .stop_requested = stop_requested,
                            .kill_grace_s = mpirun_kill_grace_s()};
  const train::RunResult result =
      job::run_train_job({.config_path = config_path_,
                          .overrides = overrides_,
                          .run_dir = run_dir,
                          .export_path = export_path,
                          .init_weights = init_weights_,
                          .resuming = resume_ || resume_or_start_,
                          .stored_settings = resume_ || resume_or_start_},
                         std::move(options), world)
          .result;
  if (world.rank() == 0) {
    if (result.preempted) {
      spdlog::warn("stopped at step {} by a signal; checkpoint saved in {}; continue with --resume",
                   result.steps_done, run_dir);
    } else if (!result.already_finished) {
      if (!result.sample.empty()) std::printf("sample:\n%s\n", result.sample.c_str());
      if (result.final_bits_per_char && result.unigram_entropy_bits) {
        std::printf("validation: %.3f bits/char (unigram entropy %.3f bits/char)\n",
                    *result.final_bits_per_char, *result.unigram_entropy_bits);
      }
      if (result.final_bits_per_byte) {
        std::printf("validation: %.3f bits/byte (perplexity %.2f per token)\n",
                    *result.final_bits_per_byte, std::exp(result.final_eval_loss));
      }
      const std::string trained = result.steps_done == 0
                                      ? "no steps (train.steps: 0)"
                                      : fmt::format("train loss {:.4f}", result.final_train_loss);
      const std::string scores =
          result.final_bleu && result.final_chrf
              ? fmt::format(" | {0} BLEU {1:.2f} | {0} chrF2 {2:.2f}", result.held_out_split,
                            *result.final_bleu, *result.final_chrf)
              : std::string();
      std::printf("final: %s | %s loss %.4f | %s accuracy %.2f%%%s | run dir %s\n", trained.c_str(),
                  result.held_out_split.c_str(), result.final_eval_loss,
                  result.held_out_split.c_str(), 100.0 * result.final_eval_accuracy, scores.c_str(),
                  run_dir.c_str());
    }
  }
  return 0;
}

int Commands::evaluate(const comm::Communicator& world) {
  const train::WeightsEvaluation done =
      job::run_eval_job({.config_path = config_path_,
                         .overrides = overrides_,
                         .source = {.checkpoint = checkpoint_run_dir_, .weights = weights_path_},
                         .split = eval_split_,
                         .files = {.losses = eval_losses_,
                                   .logits = eval_logits_,
                                   .logits_limit = config::parse_byte_size(eval_logits_limit_)}},
                        world);
  if (world.rank() != 0) return 0;
  // The loss in full (the shortest text that reads back as the same double, as metrics.jsonl's).
  std::string line = fmt::format("{}: {} loss {} | {} accuracy {:.2f}%", done.source, done.split,
                                 done.report.loss, done.split, 100.0 * done.report.accuracy);
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

int Commands::serve(const comm::Communicator& world) {
  serve::serve({.spool_dir = spool_dir_,
                .idle_exit_s = idle_exit_s_ > 0 ? std::optional(idle_exit_s_) : std::nullopt,
                .stop_signal = stop_on_signals(),
                .kill_grace_s = mpirun_kill_grace_s(),
                .progress = stdout,
                .progress_in_place = progress_in_place()},
               world);
  return 0;
}

int Commands::submit() {
  const serve::QueueEntry entry = serve::submit_experiment({.spool_dir = spool_dir_,
                                                            .config_path = config_path_,
                                                            .overrides = overrides_,
                                                            .name = experiment_name_});
  std::printf("queued %s (#%lld) in %s\n", entry.name.c_str(), static_cast<long long>(entry.seq),
              spool_dir_.c_str());
  return 0;
}

int Commands::tokenize() {
  tokenize_options_.model_type = *value_named(tokenize::kModelTypeNames, tokenize_model_type_);
  const data::TokenizeReport report = data::tokenize_corpus(tokenize_options_);
  std::printf("tokenizer %s: %lld pieces\n", report.model.c_str(),
              static_cast<long long>(report.vocab));
  for (const auto& [name, count] : {std::pair{"train", report.train}, {"val", report.val}}) {
    std::printf("%s: %lld tokens, %lld bytes, %.3f bytes per token, %lld shard(s)\n", name,
                static_cast<long long>(count.tokens), static_cast<long long>(count.bytes),
                count.tokens > 0 ? static_cast<double>(count.bytes) / count.tokens : 0.0,
                static_cast<long long>(count.shards));
  }
  return 0;
}

int Commands::tokenize_pairs() {
  pairs_options_.model_type = *value_named(tokenize::kModelTypeNames, pairs_model_type_);
  const data::TokenizePairsReport report = data::tokenize_pairs(pairs_options_);
  std::printf("tokenizer %s: %lld pieces\n", report.model.c_str(),
              static_cast<long long>(report.vocab));
  for (const data::PairSplitCount& count : report.splits) {
    std::printf("%s: %lld pairs, %lld tokens in %s; %lld longer than --max-len %lld dropped\n",
                count.split.c_str(), static_cast<long long>(count.pairs),
                static_cast<long long>(count.tokens), data::pair_shard_name(count.split).c_str(),
                static_cast<long long>(count.dropped),
                static_cast<long long>(pairs_options_.max_len));
  }
  return 0;
}

int Commands::status() {
  const serve::Spool spool(spool_dir_);
  check_input(spool.exists(), "{}: not a spool (no queue/ folder)", spool_dir_);
  std::vector<std::string> problems;
  const serve::SpoolStatus status = serve::spool_status_for_display(spool, problems);
  for (const std::string& problem : problems) spdlog::warn("{}", problem);
  std::fputs(serve::format_status_table(status).c_str(), stdout);
  return 0;
}

int Commands::cancel() {
  const serve::Spool spool(spool_dir_);
  if (spool.cancel(experiment_name_) == serve::CancelResult::kRemovedFromQueue) {
    std::printf("cancelled %s (it was queued)\n", experiment_name_.c_str());
  } else {
    std::printf(
        "cancelling %s: it stops with a checkpoint at its next step (if no daemon runs it now, "
        "the next one records it as cancelled instead of resuming it)\n",
        experiment_name_.c_str());
  }
  return 0;
}

int Commands::schedule() {
  std::fputs(plan::describe_schedule(plan::parse_schedule_kind(schedule_kind_), stages_,
                                     micro_batches_, virtual_stages_)
                 .c_str(),
             stdout);
  return 0;
}

int Commands::plan() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  plan::PipelineConfig& pipe = experiment.pipeline;
  if (plan_->count("--stages")) {
    pipe.stages = stages_;
    if (pipe.partition_mode == plan::PartitionMode::kManual) {
      pipe.partition_mode = plan::PartitionMode::kAuto;
    }
  }
  pipe.stages = std::max(1, pipe.stages);                // `auto` without a world: 1
  pipe.data_parallel = std::max(1, pipe.data_parallel);  // likewise
  if (plan_->count("--micro-batches")) pipe.micro_batches = micro_batches_;
  if (plan_->count("--memory-limit")) {
    try {
      pipe.memory_limit =
          plan_memory_limit_ == "none" ? 0 : config::parse_byte_size(plan_memory_limit_);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--memory-limit: {}", e.what()));
    }
    experiment.refs["pipeline.memory_limit"] = {
        .file = "--memory-limit", .line = 0, .path = plan_memory_limit_};
  }
  plan::check_batch_split(experiment.train.batch_size, pipe.micro_batches, pipe.data_parallel,
                          experiment.where("train.batch_size"));
  auto dataset = data::make_dataset(experiment.data, experiment.train.seed);
  const model::ModelPlan model = model::plan_model(experiment.model, train::model_inputs(*dataset));
  train::check_model_fits_data(experiment.model, model, dataset->schema());
  train::check_virtual_stages(experiment, pipe.stages);
  plan::MachineRates rates;
  rates.threads = plan_->count("--threads-per-rank") ? plan_threads_ : omp_get_max_threads();
  if (plan_->count("--link-bandwidth")) {
    try {
      rates.link_bytes_per_s = config::parse_link_rate(plan_link_bandwidth_);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--link-bandwidth: {}", e.what()));
    }
  }
  // The plan is chosen at the assumed rates, as every rank of `mpipe train` chooses it, and
  // predicted at this machine's (docs/design/planner.md, "Measured rates").
  plan::PipelinePlan plan =
      train::plan_experiment(experiment, model, pipe.stages, pipe.data_parallel, rates);
  std::string rates_source = "assumed";
  if (!plan_assumed_rates_) {
    const train::MachineCalibration measured = train::calibrate_machine(
        model, experiment.optimizer,
        experiment.train.batch_size / (pipe.data_parallel * pipe.micro_batches), pipe.micro_batches,
        pipe.stages, rates,
        plan_calibrate_ ? train::Calibration::kFull : train::Calibration::kQuick);
    plan = train::retimed(experiment, model, plan, pipe.data_parallel, measured.rates);
    rates_source = fmt::format("measured in {:.2f} s{}: {}", measured.seconds,
                               plan_calibrate_ ? " (--calibrate)" : "", measured.gemm.measured);
    if (!plan_json_) {
      std::printf(
          "measured (%s, %d thread(s), %.2f s%s), GFLOP/s per rank: forward %.1f, input gradient "
          "%.1f, weight gradient %.1f, batched over the micro-batches %.1f; memory traffic %.1f "
          "GB/s (the optimizer step)\n",
          measured.gemm.measured.c_str(), rates.threads, measured.seconds,
          plan_calibrate_ ? ", --calibrate" : "", measured.gemm.flops_per_s / 1e9,
          measured.gemm.input_gradient_flops_per_s / 1e9, measured.gemm.weight_flops_per_s / 1e9,
          measured.gemm.batched_weight_flops_per_s / 1e9, measured.memory_bytes_per_s / 1e9);
    }
  }
  const train::PlanReport report{.experiment = experiment,
                                 .model = model,
                                 .plan = plan,
                                 .pipeline = pipe,
                                 .rates_source = rates_source};
  if (plan_json_) {
    std::printf("%s\n", train::plan_json(report).dump(2).c_str());
  } else {
    std::fputs(train::plan_text(report).c_str(), stdout);
  }
  return plan.fits() ? 0 : kPlanDoesNotFitExitCode;
}

int Commands::generate() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  checkpoint::SafetensorsFile weights = checkpoint::read_safetensors(weights_path_);
  // The model the weights were trained as, where the export records it; the YAML's otherwise.
  std::string model_source = config_path_;
  if (const auto settings =
          checkpoint::model_settings_in_metadata(weights.metadata, weights_path_)) {
    experiment.model = config::stored_model(*settings, weights_path_).model;
    model_source = weights_path_;
  }
  check_input(experiment.model.layers.front().kind == "embedding",
              "{}: generate needs a language model (its first layer must be an embedding)",
              model_source);
  // Token data is text through its tokenizer; other token ids are bytes.
  std::optional<tokenize::Tokenizer> tokenizer;
  if (experiment.data.kind == data::DatasetKind::kTokens) {
    check_input(!experiment.data.tokenizer.empty(),
                "{}: generate needs data.tokenizer to turn the model's tokens into text",
                config_path_);
    tokenizer = tokenize::Tokenizer::load(experiment.data.tokenizer);
  }
  kernels::KernelContext kernels;
  std::string text = train::generate_text(experiment.model, experiment.data.seq_len,
                                          weights.tensors, weights_path_, generate_options_,
                                          kernels, tokenizer ? &*tokenizer : nullptr);
  std::printf("%s\n", text.c_str());
  return 0;
}

std::vector<std::vector<int>> Commands::translate_sources(
    const config::Experiment& experiment, const tokenize::Tokenizer& tokenizer,
    std::vector<std::string>& references) const {
  const std::string input_source = lines_source(translate_input_, "--input");
  std::vector<std::vector<int>> sources = train::encode_source_lines(
      tokenizer, experiment.data.tokenizer, translate_tag_, read_lines(translate_input_, "--input"),
      experiment.data.source_len, input_source);
  if (!references_path_.empty()) {
    references = read_lines(references_path_, "--ref");
    check_line_counts(sources.size(), references.size(), input_source,
                      lines_source(references_path_, "--ref"));
  }
  return sources;
}

void Commands::print_translations(const std::vector<std::string>& translations,
                                  const std::vector<std::string>& references) const {
  for (const std::string& translation : translations) std::printf("%s\n", translation.c_str());
  if (!references_path_.empty()) {
    std::fflush(stdout);
    std::fputs(score_lines(translations, references).c_str(), stderr);
  }
}

int Commands::translate() {
  config::Experiment experiment = config::load_experiment(config_path_, overrides_);
  check_input(experiment.data.kind == data::DatasetKind::kPairs,
              "{}: translate needs a translation model, trained on data.dataset: pairs, not {}",
              experiment.where("data.dataset"), name_of(data::kDatasetNames, experiment.data.kind));
  const std::string& model = experiment.data.tokenizer;
  const tokenize::Tokenizer tokenizer = tokenize::Tokenizer::load(model);
  std::vector<std::string> references;
  const std::vector<std::vector<int>> sources =
      translate_sources(experiment, tokenizer, references);
  checkpoint::CheckpointWeights weights;
  std::string weights_source = weights_path_;
  if (weights_path_.empty()) {
    weights =
        checkpoint::read_checkpoint_weights(checkpoint_run_dir_, train::check_checkpoint_model);
    weights_source = fmt::format("{} (checkpoint step {})", checkpoint_run_dir_, weights.step);
  } else {
    weights.tensors = checkpoint::read_safetensors(weights_path_).tensors;
  }
  kernels::KernelContext kernels;
  train::Translator translator(
      experiment.model, experiment.data.source_len, experiment.data.target_len,
      {.pad = tokenizer.pad_id(), .bos = tokenizer.bos_id(), .eos = tokenizer.eos_id()},
      weights.tensors, weights_source, kernels);
  check_input(translator.vocab() == tokenizer.vocab_size(),
              "{0}: the model outputs {2} scores per token but the tokenizer {3} has {1} pieces",
              weights_source, tokenizer.vocab_size(), translator.vocab(), model);
  std::vector<std::string> translations;
  for (const std::vector<int>& ids : translator.translate(sources, translate_options_)) {
    translations.push_back(tokenizer.decode(ids));
  }
  print_translations(translations, references);
  return 0;
}

int Commands::translate(const comm::Communicator& world) {
  std::vector<std::string> references;  // rank 0's
  const job::TranslateJob done = job::run_translate_job(
      {.config_path = config_path_,
       .overrides = overrides_,
       .source = {.checkpoint = checkpoint_run_dir_, .weights = weights_path_},
       .read_sources =
           [&](const config::Experiment& experiment, const tokenize::Tokenizer& tokenizer) {
             return translate_sources(experiment, tokenizer, references);
           },
       .options = translate_options_},
      world);
  if (world.rank() == 0) print_translations(done.translations, references);
  return 0;
}

int Commands::score() {
  const std::vector<std::string> hypotheses = read_lines(hypotheses_path_, "--hyp");
  const std::vector<std::string> references = read_lines(references_path_, "--ref");
  check_line_counts(hypotheses.size(), references.size(), lines_source(hypotheses_path_, "--hyp"),
                    lines_source(references_path_, "--ref"));
  std::fputs(score_lines(hypotheses, references).c_str(), stdout);
  return 0;
}

int Commands::export_checkpoint() {
  const checkpoint::CheckpointExport done = checkpoint::export_checkpoint(
      run_dir_, export_step_ >= 0 ? std::optional(export_step_) : std::nullopt, weights_path_,
      train::check_checkpoint_model);
  std::printf("exported step %lld of %s (%lld tensors, %s) to %s\n",
              static_cast<long long>(done.step), run_dir_.c_str(),
              static_cast<long long>(done.num_tensors),
              format_bytes(static_cast<double>(done.digest.size)).c_str(), weights_path_.c_str());
  return 0;
}

int Commands::compare() {
  const auto& [a, b] = std::pair(compare_paths_.at(0), compare_paths_.at(1));
  auto diffs = only_matching(checkpoint::diff_weights(checkpoint::read_safetensors(a), a,
                                                      checkpoint::read_safetensors(b), b),
                             compare_only_);
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
