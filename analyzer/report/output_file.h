// Writing a report where the user asked for it (--json, --prom) without ever
// destroying something else: a trace, a directory, or any file that is not an
// earlier report of the same kind.  The new text replaces the old one
// atomically, so a reader never sees half a report.
#pragma once

#include <string>

#include "ringside/status.h"

namespace ringside::analysis {

// Writes `text` to `path` through a temporary file in the same directory and a
// rename.  An existing `path` is replaced only if it is a regular file that is
// empty or starts with `first_char` (a JSON report starts with '{', a
// Prometheus textfile with '#'); HDF5 files (traces) are never replaced.  The
// error names the path and the reason.
Status write_output_file(const std::string& path, const std::string& text, char first_char);

}  // namespace ringside::analysis
