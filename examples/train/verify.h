// Known values for verified steps and their host-side checks.
//
// A group member with index m fills element i with (m + 1) * (1 + (i + phase) % 3),
// where phase varies with the step and the buffer. The values are small
// integers, so float32 sums are exact and a wrong or missing contribution, a
// shifted element or stale data shows up as an exact mismatch.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ringside::examples {

inline float pattern_value(int member, size_t i, int phase) {
  return static_cast<float>((member + 1) * (1 + static_cast<int>((i + phase) % 3)));
}

// Element i of the sum over a group of `size` members of pattern_value.
inline float pattern_sum(int size, size_t i, int phase) {
  return static_cast<float>((1 + static_cast<int>((i + phase) % 3)) * size * (size + 1) / 2);
}

// Host copies of the patterns a rank sends, built once so that asynchronous
// copies from them stay valid.
class Patterns {
 public:
  Patterns(size_t elements, const std::vector<int>& members);
  // Pattern of `member` at `phase` (0..2), at least `elements` long.
  const float* get(int member, int phase) const;

 private:
  std::map<int, std::array<std::vector<float>, 3>> host_;
};

// Copies `count` floats of `device` to the host and compares each element with
// expected(i); throws VerifyError naming `what` and the first mismatches.
void verify_device(const float* device, size_t count, const std::function<float(size_t)>& expected,
                   const std::string& what);

}  // namespace ringside::examples
