#include "lmcache/serde/multi_serde.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace lmcache {

namespace {

class SingleToMultiSerializer final : public MultiSerializer {
 public:
  explicit SingleToMultiSerializer(SerializerPtr inner) : inner_(std::move(inner)) {}

  std::size_t group_size() const override { return 1; }

  std::size_t serialize(const MemoryObjGroup& src, MemoryObj& dst, const ObjectKey& key) override {
    if (src.size() != 1) {
      throw std::invalid_argument("single_to_multi_serializer: expected group of size 1, got " +
                                  std::to_string(src.size()));
    }
    if (!src[0]) {
      throw std::invalid_argument(
          "single_to_multi_serializer: single-tensor serializer does not admit a None src slot");
    }
    return inner_->serialize(*src[0], dst, key);
  }

  std::size_t estimate_serialized_size(const LayoutDescGroup& layouts) const override {
    if (layouts.size() != 1) {
      throw std::invalid_argument(
          "single_to_multi_serializer: expected layout group of size 1, got " +
          std::to_string(layouts.size()));
    }
    if (!layouts[0]) {
      throw std::invalid_argument(
          "single_to_multi_serializer: single-tensor serializer requires a non-None layout "
          "descriptor");
    }
    return inner_->estimate_serialized_size(*layouts[0]);
  }

 private:
  const SerializerPtr inner_;
};

class SingleToMultiDeserializer final : public MultiDeserializer {
 public:
  explicit SingleToMultiDeserializer(DeserializerPtr inner) : inner_(std::move(inner)) {}

  std::size_t group_size() const override { return 1; }

  void deserialize(const MemoryObj& src, const MemoryObjGroup& dst, const ObjectKey& key) override {
    if (dst.size() != 1) {
      throw std::invalid_argument("single_to_multi_deserializer: expected group of size 1, got " +
                                  std::to_string(dst.size()));
    }
    // An absent destination is a deliberate skip: the caller sources it elsewhere.
    if (!dst[0]) return;
    inner_->deserialize(src, *dst[0], key);
  }

 private:
  const DeserializerPtr inner_;
};

}  // namespace

void validate_group_size(std::size_t group_len, std::size_t expected, std::string_view role) {
  if (group_len != expected) {
    throw std::invalid_argument("MultiSerde " + std::string(role) + " group length " +
                                std::to_string(group_len) + " does not match expected " +
                                std::to_string(expected));
  }
}

MultiSerializerPtr single_to_multi_serializer(SerializerPtr inner) {
  if (!inner) throw std::invalid_argument("single_to_multi_serializer: null serializer");
  return std::make_shared<SingleToMultiSerializer>(std::move(inner));
}

MultiDeserializerPtr single_to_multi_deserializer(DeserializerPtr inner) {
  if (!inner) throw std::invalid_argument("single_to_multi_deserializer: null deserializer");
  return std::make_shared<SingleToMultiDeserializer>(std::move(inner));
}

}  // namespace lmcache
