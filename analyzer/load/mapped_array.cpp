#include "load/mapped_array.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21  // Linux 5.4; older kernels refuse it, and the pages stay
#endif

namespace ringside::analysis {
namespace {

size_t page_rounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// `bytes` of a new unlinked file in `dir`, its blocks allocated, mapped shared; null when
// the file cannot be made or has no room.
char* map_new_file(const std::string& dir, size_t bytes) {
  std::string path = dir + "/ringside-ops.XXXXXX";
  const int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return nullptr;
  unlink(path.c_str());
  void* p = MAP_FAILED;
  if (posix_fallocate(fd, 0, static_cast<off_t>(bytes)) == 0)
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the mapping keeps the file
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

}  // namespace

MappedBytes::~MappedBytes() {
  release();
}

void MappedBytes::release() {
  if (in_file_) {
    munmap(data_, bytes_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  bytes_ = 0;
  in_file_ = false;
}

void MappedBytes::page_out() const {
  if (in_file_) madvise(data_, bytes_, MADV_PAGEOUT);
}

void MappedBytes::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  if (!dir_.empty() && bytes > kInMemoryBytes) {
    // A file's mapping cannot grow past the file, and the file is not kept open: a new
    // one takes the contents (doubling makes that linear, as a vector's moves).
    const size_t want = page_rounded(bytes);
    if (char* p = map_new_file(dir_, want)) {
      if (data_ != nullptr) std::memcpy(p, data_, bytes_);
      release();
      data_ = p;
      bytes_ = want;
      in_file_ = true;
      return;
    }
    dir_.clear();  // no room there: memory from now on, without trying each time
  }
  // In memory: the heap's, as a vector's (a watch's polls build a table each).
  void* p = nullptr;
  if (!in_file_) {
    p = std::realloc(data_, bytes);
    if (p == nullptr) throw std::bad_alloc();
  } else {
    p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memcpy(p, data_, bytes_);
    release();
  }
  data_ = static_cast<char*>(p);
  bytes_ = bytes;
  in_file_ = false;
}

}  // namespace ringside::analysis
