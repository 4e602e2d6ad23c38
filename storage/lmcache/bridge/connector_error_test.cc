#include "lmcache/bridge/connector_error.h"

#include <gtest/gtest.h>

namespace lmcache::bridge {
namespace {

TEST(ConnectorError, DescribesAnErrorOfManyKeysByItsFirstOnes) {
  ConnectorError e;
  e.op = "get";
  e.future_id = 7;
  e.key_count = 9;
  e.keys = {"a", "b"};
  e.sizes = {4096, 4096};
  e.error = "GET: size header mismatch";
  EXPECT_EQ(
      e.describe(),
      "get (future 7) of 9 keys [\"a\" 4096 B, \"b\" 4096 B, ...]: GET: size header mismatch");
  e = ConnectorError{"load", 0, 1, {"k"}, {}, "no completion within the task deadline (5 ms)"};
  EXPECT_EQ(e.describe(), "load of 1 key [\"k\"]: no completion within the task deadline (5 ms)");
}

}  // namespace
}  // namespace lmcache::bridge
