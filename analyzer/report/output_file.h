// Writing a report where the user asked for it (--json, --prom) without ever
// destroying something else: a trace, a directory, or any file that is not an
// earlier report of the same kind.  The new text replaces the old one
// atomically, so a reader never sees half a report.
#pragma once

#include <string>
#include <string_view>

#include "ringside/status.h"

namespace ringside::analysis {

// Writes `text` to `path` through a temporary file in the same directory and a
// rename.  An existing `path` is replaced only if it is a regular file that is
// empty or starts with `first_char` (a JSON report starts with '{', a
// Prometheus textfile with '#'); HDF5 files (traces) are never replaced.  The
// error names the path and the reason.
Status write_output_file(const std::string& path, const std::string& text, char first_char);

// The same, written piece by piece (outputs too large to hold in memory): the
// temporary file becomes `path` only at commit(); dropped uncommitted, it is removed.
class OutputFile {
 public:
  static Result<OutputFile> open(const std::string& path, char first_char);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  Status write(std::string_view text);
  Status commit();

 private:
  OutputFile() = default;
  Status flush();
  static constexpr size_t kFlushBytes = 1 << 16;
  std::string path_, temp_, buffer_;
  int fd_ = -1;
};

}  // namespace ringside::analysis
