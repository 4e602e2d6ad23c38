#include "cli_support.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include "lmcache/core/regular_file.h"

namespace lmcache::cli {

namespace {

std::string range_text(std::uint64_t lo, std::uint64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string range_text(double lo, double hi) {
  std::ostringstream out;
  out << "[" << lo << ", " << hi << "]";
  return out.str();
}

}  // namespace

std::optional<std::uint64_t> parse_uint(std::string_view text, std::uint64_t lo, std::uint64_t hi) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;  // past 2^64 - 1
    value = value * 10 + digit;
  }
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

std::optional<double> parse_real(std::string_view text, double lo, double hi) {
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    // Decimal notation only: no "nan", "inf", hex floats or blanks.
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      return std::nullopt;
    }
  }
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v) || v < lo || v > hi) {
    return std::nullopt;
  }
  return v;
}

CLI::Validator uint_in(std::uint64_t lo, std::uint64_t hi) {
  const std::string range = range_text(lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        if (parse_uint(text, lo, hi)) return {};
        return "'" + text + "' is not an integer in " + range;
      },
      "in " + range, "uint_in");
}

CLI::Validator real_in(double lo, double hi) {
  const std::string range = range_text(lo, hi);
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        if (parse_real(text, lo, hi)) return {};
        return "'" + text + "' is not a number in " + range;
      },
      "in " + range, "real_in");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        try {
          check_output_path(path);
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
        return {};
      },
      "", "output_file");
}

CLI::Option* add_output_file_option(CLI::App& app, const std::string& name, std::string& path,
                                    const std::string& what) {
  return app
      .add_option(name, path,
                  what + " to this file (a regular file or nothing, in an existing directory)")
      ->check(output_file());
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  return std::nullopt;
}

int guarded_main(std::string_view program, const std::function<int()>& body) {
  const std::string name(program);
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::cerr << name
              << ": out of memory (an input or an option asks for more memory than this machine "
                 "can give)\n";
  } catch (const std::length_error&) {
    std::cerr << name << ": a size out of range (an input or an option asks for more than fits)\n";
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
  } catch (...) {
    std::cerr << name << ": unknown error\n";
  }
  return 1;
}

}  // namespace lmcache::cli
