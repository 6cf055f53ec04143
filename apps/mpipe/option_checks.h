// CLI11 checks that several subcommands' options share.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace mpipe::app {

// `validator` without its name in --help, which then shows the value's type and default alone
// ("--stages INT=4", not "INT:INT in [1 - 64]=4"); the option's text says what it accepts.
CLI::Validator unnamed(const CLI::Validator& validator);

// Refuses an empty value (`--run-dir ''`), which would otherwise read as not given.
extern const CLI::Validator kNotEmpty;

// A finite number >= 0; `zero` says what 0 means, e.g. "0 = greedy".
CLI::Validator non_negative_number(const std::string& zero);

// An integer >= 0: "must be an integer >= 0, got -1" (CLI11's own NonNegativeNumber printed its
// bound, 1.8e308, in 309 digits); `zero`, when not empty, says what 0 means, e.g. "0 = all".
CLI::Validator non_negative_integer(const std::string& zero = "");

}  // namespace mpipe::app
