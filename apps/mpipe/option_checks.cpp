// CLI11 checks that several subcommands' options share.
#include "option_checks.h"

#include <cmath>

namespace mpipe::app {

// `validator` without its name in --help, which then shows the value's type and default alone
// ("--stages INT=4", not "INT:INT in [1 - 64]=4"); the option's text says what it accepts.
CLI::Validator unnamed(const CLI::Validator& validator) { return validator.description(""); }

// Refuses an empty value (`--run-dir ''`), which would otherwise read as not given.
const CLI::Validator kNotEmpty(
    [](const std::string& value) { return value.empty() ? "must not be empty" : std::string(); },
    "");

// A finite number >= 0; `zero` says what 0 means, e.g. "0 = greedy".
CLI::Validator non_negative_number(const std::string& zero) {
  return CLI::Validator(
      [zero](const std::string& text) {
        double value = 0;
        return CLI::detail::lexical_cast(text, value) && value >= 0 && std::isfinite(value)
                   ? std::string()
                   : "must be a number >= 0 (" + zero + "), got " + text;
      },
      "");  // the option's help says what 0 means
}

}  // namespace mpipe::app
