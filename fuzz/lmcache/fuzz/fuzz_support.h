// File: lmcache/fuzz/fuzz_support.h
//
// What every fuzz target here shares (fuzz/README.md): FuzzInput, the byte reader that turns an
// input into a case, and LMCACHE_FUZZ_CHECK, which turns a broken promise into a crash that
// libFuzzer saves and replays.
//
// An input is read from the front: fixed fields first (one byte each, u16 little-endian), then
// the rest as the bytes under test. A field past the end reads as 0, so every input is a case.
// fuzz/tools/make_seeds.py writes the seed corpora in exactly this format: change both together.
#pragma once

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <typeinfo>

namespace lmcache::fuzz_internal {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  // The next byte, or 0 once the input is used up.
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  // The next two bytes, little-endian (missing bytes read as 0).
  std::uint16_t u16() {
    const std::uint16_t lo = byte();
    const std::uint16_t hi = byte();
    return static_cast<std::uint16_t>(lo | (hi << 8));
  }

  // The next `n` bytes, or fewer when the input ends first.
  std::span<const std::uint8_t> bytes(std::size_t n) {
    const std::size_t take = n < size_ - pos_ ? n : size_ - pos_;
    std::span<const std::uint8_t> out(data_ + pos_, take);
    pos_ += take;
    return out;
  }

  // Everything not read yet.
  std::span<const std::uint8_t> rest() { return bytes(size_ - pos_); }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Prints what broke and aborts: libFuzzer reports the abort as a crash and saves the input.
[[noreturn]] inline void fail(const char* file, int line, const char* condition,
                              const std::string& what) {
  std::fprintf(stderr, "\n%s:%d: fuzz check failed: %s\n  %s\n", file, line, condition,
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

// The dynamic type and message of the exception being handled, for a failure message.
inline std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return std::string(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

// poll() until an event or `timeout` has passed, across signals: libFuzzer's -timeout alarm
// (SIGALRM) interrupts a wait in any thread, and an interrupted wait is no answer. Returns
// poll()'s result (0 when the time is up).
inline int poll_for(pollfd& p, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int rc = ::poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
    if (rc >= 0 || errno != EINTR) return rc;
  }
}

}  // namespace lmcache::fuzz_internal

// LMCACHE_FUZZ_CHECK(condition, message): a promise of the code under test; `message` (a
// std::string expression) is evaluated only when it is broken.
#define LMCACHE_FUZZ_CHECK(condition, message)                                   \
  do {                                                                           \
    if (!(condition)) {                                                          \
      ::lmcache::fuzz_internal::fail(__FILE__, __LINE__, #condition, (message)); \
    }                                                                            \
  } while (0)

// LMCACHE_FUZZ_FAIL(message): a promise broken unconditionally (an undocumented exception type).
#define LMCACHE_FUZZ_FAIL(message) \
  ::lmcache::fuzz_internal::fail(__FILE__, __LINE__, "a documented outcome", (message))

// LMCACHE_FUZZ_TARGET(one_case): defines libFuzzer's entry point, handing each input to
// `one_case(FuzzInput&)`. Every target's inputs are read the same way, so the seed writer
// (fuzz/tools/make_seeds.py) has one format to follow.
#define LMCACHE_FUZZ_TARGET(one_case)                                                 \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    ::lmcache::fuzz_internal::FuzzInput in(data, size);                               \
    one_case(in);                                                                     \
    return 0;                                                                         \
  }
