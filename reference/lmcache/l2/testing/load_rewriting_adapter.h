// File: lmcache/l2/testing/load_rewriting_adapter.h
//
// LoadRewritingAdapter: a decorator for test doubles and mutants whose bug lives in what a load
// answers. It forwards everything, numbers each load at its submit and remembers its key count,
// and hands every query of a load's result to rewrite_load_result(), which decides what the
// caller gets. A double overrides that one step.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "lmcache/l2/forwarding_adapter.h"

namespace lmcache::l2_testing {

class LoadRewritingAdapter : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) final {
    const TaskId id = ForwardingL2Adapter::submit_load_task(keys, objects);
    std::lock_guard lock(mu_);
    loads_[id] = Load{submitted_++, keys.size()};
    return id;
  }

  std::optional<Bitmap> query_load_result(TaskId id) final {
    Load load;
    {
      std::lock_guard lock(mu_);
      auto it = loads_.find(id);
      if (it == loads_.end()) return ForwardingL2Adapter::query_load_result(id);
      load = it->second;
    }
    std::optional<Bitmap> bits =
        rewrite_load_result(load.index, load.keys, ForwardingL2Adapter::query_load_result(id));
    if (bits) {
      std::lock_guard lock(mu_);
      loads_.erase(id);
    }
    return bits;
  }

 protected:
  // rewrite_load_result()
  //
  // What a query of the `index`-th load (0 first, in submit order) of `keys` keys answers, given
  // the inner's answer `inner` (nullopt: not complete, or already taken). Runs without the
  // decorator's lock, possibly on several threads at once.
  virtual std::optional<Bitmap> rewrite_load_result(std::size_t index, std::size_t keys,
                                                    std::optional<Bitmap> inner) = 0;

 private:
  struct Load {
    std::size_t index = 0;
    std::size_t keys = 0;
  };
  std::mutex mu_;
  std::size_t submitted_ = 0;
  std::map<TaskId, Load> loads_;
};

}  // namespace lmcache::l2_testing
