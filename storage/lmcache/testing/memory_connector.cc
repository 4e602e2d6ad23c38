#include "lmcache/testing/memory_connector.h"

namespace lmcache::storage_testing {

void MemoryStore::put(const std::string& key, std::vector<std::byte> value) {
  std::lock_guard lock(mu_);
  objects_[key] = std::move(value);
}

std::optional<std::vector<std::byte>> MemoryStore::get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

bool MemoryStore::contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return objects_.count(key) != 0;
}

bool MemoryStore::erase(const std::string& key) {
  std::lock_guard lock(mu_);
  return objects_.erase(key) != 0;
}

std::size_t MemoryStore::size() const {
  std::lock_guard lock(mu_);
  return objects_.size();
}

std::vector<std::string> MemoryStore::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [k, v] : objects_) out.push_back(k);
  return out;
}

void MemoryStore::clear() {
  std::lock_guard lock(mu_);
  objects_.clear();
}

}  // namespace lmcache::storage_testing

namespace lmcache::storage_testing_internal {

MemoryConnectorCore::MemoryConnectorCore(std::shared_ptr<MemoryStore> store,
                                         std::shared_ptr<MemoryConnectorFaults> faults,
                                         bool per_key_get)
    : store_(std::move(store)), faults_(std::move(faults)), per_key_get_(per_key_get) {
  if (!store_ || !faults_) throw std::invalid_argument("MemoryConnector: null store or faults");
}

MemoryConnectorCore::~MemoryConnectorCore() { close(); }

std::uint64_t MemoryConnectorCore::begin(const std::vector<std::string>& keys,
                                         const std::vector<void*>* bufs,
                                         const std::vector<std::size_t>* lens, std::size_t chunk) {
  if (faults_->throw_on_submit.load()) throw std::runtime_error("MemoryConnector: injected throw");
  if (keys.empty()) throw std::invalid_argument("MemoryConnector: empty batch");
  if (bufs != nullptr) {
    if (bufs->size() != keys.size() || lens->size() != keys.size()) {
      throw std::invalid_argument("MemoryConnector: keys, bufs and lens differ in length");
    }
    for (std::size_t len : *lens) {
      if (len != chunk) throw std::invalid_argument("MemoryConnector: len != chunk");
    }
  }
  std::lock_guard lock(mu_);
  if (closed_) throw std::logic_error("MemoryConnector: submit after close()");
  return next_id_++;
}

void MemoryConnectorCore::complete(bridge::Completion c) {
  // Notified under the lock, so close() cannot close the fd in between.
  std::lock_guard lock(mu_);
  if (closed_) return;
  if (faults_->hold_completions.load()) {
    held_.push_back(std::move(c));
    return;
  }
  ready_.push_back(std::move(c));
  notifier_.notify();
}

std::uint64_t MemoryConnectorCore::get(const std::vector<std::string>& keys,
                                       const std::vector<void*>& bufs,
                                       const std::vector<std::size_t>& lens, std::size_t chunk) {
  const std::uint64_t id = begin(keys, &bufs, &lens, chunk);
  ++counters_.gets;
  counters_.keys_got += keys.size();
  bridge::Completion c;
  c.future_id = id;
  std::vector<std::uint8_t> hits(keys.size(), 0);
  std::vector<std::optional<std::vector<std::byte>>> values(keys.size());
  bool all = true;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    values[i] = store_->get(keys[i]);
    if (values[i] && values[i]->size() == lens[i]) {
      hits[i] = 1;
    } else {
      all = false;
    }
  }
  if (per_key_get_) {
    // A miss leaves its buffer untouched; hits are copied.
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (hits[i] && lens[i] > 0) std::memcpy(bufs[i], values[i]->data(), lens[i]);
    }
    c.result_bytes = std::move(hits);
  } else if (all) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (lens[i] > 0) std::memcpy(bufs[i], values[i]->data(), lens[i]);
    }
  } else {
    c.ok = false;
    c.error = "MemoryConnector: a key of the batch is missing";
  }
  complete(std::move(c));
  return id;
}

std::uint64_t MemoryConnectorCore::set(const std::vector<std::string>& keys,
                                       const std::vector<void*>& bufs,
                                       const std::vector<std::size_t>& lens, std::size_t chunk) {
  const std::uint64_t id = begin(keys, &bufs, &lens, chunk);
  ++counters_.sets;
  bridge::Completion c;
  c.future_id = id;
  c.result_bytes.assign(keys.size(), 0);
  if (faults_->fail_sets_before_write.load()) {
    c.ok = false;
    c.error = "MemoryConnector: injected set failure (nothing written)";
  } else {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto* p = static_cast<const std::byte*>(bufs[i]);
      store_->put(keys[i], std::vector<std::byte>(p, p + lens[i]));
      c.result_bytes[i] = 1;
    }
    if (faults_->fail_sets_after_write.load()) {
      c.ok = false;
      c.error = "MemoryConnector: injected set failure (after writing)";
    }
  }
  complete(std::move(c));
  return id;
}

std::uint64_t MemoryConnectorCore::exists(const std::vector<std::string>& keys) {
  const std::uint64_t id = begin(keys, nullptr, nullptr, 0);
  ++counters_.exists;
  bridge::Completion c;
  c.future_id = id;
  for (const std::string& k : keys) c.result_bytes.push_back(store_->contains(k) ? 1 : 0);
  complete(std::move(c));
  return id;
}

std::uint64_t MemoryConnectorCore::del(const std::vector<std::string>& keys) {
  const std::uint64_t id = begin(keys, nullptr, nullptr, 0);
  ++counters_.deletes;
  bridge::Completion c;
  c.future_id = id;
  if (faults_->fail_deletes.load()) {
    c.ok = false;
    c.error = "MemoryConnector: injected delete failure";
  } else {
    for (const std::string& k : keys) c.result_bytes.push_back(store_->erase(k) ? 1 : 0);
  }
  complete(std::move(c));
  return id;
}

std::vector<bridge::Completion> MemoryConnectorCore::drain() {
  notifier_.consume();
  std::lock_guard lock(mu_);
  std::vector<bridge::Completion> out(std::make_move_iterator(ready_.begin()),
                                      std::make_move_iterator(ready_.end()));
  ready_.clear();
  return out;
}

std::size_t MemoryConnectorCore::release_held() {
  std::lock_guard lock(mu_);
  if (closed_) return 0;
  const std::size_t n = held_.size();
  for (auto& c : held_) ready_.push_back(std::move(c));
  held_.clear();
  if (n > 0) notifier_.notify();
  return n;
}

std::size_t MemoryConnectorCore::held() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

void MemoryConnectorCore::close() {
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  ready_.clear();
  held_.clear();
  notifier_.close();
}

}  // namespace lmcache::storage_testing_internal
