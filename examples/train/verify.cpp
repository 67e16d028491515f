#include "verify.h"

#include <cuda_runtime_api.h>

#include <sstream>
#include <stdexcept>

#include "checks.h"

namespace ringside::examples {

Patterns::Patterns(size_t elements, const std::vector<int>& members) {
  for (int member : members) {
    if (host_.count(member) != 0) continue;
    auto& phases = host_[member];
    for (int phase = 0; phase < 3; ++phase) {
      phases[phase].resize(elements);
      for (size_t i = 0; i < elements; ++i) phases[phase][i] = pattern_value(member, i, phase);
    }
  }
}

const float* Patterns::get(int member, int phase) const {
  return host_.at(member).at(static_cast<size_t>(phase % 3)).data();
}

void verify_device(const float* device, size_t count, const std::function<float(size_t)>& expected,
                   const std::string& what) {
  std::vector<float> host(count);
  RINGSIDE_CUDA_CHECK(
      cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  std::ostringstream first;
  for (size_t i = 0; i < count; ++i) {
    const float want = expected(i);
    if (host[i] != want) {
      if (wrong < 3) first << " [" << i << "] = " << host[i] << " (expected " << want << ")";
      ++wrong;
    }
  }
  if (wrong != 0) {
    throw VerifyError("verification failed: " + what + ": " + std::to_string(wrong) + " of " +
                      std::to_string(count) + " elements wrong, first:" + first.str() + " on " +
                      error_context());
  }
}

}  // namespace ringside::examples
