// `mpipe translate` across ranks: preflight as `mpipe eval` runs it (nothing written), each rank's
// stages loaded with the weights, then the sentences world rank 0 reads decoded through the
// pipeline.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "config/experiment.h"
#include "tokenize/tokenizer.h"
#include "train/translator.h"
#include "train/weights_evaluation.h"

namespace mpipe::job {

// World rank 0, once the experiment is checked: the sources' ids (train::encode_source_lines), read
// with the experiment's tokenizer; throws InputError for a bad line, tag or reference file.
using ReadSources = std::function<std::vector<std::vector<int>>(const config::Experiment&,
                                                                const tokenize::Tokenizer&)>;

struct TranslateInputs {
  std::string config_path;
  std::vector<std::string> overrides;
  train::WeightsSource source;
  ReadSources read_sources;
  train::TranslateOptions options;
};

struct TranslateJob {
  std::string source;                     // "runs/x (checkpoint step 4)", or the weights file
  std::vector<std::string> translations;  // world rank 0: the tokenizer's text of each, in order
};

// Collective over `world` (whose watchdog has the experiment's deadlines:
// use_experiment_deadlines): the plan `mpipe eval` builds for this world (the config's and --set's
// pipeline keys, or the planner's), this rank's stages loaded (train::load_weights), then world
// rank 0 runs the Translator's search with every forward through the first replica's stages
// (train::drive_pipelined), in f32 as the one-process command decodes, so the text is the same
// bytes at any K. Throws AgreedError on every rank for bad input (the experiment, data that is
// not pairs, weights that do not fit the model, a tokenizer that does not fit its output, what
// read_sources refuses).
TranslateJob run_translate_job(const TranslateInputs& inputs, const comm::Communicator& world);

}  // namespace mpipe::job
