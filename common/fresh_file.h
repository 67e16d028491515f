// Creating a trace file without ever writing through whatever already has its
// name (trace names are predictable, so anyone who can write to the output
// directory can plant a symlink, a FIFO or a directory there).
//
// The file is made under a unique hidden name in the same directory with
// O_CREAT|O_EXCL|O_NOFOLLOW, so it is always a new, empty regular file of
// ours.  HDF5, which opens files by name, is given /proc/self/fd/<fd>: the
// very inode just created, whatever happens to the names meanwhile.  Once the
// file is complete, publish() renames it over the final name: rename(2)
// replaces a symlink or an older file at that name and never writes to what
// a symlink points at.
#pragma once

#include <string>

#include "ringside/status.h"

namespace ringside::trace {

class FreshFile {
 public:
  // Creates the hidden file next to `final_path`.  Errors name the directory
  // and the cause.
  static Result<FreshFile> create(const std::string& final_path);

  FreshFile(FreshFile&& other) noexcept;
  FreshFile& operator=(FreshFile&&) = delete;
  FreshFile(const FreshFile&) = delete;
  FreshFile& operator=(const FreshFile&) = delete;
  // Unless published: removes the hidden file.
  ~FreshFile();

  // A name that opens exactly the created file ("/proc/self/fd/<fd>").
  std::string open_name() const;
  // Whether descriptor `fd` (e.g. HDF5's) refers to the created file.
  Status check_same_file(int fd) const;
  // Renames the file to its final name and drops our descriptor.
  Status publish();

 private:
  FreshFile(std::string final_path, std::string temp_path, int fd);

  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  bool published_ = false;
};

}  // namespace ringside::trace
