// File: conformance/tools/rc_params.h
//
// lmcache-conform's check of a RapidCheck configuration (--rc-params, $RC_PARAMS) before any
// property runs: RapidCheck reads it in each property's child process, where a malformed value
// would fail every property and a misspelt key would be ignored without a word.
#pragma once

#include <string>

namespace lmcache::conformance::tools {

// rc_params_problem()
//
// Empty when `params` is a RapidCheck configuration this tool passes on: whitespace-separated
// key=value pairs (a value may be quoted with ' or ", a backslash escaping the next character),
// each key one of seed, max_success, max_size, max_discard_ratio, noshrink, verbose_progress,
// verbose_shrinking, reproduce, disable_colors, with a value RapidCheck accepts: seed a
// decimal integer below 2^64; max_success, max_size and max_discard_ratio decimal integers in
// [0, 2^31 - 1]; the four flags 0 or 1; reproduce not empty. Otherwise a sentence naming the
// first problem and what is allowed, e.g. "unknown key 'max_sucess' (known keys: seed, ...)".
std::string rc_params_problem(const std::string& params);

}  // namespace lmcache::conformance::tools
