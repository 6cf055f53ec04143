// Tests for the error types and check()/check_input(): types thrown and formatted messages.
#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace mpipe {
namespace {

TEST(Check, PassingConditionThrowsNothing) {
  EXPECT_NO_THROW(check(true, "never {}", 1));
  EXPECT_NO_THROW(check_input(true, "never {}", 2));
}

TEST(Check, FailingCheckThrowsErrorWithTheFormattedMessage) {
  try {
    check(1 + 1 == 3, "expected {} layers, got {} ({})", 4, 3, std::string("linear"));
    FAIL() << "expected an Error";
  } catch (const InputError&) {
    FAIL() << "check() must throw Error, not InputError";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expected 4 layers, got 3 (linear)");
  }
}

TEST(Check, FailingCheckInputThrowsInputErrorWithTheFormattedMessage) {
  try {
    check_input(false, "{}: must be >= {}, got {}", "exp.yaml:14: pipeline.micro_batches", 1, 0);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "exp.yaml:14: pipeline.micro_batches: must be >= 1, got 0");
  }
}

TEST(Check, InputErrorIsAnErrorAndAnErrorIsARuntimeError) {
  EXPECT_THROW(check_input(false, "bad"), Error);
  EXPECT_THROW(check_input(false, "bad"), std::runtime_error);
  EXPECT_THROW(check(false, "bad"), std::runtime_error);
}

}  // namespace
}  // namespace mpipe
