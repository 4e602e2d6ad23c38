// File: lmcache/core/testing/expect_invalid.h
//
// Test support (never installed): the checks every component's tests make of a
// std::invalid_argument and its message.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/core/config.h"

namespace lmcache::core_internal {

// thrown_message<E>()
//
// The message of the `E` (or a type derived from it) that `fn` throws; "" (and a test failure)
// when it throws none.
template <class E, class Fn>
std::string thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// invalid_argument_message()
//
// thrown_message<std::invalid_argument>(fn).
template <class Fn>
std::string invalid_argument_message(Fn&& fn) {
  return thrown_message<std::invalid_argument>(std::forward<Fn>(fn));
}

// parse_error()
//
// The message of the std::invalid_argument Config::parse(config) throws (a test failure when it
// throws none). A braced JSON literal is a Json.
template <class Config, class Input = Json>
std::string parse_error(const Input& config) {
  return invalid_argument_message([&] { Config::parse(config); });
}

// expect_invalid()
//
// Expects `fn` to throw std::invalid_argument whose message contains every one of `parts`.
template <class Fn>
void expect_invalid(Fn&& fn, std::initializer_list<const char*> parts) {
  const std::string message = invalid_argument_message(fn);
  for (const char* p : parts) EXPECT_THAT(message, ::testing::HasSubstr(p));
}

}  // namespace lmcache::core_internal
