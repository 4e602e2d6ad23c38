#include "lmcache/wrapper/wrapper_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace lmcache {
namespace {

using ::testing::HasSubstr;

std::string error_of(const char* json) {
  try {
    wrapper_options_from_json(Json::parse(json));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(WrapperOptions, DefaultsAdaptAndFinishOnSubmit) {
  const SerdeWrapperOptions o;
  EXPECT_FALSE(o.inline_serialize_max_bytes.has_value());
  EXPECT_FALSE(o.inline_deserialize_max_bytes.has_value());
  EXPECT_FALSE(o.handoff_cost.has_value());
  EXPECT_TRUE(o.finish_on_submit);
}

TEST(WrapperOptionsFromJson, EmptyObjectKeepsTheBase) {
  SerdeWrapperOptions base;
  base.inline_serialize_max_bytes = 7;
  base.finish_on_submit = false;
  base.poll_timeout = std::chrono::milliseconds(40);
  const SerdeWrapperOptions o = wrapper_options_from_json(Json::object(), base);
  EXPECT_EQ(o.inline_serialize_max_bytes, std::optional<std::size_t>(7));
  EXPECT_FALSE(o.inline_deserialize_max_bytes.has_value());
  EXPECT_FALSE(o.finish_on_submit);
  EXPECT_EQ(o.poll_timeout, std::chrono::milliseconds(40));
}

TEST(WrapperOptionsFromJson, ReadsEveryKey) {
  const SerdeWrapperOptions o = wrapper_options_from_json(Json::parse(R"({
      "inline_serialize_max_bytes": 0, "inline_deserialize_max_bytes": 1048576,
      "handoff_cost_us": 59.5, "finish_on_submit": false, "poll_timeout_ms": 25})"));
  EXPECT_EQ(o.inline_serialize_max_bytes, std::optional<std::size_t>(0));
  EXPECT_EQ(o.inline_deserialize_max_bytes, std::optional<std::size_t>(1 << 20));
  EXPECT_EQ(o.handoff_cost, std::optional<std::chrono::nanoseconds>(59'500));
  EXPECT_FALSE(o.finish_on_submit);
  EXPECT_EQ(o.poll_timeout, std::chrono::milliseconds(25));
}

TEST(WrapperOptionsFromJson, AutoAndMeasureReturnToAdaptive) {
  SerdeWrapperOptions base;
  base.inline_serialize_max_bytes = 0;
  base.inline_deserialize_max_bytes = 0;
  base.handoff_cost = std::chrono::nanoseconds(5);
  const SerdeWrapperOptions o =
      wrapper_options_from_json(Json::parse(R"({"inline_serialize_max_bytes": "auto",
                      "inline_deserialize_max_bytes": "auto", "handoff_cost_us": "measure"})"),
                                base);
  EXPECT_FALSE(o.inline_serialize_max_bytes.has_value());
  EXPECT_FALSE(o.inline_deserialize_max_bytes.has_value());
  EXPECT_FALSE(o.handoff_cost.has_value());
}

TEST(WrapperOptionsFromJson, BadValuesNameTheirKey) {
  EXPECT_THAT(error_of(R"({"inline_serialize_max_bytes": -1})"),
              HasSubstr("inline_serialize_max_bytes"));
  EXPECT_THAT(error_of(R"({"inline_deserialize_max_bytes": 2199023255553})"),
              HasSubstr("inline_deserialize_max_bytes"));
  EXPECT_THAT(error_of(R"({"inline_serialize_max_bytes": "big"})"), HasSubstr("\"auto\""));
  EXPECT_THAT(error_of(R"({"inline_serialize_max_bytes": true})"),
              HasSubstr("inline_serialize_max_bytes"));
  EXPECT_THAT(error_of(R"({"handoff_cost_us": -3})"), HasSubstr("handoff_cost_us"));
  EXPECT_THAT(error_of(R"({"handoff_cost_us": 1e9})"), HasSubstr("handoff_cost_us"));
  EXPECT_THAT(error_of(R"({"handoff_cost_us": "fast"})"), HasSubstr("\"measure\""));
  EXPECT_THAT(error_of(R"({"finish_on_submit": 1})"), HasSubstr("finish_on_submit"));
  EXPECT_THAT(error_of(R"({"poll_timeout_ms": 0})"), HasSubstr("poll_timeout_ms"));
  EXPECT_THAT(error_of(R"({"inline_max_bytes": 5})"), HasSubstr("unknown key 'inline_max_bytes'"));
  EXPECT_THAT(error_of(R"([1, 2])"), HasSubstr("serde_wrapper config"));
}

}  // namespace
}  // namespace lmcache
