// File: reference/tools/cli_support.h
//
// What every lmcache-* program does the same way with its command line and its end (the rule:
// docs/decisions.md, "Command lines"): a usage error exits 2 with a message naming the option
// and what it allows; a numeric option is checked against its range before it is converted (a
// "-1" or a 2^70 is refused, never wrapped into 2^64 - 1); output files go through
// lmcache/core/regular_file.h; no exception's raw text ("std::bad_alloc") reaches the user.
// Private to the build (library lmcache_cli_support, not installed), included as
// "cli_support.h".
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace lmcache::cli {

// The exit status of a usage error (a malformed or out-of-range option, an unknown name, a
// filter that selects nothing).
inline constexpr int kExitUsage = 2;

// parse_uint()
//
// `text` as a decimal integer in [lo, hi]: digits only (no sign, no base prefix, no blanks), at
// most 20 of them, no value past 2^64 - 1. std::nullopt for anything else.
std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t lo, std::uint64_t hi);

// parse_real()
//
// `text` as a finite decimal number in [lo, hi] (strtod's syntax, the whole text; no "nan",
// "inf" or hex). std::nullopt for anything else.
std::optional<double> parse_real(std::string_view text, double lo, double hi);

// uint_in()
//
// A CLI11 validator for parse_uint(text, lo, hi), run on the text before CLI11 converts it.
// Its description (shown by --help) is "in [lo, hi]"; its error names the value and the range.
CLI::Validator uint_in(std::uint64_t lo, std::uint64_t hi);

// real_in()
//
// A CLI11 validator for parse_real(text, lo, hi); described as uint_in().
CLI::Validator real_in(double lo, double hi);

// output_file()
//
// A CLI11 validator for an output file path: lmcache::check_output_path() (a regular file or
// nothing, in an existing directory), its message as the error.
CLI::Validator output_file();

// add_output_file_option()
//
// Adds option `name` storing into `path`, described as "<what> to this file (a regular file or
// nothing, in an existing directory)" and checked with output_file().
CLI::Option* add_output_file_option(CLI::App& app, const std::string& name, std::string& path,
                                    const std::string& what);

// parse_command_line()
//
// app.parse(argc, argv). Returns std::nullopt when the program should go on, otherwise the
// exit status: 0 after --help (printed), kExitUsage after a parse or validation error (printed
// by CLI11 with the option's name).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// guarded_main()
//
// Runs `body` and returns its exit status. An exception that escapes it is reported on stderr
// as "<program>: <what failed>" and gives status 1: std::bad_alloc as "out of memory" (an input
// or an option asks for more memory than there is), std::length_error as "a size out of range",
// any other std::exception by its message, anything else as "unknown error". Never throws.
int guarded_main(std::string_view program, const std::function<int()>& body);

}  // namespace lmcache::cli
