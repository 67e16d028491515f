// What a tool answers to --version: its name and ringside's version, the source
// tree it was built from (git describe) and the NCCL, CUDA runtime and HDF5 versions
// it was built against.
#pragma once

#include <string>

namespace ringside {

std::string version_text(const std::string& tool);

}  // namespace ringside
