// The test hook MPIPE_TEST_STOP_AT: parsed once, then a SIGSTOP at the named moment.
#include "core/test_stop.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>

#include "core/error.h"

namespace mpipe {
namespace {

std::optional<TestStop> g_armed;  // set once by arm_test_stop, on the rank it names

// A whole decimal integer >= 0, or nullopt.
std::optional<int64_t> count_of(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

TestStop parse_test_stop(std::string_view value) {
  const auto refuse = [&](std::string_view why) {
    return InputError(fmt::format(
        "MPIPE_TEST_STOP_AT: expected <world rank>:<moment>[:<step>] with a moment among {}, got "
        "'{}' ({})",
        list_names(kTestMomentNames), value, why));
  };
  const size_t first = value.find(':');
  if (first == std::string_view::npos) throw refuse("no moment");
  const size_t second = value.find(':', first + 1);
  const std::string_view rank = value.substr(0, first);
  const std::string_view moment = value.substr(
      first + 1, second == std::string_view::npos ? std::string_view::npos : second - first - 1);
  TestStop stop;
  const std::optional<int64_t> world_rank = count_of(rank);
  if (!world_rank || *world_rank > INT32_MAX) throw refuse("the rank is not an integer >= 0");
  stop.world_rank = static_cast<int>(*world_rank);
  const std::optional<TestMoment> named = value_named(kTestMomentNames, moment);
  if (!named) throw refuse(fmt::format("no moment '{}'", moment));
  stop.moment = *named;
  if (second != std::string_view::npos) {
    stop.step = count_of(value.substr(second + 1));
    if (!stop.step) throw refuse("the step is not an integer >= 0");
  }
  return stop;
}

void arm_test_stop(int world_rank) {
  const char* value = std::getenv("MPIPE_TEST_STOP_AT");
  if (value == nullptr || *value == '\0') return;
  try {
    const TestStop stop = parse_test_stop(value);
    if (stop.world_rank == world_rank) g_armed = stop;
  } catch (const InputError& e) {
    throw AgreedError(e.what(), 2);
  }
}

void test_stop_at(TestMoment moment, int64_t step) {
  if (!g_armed || g_armed->moment != moment || (g_armed->step && *g_armed->step != step)) return;
  g_armed.reset();  // once per process
  if (const char* marker = std::getenv("MPIPE_TEST_STOP_MARKER"); marker && *marker) {
    const int fd = ::open(marker, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST) return;  // it fired in an earlier job of this test
    if (fd >= 0) ::close(fd);
  }
  spdlog::warn("test hook MPIPE_TEST_STOP_AT: stopping (SIGSTOP) at the {}{}",
               name_of(kTestMomentNames, moment),
               moment == TestMoment::kStartUp ? "" : fmt::format(" of step {}", step));
  spdlog::default_logger()->flush();
  std::raise(SIGSTOP);
}

}  // namespace mpipe
