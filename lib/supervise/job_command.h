// The command after `--` that mpipe supervise runs: which of its jobs it names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mpipe::supervise {

// Throws InputError with one line unless `command` starts with `job` ("train" or "serve"): the
// command after -- must be `train CONFIG [options]` or `serve --spool DIR [options]`.
void check_job_command(const std::vector<std::string>& command, std::string_view job);

}  // namespace mpipe::supervise
