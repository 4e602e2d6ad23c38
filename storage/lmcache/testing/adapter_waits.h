// Waiting for one task of an L2 adapter in the storage tests: its result, read when its fd
// says something completed, or nothing after `timeout`.
#pragma once

#include <chrono>
#include <optional>

#include "lmcache/core/bitmap.h"
#include "lmcache/core/l2_store_result.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::storage_testing {

// wait_store() / wait_load()
//
// The result of store (load) task `id` of `a`, or std::nullopt when it has not completed within
// `timeout`. A store's result is taken with pop_completed_store_tasks(): other completed stores
// popped meanwhile are dropped.
std::optional<L2StoreResult> wait_store(
    L2AdapterInterface& a, TaskId id, std::chrono::milliseconds timeout = std::chrono::seconds(20));
std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id,
                                std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace lmcache::storage_testing
