// The nodes of a Slurm allocation and their tasks (see slurm_allocation.h).
#include "supervise/slurm_allocation.h"

#include <charconv>
#include <optional>

#include "core/error.h"

namespace mpipe::supervise {

namespace {

// `text` as an integer from `low` to `high`, or nullopt.
std::optional<int> integer(std::string_view text, int low, int high) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < low || value > high) {
    return std::nullopt;
  }
  return value;
}

// The parts of `text` between its commas.
std::vector<std::string_view> split_at_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  for (size_t comma; (comma = text.find(',')) != std::string_view::npos;) {
    parts.push_back(text.substr(0, comma));
    text.remove_prefix(comma + 1);
  }
  parts.push_back(text);
  return parts;
}

}  // namespace

std::vector<int> expand_tasks_per_node(std::string_view tasks, std::string_view what) {
  check_input(!tasks.empty(), "{}: no task count given", what);
  std::vector<int> counts;
  for (std::string_view part : split_at_commas(tasks)) {
    const size_t paren = part.find("(x");
    const std::optional<int> count = integer(part.substr(0, paren), 1, 4096);
    std::optional<int> times = 1;
    if (paren != std::string_view::npos) {
      times = part.ends_with(')')
                  ? integer(part.substr(paren + 2, part.size() - paren - 3), 1, 1000000)
                  : std::nullopt;
    }
    check_input(count && times, "{}: '{}': not a task count N or N(xTIMES)", what, part);
    counts.insert(counts.end(), *times, *count);
  }
  return counts;
}

std::vector<HostSlots> allocation_hosts(const std::vector<std::string>& names,
                                        std::string_view tasks_per_node) {
  const std::vector<int> tasks = expand_tasks_per_node(tasks_per_node, "SLURM_TASKS_PER_NODE");
  check_input(names.size() == tasks.size(),
              "SLURM_JOB_NODELIST names {} nodes but SLURM_TASKS_PER_NODE counts tasks for {}",
              names.size(), tasks.size());
  std::vector<HostSlots> hosts;
  for (size_t i = 0; i < names.size(); ++i) hosts.push_back({.host = names[i], .slots = tasks[i]});
  return hosts;
}

}  // namespace mpipe::supervise
