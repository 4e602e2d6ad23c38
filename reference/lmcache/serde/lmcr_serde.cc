#include "lmcache/serde/lmcr_serde.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/serde/async_serde_processor.h"

namespace lmcache {

LmcrSerializer::LmcrSerializer(LmcrEncodeOptions options) : options_(options) {
  lmcr_validate_options(options_);
}

std::size_t LmcrSerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  return lmcr_max_record_size(layout.total_bytes(), options_);
}

std::size_t LmcrSerializer::serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey&) {
  const std::size_t need = lmcr_max_record_size(src.size(), options_);
  if (dst.size() < need) {
    throw std::invalid_argument("lmcr serializer: destination buffer too small: got " +
                                std::to_string(dst.size()) + " bytes, need " +
                                std::to_string(need));
  }
  return lmcr_encode(src.bytes(), dst.bytes(), options_);
}

void LmcrDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey&) {
  const std::span<const std::byte> in = src.bytes();
  auto truncated = [&](std::size_t need) {
    throw std::invalid_argument("lmcr deserializer: truncated record: " +
                                std::to_string(in.size()) + " bytes, need " + std::to_string(need));
  };
  if (in.size() < kLmcrHeaderBytes) truncated(kLmcrHeaderBytes);
  const std::size_t header_size = lmcr_header_size(in);
  if (in.size() < header_size) truncated(header_size);
  const LmcrRecordInfo info = lmcr_parse_header(in);
  if (in.size() < info.record_size) truncated(static_cast<std::size_t>(info.record_size));
  lmcr_decode(in, dst.bytes());
}

LmcrSerdeConfig LmcrSerdeConfig::from_json(const Json& kwargs) {
  ConfigReader reader(kwargs, "lmcr serde config");
  LmcrSerdeConfig out;
  const std::string framing = reader.get_string("framing", "raw");
  if (framing == "raw") {
    out.options.framing = LmcrFraming::kRaw;
  } else if (framing == "gzip") {
    out.options.framing = LmcrFraming::kGzip;
  } else {
    reader.error("'framing' must be \"raw\" or \"gzip\", got '" + framing + "'");
  }
  const std::int64_t chunk = reader.get_int("chunk_size", 1 << 20);
  if (chunk <= 0 || chunk % 16 != 0 || chunk > (std::int64_t{1} << 30)) {
    reader.error("'chunk_size' must be a positive multiple of 16 up to 1073741824, got " +
                 std::to_string(chunk));
  }
  out.options.chunk_size = static_cast<std::size_t>(chunk);
  out.options.level = static_cast<int>(reader.get_int("level", 6, 0, 9));
  out.max_workers = static_cast<std::size_t>(reader.get_int("max_workers", 1, 1, 1024));
  reader.finish();
  return out;
}

SerdeProcessorPtr make_lmcr_serde_processor(const Json& kwargs) {
  const LmcrSerdeConfig config = LmcrSerdeConfig::from_json(kwargs);
  return std::make_unique<AsyncSerdeProcessor>(std::make_shared<LmcrSerializer>(config.options),
                                               std::make_shared<LmcrDeserializer>(),
                                               config.max_workers);
}

}  // namespace lmcache
