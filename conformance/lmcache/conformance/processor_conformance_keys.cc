// ProcessorConformance's key properties: a processor hands pair i's key to pair i's serde call
// in both directions, whatever batch the pair travels in (KeysFollowTheirPairs), and a
// processor over a serde of a type the project knows produces and reads the reference's frames
// under each pair's own key (MatchesReference). Keys come from the whole key domain, several
// per batch differing in one field.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/reference_checks.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// Serializes `inputs` in one task under `keys`; the narrowed temps.
std::vector<MemoryObjPtr> serialize_batch(SerdeProcessor& p,
                                          const std::vector<MemoryObjPtr>& inputs,
                                          const std::vector<ObjectKey>& keys) {
  std::vector<MemoryObjPtr> temps;
  for (const auto& in : inputs) temps.push_back(temp_for(p, in->layout()));
  TaskId id = p.submit_serialize(inputs, temps, keys);
  require(take_result(p, Dir::kSerialize, id, "a batched serialize"),
          "a serialize of " + std::to_string(inputs.size()) + " valid pair(s) completed false");
  return temps;
}

// Deserializes the pairs `order` of `temps` in one task, each under its own key, and checks
// each against its input. `how` says which batch this is.
void deserialize_in(SerdeProcessor& p, const std::vector<MemoryObjPtr>& inputs,
                    const std::vector<MemoryObjPtr>& temps, const std::vector<ObjectKey>& keys,
                    const std::vector<std::size_t>& order, const std::string& how) {
  std::vector<MemoryObjPtr> srcs, outs;
  std::vector<ObjectKey> ks;
  for (std::size_t i : order) {
    srcs.push_back(temps[i]);
    outs.push_back(make_object(inputs[i]->layout()));
    ks.push_back(keys[i]);
  }
  TaskId id = p.submit_deserialize(srcs, outs, ks);
  require(take_result(p, Dir::kDeserialize, id, how),
          how + ": a deserialize of pairs serialized in one batch, each under its own key, " +
              "completed false (the keys did not reach their pairs?)");
  for (std::size_t k = 0; k < order.size(); ++k) {
    std::string m = decoded_mismatch(*inputs[order[k]], *outs[k]);
    require(m.empty(), how + ": pair " + std::to_string(order[k]) + " (key " +
                           keys[order[k]].to_string() + ") decoded to another value: " + m);
  }
}

// The pairs above hold values every serde keeps, where a lossy serde's rounding and saturation
// never show: a processor whose serde truncates where its reference rounds to nearest even
// matched there. Here the inputs span the whole value domain (every exponent, subnormals, NaN
// and +-inf): a deterministic reference fixes every byte of their frames, and the processor must
// read the reference's frames to the values the reference reads them to (any NaN as a NaN).
// Values the reference refuses set no contract: the check is skipped for them.
void matches_reference_over_the_value_domain(SerdeProcessor& p, const ReferenceSerde& ref,
                                             const MemoryLayoutDesc& layout,
                                             const std::vector<ObjectKey>& keys,
                                             std::uint64_t seed) {
  SerializerPtr ref_ser = ref.make_serializer();
  DeserializerPtr ref_deser = ref.make_deserializer();
  std::vector<MemoryObjPtr> inputs, frames;
  std::vector<std::vector<std::byte>> want;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    MemoryObjPtr in = make_object(layout);
    fill_values(*in, ValueSpec{}, seed + i);
    std::size_t est = 0;
    SerializeOutcome out = serialize_at_estimate(*ref_ser, *in, &est, keys[i]);
    if (!out.error.empty()) return;
    MemoryObjPtr frame = make_object(byte_layout(std::max<std::size_t>(est, 1)));
    if (out.count > 0) std::memcpy(frame->data(), out.bytes.data(), out.count);
    frame->set_used_size(out.count);
    inputs.push_back(in);
    frames.push_back(frame);
    want.push_back(std::move(out.bytes));
  }
  const std::vector<MemoryObjPtr> temps = serialize_batch(p, inputs, keys);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string at = "pair " + std::to_string(i) + " of " + std::to_string(keys.size()) +
                           " over the whole value domain" + where(layout, keys[i]);
    const auto* bytes = reinterpret_cast<const std::byte*>(temps[i]->data());
    const std::vector<std::byte> got(bytes, bytes + temps[i]->size());
    require(got == want[i], "the processor's frame of " + at + " differs from the reference " +
                                ref.type + "'s: " + first_byte_difference(want[i], got) +
                                " (rounding or saturation other than the reference's?)");
  }
  std::vector<MemoryObjPtr> outs = zeroed_objects(layout, keys.size());
  TaskId id = p.submit_deserialize(frames, outs, keys);
  require(take_result(p, Dir::kDeserialize, id, "deserialize of the reference's frames"),
          "the processor could not read the reference " + ref.type + "'s frames of " +
              std::to_string(keys.size()) + " pair(s) of " + layout.to_string() +
              " over the whole value domain");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const ReadOutcome read = read_frame(*ref_deser, *frames[i], layout, keys[i]);
    require(read.accepted, "the reference " + ref.type + " rejected its own frame of pair " +
                               std::to_string(i) + ": " + read.error);
    const auto* bytes = reinterpret_cast<const std::byte*>(outs[i]->data());
    const std::vector<std::byte> got(bytes, bytes + layout.total_bytes());
    if (std::string d = decoded_difference(layout, read.decoded, got); !d.empty()) {
      fail_case("the processor read the reference " + ref.type + "'s frame of pair " +
                std::to_string(i) +
                " over the whole value domain as other values than the "
                "reference does: " +
                d + where(layout, keys[i]));
    }
  }
}

}  // namespace

