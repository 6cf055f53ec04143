// The nodes of a Slurm allocation and their tasks (see slurm_allocation.h).
#include "supervise/slurm_allocation.h"

#include <fmt/format.h>

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

// Splits `text` at the commas outside brackets.
std::vector<std::string_view> split_top_level(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']') --depth;
    if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Appends the names `name` stands for ("h[2-3]x" -> h2x h3x) to `names`.
void expand_name(std::string_view name, std::string_view what, std::vector<std::string>& names) {
  const size_t open = name.find('[');
  if (open == std::string_view::npos) {
    check_input(!name.empty() && name.find(']') == std::string_view::npos,
                "{}: '{}': not a host name", what, name);
    names.emplace_back(name);
    return;
  }
  const size_t close = name.find(']', open);
  check_input(close != std::string_view::npos, "{}: '{}': a '[' without its ']'", what, name);
  const std::string_view prefix = name.substr(0, open);
  const std::string_view rest = name.substr(close + 1);
  std::string_view ranges = name.substr(open + 1, close - open - 1);
  while (true) {
    const size_t comma = ranges.find(',');
    const std::string_view range = ranges.substr(0, comma);
    const size_t dash = range.find('-');
    const std::string_view first = range.substr(0, dash);
    const std::optional<int> low = integer(first, 0, 999999999);
    const std::optional<int> high =
        dash == std::string_view::npos ? low : integer(range.substr(dash + 1), 0, 999999999);
    check_input(low && high && *low <= *high && *high - *low < 1000000,
                "{}: '{}': '{}' is not a number or a range low-high", what, name, range);
    for (int number = *low; number <= *high; ++number) {
      expand_name(fmt::format("{}{:0{}}{}", prefix, number, first.size(), rest), what, names);
    }
    if (comma == std::string_view::npos) break;
    ranges = ranges.substr(comma + 1);
  }
}

}  // namespace

std::vector<std::string> expand_host_list(std::string_view nodelist, std::string_view what) {
  check_input(!nodelist.empty(), "{}: no node given", what);
  std::vector<std::string> names;
  for (std::string_view part : split_top_level(nodelist)) expand_name(part, what, names);
  return names;
}

std::vector<int> expand_tasks_per_node(std::string_view tasks, std::string_view what) {
  check_input(!tasks.empty(), "{}: no task count given", what);
  std::vector<int> counts;
  for (std::string_view part : split_top_level(tasks)) {
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

std::vector<HostSlots> allocation_hosts(std::string_view nodelist,
                                        std::string_view tasks_per_node) {
  const std::vector<std::string> names = expand_host_list(nodelist, "SLURM_JOB_NODELIST");
  const std::vector<int> tasks = expand_tasks_per_node(tasks_per_node, "SLURM_TASKS_PER_NODE");
  check_input(names.size() == tasks.size(),
              "SLURM_JOB_NODELIST names {} nodes but SLURM_TASKS_PER_NODE counts tasks for {}",
              names.size(), tasks.size());
  std::vector<HostSlots> hosts;
  for (size_t i = 0; i < names.size(); ++i) hosts.push_back({.host = names[i], .slots = tasks[i]});
  return hosts;
}

}  // namespace mpipe::supervise
