#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance {

namespace {

void print_dtypes(const std::vector<DType>& dtypes, std::ostream* os) {
  *os << "[";
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    *os << (i ? ", " : "") << dtype_name(dtypes[i]);
  }
  *os << "]";
}

}  // namespace

std::string_view stored_damage_name(StoredDamage damage) {
  switch (damage) {
    case StoredDamage::kTruncated:
      return "truncated";
    case StoredDamage::kExtended:
      return "extended";
    case StoredDamage::kFlipped:
      return "flipped";
    case StoredDamage::kReplaced:
      return "replaced";
  }
  return "invalid";
}

void PrintTo(const SerdeUnderTest& serde, std::ostream* os) {
  *os << "serde " << serde.name << " (inputs ";
  print_dtypes(serde.input_dtypes, os);
  if (serde.lossiness.lossless) {
    *os << ", lossless";
  } else {
    *os << ", lossy: hard abs " << serde.lossiness.hard_abs << " rel " << serde.lossiness.hard_rel
        << ", soft abs " << serde.lossiness.soft_abs << " rel " << serde.lossiness.soft_rel;
  }
  if (serde.max_abs_input) *os << ", |x| <= " << *serde.max_abs_input;
  *os << ")";
}

void PrintTo(const ProcessorUnderTest& processor, std::ostream* os) {
  *os << "processor " << processor.name << " (inputs ";
  print_dtypes(processor.input_dtypes, os);
  *os << ")";
}

void PrintTo(const AdapterUnderTest& adapter, std::ostream* os) {
  const AdapterCapabilities& c = adapter.capabilities;
  *os << "adapter " << adapter.name << " (delete " << c.supports_delete << ", listeners "
      << c.supports_listeners << ", usage " << c.reports_usage << ", lock count "
      << c.reports_lock_count << ", objects ";
  print_dtypes(adapter.object_dtypes, os);
  *os << ")";
}

void PrintTo(const WrapperUnderTest& wrapper, std::ostream* os) {
  *os << "wrapper " << wrapper.name;
}

bool is_valid_implementation_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace lmcache::conformance
