// gtest main for multi-rank tests: owns MPI, prints on rank 0 only, and makes every rank exit
// non-zero when any rank failed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "comm/communicator.h"

namespace {

// On ranks other than 0: stays silent except for failed assertions, prefixed with the rank,
// so a failure on one rank is not hidden behind rank 0's passing output.
class FailureOnlyPrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailureOnlyPrinter(int rank) : rank_(rank) {}

  // Remembers the test here: UnitTest::current_test_info() would deadlock inside
  // OnTestPartResult (gtest holds its mutex while reporting).
  void OnTestStart(const testing::TestInfo& test) override {
    test_name_ = std::string(test.test_suite_name()) + "." + test.name();
  }

  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s failed at %s:%d\n%s\n", rank_, test_name_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_name_ = "(outside a test)";
};

}  // namespace

int main(int argc, char** argv) {
  mpipe::comm::Environment environment(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  const mpipe::comm::Communicator world = mpipe::comm::Communicator::world();
  if (world.rank() != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailureOnlyPrinter(world.rank()));
  }
  const bool passed_here = RUN_ALL_TESTS() == 0;
  const bool passed_everywhere = world.all_true(passed_here);
  if (world.rank() == 0 && passed_here && !passed_everywhere) {
    std::fprintf(stderr, "FAILED on another rank (see the [rank N] lines)\n");
  }
  return passed_everywhere ? 0 : 1;
}
