#include "lmcache/core/factory_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/testing/expect_invalid.h"

namespace lmcache {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using IntFactory = std::function<int()>;
using IntRegistry = FactoryRegistry<IntFactory>;

std::string message_of(const std::function<void()>& f) {
  return core_internal::invalid_argument_message(f);
}

TEST(FactoryRegistry, BuiltinsAreThereFromConstruction) {
  IntRegistry r("widget type", [](IntRegistry& self) { self.add("one", [] { return 1; }); });
  EXPECT_THAT(r.names(), ElementsAre("one"));
  EXPECT_EQ(r.get("one")(), 1);
  EXPECT_EQ(r.kind(), "widget type");
}

TEST(FactoryRegistry, NamesAreSorted) {
  IntRegistry r("widget type");
  r.add("b", [] { return 2; });
  r.add("a", [] { return 1; });
  r.add("c", [] { return 3; });
  EXPECT_THAT(r.names(), ElementsAre("a", "b", "c"));
}

TEST(FactoryRegistry, DuplicateNameIsRejectedAndKeepsTheFirst) {
  IntRegistry r("widget type");
  r.add("x", [] { return 1; });
  const std::string msg = message_of([&] { r.add("x", [] { return 2; }); });
  EXPECT_THAT(msg, HasSubstr("Widget type already registered: 'x'"));
  EXPECT_EQ(r.get("x")(), 1);
}

TEST(FactoryRegistry, EmptyNameAndEmptyFactoryAreRejected) {
  IntRegistry r("widget type");
  EXPECT_THAT(message_of([&] { r.add("", [] { return 1; }); }), HasSubstr("name is empty"));
  EXPECT_THAT(message_of([&] { r.add("y", IntFactory{}); }), HasSubstr("factory is empty"));
  EXPECT_TRUE(r.names().empty());
}

TEST(FactoryRegistry, UnknownNameListsTheRegisteredOnes) {
  IntRegistry r("widget type");
  EXPECT_THAT(message_of([&] { r.get("nope"); }),
              HasSubstr("Unknown widget type 'nope'. Registered: (none)"));
  r.add("a", [] { return 1; });
  r.add("b", [] { return 2; });
  EXPECT_THAT(message_of([&] { r.get("nope"); }),
              HasSubstr("Unknown widget type 'nope'. Registered: a, b"));
  EXPECT_FALSE(r.find("nope").has_value());
}

TEST(FactoryRegistry, RemoveReportsWhetherTheNameWasThere) {
  IntRegistry r("widget type");
  r.add("a", [] { return 1; });
  EXPECT_TRUE(r.remove("a"));
  EXPECT_FALSE(r.remove("a"));
  EXPECT_FALSE(r.find("a").has_value());
}

TEST(FactoryRegistry, AFactoryMayUseTheRegistry) {
  // Lookups copy the factory out, so a factory that looks up another one does not deadlock.
  IntRegistry r("widget type");
  r.add("inner", [] { return 7; });
  r.add("outer", [&r] { return r.get("inner")() + 1; });
  EXPECT_EQ(r.get("outer")(), 8);
}

TEST(FactoryRegistryConcurrency, ConcurrentAddsKeepEveryNameOnce) {
  IntRegistry r("widget type");
  constexpr int kThreads = 4;
  constexpr int kNames = 50;
  std::atomic<int> duplicates{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kNames; ++i) {
        try {
          r.add("n" + std::to_string(i), [i] { return i; });
        } catch (const std::invalid_argument&) {
          duplicates.fetch_add(1);
        }
        (void)r.find("n" + std::to_string(i));
        (void)r.names();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(r.names().size(), static_cast<std::size_t>(kNames));
  EXPECT_EQ(duplicates.load(), (kThreads - 1) * kNames);
  for (int i = 0; i < kNames; ++i) EXPECT_EQ(r.get("n" + std::to_string(i))(), i);
}

}  // namespace
}  // namespace lmcache
