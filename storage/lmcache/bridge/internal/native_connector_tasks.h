// File: lmcache/bridge/internal/native_connector_tasks.h
//
// The bridge's private bookkeeping types (NativeConnectorL2Adapter's nested Task, Batch,
// Submission and Outbox), shared by its two source files: native_connector_adapter.cc (submits,
// tables, launch, close) and native_connector_adapter_completions.cc (connector completions,
// deadlines and the loop). Private to the bridge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/bridge/native_connector_adapter.h"

namespace lmcache::bridge {

struct NativeConnectorL2Adapter::Task {
  TaskKind kind = TaskKind::kStore;
  TaskId l2_id = 0;
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> objects;  // store: sources; load: destinations
  std::vector<std::uint64_t> lens;    // store: bytes of each object; load: get length of each
  std::vector<std::uint8_t> hit;      // lookup, load: per key
  std::vector<std::size_t> sent;      // store: the indices sent (first copy of each key)
  std::vector<std::size_t> settled;   // store: indices whose set batch has completed
  std::uint64_t bytes_sent = 0;
  std::uint64_t reserved = 0;  // capacity reserved by a store
  std::uint64_t epoch = 0;     // stores published before this task was submitted
  std::size_t pending = 0;     // connector batches not completed
  bool failed = false;
  bool in_cleanup = false;  // store: failed, its cleanup delete is out
  Clock::time_point deadline;
  CircuitBreaker::Admission admission;  // what the breaker said at its submit
};

// One connector batch (one future id).
struct NativeConnectorL2Adapter::Batch {
  Op op = Op::kSet;
  std::uint64_t task = 0;          // serial of its task; 0 or a finished task: abandoned
  std::vector<std::size_t> idx;    // the task's key indices, in batch order
  std::vector<ObjectKey> keys;     // set, delete: the keys, for the cleanup of a late batch
  std::vector<MemoryObjPtr> pins;  // buffers the connector may touch until it completes
};

struct NativeConnectorL2Adapter::Submission {
  Batch batch;
  std::vector<std::string> keys;
  std::vector<void*> bufs;
  std::vector<std::size_t> lens;
  std::size_t chunk = 0;
};

struct NativeConnectorL2Adapter::Outbox {
  std::vector<std::function<void()>> actions;
  void add(std::function<void()> fn) { actions.push_back(std::move(fn)); }
};

}  // namespace lmcache::bridge
