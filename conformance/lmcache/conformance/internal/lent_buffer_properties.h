// File: lmcache/conformance/internal/lent_buffer_properties.h
//
// The properties of the optional lent store buffers (L2AdapterInterface::lend_store_buffers(),
// docs/l2-adapter.md): a lent buffer is written once (by the caller, never by the adapter, and
// never lent while another lent buffer or a stored key still uses its memory), released on
// failure (whatever path it takes, lent_bytes_outstanding() comes back), and never visible
// before the store that adopts it. Scenario properties: fixed layouts from the descriptor's
// first dtype, several batch sizes, no random cases. Defined in lent_buffer_conformance.cc.
//
// An adapter that lends nothing for a small request is NotSupported (the capability is
// optional); a wrapper that never asks its inner to lend passes the wrapper property trivially.
#pragma once

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal::lent_buffer_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// Adapter: lent buffers come as asked (count, layout, size), pairwise disjoint and disjoint from
// every buffer still lent or stored; what the caller writes stays untouched by the adapter until
// it submits; after stores, later lends never alias stored bytes (every key loads back what was
// written into its buffer, narrowed ones included).
Verdict LentBufferWrittenOnce(const AdapterUnderTest& adapter);

// Adapter: lent_bytes_outstanding() is 0 on a fresh adapter, grows by the physical size of every
// lent buffer, and comes back by it when the buffer is dropped unsubmitted, adopted by its
// store, dropped after a store under another key, or dropped after close(); lending changes no
// usage.
Verdict LentBufferReleasedOnFailure(const AdapterUnderTest& adapter);

// Adapter: lending and writing a buffer makes nothing visible (lookups miss, loads miss and
// leave the destination untouched, listeners hear of no store); only its store does, and a
// dropped buffer never does.
Verdict LentBufferInvisibleBeforeStore(const AdapterUnderTest& adapter);

// Wrapper over the reference mock (which lends): after every completed store -- successful,
// failed in the serde, or failed by close() -- the inner's lent_bytes_outstanding() is back at
// 0, a failed store leaves its keys absent, and stored keys load back the serde round trip.
Verdict WrapperLentBuffersReleasedOnFailure(const WrapperUnderTest& wrapper);

}  // namespace lmcache::conformance_internal::lent_buffer_properties
