#include "lmcache/conformance/internal/reference_checks.h"

#include <cmath>
#include <cstring>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal {

ReadOutcome read_frame(Deserializer& deser, const MemoryObj& frame, const MemoryLayoutDesc& layout,
                       const ObjectKey& key) {
  ReadOutcome out;
  MemoryObjPtr dst = make_object(layout);
  if (auto e = throws([&] { deser.deserialize(frame, *dst, key); })) {
    out.error = *e;
    return out;
  }
  out.accepted = true;
  auto bytes = dst->physical_bytes().first(layout.total_bytes());
  out.decoded.assign(bytes.begin(), bytes.end());
  return out;
}

std::string decoded_difference(const MemoryLayoutDesc& layout, const std::vector<std::byte>& a,
                               const std::vector<std::byte>& b) {
  if (a.size() != b.size()) {
    return "decoded " + std::to_string(b.size()) + " bytes instead of " + std::to_string(a.size());
  }
  if (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0) return {};
  std::size_t offset = 0;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const DType dtype = layout.dtypes()[g];
    const std::size_t es = element_size(dtype);
    for (std::size_t i = 0; i < layout.group_elements(g); ++i, offset += es) {
      if (std::memcmp(a.data() + offset, b.data() + offset, es) == 0) continue;
      const double x = read_element(dtype, a.data() + offset);
      const double y = read_element(dtype, b.data() + offset);
      if (std::isnan(x) && std::isnan(y)) continue;
      return describe_element(layout, g, i, x, y);
    }
  }
  return {};
}

void append_sample(std::vector<Corruption>& plan, const std::vector<Corruption>& part,
                   std::size_t limit, std::uint64_t seed) {
  if (part.size() <= limit) {
    plan.insert(plan.end(), part.begin(), part.end());
    return;
  }
  const std::size_t step = part.size() / limit;
  for (std::size_t i = seed % step; i < part.size() && limit > 0; i += step, --limit) {
    plan.push_back(part[i]);
  }
}

void require_same_verdict(Deserializer& mine, Deserializer& reference, const MemoryObj& frame,
                          const MemoryLayoutDesc& layout, const ObjectKey& key,
                          const std::string& type, const std::string& what) {
  const ReadOutcome want = read_frame(reference, frame, layout, key);
  const ReadOutcome got = read_frame(mine, frame, layout, key);
  const std::string at = " (" + what + ")" + where(layout, key);
  if (want.accepted != got.accepted) {
    fail_case(want.accepted ? "the reference " + type + " accepts a frame this serde rejects (" +
                                  got.error + ")" + at
                            : "this serde accepts a frame the reference " + type + " rejects (" +
                                  want.error + ")" + at);
  }
  if (!want.accepted) return;
  if (std::string d = decoded_difference(layout, want.decoded, got.decoded); !d.empty()) {
    fail_case("this serde and the reference " + type + " both accept a frame but decode it " +
              "differently: " + d + at);
  }
}

}  // namespace lmcache::conformance_internal
