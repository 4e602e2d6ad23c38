#include "lmcache/bridge/batch_connector_base.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "lmcache/core/event_notifier.h"

namespace lmcache::bridge {
namespace {

using namespace std::chrono_literals;

// A connector over a map, with a gate that blocks every tile until opened, and keys that fail.
class MapConnector final : public BatchConnectorBase {
 public:
  explicit MapConnector(std::size_t workers, ReadPoolOptions reads = {})
      : BatchConnectorBase(workers, "map", reads) {
    start_workers();
  }
  ~MapConnector() override { close(); }

  void close_gate() {
    std::lock_guard lock(mu_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }
  std::set<std::size_t> workers_seen() {
    std::lock_guard lock(mu_);
    return workers_seen_;
  }
  std::size_t tiles_run() {
    std::lock_guard lock(mu_);
    return tiles_;
  }

 protected:
  void run_tile(std::size_t worker, Tile& tile) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return gate_open_ || stopping(); });
    workers_seen_.insert(worker);
    ++tiles_;
    for (std::size_t i = 0; i < tile.keys.size(); ++i) {
      const std::string& k = tile.keys[i];
      if (k == "throw") throw std::runtime_error("boom on " + k);
      switch (tile.op) {
        case Op::kSet:
          if (k == "refuse") {
            tile.error = "refused " + k;
            continue;
          }
          data_[k] = std::string(static_cast<const char*>(tile.bufs[i]), tile.lens[i]);
          tile.results[i] = 1;
          break;
        case Op::kGet: {
          auto it = data_.find(k);
          if (it == data_.end() || it->second.size() != tile.lens[i]) {
            if (k == "bad") tile.error = "bad key";
            continue;
          }
          std::memcpy(tile.bufs[i], it->second.data(), tile.lens[i]);
          tile.results[i] = 1;
          break;
        }
        case Op::kExists:
          tile.results[i] = data_.count(k) ? 1 : 0;
          break;
        case Op::kDelete:
          tile.results[i] = data_.erase(k) ? 1 : 0;
          break;
      }
    }
  }
  void interrupt_workers() override {
    { std::lock_guard lock(mu_); }  // a worker between its check and its wait cannot miss this
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;
  std::map<std::string, std::string> data_;
  std::set<std::size_t> workers_seen_;
  std::size_t tiles_ = 0;
};

std::vector<Completion> wait_for(BatchConnectorBase& c, std::size_t n) {
  std::vector<Completion> out;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    wait_readable(c.event_fd(), 10ms);
    for (Completion& done : c.drain_completions()) out.push_back(std::move(done));
  }
  return out;
}

TEST(BatchConnectorBase, BatchesRoundTripWithPerKeyResults) {
  MapConnector c(3);
  std::string a(16, 'a'), b(16, 'b');
  const std::uint64_t set = c.submit_batch_set({"a", "b"}, {a.data(), b.data()}, {16, 16}, 16);
  auto done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].future_id, set);
  EXPECT_TRUE(done[0].ok);
  EXPECT_EQ(done[0].result_bytes, (std::vector<std::uint8_t>{1, 1}));

  std::string x(16, '.'), y(16, '.'), z(16, '.');
  c.submit_batch_get({"b", "missing", "a"}, {x.data(), y.data(), z.data()}, {16, 16, 16}, 16);
  done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << "a get with misses stays ok";
  EXPECT_EQ(done[0].result_bytes, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(x, b);
  EXPECT_EQ(y, std::string(16, '.'));
  EXPECT_EQ(z, a);

  c.submit_batch_exists({"a", "missing"});
  done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result_bytes, (std::vector<std::uint8_t>{1, 0}));
  c.submit_batch_delete({"a", "missing"});
  done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result_bytes, (std::vector<std::uint8_t>{1, 0}));
}

