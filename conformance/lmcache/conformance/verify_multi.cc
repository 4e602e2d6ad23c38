// The multi-output checks of verify.h: the None-slot rules and the equivalence of the length-1
// bridge with direct calls.
#include <cstring>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance {

using namespace conformance_internal;  // the serde check building blocks

MultiSerializerPtr make_multi_serializer(const SerdeUnderTest& serde) {
  if (serde.make_multi_serializer) return serde.make_multi_serializer();
  return single_to_multi_serializer(serde.make_serializer());
}

MultiDeserializerPtr make_multi_deserializer(const SerdeUnderTest& serde) {
  if (serde.make_multi_deserializer) return serde.make_multi_deserializer();
  return single_to_multi_deserializer(serde.make_deserializer());
}

AssertionResult verify_multi_none_slot_rules(const SerdeUnderTest& serde, const MemoryObj& src,
                                             const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  MultiSerializerPtr ms = make_multi_serializer(serde);
  MultiDeserializerPtr md = make_multi_deserializer(serde);
  const std::size_t g = ms->group_size();
  if (g == 0) return AssertionFailure() << "multi serializer has group_size() 0";
  if (md->group_size() != g) {
    return AssertionFailure() << "multi serializer and deserializer disagree on group_size(): " << g
                              << " vs " << md->group_size();
  }
  MemoryObjGroup group;
  for (std::size_t i = 0; i < g; ++i) group.push_back(clone_object(src));
  LayoutDescGroup layouts(g, layout);
  std::size_t est = 0;
  if (auto e = throws([&] { est = ms->estimate_serialized_size(layouts); })) {
    return AssertionFailure() << "multi estimate_serialized_size() threw: " << *e
                              << where(layout, key);
  }
  const std::size_t room = est + 64;

  // Wrong group length, both directions.
  {
    MemoryObjGroup longer = group;
    longer.push_back(clone_object(src));
    GuardedObject dst = GuardedObject::Bytes(room + layout.total_bytes() + 64, 91);
    std::string how = expect_invalid_argument([&] { ms->serialize(longer, *dst, key); });
    if (!how.empty()) {
      return AssertionFailure() << "multi serialize() of a group of " << g + 1 << " (group_size "
                                << g << ") " << how << where(layout, key);
    }
  }
  // A null required source slot, and a nullopt required layout.
  for (std::size_t slot = 0; slot < g; ++slot) {
    MemoryObjGroup holed = group;
    holed[slot] = nullptr;
    LayoutDescGroup holed_layouts = layouts;
    holed_layouts[slot] = std::nullopt;
    GuardedObject dst = GuardedObject::Bytes(room, 92);
    std::vector<std::byte> before = dst.snapshot();
    if (slot_required(serde, slot)) {
      std::string how = expect_invalid_argument([&] { ms->serialize(holed, *dst, key); });
      if (!how.empty()) {
        return AssertionFailure() << "multi serialize() with None in required src slot " << slot
                                  << " " << how << where(layout, key);
      }
      if (std::string c = dst.check_payload_unchanged(before, 0, room); !c.empty()) {
        return AssertionFailure() << "multi serialize() rejected a None src slot but wrote: " << c;
      }
      how = expect_invalid_argument([&] { ms->estimate_serialized_size(holed_layouts); });
      if (!how.empty()) {
        return AssertionFailure() << "multi estimate_serialized_size() with None in required slot "
                                  << slot << " " << how << where(layout, key);
      }
    } else if (auto e = throws([&] { ms->estimate_serialized_size(holed_layouts); })) {
      return AssertionFailure()
             << "multi estimate_serialized_size() rejected None in optional slot " << slot << ": "
             << *e << where(layout, key);
    }
    if (std::string gr = dst.check_guards(); !gr.empty()) {
      return AssertionFailure() << "multi serialize() wrote outside its destination: " << gr;
    }
  }

  // The full round trip, to compare partial deserializations with.
  GuardedObject bytes = GuardedObject::Bytes(room, 93);
  std::size_t n = 0;
  if (auto e = throws([&] { n = ms->serialize(group, *bytes, key); })) {
    return AssertionFailure() << "multi serialize() threw: " << *e << where(layout, key);
  }
  if (n > room) return AssertionFailure() << "multi serialize() returned " << n << " > " << room;
  bytes->set_used_size(n);
  std::vector<MemoryObjPtr> full;
  MemoryObjGroup full_group;
  for (std::size_t i = 0; i < g; ++i) {
    full.push_back(make_object(layout));
    full_group.push_back(full.back());
  }
  if (auto e = throws([&] { md->deserialize(*bytes, full_group, key); })) {
    return AssertionFailure() << "multi deserialize() threw on its own output: " << *e
                              << where(layout, key);
  }
  {
    MemoryObjGroup longer = full_group;
    longer.push_back(make_object(layout));
    std::string how = expect_invalid_argument([&] { md->deserialize(*bytes, longer, key); });
    if (!how.empty()) {
      return AssertionFailure() << "multi deserialize() into a group of " << g + 1
                                << " (group_size " << g << ") " << how << where(layout, key);
    }
  }

  // Every destination slot None: a deliberate skip. A length-1 bridge must read nothing, so it
  // gets an empty source it could not decode.
  {
    GuardedObject empty = GuardedObject::Bytes(g == 1 ? 0 : n, 94);
    if (g != 1 && n > 0) std::memcpy(empty->data(), bytes->data(), n);
    std::vector<std::byte> before = empty.snapshot();
    MemoryObjGroup none(g, nullptr);
    if (auto e = throws([&] { md->deserialize(*empty, none, key); })) {
      return AssertionFailure() << "multi deserialize() with every dst slot None must be a no-op"
                                << (g == 1 ? " that reads nothing" : "") << ", but threw: " << *e
                                << where(layout, key);
    }
    if (std::string c = empty.check_payload_unchanged(before, 0, before.size()); !c.empty()) {
      return AssertionFailure() << "multi deserialize() with None dst slots modified its source: "
                                << c;
    }
  }
  // One None slot at a time: the others come out as in the full round trip.
  if (g > 1) {
    for (std::size_t slot = 0; slot < g; ++slot) {
      MemoryObjGroup partial;
      std::vector<MemoryObjPtr> keep;
      for (std::size_t i = 0; i < g; ++i) {
        keep.push_back(i == slot ? nullptr : make_object(layout));
        partial.push_back(keep.back());
      }
      if (auto e = throws([&] { md->deserialize(*bytes, partial, key); })) {
        return AssertionFailure() << "multi deserialize() with None dst slot " << slot
                                  << " threw: " << *e << where(layout, key);
      }
      for (std::size_t i = 0; i < g; ++i) {
        if (i == slot || layout.total_bytes() == 0) continue;
        if (!same_bytes(partial[i]->data(), full[i]->data(), layout.total_bytes())) {
          return AssertionFailure()
                 << "multi deserialize() with None dst slot " << slot << " filled slot " << i
                 << " differently from a full group" << where(layout, key);
        }
      }
    }
  }
  return AssertionSuccess();
}

