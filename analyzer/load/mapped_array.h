// A growable array of plain records whose memory the kernel may write out and take back.
//
// The per-op table of an analysis (match/group_table.h) grows with the job's distinct
// ops: with ranks x ops per rank over the group sizes.  Held in the heap, it is memory
// the process keeps until it ends, however long the job was.  Given a directory, an
// array larger than a few pages lives in a shared mapping of an unlinked temporary file
// there instead: its pages are the file's page cache, which the kernel writes back and
// drops when memory runs short (a memory limit such as a Slurm job's cgroup) and reads
// again when they are touched.  The process's own (anonymous) memory then stays
// independent of the job's length.  Left to the kernel, though, pages written and not yet
// written back cannot be dropped (nor are they written back soon where memory is
// plentiful outside a limit): page_out() writes out and drops an array its user is done
// with for a while.  The file's blocks are allocated up front, so a full
// disk is found when the array grows (and the array stays in memory), never as a fault
// on a page later.  Without a directory, or where the file cannot be made, the array is
// in the heap, as a vector's.
//
// The file goes with the process however it ends (unlinked when made).  On a memory file
// system (tmpfs) its pages are memory as well: nothing is gained there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace ringside::analysis {

// Bytes in the heap or mapped from a file; grows keeping its contents.
class MappedBytes {
 public:
  MappedBytes() = default;
  ~MappedBytes();
  MappedBytes(MappedBytes&& o) noexcept { swap(o); }
  MappedBytes& operator=(MappedBytes&& o) noexcept {
    MappedBytes(std::move(o)).swap(*this);
    return *this;
  }
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;

  // Files are made in `dir` once the bytes outgrow kInMemoryBytes ("": never).
  void spill_to(std::string dir) { dir_ = std::move(dir); }
  // Holds at least `bytes`; throws std::bad_alloc when no memory can be had.  Moves the
  // bytes to a file once they outgrow kInMemoryBytes, where spill_to() named a directory.
  void reserve(size_t bytes);
  void release();
  // Bytes in a file are written out and dropped from memory, to be read back when touched.
  void page_out() const;
  char* data() const { return data_; }
  size_t capacity() const { return bytes_; }
  bool in_file() const { return in_file_; }

  // Arrays up to this size stay in the heap: a communicator with few ops costs no
  // file, and a small job's analysis no file at all.
  static constexpr size_t kInMemoryBytes = 16 * 1024;

 private:
  void swap(MappedBytes& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(in_file_, o.in_file_);
    std::swap(dir_, o.dir_);
  }
  char* data_ = nullptr;
  size_t bytes_ = 0;
  bool in_file_ = false;
  std::string dir_;
};

template <typename T>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "the records are moved as bytes and never destroyed");

 public:
  MappedArray() = default;
  MappedArray(MappedArray&& o) noexcept
      : bytes_(std::move(o.bytes_)), size_(std::exchange(o.size_, 0)) {}
  MappedArray& operator=(MappedArray&& o) noexcept {
    bytes_ = std::move(o.bytes_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }
  void spill_to(std::string dir) { bytes_.spill_to(std::move(dir)); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  std::span<const T> span() const { return {data(), size_}; }
  bool in_file() const { return bytes_.in_file(); }
  void page_out() const { bytes_.page_out(); }

  // New records are value-initialized (T's default member initializers).
  void resize(size_t n) {
    if (n > capacity()) grow(n);
    for (size_t i = size_; i < n; ++i) ::new (static_cast<void*>(data() + i)) T();
    size_ = n;
  }
  T& emplace_back() {
    resize(size_ + 1);
    return data()[size_ - 1];
  }
  // Empties the array and gives its memory back.
  void clear() {
    size_ = 0;
    bytes_.release();
  }

 private:
  size_t capacity() const { return bytes_.capacity() / sizeof(T); }
  void grow(size_t n) {
    // Doubling, as a vector does: growing by one record at a time stays linear.
    const size_t want = std::max(n, 2 * capacity());
    bytes_.reserve(want * sizeof(T));
  }
  MappedBytes bytes_;
  size_t size_ = 0;
};

}  // namespace ringside::analysis
