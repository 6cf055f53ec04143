// Tests for the supervisor's host list: parsing, its every bad input, mpirun's --host text.
#include "supervise/host_list.h"

#include <gtest/gtest.h>

#include "support/input_error_of.h"

namespace mpipe::supervise {
namespace {

using testing::input_error_of;

TEST(HostList, ReadsHostsWithTheirSlotsInOrderAndOneSlotWithoutACount) {
  const auto hosts = parse_host_list("h1:2,h2,h3:4", "--hosts");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "h1");
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].host, "h2");
  EXPECT_EQ(hosts[1].slots, 1);
  EXPECT_EQ(hosts[2].slots, 4);
  EXPECT_EQ(total_slots(hosts), 7);
  EXPECT_EQ(host_list_text(hosts), "h1:2,h2:1,h3:4");
}

TEST(HostList, EveryBadEntryIsOneLineNamingTheOptionAndTheEntry) {
  const auto error = [](const char* text) {
    return input_error_of([&] { parse_host_list(text, "--hosts"); });
  };
  EXPECT_EQ(error(""), "--hosts: no host given (e.g. h1:2,h2:2)");
  EXPECT_EQ(error("h1,,h2"), "--hosts: 'h1,,h2': an empty entry (two commas, or one at an end)");
  EXPECT_EQ(error("h1,"), "--hosts: 'h1,': an empty entry (two commas, or one at an end)");
  EXPECT_EQ(error(":2"), "--hosts: ':2': a host name is missing");
  for (const char* bad : {"h1:0", "h1:x", "h1:", "h1:2x", "h1:-1", "h1:4097"}) {
    EXPECT_EQ(
        error(bad),
        fmt::format("--hosts: '{}': the slots after ':' must be an integer from 1 to 4096", bad));
  }
  EXPECT_EQ(error("h1:2,h2,h1:1"), "--hosts: host h1 is named twice");
}

}  // namespace
}  // namespace mpipe::supervise
