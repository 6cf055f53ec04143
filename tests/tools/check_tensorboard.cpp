// check_tensorboard [--killed] RUN_DIR: reads the run's TensorBoard event file back (every
// record's length and data CRC, each parsed as an Event) and compares its scalars with
// metrics.jsonl (--killed: a killed run's, whose last line may lack its event); prints the
// problems and exits 1 if any, else one line with what it checked.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <set>
#include <string>

#include "support/tensorboard_events.h"

int main(int argc, char** argv) {
  const bool killed = argc == 3 && std::string(argv[1]) == "--killed";
  if (argc != 2 && !killed) {
    std::fputs("usage: check_tensorboard [--killed] RUN_DIR\n", stderr);
    return 2;
  }
  const std::string run_dir = argv[argc - 1];
  const std::string path = mpipe::testing::event_file_in(run_dir);
  if (path.empty()) {
    fmt::print("FAILED: {}: not exactly one events.out.tfevents.* file\n", run_dir);
    return 1;
  }
  const mpipe::testing::EventFile file = mpipe::testing::read_event_file(path);
  const std::vector<std::string> problems =
      mpipe::testing::compare_with_metrics(file, run_dir + "/metrics.jsonl", killed);
  for (const std::string& problem : problems) fmt::print("FAILED: {}: {}\n", path, problem);
  if (!problems.empty()) return 1;
  std::set<std::string> tags;
  size_t scalars = 0;
  for (const auto& event : file.events) {
    for (const auto& value : event.summary().value()) {
      tags.insert(value.tag());
      ++scalars;
    }
  }
  fmt::print("{}: {} records, CRCs good, {} scalars of {} tags equal to metrics.jsonl: {}\n", path,
             file.events.size(), scalars, tags.size(), fmt::join(tags, " "));
  return 0;
}
