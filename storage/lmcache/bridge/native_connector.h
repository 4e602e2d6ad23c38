// File: lmcache/bridge/native_connector.h
//
// The shape of LMCache's native storage connector (`lmcache::connector::IStorageConnector` in
// LMCache's csrc/storage_backends/), written as C++20 concepts so that a vendor's own header and
// type can be used with no ABI coupling to this project: the bridge
// (native_connector_adapter.h) is a template over any type that has these members.
//
// The contract, as LMCache defines it (storage/README.md restates it with the decisions made here):
//   int event_fd() const                 one eventfd, readable when completions are waiting;
//   uint64_t submit_batch_get(keys, bufs, lens, batch_chunk_num_bytes)
//   uint64_t submit_batch_set(keys, bufs, lens, batch_chunk_num_bytes)
//                                        keys: const std::vector<std::string>&,
//                                        bufs: const std::vector<void*>&,
//                                        lens: const std::vector<size_t>& (each must equal
//                                        batch_chunk_num_bytes); one future id per batch;
//   uint64_t submit_batch_exists(keys)   result_bytes: 0/1 per key;
//   uint64_t submit_batch_delete(keys)   result_bytes: 1 deleted / 0 not found (newer versions);
//   std::vector<Completion> drain_completions()
//                                        the only call to make when the fd is readable; it
//                                        drains the fd and returns every completion waiting;
//   void close()                         idempotent: stops workers, joins, closes the fd, drops
//                                        pending work (never completed).
// Submits throw on a size mismatch or an empty batch. Buffers must stay alive until their
// completion is drained. A Completion has `future_id`, `ok`, `result_bytes` (0/1 per key for
// exists and delete, per-key hit flags for get in newer versions, empty for set) and `error`.
//
// Older connectors lack submit_batch_delete or per-key get results; both are optional here:
//   - NativeConnectorWithDelete<T> detects submit_batch_delete with a requires-expression;
//   - ConnectorTraits<T>::kPerKeyGetResults is true when T declares
//     `static constexpr bool kPerKeyGetResults = true;` (or a vendor specializes
//     ConnectorTraits for a type it cannot change). The declaration only tells the bridge it
//     need not probe with exists before a get; per-key flags in a get completion are used
//     whenever they are present (see native_connector_adapter.h).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <string>
#include <type_traits>
#include <vector>

namespace lmcache::bridge {

// Completion
//
// The project's own completion record, field for field LMCache's `Completion`. The reference
// connectors (resp, fs) return it; the bridge converts any NativeCompletion into it.
struct Completion {
  std::uint64_t future_id = 0;
  bool ok = true;
  std::vector<std::uint8_t> result_bytes;
  std::string error;
};

// NativeCompletion
//
// A completion record with LMCache's four public fields.
template <class C>
concept NativeCompletion = requires(const C& c) {
  { c.future_id } -> std::convertible_to<std::uint64_t>;
  { c.ok } -> std::convertible_to<bool>;
  { c.error } -> std::convertible_to<std::string>;
  requires std::ranges::input_range<decltype((c.result_bytes))>;
  { *std::ranges::begin(c.result_bytes) } -> std::convertible_to<std::uint8_t>;
};

// NativeConnector
//
// Every member of IStorageConnector except the optional submit_batch_delete.
template <class T>
concept NativeConnector = requires(T& t, const T& ct, const std::vector<std::string>& keys,
                                   const std::vector<void*>& bufs,
                                   const std::vector<std::size_t>& lens, std::size_t chunk_bytes) {
  { ct.event_fd() } -> std::convertible_to<int>;
  { t.submit_batch_get(keys, bufs, lens, chunk_bytes) } -> std::convertible_to<std::uint64_t>;
  { t.submit_batch_set(keys, bufs, lens, chunk_bytes) } -> std::convertible_to<std::uint64_t>;
  { t.submit_batch_exists(keys) } -> std::convertible_to<std::uint64_t>;
  { t.drain_completions() } -> std::ranges::input_range;
  requires NativeCompletion<std::ranges::range_value_t<decltype(t.drain_completions())>>;
  t.close();
};

// NativeConnectorWithDelete
//
// A NativeConnector that also has submit_batch_delete(keys) (LMCache added it later).
template <class T>
concept NativeConnectorWithDelete = NativeConnector<T> &&
    requires(T& t, const std::vector<std::string>& keys) {
  { t.submit_batch_delete(keys) } -> std::convertible_to<std::uint64_t>;
};

}  // namespace lmcache::bridge

namespace lmcache::bridge_internal {

template <class T>
consteval bool declares_per_key_get_results() {
  if constexpr (requires { typename std::bool_constant<T::kPerKeyGetResults>; }) {
    return T::kPerKeyGetResults;
  } else {
    return false;
  }
}

}  // namespace lmcache::bridge_internal

namespace lmcache::bridge {

// ConnectorTraits
//
// What the bridge knows about a connector type at compile time. Specialize it for a type whose
// definition you cannot change.
template <class T>
struct ConnectorTraits {
  // submit_batch_delete() exists.
  static constexpr bool kHasBatchDelete = NativeConnectorWithDelete<T>;
  // A get completion always carries one hit flag per key (0 = miss, 1 = hit), so a batch with
  // misses still completes ok.
  static constexpr bool kPerKeyGetResults = bridge_internal::declares_per_key_get_results<T>();
};

}  // namespace lmcache::bridge