Verdict KeysFollowTheirPairs(const ProcessorUnderTest& put) {
  return run_rc_property(
      rc_id("KeysFollowTheirPairs", put), {.max_success = 10, .shrink = false}, [&] {
        const DepthProfile& profile = current_profile();
        const auto pairs =
            std::max<std::size_t>(2, *gen_batch_size(std::min<std::size_t>(profile.max_batch, 24)));
        // Each pair its own layout size within one layout family, its own values and key.
        MemoryLayoutDesc layout = gen_processor_layout(put, 1u << 12);
        std::vector<MemoryObjPtr> inputs;
        for (std::size_t i = 0; i < pairs; ++i) inputs.push_back(safe_input(layout, 500 + i));
        const std::vector<ObjectKey> keys = gen_pair_keys(pairs);
        OwnedProcessor p(put);
        const std::vector<MemoryObjPtr> temps = serialize_batch(*p, inputs, keys);
        // Alone, one task per pair.
        for (std::size_t i = 0; i < pairs; ++i) {
          deserialize_in(*p, inputs, temps, keys, {i},
                         "pair " + std::to_string(i) + " of " + std::to_string(pairs) + " alone");
        }
        // The whole batch in reverse order.
        std::vector<std::size_t> order(pairs);
        std::iota(order.begin(), order.end(), 0);
        std::reverse(order.begin(), order.end());
        deserialize_in(*p, inputs, temps, keys, order, "the batch in reverse order");
        // A shuffled subset, then the rest, as two other batches.
        std::vector<std::size_t> perm(pairs);
        std::iota(perm.begin(), perm.end(), 0);
        for (std::size_t i = pairs - 1; i > 0; --i) {
          std::swap(perm[i], perm[*uniform_in_range<std::size_t>(0, i + 1)]);
        }
        const auto cut = static_cast<std::ptrdiff_t>(*uniform_in_range<std::size_t>(1, pairs));
        deserialize_in(*p, inputs, temps, keys, {perm.begin(), perm.begin() + cut},
                       "a shuffled subset of the batch");
        deserialize_in(*p, inputs, temps, keys, {perm.begin() + cut, perm.end()},
                       "the rest of the batch, shuffled");
      });
}

