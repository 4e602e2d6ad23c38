#include "lmcache/core/dtype.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace lmcache {
namespace {

TEST(DType, NamesRoundTripAndMatchTorch) {
  for (DType d : all_dtypes()) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    EXPECT_EQ(parse_dtype("torch." + std::string(dtype_name(d))), d);
  }
  EXPECT_EQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::kFloat8E4M3FN), "float8_e4m3fn");
  EXPECT_FALSE(parse_dtype("float64").has_value());
  EXPECT_THROW(dtype_from_name("half"), std::invalid_argument);
}

TEST(DType, ElementSizes) {
  EXPECT_EQ(element_size(DType::kUInt8), 1u);
  EXPECT_EQ(element_size(DType::kFloat16), 2u);
  EXPECT_EQ(element_size(DType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DType::kFloat32), 4u);
  EXPECT_EQ(element_size(DType::kFloat8E5M2), 1u);
  EXPECT_TRUE(is_fp8(DType::kFloat8E4M3FN));
  EXPECT_FALSE(is_fp8(DType::kUInt8));
}

}  // namespace
}  // namespace lmcache
