// The files and folders an experiment's data section names, checked to exist before a dataset or
// a tokenizer reads them, so that a missing one is one line naming its key's file and line.
#pragma once

#include "config/experiment.h"

namespace mpipe::job {

// Throws InputError for the first of data.path, data.train (each list of a mix), data.val and
// data.tokenizer that names nothing: "exp.yaml:16: data.train: no file matches
// 'runs/kjv/train_*.bin' (a relative path, read from the working directory /home/u)", or
// "exp.yaml:18: data.tokenizer: runs/kjv/tokenizer.model does not exist (...)". Keys left empty
// (a built-in location, or none) are not checked.
void check_data_paths(const config::Experiment& experiment);

// The same for data.tokenizer alone, for the commands that read no data (generate, translate).
void check_tokenizer_path(const config::Experiment& experiment);

}  // namespace mpipe::job
