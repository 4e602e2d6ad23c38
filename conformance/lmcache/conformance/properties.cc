#include "lmcache/conformance/properties.h"

#include "lmcache/conformance/internal/property_list.h"

namespace lmcache::conformance {

namespace {

constexpr std::string_view kSerde = "SerdeConformance";
constexpr std::string_view kProcessor = "ProcessorConformance";
constexpr std::string_view kAdapter = "AdapterConformance";
constexpr std::string_view kWrapper = "WrapperConformance";

// One PropertyInfo per line of internal/property_list.h.
#define LMCACHE_SERDE_INFO(Name, Checks) PropertyInfo{kSerde, #Name, Checks},
#define LMCACHE_PROCESSOR_INFO(Name, Checks) PropertyInfo{kProcessor, #Name, Checks},
#define LMCACHE_ADAPTER_INFO(Name, Checks) PropertyInfo{kAdapter, #Name, Checks},
#define LMCACHE_WRAPPER_INFO(Name, Checks) PropertyInfo{kWrapper, #Name, Checks},

constexpr PropertyInfo kSerdeProperties[] = {
    LMCACHE_CONFORMANCE_SERDE_PROPERTIES(LMCACHE_SERDE_INFO)};
constexpr PropertyInfo kProcessorProperties[] = {
    LMCACHE_CONFORMANCE_PROCESSOR_PROPERTIES(LMCACHE_PROCESSOR_INFO)};
constexpr PropertyInfo kAdapterProperties[] = {
    LMCACHE_CONFORMANCE_ADAPTER_PROPERTIES(LMCACHE_ADAPTER_INFO)};
constexpr PropertyInfo kWrapperProperties[] = {
    LMCACHE_CONFORMANCE_WRAPPER_PROPERTIES(LMCACHE_WRAPPER_INFO)};

#undef LMCACHE_SERDE_INFO
#undef LMCACHE_PROCESSOR_INFO
#undef LMCACHE_ADAPTER_INFO
#undef LMCACHE_WRAPPER_INFO

}  // namespace

std::string_view suite_name(ImplementationKind kind) {
  switch (kind) {
    case ImplementationKind::kSerde:
      return kSerde;
    case ImplementationKind::kProcessor:
      return kProcessor;
    case ImplementationKind::kAdapter:
      return kAdapter;
    case ImplementationKind::kWrapper:
      return kWrapper;
  }
  return kSerde;
}

std::span<const PropertyInfo> properties_of(ImplementationKind kind) {
  switch (kind) {
    case ImplementationKind::kSerde:
      return kSerdeProperties;
    case ImplementationKind::kProcessor:
      return kProcessorProperties;
    case ImplementationKind::kAdapter:
      return kAdapterProperties;
    case ImplementationKind::kWrapper:
      return kWrapperProperties;
  }
  return {};
}

}  // namespace lmcache::conformance
