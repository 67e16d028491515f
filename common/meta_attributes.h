// Writing and reading TraceMeta as HDF5 attributes of the root group.
#pragma once

#include <hdf5.h>

#include <string>

#include "ringside/status.h"
#include "ringside/trace_meta.h"

namespace ringside::trace {

Status write_meta_attributes(hid_t file, const TraceMeta& meta, const std::string& path);
// Reads schema_version first and stops with a clear error when the file is not
// a ringside trace or uses a version this build cannot read.
Status read_meta_attributes(hid_t file, TraceMeta& meta, const std::string& path);

}  // namespace ringside::trace
