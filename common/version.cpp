#include "ringside/version.h"

#include <H5public.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "ringside_build_info.h"

namespace ringside {

std::string version_text(const std::string& tool) {
  const int cuda = CUDART_VERSION;
  return tool + " " + RINGSIDE_VERSION + " (" + RINGSIDE_GIT_DESCRIBE + ")\nbuilt against NCCL " +
         std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
         std::to_string(NCCL_PATCH) + ", CUDA runtime " + std::to_string(cuda / 1000) + "." +
         std::to_string(cuda % 1000 / 10) + ", HDF5 " + std::to_string(H5_VERS_MAJOR) + "." +
         std::to_string(H5_VERS_MINOR) + "." + std::to_string(H5_VERS_RELEASE);
}

}  // namespace ringside
