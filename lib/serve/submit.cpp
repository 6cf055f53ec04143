// submit_experiment: validation, then Spool::submit with the file's text.
#include "serve/submit.h"

#include <filesystem>

#include "config/yaml_file.h"
#include "core/error.h"
#include "job/preflight.h"

namespace mpipe::serve {

QueueEntry submit_experiment(const Submission& submission) {
  if (!submission.name.empty()) check_experiment_name(submission.name);
  const config::Experiment experiment =
      job::check_experiment_for_any_world(submission.config_path, submission.overrides);
  const std::filesystem::path path(submission.config_path);
  QueueEntry entry{.seq = 0,
                   .name = submission.name,
                   .config = std::filesystem::absolute(path).lexically_normal().string(),
                   .yaml = config::read_experiment_text(submission.config_path),
                   .overrides = submission.overrides,
                   .steps = experiment.train.steps,
                   .submitted = {}};
  return Spool(submission.spool_dir).submit(std::move(entry), path.stem().string());
}

}  // namespace mpipe::serve