TEST(BatchConnectorBase, FailuresFollowTheOpRules) {
  MapConnector c(2);
  std::string v(4, 'v');
  c.submit_batch_set({"ok", "refuse"}, {v.data(), v.data()}, {4, 4}, 4);
  c.submit_batch_exists({"throw"});
  c.submit_batch_get({"bad"}, {v.data()}, {4}, 4);
  auto done = wait_for(c, 3);
  ASSERT_EQ(done.size(), 3u);
  std::map<std::uint64_t, Completion> by_id;
  for (auto& d : done) by_id[d.future_id] = d;
  EXPECT_FALSE(by_id[1].ok);
  EXPECT_NE(by_id[1].error.find("refused refuse"), std::string::npos) << by_id[1].error;
  EXPECT_FALSE(by_id[2].ok);
  EXPECT_NE(by_id[2].error.find("boom"), std::string::npos);
  EXPECT_TRUE(by_id[3].ok) << "a get error is a miss, the batch stays ok";
  EXPECT_EQ(by_id[3].result_bytes, (std::vector<std::uint8_t>{0}));
  EXPECT_EQ(by_id[3].error, "map: bad key");
}

TEST(BatchConnectorBase, RejectsMalformedBatches) {
  MapConnector c(1);
  std::string v(4, 'v');
  EXPECT_THROW(c.submit_batch_set({}, {}, {}, 4), std::invalid_argument);
  EXPECT_THROW(c.submit_batch_exists({}), std::invalid_argument);
  EXPECT_THROW(c.submit_batch_set({"a"}, {v.data(), v.data()}, {4, 4}, 4), std::invalid_argument);
  EXPECT_THROW(c.submit_batch_set({"a", "b"}, {v.data(), v.data()}, {4, 3}, 4),
               std::invalid_argument);
  EXPECT_THROW(c.submit_batch_get({"a"}, {nullptr}, {4}, 4), std::invalid_argument);
  c.close();
  EXPECT_THROW(c.submit_batch_exists({"a"}), std::logic_error);
  EXPECT_EQ(c.event_fd(), -1);
  EXPECT_TRUE(c.report_status()["closed"].get<bool>());
}

TEST(BatchConnectorBase, TilesSpreadOverTheWorkers) {
  MapConnector c(4);
  std::vector<std::string> keys;
  for (int i = 0; i < 8; ++i) keys.push_back("k" + std::to_string(i));
  c.submit_batch_exists(keys);
  auto done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].result_bytes.size(), 8u);
  EXPECT_EQ(c.tiles_run(), 4u);
  c.submit_batch_exists({"a", "b"});
  wait_for(c, 1);
  EXPECT_EQ(c.tiles_run(), 6u) << "a batch of 2 keys is 2 tiles";
}

TEST(BatchConnectorBase, AReadPoolRunsGetsOnItsOwnWorkers) {
  std::vector<std::string> keys, values(6, std::string(16, 'v'));
  std::vector<void*> bufs;
  for (int i = 0; i < 6; ++i) {
    keys.push_back("k" + std::to_string(i));
    bufs.push_back(values[i].data());
  }
  const std::vector<std::size_t> lens(6, 16);
  {
    MapConnector c(2, ReadPoolOptions{3, 0});
    EXPECT_EQ(c.total_workers(), 5u);
    c.submit_batch_get(keys, bufs, lens, 16);
    ASSERT_EQ(wait_for(c, 1).size(), 1u);
    EXPECT_EQ(c.tiles_run(), 3u) << "a get is cut into at most read_io_depth tiles";
    for (std::size_t w : c.workers_seen()) EXPECT_GE(w, 2u) << "a get ran on a write worker";
    const Json status = c.report_status();
    EXPECT_EQ(status["read_io_depth"], 3);
    EXPECT_EQ(status["read_max_bytes_in_flight"], ReadPoolOptions::kDefaultMaxBytesInFlight);
  }
  {
    MapConnector c(2, ReadPoolOptions{3, 0});
    c.submit_batch_exists(keys);
    ASSERT_EQ(wait_for(c, 1).size(), 1u);
    for (std::size_t w : c.workers_seen()) EXPECT_LT(w, 2u) << "an exists ran on a reader";
  }
  {
    MapConnector c(2);  // no read pool: gets share the workers
    c.submit_batch_get(keys, bufs, lens, 16);
    ASSERT_EQ(wait_for(c, 1).size(), 1u);
    for (std::size_t w : c.workers_seen()) EXPECT_LT(w, 2u);
    EXPECT_EQ(c.report_status()["read_io_depth"], 0);
  }
  EXPECT_THROW(MapConnector(1, ReadPoolOptions{ReadPoolOptions::kMaxIoDepth + 1, 0}),
               std::invalid_argument);
}

