// File: lmcache/conformance/internal/golden_vectors.h
//
// The wire-format vectors the kit ships (docs/serde.md, "Golden vectors"): frames of every format
// the reference speaks, computed in Python from the format definitions alone
// (reference/tools/lmcache_frame_vectors.py) or frozen by LMCache itself (the LMCR fixtures),
// compiled into the kit so that SerdeConformance.MatchesGoldenVectors needs no file at run time.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/object_key.h"

namespace lmcache::conformance_internal {

struct GoldenVector {
  std::string type;         // the ReferenceSerde::type it belongs to ("fp8", "checksum", ...)
  std::string name;         // e.g. "fp8 vector 2 (float8_e5m2, nonsaturating)", for messages
  ObjectKey key;            // the key the frame was made under
  MemoryLayoutDesc layout;  // of `input` and `decoded`
  std::vector<std::byte> input;
  std::vector<std::byte> frame;
  std::vector<std::byte> decoded;  // what `frame` reads to in `layout` (the reference's NaN bits)
  // The frame is the one byte string every correct serializer writes for `input`: false where
  // the format draws randomness (an IV) or its encoder is not canonical (Deflate).
  bool exact_frame = true;
  // Only the read is checked: the frame holds codes no input encodes to (fp8's every code).
  bool decode_only = false;
  // `input` is raw bytes that the serde keeps as they are (checksum, aesgcm, encrypt, lmcr): the
  // kit may present them as any input dtype whose size divides their length, and compares the
  // decoded bytes exactly.
  bool raw_bytes = false;
};

// golden_vectors()
//
// Every shipped vector, parsed once. Throws std::runtime_error naming the vector when the
// embedded data is malformed (a build defect, never a vendor's).
const std::vector<GoldenVector>& golden_vectors();

}  // namespace lmcache::conformance_internal