AssertionResult verify_bridge_equivalence(const SerdeUnderTest& serde, const MemoryObj& src,
                                          const ObjectKey& key) {
  const MemoryLayoutDesc& layout = src.layout();
  MultiSerializerPtr ms = make_multi_serializer(serde);
  MultiDeserializerPtr md = make_multi_deserializer(serde);
  if (ms->group_size() != 1 || md->group_size() != 1) {
    return AssertionFailure() << "bridge equivalence needs a group_size() 1 multi serde, got "
                              << ms->group_size() << " / " << md->group_size();
  }
  SerializerPtr s = serde.make_serializer();
  DeserializerPtr d = serde.make_deserializer();
  std::string error;
  auto est = estimate(*s, layout, &error);
  if (!est) return AssertionFailure() << error << where(layout, key);
  std::size_t multi_est = 0;
  if (auto e = throws([&] { multi_est = ms->estimate_serialized_size({layout}); })) {
    return AssertionFailure() << "bridge estimate_serialized_size() threw: " << *e
                              << where(layout, key);
  }
  if (multi_est != *est) {
    return AssertionFailure() << "bridge estimate " << multi_est << " differs from the direct "
                              << *est << where(layout, key);
  }
  SerializeOutcome direct = run_serialize(*s, src, *est, 101, key);
  if (!direct.error.empty()) return AssertionFailure() << direct.error << where(layout, key);
  GuardedObject via = GuardedObject::Bytes(*est, 102);
  std::size_t n = 0;
  MemoryObjPtr input = clone_object(src);
  if (auto e = throws([&] { n = ms->serialize({input}, *via, key); })) {
    return AssertionFailure() << "bridge serialize() threw: " << *e << where(layout, key);
  }
  if (std::string g = via.check_guards(); !g.empty()) {
    return AssertionFailure() << "bridge serialize() wrote outside its destination: " << g;
  }
  std::vector<std::byte> via_bytes(
      via.payload().begin(),
      via.payload().begin() + static_cast<std::ptrdiff_t>(std::min(n, *est)));
  if (n != direct.count || via_bytes != direct.bytes) {
    return AssertionFailure() << "bridge serialize() is not byte-identical to a direct call: " << n
                              << " vs " << direct.count << " bytes; "
                              << first_byte_difference(direct.bytes, via_bytes)
                              << where(layout, key);
  }
  GuardedObject bytes = serialized_buffer(direct.bytes, *est);
  MemoryObjPtr a = make_object(layout);
  MemoryObjPtr b = make_object(layout);
  if (auto e = throws([&] { d->deserialize(*bytes, *a, key); })) {
    return AssertionFailure() << "deserialize() threw: " << *e << where(layout, key);
  }
  if (auto e = throws([&] { md->deserialize(*bytes, {b}, key); })) {
    return AssertionFailure() << "bridge deserialize() threw: " << *e << where(layout, key);
  }
  if (layout.total_bytes() > 0 && !same_bytes(a->data(), b->data(), layout.total_bytes())) {
    return AssertionFailure() << "bridge deserialize() is not identical to a direct call"
                              << where(layout, key);
  }
  return AssertionSuccess();
}

}  // namespace lmcache::conformance
