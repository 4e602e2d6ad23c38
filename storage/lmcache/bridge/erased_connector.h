// File: lmcache/bridge/erased_connector.h
//
// ErasedConnector: a native connector behind a small virtual interface, so that the bridge
// (NativeConnectorL2Adapter) is compiled once, and so that decorators (fault injection, test
// doubles, instrumentation) can sit between the bridge and any connector. erase_connector()
// turns any NativeConnector (native_connector.h) into one; the conversion is a header template
// compiled in the vendor's translation unit, so the vendor's type never crosses a library
// boundary.
//
// Thread safety: what the wrapped connector offers. The bridge calls the submits from its
// callers' threads and its own, drain_completions() from its own thread only, close() once.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lmcache/bridge/native_connector.h"
#include "lmcache/core/config.h"

namespace lmcache::bridge {

class ErasedConnector {
 public:
  virtual ~ErasedConnector() = default;

  // The connector's members (native_connector.h), with its completions converted to Completion.
  virtual int event_fd() const = 0;
  virtual std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                         const std::vector<void*>& bufs,
                                         const std::vector<std::size_t>& lens,
                                         std::size_t batch_chunk_num_bytes) = 0;
  virtual std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                         const std::vector<void*>& bufs,
                                         const std::vector<std::size_t>& lens,
                                         std::size_t batch_chunk_num_bytes) = 0;
  virtual std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) = 0;
  // Throws std::logic_error when supports_delete() is false.
  virtual std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) = 0;
  virtual std::vector<Completion> drain_completions() = 0;
  virtual void close() = 0;

  // ConnectorTraits of the wrapped type.
  virtual bool supports_delete() const = 0;
  virtual bool per_key_get_results() const = 0;

  // status()
  //
  // The connector's own report_status() when it has one returning something convertible to
  // Json; null otherwise.
  virtual Json status() const { return nullptr; }
};

using ErasedConnectorPtr = std::unique_ptr<ErasedConnector>;

}  // namespace lmcache::bridge

namespace lmcache::bridge_internal {

using bridge::Completion;
using bridge::ConnectorTraits;
using bridge::ErasedConnector;
using bridge::NativeConnector;

template <NativeConnector C>
class ConnectorModel final : public ErasedConnector {
 public:
  explicit ConnectorModel(std::unique_ptr<C> c) : c_(std::move(c)) {
    if (!c_) throw std::invalid_argument("erase_connector: the connector is null");
  }

  int event_fd() const override { return static_cast<int>(c_->event_fd()); }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override {
    return static_cast<std::uint64_t>(
        c_->submit_batch_get(keys, bufs, lens, batch_chunk_num_bytes));
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override {
    return static_cast<std::uint64_t>(
        c_->submit_batch_set(keys, bufs, lens, batch_chunk_num_bytes));
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override {
    return static_cast<std::uint64_t>(c_->submit_batch_exists(keys));
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    if constexpr (ConnectorTraits<C>::kHasBatchDelete) {
      return static_cast<std::uint64_t>(c_->submit_batch_delete(keys));
    } else {
      throw std::logic_error("this connector has no submit_batch_delete");
    }
  }
  std::vector<Completion> drain_completions() override {
    std::vector<Completion> out;
    for (auto&& c : c_->drain_completions()) {
      Completion r;
      r.future_id = static_cast<std::uint64_t>(c.future_id);
      r.ok = static_cast<bool>(c.ok);
      for (auto&& b : c.result_bytes) r.result_bytes.push_back(static_cast<std::uint8_t>(b));
      r.error = std::string(c.error);
      out.push_back(std::move(r));
    }
    return out;
  }
  void close() override { c_->close(); }
  bool supports_delete() const override { return ConnectorTraits<C>::kHasBatchDelete; }
  bool per_key_get_results() const override { return ConnectorTraits<C>::kPerKeyGetResults; }
  Json status() const override {
    if constexpr (requires(const C& c) { Json(c.report_status()); }) {
      return Json(c_->report_status());
    } else {
      return nullptr;
    }
  }

  C& connector() { return *c_; }

 private:
  std::unique_ptr<C> c_;
};

}  // namespace lmcache::bridge_internal

namespace lmcache::bridge {

// erase_connector()
//
// Takes ownership of `connector`. Throws std::invalid_argument when it is null.
template <NativeConnector C>
ErasedConnectorPtr erase_connector(std::unique_ptr<C> connector) {
  if constexpr (std::is_base_of_v<ErasedConnector, C>) {
    return connector;  // already erased (a decorator)
  } else {
    return std::make_unique<bridge_internal::ConnectorModel<C>>(std::move(connector));
  }
}

// ForwardingConnector
//
// A decorator base: owns an inner ErasedConnector and forwards every call. A decorator
// overrides only what it changes (RocksDB's *Wrapper idiom; fault injection builds on it).
class ForwardingConnector : public ErasedConnector {
 public:
  // Throws std::invalid_argument when `inner` is null.
  explicit ForwardingConnector(ErasedConnectorPtr inner) : inner_(std::move(inner)) {
    if (!inner_) throw std::invalid_argument("ForwardingConnector: inner connector is null");
  }

  int event_fd() const override { return inner_->event_fd(); }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override {
    return inner_->submit_batch_get(keys, bufs, lens, batch_chunk_num_bytes);
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override {
    return inner_->submit_batch_set(keys, bufs, lens, batch_chunk_num_bytes);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override {
    return inner_->submit_batch_exists(keys);
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    return inner_->submit_batch_delete(keys);
  }
  std::vector<Completion> drain_completions() override { return inner_->drain_completions(); }
  void close() override { inner_->close(); }
  bool supports_delete() const override { return inner_->supports_delete(); }
  bool per_key_get_results() const override { return inner_->per_key_get_results(); }
  Json status() const override { return inner_->status(); }

  ErasedConnector& inner() { return *inner_; }

 private:
  ErasedConnectorPtr inner_;
};

}  // namespace lmcache::bridge
