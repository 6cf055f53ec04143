// CLI11 checks that several subcommands' options share.
#include "option_checks.h"

#include <cmath>
#include <cstdint>

namespace mpipe::app {

CLI::Validator unnamed(const CLI::Validator& validator) { return validator.description(""); }

const CLI::Validator kNotEmpty(
    [](const std::string& value) { return value.empty() ? "must not be empty" : std::string(); },
    "");

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

CLI::Validator non_negative_integer(const std::string& zero) {
  const std::string what = zero.empty() ? "an integer >= 0" : "an integer >= 0 (" + zero + ")";
  return CLI::Validator(
      [what](const std::string& text) {
        int64_t value = 0;
        return CLI::detail::lexical_cast(text, value) && value >= 0
                   ? std::string()
                   : "must be " + what + ", got " + text;
      },
      "");
}

}  // namespace mpipe::app
