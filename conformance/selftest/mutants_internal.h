// File: conformance/selftest/mutants_internal.h
//
// Each mutant family appends its mutants; AllMutants() concatenates them.
#pragma once

#include <vector>

#include "mutants.h"

namespace lmcache::conformance::selftest {

void AddSerdeMutants(std::vector<Mutant>& out);
void AddProcessorMutants(std::vector<Mutant>& out);
void AddAdapterMutants(std::vector<Mutant>& out);
void AddWrapperMutants(std::vector<Mutant>& out);

}  // namespace lmcache::conformance::selftest
