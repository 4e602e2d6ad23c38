// Uses the installed headers and library; exits 0 when they work together.
#include <lmcache/core/bitmap.h>
#include <lmcache/core/memory_layout.h>

int main() {
  lmcache::Bitmap bits(8, 3);
  auto layout = lmcache::MemoryLayoutDesc::single({4, 2}, lmcache::DType::kBFloat16);
  return bits.popcount() == 3 && layout.total_bytes() == 16 ? 0 : 1;
}
