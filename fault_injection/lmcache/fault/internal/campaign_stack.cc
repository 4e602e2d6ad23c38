#include "lmcache/fault/internal/campaign_stack.h"

#include <exception>
#include <utility>

#include "lmcache/fault/fault_hooks.h"
#include "lmcache/fault/mutants.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fault_internal {

namespace {

// The breaker cooldown given to resp over the campaign's own server (epoch_inner_config()).
constexpr int kCampaignBreakerCooldownMs = 100;

}  // namespace

Json epoch_inner_config(const fault::CampaignOptions& options, std::uint64_t epoch,
                        std::string* key_namespace) {
  Json inner = options.inner;
  const std::string type = inner.value("type", "");
  if (type != "resp" && type != "fs") {
    key_namespace->clear();
    return inner;
  }
  const std::string base = inner.value("key_namespace", "");
  *key_namespace = (base.empty() ? "" : base + "-") + "s" + std::to_string(options.seed) + "e" +
                   std::to_string(epoch);
  inner["key_namespace"] = *key_namespace;
  // The run's operations then go to the restarted server, where losses and every other kind
  // can show, rather than to a breaker's 5 s wait.
  if (type == "resp" && options.storage_faults && !inner.contains("breaker_cooldown_ms")) {
    inner["breaker_cooldown_ms"] = kCampaignBreakerCooldownMs;
  }
  return inner;
}

CampaignStack::CampaignStack(const fault::CampaignOptions& o, std::uint64_t epoch,
                             std::shared_ptr<fault::FaultLog> log) {
  using namespace ::lmcache::fault;
  const std::int64_t seed = static_cast<std::int64_t>(o.seed);
  L1AllocFaultHook hook(o.plan.l1, seed, log);
  l1_ = std::make_shared<L1Manager>(o.l1_capacity_bytes, hook.factory());
  AdapterContext ctx{l1_};
  L2AdapterPtr inner = create_l2_adapter(epoch_inner_config(o, epoch, &key_namespace_), ctx);
  mock_ = dynamic_cast<MockL2Adapter*>(inner.get());
  auto fault = std::make_unique<FaultInjectL2Adapter>(std::move(inner), o.plan.adapter, log);
  fault_ = fault.get();
  L2AdapterPtr below = wrap_adapter_mutant(o.mutant, std::move(fault), l1_, log);
  SerdeDecorators deco;
  const StackMutant m = o.mutant;
  deco.deserializer = [m](DeserializerPtr d) { return wrap_deserializer_mutant(m, std::move(d)); };
  deco.processor = [m](SerdeProcessorPtr p) { return wrap_processor_mutant(m, std::move(p)); };
  FaultySerde serde = make_faulty_serde_processor(o.serde, o.plan.serde, seed, log, deco);
  auto wrapper =
      std::make_unique<SerdeL2AdapterWrapper>(std::move(below), std::move(serde.processor), l1_);
  wrapper_ = wrapper.get();
  top_ = wrap_top_mutant(o.mutant, std::move(wrapper));
  store_fd_ = top_->get_store_event_fd();
  load_fd_ = top_->get_load_event_fd();
  lookup_fd_ = top_->get_lookup_and_lock_event_fd();
  l1_baseline_ = l1_->get_memory_usage().used_bytes;
}

std::string CampaignStack::describe(const std::optional<ObjectKey>& key) {
  std::string out;
  try {
    if (key) out += "; fault injector: " + fault_->describe_task(*key);
    out += "; wrapper tasks_in_flight by phase: " +
           wrapper_->report_status()["serde_wrapper"]["tasks_in_flight"].dump();
  } catch (const std::exception& e) {
    out += std::string("; (status unavailable: ") + e.what() + ")";
  }
  return out;
}

}  // namespace lmcache::fault_internal
