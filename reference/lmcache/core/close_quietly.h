// File: lmcache/core/close_quietly.h
//
// close_quietly(): closing a component where a failure to close can be neither reported nor
// acted on.
#pragma once

namespace lmcache {

// close_quietly()
//
// Calls `closable.close()` and drops whatever it throws. For a destructor, for a close() that
// closes what it owns after stopping its own threads, and for cleanup after another failure;
// anywhere else a failed close() is the caller's to report.
template <class Closable>
void close_quietly(Closable& closable) noexcept {
  try {
    closable.close();
  } catch (...) {
  }
}

}  // namespace lmcache
