// What a command line that does not parse ends with, on every rank alike.
#pragma once

#include <CLI/CLI.hpp>

namespace mpipe::app {

// The exit code after `error` from parsing the command line: 0 for --help and --version alone
// (rank 0 prints them), else 2 (bad input) with one error line from rank 0 that names the
// subcommand's --help: a word that is no subcommand is named as such with the list of them, and
// --version with anything after it is refused. Every rank parses the same command line, so every
// rank gets the same code.
int exit_after_parse_failure(const CLI::App& app, const CLI::ParseError& error, int rank);

}  // namespace mpipe::app
