#include "lmcache/bridge/internal/bridge_keys.h"

namespace lmcache::bridge_internal {

void BridgeKeys::publish_store(const std::vector<ObjectKey>& keys,
                               const std::vector<std::uint64_t>& sizes, Sized* stored,
                               Sized* replaced) {
  ++epoch_;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    tombstones_.erase(keys[i]);  // just written: visible again
    auto [it, fresh] = known_.try_emplace(keys[i], Known{sizes[i], epoch_});
    if (!fresh) {
      it->second.epoch = epoch_;
      if (it->second.size == sizes[i]) continue;
      replaced->add(keys[i], it->second.size);
      it->second.size = sizes[i];
    }
    stored->add(keys[i], sizes[i]);
  }
}

BridgeKeys::Sized BridgeKeys::forget(const std::vector<ObjectKey>& keys) {
  Sized out;
  for (const ObjectKey& key : keys) {
    auto it = known_.find(key);
    if (it == known_.end()) continue;
    out.add(key, it->second.size);
    known_.erase(it);
  }
  return out;
}

BridgeKeys::Sized BridgeKeys::forget_if_stale(const ObjectKey& key, std::uint64_t probe_epoch) {
  auto it = known_.find(key);
  if (it == known_.end() || it->second.epoch > probe_epoch) return {};
  return forget({key});
}

std::optional<std::uint64_t> BridgeKeys::known_size(const ObjectKey& key) const {
  auto it = known_.find(key);
  if (it == known_.end()) return std::nullopt;
  return it->second.size;
}

void BridgeKeys::untombstone(const ObjectKey& key) {
  auto it = tombstones_.find(key);
  if (it == tombstones_.end()) return;  // a later successful store lifted it already
  if (--it->second == 0) tombstones_.erase(it);
}

void BridgeKeys::unlock(const ObjectKey& key) {
  auto it = locks_.find(key);
  if (it == locks_.end()) return;  // unknown or not locked: ignored
  if (--it->second == 0) locks_.erase(it);
}

std::uint64_t BridgeKeys::lock_count(const ObjectKey& key) const {
  auto it = locks_.find(key);
  return it == locks_.end() ? 0 : it->second;
}

}  // namespace lmcache::bridge_internal
