// The hosts a supervised job runs on (`--hosts h1:2,h2:2`): parsing, slots, mpirun's --host text.
#include "supervise/host_list.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace mpipe::supervise {

namespace {

constexpr int kMaxSlots = 4096;

HostSlots parse_entry(std::string_view entry, std::string_view what) {
  const size_t colon = entry.find(':');
  HostSlots host{.host = std::string(entry.substr(0, colon)), .slots = 1};
  check_input(!host.host.empty(), "{}: '{}': a host name is missing", what, entry);
  if (colon == std::string_view::npos) return host;
  const std::string_view count = entry.substr(colon + 1);
  int slots = 0;
  const auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), slots);
  check_input(error == std::errc() && end == count.data() + count.size() && slots >= 1 &&
                  slots <= kMaxSlots,
              "{}: '{}': the slots after ':' must be an integer from 1 to {}", what, entry,
              kMaxSlots);
  host.slots = slots;
  return host;
}

}  // namespace

std::vector<HostSlots> parse_host_list(std::string_view text, std::string_view what) {
  check_input(!text.empty(), "{}: no host given (e.g. h1:2,h2:2)", what);
  std::vector<HostSlots> hosts;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view entry = text.substr(start, comma - start);
    check_input(!entry.empty(), "{}: '{}': an empty entry (two commas, or one at an end)", what,
                text);
    HostSlots host = parse_entry(entry, what);
    for (const HostSlots& earlier : hosts) {
      check_input(earlier.host != host.host, "{}: host {} is named twice", what, host.host);
    }
    hosts.push_back(std::move(host));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return hosts;
}

std::string host_list_text(const std::vector<HostSlots>& hosts) {
  std::string text;
  for (const HostSlots& host : hosts) {
    if (!text.empty()) text += ',';
    text += fmt::format("{}:{}", host.host, host.slots);
  }
  return text;
}

int total_slots(const std::vector<HostSlots>& hosts) {
  int total = 0;
  for (const HostSlots& host : hosts) total += host.slots;
  return total;
}

}  // namespace mpipe::supervise
