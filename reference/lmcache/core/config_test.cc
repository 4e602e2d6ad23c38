#include "lmcache/core/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lmcache {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no exception>";
}

TEST(ConfigReader, ReadsTypedValuesWithDefaults) {
  Json j = {{"a", 3}, {"b", 2.0}, {"c", "x"}, {"d", true}, {"e", 0.5}};
  ConfigReader r(j, "test");
  EXPECT_EQ(r.get_int("a"), 3);
  EXPECT_EQ(r.get_int("b"), 2) << "integral floats are integers";
  EXPECT_EQ(r.get_string("c"), "x");
  EXPECT_TRUE(r.get_bool("d"));
  EXPECT_DOUBLE_EQ(r.get_number("e"), 0.5);
  EXPECT_EQ(r.get_int("missing", 9), 9);
  EXPECT_NO_THROW(r.finish());
}

TEST(ConfigReader, UnknownKeyIsNamed) {
  Json j = {{"max_workers", 1}, {"fp8_dtyp", "float8_e5m2"}};
  ConfigReader r(j, "fp8 serde config");
  r.get_int("max_workers");
  r.allow("fp8_dtype");
  std::string msg = error_of([&] { r.finish(); });
  EXPECT_THAT(msg, HasSubstr("fp8 serde config"));
  EXPECT_THAT(msg, HasSubstr("unknown key 'fp8_dtyp'"));
  EXPECT_THAT(msg, HasSubstr("fp8_dtype"));
}

TEST(ConfigReader, WrongTypesAndRangesAreNamed) {
  Json j = {{"n", 1.5}, {"s", 3}, {"b", "yes"}, {"m", true}, {"k", 0}};
  ConfigReader r(j, "cfg");
  EXPECT_THAT(error_of([&] { r.get_int("n"); }), HasSubstr("'n' must be an integer"));
  EXPECT_THAT(error_of([&] { r.get_string("s"); }), HasSubstr("'s' must be a string"));
  EXPECT_THAT(error_of([&] { r.get_bool("b"); }), HasSubstr("'b' must be a boolean"));
  EXPECT_THAT(error_of([&] { r.get_int("m"); }), HasSubstr("'m' must be an integer"));
  EXPECT_THAT(error_of([&] { r.get_number("m"); }), HasSubstr("'m' must be a number"));
  EXPECT_THAT(error_of([&] { r.get_int("k", std::nullopt, 1); }),
              HasSubstr("'k' must be in [1, inf]"));
  EXPECT_THAT(error_of([&] { r.get_string("absent"); }),
              HasSubstr("missing required key 'absent'"));
}

TEST(ConfigReader, RejectsNonObjects) {
  EXPECT_THAT(error_of([] { ConfigReader(Json::array(), "cfg"); }),
              HasSubstr("expected a JSON object"));
}

}  // namespace
}  // namespace lmcache
