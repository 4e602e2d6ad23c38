#include "lmcache/conformance/error_notes.h"

#include <mutex>

namespace lmcache::conformance {
namespace {

constexpr std::size_t kMaxNoteBytes = 1024;

struct Notes {
  std::mutex mu;
  std::optional<ImplementationError> first;
  std::size_t count = 0;
};

Notes& notes() {
  static Notes n;
  return n;
}

std::string one_line(std::string_view text) {
  std::string line(text.substr(0, kMaxNoteBytes));
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMaxNoteBytes) line += "...";
  return line;
}

}  // namespace

void note_implementation_error(std::string_view error, std::string_view context) {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  ++n.count;
  if (!n.first) n.first = ImplementationError{one_line(error), one_line(context), 0};
}

std::optional<ImplementationError> first_implementation_error() {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  if (!n.first) return std::nullopt;
  ImplementationError e = *n.first;
  e.count = n.count;
  return e;
}

void clear_implementation_errors() {
  Notes& n = notes();
  std::lock_guard lock(n.mu);
  n.first.reset();
  n.count = 0;
}

std::string with_first_implementation_error(const std::string& message) {
  const std::optional<ImplementationError> e = first_implementation_error();
  if (!e) return message;
  return "first error the implementation reported (1 of " + std::to_string(e->count) +
         "): " + e->error + (e->context.empty() ? "" : " (in " + e->context + ")") + "\n" + message;
}

}  // namespace lmcache::conformance
