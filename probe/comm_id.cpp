#include "comm_id.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace ringside::probe {

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: spreads FNV's weak high bits
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t fnv(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

template <typename T>
uint64_t fnv_value(T v, uint64_t h) {
  return fnv(&v, sizeof v, h);
}

uint64_t finish(uint64_t h) {
  const uint64_t r = mix(h);
  return r == 0 ? 1 : r;
}

// Domain tags keep ids of different origins apart even with equal inputs.
enum : uint32_t { kTagUid = 1, kTagScalable = 2, kTagSplit = 3, kTagShrink = 4, kTagInitAll = 5 };

}  // namespace

uint64_t hash_bytes(const void* data, size_t size, uint64_t seed) {
  return finish(fnv(data, size, fnv_value(seed, kFnvOffset)));
}

uint64_t comm_id_from_unique_id(const void* unique_id, size_t size, uint32_t use_index) {
  uint64_t h = fnv_value(uint32_t{kTagUid}, kFnvOffset);
  h = fnv(unique_id, size, h);
  return finish(fnv_value(use_index, h));
}

uint64_t comm_id_from_unique_ids(const void* ids, size_t id_size, size_t n, uint32_t use_index) {
  uint64_t h = fnv_value(uint32_t{kTagScalable}, kFnvOffset);
  h = fnv_value(static_cast<uint64_t>(n), h);
  h = fnv(ids, id_size * n, h);
  return finish(fnv_value(use_index, h));
}

uint64_t comm_id_for_split(uint64_t parent_id, int32_t color, uint32_t ordinal) {
  uint64_t h = fnv_value(uint32_t{kTagSplit}, kFnvOffset);
  h = fnv_value(parent_id, h);
  h = fnv_value(color, h);
  return finish(fnv_value(ordinal, h));
}

uint64_t comm_id_for_shrink(uint64_t parent_id, uint32_t ordinal, std::span<const int> excluded) {
  std::vector<int> sorted(excluded.begin(), excluded.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  uint64_t h = fnv_value(uint32_t{kTagShrink}, kFnvOffset);
  h = fnv_value(parent_id, h);
  h = fnv_value(ordinal, h);
  for (int r : sorted) h = fnv_value(r, h);
  return finish(h);
}

uint64_t comm_id_for_init_all(const char* host, int64_t pid, uint32_t ordinal) {
  uint64_t h = fnv_value(uint32_t{kTagInitAll}, kFnvOffset);
  h = fnv(host, std::strlen(host), h);
  h = fnv_value(pid, h);
  return finish(fnv_value(ordinal, h));
}

}  // namespace ringside::probe
