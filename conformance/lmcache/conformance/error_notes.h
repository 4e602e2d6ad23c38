// File: lmcache/conformance/error_notes.h
//
// What an implementation under test said went wrong, kept for the verdict. A Fail is often the
// late symptom of an error the implementation reported earlier (a connector's "GET: size header
// mismatch" that left its connection out of step, then wrong bytes three calls later): the kit
// names the first such error in the first line of every Fail, so that a vendor reads the cause
// without opening child logs.
//
// Hooks that see an implementation's own error text note it here: the kit's bridge over a
// native connector plugin notes every ConnectorError (lmcache/conformance/connector_plugin.h).
// Each property starts with no notes (internal/report.h clears them).
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lmcache::conformance {

// note_implementation_error()
//
// Records one error the implementation reported: `error` in its own words (the connector's
// error text), `context` what it was doing (the operation, keys and sizes). Each is kept as one
// line (newlines become spaces, at most 1 KiB). Only the first note is kept; every note is
// counted.
void note_implementation_error(std::string_view error, std::string_view context = {});

struct ImplementationError {
  std::string error;
  std::string context;
  std::size_t count = 0;  // notes since the last clear, this one included
};

// The first note since the last clear, with the count of notes; nullopt when there is none.
std::optional<ImplementationError> first_implementation_error();

// Forgets every note.
void clear_implementation_errors();

// with_first_implementation_error()
//
// `message` with, when a note exists, a first line naming the first error:
//   "first error the implementation reported (1 of N): <error> (in <context>)".
std::string with_first_implementation_error(const std::string& message);

}  // namespace lmcache::conformance
