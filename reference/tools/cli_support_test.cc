#include "cli_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmcache::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ParseUint, TakesDecimalDigitsInRange) {
  EXPECT_EQ(parse_uint("0", 0, 10), 0u);
  EXPECT_EQ(parse_uint("10", 0, 10), 10u);
  EXPECT_EQ(parse_uint("18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(parse_uint("010", 0, 100), 10u);  // decimal, never octal
}

TEST(ParseUint, RefusesWhatStrtoullWouldWrap) {
  for (const char* bad : {"-1", "+1", "18446744073709551616", "1180591620717411303424", "0x10",
                          "1e3", " 1", "1 ", "", "one", "99999999999999999999999"}) {
    EXPECT_EQ(parse_uint(bad, 0, UINT64_MAX), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_uint("11", 0, 10), std::nullopt);
  EXPECT_EQ(parse_uint("0", 1, 10), std::nullopt);
}

TEST(ParseReal, TakesFiniteDecimalsInRange) {
  EXPECT_EQ(parse_real("0.5", 0, 1), 0.5);
  EXPECT_EQ(parse_real("1e-2", 0, 1), 0.01);
  for (const char* bad : {"nan", "inf", "-0.1", "1.5", "0x1p-1", "", "0.5 ", "1e999"}) {
    EXPECT_EQ(parse_real(bad, 0, 1), std::nullopt) << bad;
  }
}

// An app with one range-checked option, parsed from `args`; returns the exit status
// parse_command_line() asks for (-1: go on).
int parse(std::vector<std::string> args, std::uint64_t* value) {
  CLI::App app{"test"};
  app.add_option("--count", *value, "a count")->check(uint_in(1, 100));
  std::vector<char*> argv;
  std::string name = "test";
  argv.push_back(name.data());
  for (auto& a : args) argv.push_back(a.data());
  return parse_command_line(app, static_cast<int>(argv.size()), argv.data()).value_or(-1);
}

TEST(UintIn, ChecksTheTextBeforeCli11ConvertsIt) {
  std::uint64_t v = 0;
  EXPECT_EQ(parse({"--count", "42"}, &v), -1);
  EXPECT_EQ(v, 42u);
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse({"--count", "-1"}, &v), kExitUsage);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("--count: '-1' is not an integer in [1, 100]"));
  testing::internal::CaptureStderr();
  EXPECT_EQ(parse({"--count", "1180591620717411303424"}, &v), kExitUsage);
  EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("not an integer in [1, 100]"));
  EXPECT_EQ(v, 42u);
}

TEST(UintIn, DescribesTheRangeInHelp) {
  CLI::App app{"test"};
  std::uint64_t v = 0;
  app.add_option("--count", v, "a count")->check(uint_in(1, 100));
  EXPECT_THAT(app.help(), HasSubstr("in [1, 100]"));
}

TEST(OutputFileValidator, RefusesADevice) {
  CLI::Validator v = output_file();
  std::string dev = "/dev/null";
  EXPECT_THAT(v(dev), HasSubstr("is a character device"));
  std::string missing = "/nonexistent-dir-of-cli-support-test/out.json";
  EXPECT_THAT(v(missing), HasSubstr("does not exist"));
}

TEST(GuardedMain, NamesWhatFailedNeverTheRawText) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(guarded_main("prog", []() -> int { throw std::bad_alloc(); }), 1);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("prog: out of memory"));
  EXPECT_THAT(err, Not(HasSubstr("std::bad_alloc")));
  testing::internal::CaptureStderr();
  EXPECT_EQ(guarded_main("prog", []() -> int { throw std::runtime_error("disk on fire"); }), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "prog: disk on fire\n");
  EXPECT_EQ(guarded_main("prog", [] { return 7; }), 7);
}

}  // namespace
}  // namespace lmcache::cli
