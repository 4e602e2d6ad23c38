// File: lmcache/fault/mutants.h
//
// Deliberately broken components ("mutants") that prove the campaign catches what it claims:
// each one breaks one contract of the stack, and a campaign run with it must fail with a
// violation of the named invariant. They are selected with `lmcache-fault-campaign --mutant
// <name>`; the ctest entries run the real binary and assert a non-zero exit and the invariant
// name in its output. Never use them outside tests.
//
// Where they sit in the campaign's stack
//   caller -> [double_complete] -> SerdeL2AdapterWrapper -> [adapter mutants] ->
//   FaultInjectL2Adapter -> inner adapter;
//   the wrapper's serde: FaultySerdeProcessor -> [serde_never_signals] ... and the fp8
//   deserializer -> [wrong_bytes].
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "lmcache/fault/fault_log.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::fault {

// StackMutant
//
// A broken part of the campaign's stack (not to be confused with the conformance kit's
// conformance::selftest::Mutant, a broken implementation run under one property).
enum class StackMutant : std::uint8_t {
  kNone,
  kSuccessOnFailure,    // adapter: a failed store (e.g. an injected store_fail) reports success
  kNeverComplete,       // adapter: the 3rd load task never completes
  kWrongBytes,          // deserializer: every 5th call succeeds with one byte wrong
  kL1Leak,              // adapter: every 4th load keeps an extra L1 reservation forever
  kSerdeNeverSignals,   // serde processor: the 3rd deserialize result is never delivered
  kFailedStoreVisible,  // adapter: every 4th successful store reports failure, keys kept
  kDoubleComplete,      // around the wrapper: the 2nd store result is delivered twice
  kFdLeak,              // adapter: opens an eventfd it never closes
  kThreadLeak,          // adapter: starts a thread that outlives close()
};

// StackMutantInfo
//
// `faults` is the --faults value a run needs for the mutant to bite ("none" when it needs no
// fault); `invariant` is the violation the campaign must report.
struct StackMutantInfo {
  StackMutant mutant;
  std::string_view name;
  std::string_view faults;
  std::string_view invariant;
  std::string_view description;
};

std::span<const StackMutantInfo> all_mutants();
const StackMutantInfo& mutant_info(StackMutant mutant);
// parse_mutant(): "none" or a name of all_mutants(); nullopt otherwise.
std::optional<StackMutant> parse_mutant(std::string_view name);

// wrap_adapter_mutant()
//
// Puts the adapter-level mutant (success_on_failure, never_complete, l1_leak,
// failed_store_visible, fd_leak, thread_leak) around `inner`; returns `inner` unchanged for any
// other mutant. `l1` is needed by l1_leak, `log` by failed_store_visible (it records the
// failure it invents, so that the failure itself is explained).
L2AdapterPtr wrap_adapter_mutant(StackMutant mutant, L2AdapterPtr inner,
                                 std::shared_ptr<L1Manager> l1, std::shared_ptr<FaultLog> log);

// wrap_top_mutant()
//
// double_complete around the whole stack; `inner` unchanged otherwise.
L2AdapterPtr wrap_top_mutant(StackMutant mutant, L2AdapterPtr inner);

// wrap_deserializer_mutant() / wrap_processor_mutant()
//
// wrong_bytes around a deserializer; serde_never_signals around a processor; unchanged
// otherwise.
DeserializerPtr wrap_deserializer_mutant(StackMutant mutant, DeserializerPtr inner);
SerdeProcessorPtr wrap_processor_mutant(StackMutant mutant, SerdeProcessorPtr inner);

}  // namespace lmcache::fault
