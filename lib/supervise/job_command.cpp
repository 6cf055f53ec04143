// The command after `--` that mpipe supervise runs (see job_command.h).
#include "supervise/job_command.h"

#include "core/error.h"

namespace mpipe::supervise {

void check_job_command(const std::vector<std::string>& command, std::string_view job) {
  check_input(
      !command.empty() && command.front() == job,
      "supervise: the command after -- must be `train CONFIG [options]` or `serve --spool DIR "
      "[options]`, got '{}'",
      command.empty() ? std::string() : command.front());
}

}  // namespace mpipe::supervise
