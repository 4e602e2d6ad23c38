#include "lmcache/fault/internal/campaign_workload.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "lmcache/core/event_notifier.h"
#include "lmcache/fault/fault_rng.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache::fault_internal {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using fault::splitmix64;

// Finite values of magnitude below 8 (plus a few zeros): exact in neither fp8 format in
// general, never NaN or out of range, so every fp8 code of the expected bytes is a finite
// value and any changed code decodes to different bytes.
void fill_source(MemoryObj& obj, std::uint64_t seed, std::size_t key_index) {
  const MemoryLayoutDesc& layout = obj.layout();
  std::uint64_t counter = splitmix64(seed ^ (0xA5A5A5A5ULL + key_index * 0x9E3779B97F4A7C15ULL));
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    std::byte* out = obj.group_bytes(g).data();
    for (std::size_t j = 0; j < layout.group_elements(g); ++j) {
      std::uint64_t bits = splitmix64(counter++);
      bool zero = ((bits >> 40) & 15) == 0;
      std::uint64_t sign = bits >> 63;
      std::uint64_t e = (bits >> 32) & 7;
      switch (layout.dtypes()[g]) {
        case DType::kFloat32: {
          std::uint32_t v =
              zero ? 0 : static_cast<std::uint32_t>((122 + e) << 23 | (bits & 0x7FFFFF));
          v |= static_cast<std::uint32_t>(sign << 31);
          std::memcpy(out + 4 * j, &v, 4);
          break;
        }
        case DType::kBFloat16: {
          std::uint16_t v = zero ? 0 : static_cast<std::uint16_t>((122 + e) << 7 | (bits & 0x7F));
          v |= static_cast<std::uint16_t>(sign << 15);
          std::memcpy(out + 2 * j, &v, 2);
          break;
        }
        case DType::kFloat16: {
          std::uint16_t v = zero ? 0 : static_cast<std::uint16_t>((10 + e) << 10 | (bits & 0x3FF));
          v |= static_cast<std::uint16_t>(sign << 15);
          std::memcpy(out + 2 * j, &v, 2);
          break;
        }
        default:
          throw std::logic_error("campaign: unexpected dtype in a layout class");
      }
    }
  }
}

std::optional<bool> wait_serde(SerdeProcessor& p, TaskId id, bool serialize) {
  auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    auto r = serialize ? p.query_serialize_result(id) : p.query_deserialize_result(id);
    if (r) return r;
    wait_readable(serialize ? p.get_serialize_event_fd() : p.get_deserialize_event_fd(), 20ms);
  }
  return std::nullopt;
}

}  // namespace

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::kStore:
      return "store";
    case OpKind::kLoad:
      return "load";
    case OpKind::kLookup:
      return "lookup";
    case OpKind::kDelete:
      return "delete";
  }
  return "?";
}

MemoryLayoutDesc layout_for_class(int c) {
  switch (c) {
    case 0:
      return MemoryLayoutDesc::single({8, 32}, DType::kBFloat16);
    case 1:
      return MemoryLayoutDesc({{4, 16}, {2, 16}}, {DType::kFloat16, DType::kFloat32});
    default:
      return MemoryLayoutDesc::single({3, 91}, DType::kFloat32);
  }
}

std::string keys_text(const std::vector<std::size_t>& idx) {
  std::string out = "[";
  for (std::size_t i = 0; i < idx.size(); ++i) out += (i ? "," : "") + std::to_string(idx[i]);
  return out + "]";
}

Workload::Workload(std::uint64_t seed, std::size_t key_count, std::size_t max_batch)
    : seed_(seed),
      key_count_(key_count),
      max_batch_(max_batch),
      rng_(fault::splitmix64(seed ^ 0xD1B54A32D192ED03ULL)) {}

std::optional<std::size_t> Workload::index_of(const ObjectKey& key) const {
  auto it = key_index_.find(key);
  if (it == key_index_.end()) return std::nullopt;
  return it->second;
}

void Workload::prepare_keys(const Json& serde_config) {
  SerdeProcessorPtr oracle = create_serde_processor(serde_config);  // fault-free
  keys_by_class_.assign(kLayoutClasses, {});
  for (std::size_t i = 0; i < key_count_; ++i) {
    const int cls = static_cast<int>(i % kLayoutClasses);
    ObjectKey key(int_hash_to_bytes(static_cast<std::uint32_t>(i)) + "fc", "campaign-model",
                  static_cast<std::int64_t>(i % 4), static_cast<std::int64_t>(i % 2),
                  i % 3 == 0 ? "" : "salt" + std::to_string(i % 3));
    MemoryLayoutDesc layout = layout_for_class(cls);
    MemoryObjPtr src = MemoryObj::allocate(layout);
    fill_source(*src, seed_, i);
    MemoryObjPtr temp = MemoryObj::allocate(serialized_layout_desc(layout, *oracle));
    largest_temp_bytes_ = std::max(largest_temp_bytes_, temp->size());
    MemoryObjPtr dst = MemoryObj::allocate(layout);
    auto ok = wait_serde(*oracle, oracle->submit_serialize({src}, {temp}, {key}), true);
    if (!ok || !*ok) throw std::runtime_error("campaign: the oracle serde failed to serialize");
    const std::size_t serialized = temp->size();
    ok = wait_serde(*oracle, oracle->submit_deserialize({temp}, {dst}, {key}), false);
    if (!ok || !*ok) throw std::runtime_error("campaign: the oracle serde failed to deserialize");
    KeyInfo info{key, cls, {}, {}, serialized};
    auto s = std::as_const(*src).bytes();
    info.source.assign(s.begin(), s.end());
    auto d = std::as_const(*dst).bytes();
    info.expected.assign(d.begin(), d.end());
    key_index_.emplace(key, i);
    keys_by_class_[cls].push_back(i);
    keys_.push_back(std::move(info));
  }
  oracle->close();
}

std::optional<Workload::NextOp> Workload::next_op(const std::vector<KeyState>& model,
                                                  const std::function<bool(std::size_t)>& owned) {
  const double r = uniform01();
  OpKind kind = r < 0.35   ? OpKind::kStore
                : r < 0.70 ? OpKind::kLoad
                : r < 0.85 ? OpKind::kLookup
                           : OpKind::kDelete;
  const auto& cls = keys_by_class_[below(kLayoutClasses)];
  std::vector<std::size_t> free_all, free_absent, free_present;
  for (std::size_t i : cls) {
    if (owned(i)) continue;
    free_all.push_back(i);
    (model[i].present ? free_present : free_absent).push_back(i);
  }
  if (kind == OpKind::kStore && free_absent.empty()) kind = OpKind::kLoad;
  std::vector<std::size_t>* pool = &free_all;
  if (kind == OpKind::kStore) {
    pool = &free_absent;
  } else if (kind == OpKind::kLoad || kind == OpKind::kDelete) {
    if (!free_present.empty() && uniform01() < 0.8) pool = &free_present;
  }
  if (pool->empty()) return std::nullopt;
  const std::size_t b = std::min<std::size_t>(1 + below(max_batch_), pool->size());
  for (std::size_t i = 0; i < b; ++i) std::swap((*pool)[i], (*pool)[i + below(pool->size() - i)]);
  pool->resize(b);
  return NextOp{kind, std::move(*pool)};
}

}  // namespace lmcache::fault_internal