Verdict MatchesReference(const ProcessorUnderTest& put) {
  const ReferenceSerde& ref = put.reference;
  if (!ref.make_serializer || !ref.make_deserializer) {
    return Verdict::not_supported(
        "the descriptor names no reference implementation (ProcessorUnderTest::reference)");
  }
  return run_rc_property(rc_id("MatchesReference", put), {.max_success = 10, .shrink = false}, [&] {
    const DepthProfile& profile = current_profile();
    MemoryLayoutDesc layout = gen_processor_layout(put, profile.max_group_elements);
    const std::size_t pairs = std::clamp<std::size_t>(
        profile.max_group_elements / std::max<std::size_t>(1, layout.total_elements()), 1,
        *gen_batch_size(std::min<std::size_t>(profile.max_batch, 16)));
    std::vector<MemoryObjPtr> inputs;
    for (std::size_t i = 0; i < pairs; ++i) inputs.push_back(safe_input(layout, 900 + i));
    const std::vector<ObjectKey> keys = gen_pair_keys(pairs);
    OwnedProcessor p(put);
    const std::vector<MemoryObjPtr> temps = serialize_batch(*p, inputs, keys);
    SerializerPtr ref_ser = ref.make_serializer();
    DeserializerPtr ref_deser = ref.make_deserializer();
    std::vector<MemoryObjPtr> ref_frames;
    for (std::size_t i = 0; i < pairs; ++i) {
      const std::string at =
          "pair " + std::to_string(i) + " of " + std::to_string(pairs) + where(layout, keys[i]);
      std::size_t est = 0;
      SerializeOutcome want = serialize_at_estimate(*ref_ser, *inputs[i], &est, keys[i]);
      require(want.error.empty(), "the reference " + ref.type + ": " + want.error + at);
      MemoryObjPtr frame = make_object(byte_layout(est));
      if (want.count > 0) std::memcpy(frame->data(), want.bytes.data(), want.count);
      frame->set_used_size(want.count);
      ref_frames.push_back(frame);
      require(temps[i]->size() == want.count, "the processor's frame of " + at + " has " +
                                                  std::to_string(temps[i]->size()) +
                                                  " bytes where the reference " + ref.type +
                                                  " writes " + std::to_string(want.count));
      if (!ref.randomized && !put.randomized && want.count > 0) {
        require(same_bytes(temps[i]->data(), want.bytes.data(), want.count),
                "the processor's frame of " + at + " differs from the reference " + ref.type +
                    "'s under the pair's own key (a key from another pair, or none?)");
      }
      // The reference reads the processor's frame under the pair's key.
      const ReadOutcome read = read_frame(*ref_deser, *temps[i], layout, keys[i]);
      require(read.accepted, "the reference " + ref.type + " cannot read the processor's " +
                                 "frame of " + at + ": " + read.error);
      MemoryObjPtr decoded = make_object(layout);
      if (!read.decoded.empty()) {
        std::memcpy(decoded->data(), read.decoded.data(), read.decoded.size());
      }
      std::string m = decoded_mismatch(*inputs[i], *decoded);
      require(m.empty(), "the reference " + ref.type + " reads the processor's frame of " + at +
                             " as other values: " + m);
    }
    // The processor reads the reference's frames, in reverse order, each under its key.
    std::vector<MemoryObjPtr> srcs, outs;
    std::vector<ObjectKey> ks;
    for (std::size_t i = pairs; i-- > 0;) {
      srcs.push_back(ref_frames[i]);
      outs.push_back(make_object(layout));
      ks.push_back(keys[i]);
    }
    TaskId id = p->submit_deserialize(srcs, outs, ks);
    require(take_result(*p, Dir::kDeserialize, id, "deserialize of the reference's frames"),
            "the processor could not read the reference " + ref.type + "'s frames of " +
                std::to_string(pairs) + " pair(s) of " + layout.to_string() +
                ", each under its own key");
    for (std::size_t k = 0; k < pairs; ++k) {
      const std::size_t i = pairs - 1 - k;
      std::string m = decoded_mismatch(*inputs[i], *outs[k]);
      require(m.empty(), "the processor read the reference " + ref.type + "'s frame of pair " +
                             std::to_string(i) + " as other values: " + m);
    }
    if (!ref.randomized && !put.randomized) {
      matches_reference_over_the_value_domain(*p, ref, layout, keys, *gen_seed());
    }
  });
}

}  // namespace lmcache::conformance_internal::processor_properties
