// AdapterConformance over the "fs" adapter on real files: the bridge over FsConnector (plain,
// and with crc32 and O_DIRECT), and the fp8 serde wrapper over it built from a config with a
// "serde" object. Every adapter a property builds gets its own key namespace in one temporary
// directory, so each starts from an empty store (StoredDamageContained's, a subdirectory).
#include <atomic>
#include <memory>
#include <string>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/testing/storage_descriptors.h"
#include "lmcache/conformance/testing/stored_damage.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fs {
namespace {

const storage_testing::TempDir& base() {
  static const storage_testing::TempDir dir("lmcache-fs-conformance-");
  return dir;
}

Json config(bool crc32_odirect) {
  static std::atomic<int> next{0};
  Json c = {{"type", "fs"},
            {"base_path", base().path().string()},
            {"num_workers", 2},
            {"key_namespace", "conformance_" + std::to_string(next++)}};
  if (crc32_odirect) {
    c["checksum"] = "crc32";
    c["use_odirect"] = true;
  }
  return c;
}

// A config's adapter, with an L1 for a "serde" wrapper's temps.
L2AdapterPtr build(const Json& c) {
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);
  return create_l2_adapter(c, ctx);
}

L2AdapterPtr fs_fp8_wrapper() {
  Json c = config(true);
  c["serde"] = {{"type", "fp8"}};
  return build(c);
}

L2AdapterPtr fs_bridge() { return create_l2_adapter(config(false)); }
L2AdapterPtr fs_bridge_crc32_odirect() { return create_l2_adapter(config(true)); }

// `a` over damaged files too (AdapterConformance.StoredDamageContained): the same config in a
// subdirectory of its own, whose files the kit damages.
conformance::AdapterUnderTest damageable(conformance::AdapterUnderTest a, bool crc32_odirect,
                                         bool fp8) {
  a.make_damageable = [crc32_odirect, fp8] {
    Json c = config(crc32_odirect);
    if (fp8) c["serde"] = {{"type", "fp8"}};
    return conformance::damageable_fs(c, &build)();
  };
  a.detects_changed_bytes = crc32_odirect;
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    Fs, AdapterConformance,
    ::testing::Values(
        damageable(conformance::bridge_descriptor("fs", &fs_bridge), false, false),
        damageable(conformance::bridge_descriptor("fs_crc32_odirect", &fs_bridge_crc32_odirect),
                   true, false),
        damageable(conformance::fp8_wrapped_descriptor("wrapper_fs_fp8", &fs_fp8_wrapper), true,
                   true)),
    conformance::ParamName());

// WrapperConformance: the reference fp8 wrapper's properties with this adapter answering every
// inner store, lookup and load (the kit's mock only shadows it for the kit's own checks).
class FsWrapperProperties : public ::testing::TestWithParam<std::string> {};

TEST_P(FsWrapperProperties, HoldOverFs) {
  const conformance::Verdict v =
      conformance::run_wrapper_property_over(GetParam(), "fs", &fs_bridge_crc32_odirect);
  EXPECT_EQ(v.status, conformance::Status::kPass)
      << conformance::status_name(v.status) << ": " << v.message << " (RC_PARAMS=" << v.rc_params
      << ")";
}

INSTANTIATE_TEST_SUITE_P(Fp8, FsWrapperProperties,
                         ::testing::ValuesIn(conformance::wrapper_property_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace lmcache::fs
