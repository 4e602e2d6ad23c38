#include "lmcache/fs/fs_adapter.h"

namespace lmcache::fs {

FsAdapterConfig FsAdapterConfig::parse(const Json& config) {
  // Unknown keys first, so that a misspelt key is reported as the typo it is.
  ConfigReader reader =
      bridge::open_bridged_adapter_config(config, kFsAdapterType,
                                          {"base_path", "use_odirect", "checksum", "num_workers",
                                           "layout", "high_watermark", "min_free_bytes"});
  FsAdapterConfig c;
  const std::string base_path = reader.get_string("base_path");
  if (base_path.empty()) reader.error("'base_path' must be a non-empty string");
  c.connector.base_path = base_path;
  c.connector.use_odirect = reader.get_bool("use_odirect", false);
  const std::string checksum = reader.get_string("checksum", std::string("none"));
  if (checksum == "none") {
    c.connector.checksum = FsChecksum::kNone;
  } else if (checksum == "crc32") {
    c.connector.checksum = FsChecksum::kCrc32;
  } else {
    reader.error("'checksum' must be \"none\" or \"crc32\", got \"" + checksum + "\"");
  }
  c.connector.num_workers = static_cast<std::size_t>(reader.get_int("num_workers", 4, 1, 1024));
  const std::string layout = reader.get_string("layout", std::string("project"));
  if (layout == "project") {
    c.connector.layout = FsLayout::kProject;
  } else if (layout == "lmcache") {
    c.connector.layout = FsLayout::kLmcache;
    if (c.connector.checksum != FsChecksum::kNone) {
      reader.error("'layout' \"lmcache\" stores LMCache's raw files: 'checksum' must be \"none\"");
    }
  } else {
    reader.error("'layout' must be \"project\" or \"lmcache\", got \"" + layout + "\"");
  }
  if (reader.raw("high_watermark") != nullptr) {
    const double hw = reader.get_number("high_watermark", 1.0);
    if (!(hw > 0.0 && hw <= 1.0)) {
      reader.error(
          "'high_watermark' must be a number in (0, 1] (the used share of the file "
          "system, as df reports it), got " +
          Json(hw).dump());
    }
    c.connector.disk_guard.high_watermark = hw;
  }
  if (reader.raw("min_free_bytes") != nullptr) {
    c.connector.disk_guard.min_free_bytes =
        static_cast<std::uint64_t>(reader.get_int("min_free_bytes", 0, 0, INT64_MAX));
  }
  c.connector.reads = bridge::ReadPoolOptions::from_config(reader);
  c.bridge = bridge::NativeConnectorAdapterOptions::from_config(reader, "fs");
  return c;
}

std::unique_ptr<bridge::NativeConnectorL2Adapter> create_fs_adapter(const Json& config) {
  return bridge::make_bridged_adapter<FsConnector>(FsAdapterConfig::parse(config));
}

void register_fs_adapter_type() {
  bridge::register_bridged_adapter_type(kFsAdapterType, &create_fs_adapter);
}

}  // namespace lmcache::fs

namespace lmcache::fs_internal {

int FsAdapterLinkAnchor() {
  fs::register_fs_adapter_type();
  return 0;
}

namespace {
// Registration when the library is loaded, for programs that never include the header.
[[maybe_unused]] const int kRegisteredAtLoad = FsAdapterLinkAnchor();
}  // namespace

}  // namespace lmcache::fs_internal