// Polls the status until `pred` holds (bounded); returns whether it did.
template <class Pred>
bool status_reaches(BatchConnectorBase& c, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(c.report_status())) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST(BatchConnectorBaseConcurrency, TheReadBudgetBoundsGetBytesInFlight) {
  // Eight 16-byte get tiles, eight readers, a 32-byte budget: two tiles at a time.
  MapConnector c(1, ReadPoolOptions{8, 32});
  std::vector<std::string> keys, values(8, std::string(16, 'v'));
  std::vector<void*> bufs;
  for (int i = 0; i < 8; ++i) {
    keys.push_back("k" + std::to_string(i));
    bufs.push_back(values[i].data());
  }
  c.close_gate();
  c.submit_batch_get(keys, bufs, std::vector<std::size_t>(8, 16), 16);
  EXPECT_TRUE(status_reaches(c,
                             [](const Json& s) {
                               return s["read_bytes_in_flight"] == 32 &&
                                      s["read_tiles_held"].get<std::uint64_t>() >= 1;
                             }))
      << "two tiles did not start with six held: " << c.report_status().dump();
  c.open_gate();
  const auto done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok);
  const Json status = c.report_status();
  EXPECT_EQ(status["read_bytes_in_flight_peak"], 32) << status.dump();
  EXPECT_EQ(status["read_bytes_in_flight"], 0);
  EXPECT_EQ(c.tiles_run(), 8u);
}

TEST(BatchConnectorBaseConcurrency, AGetTileAboveTheBudgetRunsAlone) {
  MapConnector c(1, ReadPoolOptions{2, 8});
  std::string a(16, 'a'), b(16, 'b');
  c.submit_batch_get({"a", "b"}, {a.data(), b.data()}, {16, 16}, 16);
  const auto done = wait_for(c, 1);
  ASSERT_EQ(done.size(), 1u) << "a tile larger than the whole budget never ran";
  EXPECT_EQ(c.report_status()["read_bytes_in_flight_peak"], 16) << "two ran at once";
}

TEST(BatchConnectorBaseConcurrency, CloseDropsQueuedWorkPromptly) {
  MapConnector c(2);
  c.close_gate();
  for (int i = 0; i < 10; ++i) c.submit_batch_exists({"a", "b", "c"});
  c.close();  // the blocked workers are interrupted; nothing completes afterwards
  EXPECT_TRUE(c.drain_completions().empty());
  EXPECT_EQ(c.report_status()["batches_completed"], 0);
}

TEST(BatchConnectorBaseConcurrency, ManySubmittersEachGetTheirCompletion) {
  MapConnector c(4);
  constexpr int kThreads = 4, kBatches = 50;
  std::mutex mu;
  std::set<std::uint64_t> submitted;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBatches; ++i) {
        const std::uint64_t id = c.submit_batch_exists({"t" + std::to_string(t), "x", "y"});
        std::lock_guard lock(mu);
        EXPECT_TRUE(submitted.insert(id).second) << "future id " << id << " handed out twice";
      }
    });
  }
  std::set<std::uint64_t> completed;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (completed.size() < kThreads * kBatches && std::chrono::steady_clock::now() < deadline) {
    wait_readable(c.event_fd(), 10ms);
    for (Completion& d : c.drain_completions()) {
      EXPECT_TRUE(completed.insert(d.future_id).second) << "completed twice: " << d.future_id;
      EXPECT_EQ(d.result_bytes.size(), 3u);
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(completed, submitted);
}

}  // namespace
}  // namespace lmcache::bridge
