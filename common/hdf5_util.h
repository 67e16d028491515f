// Small HDF5 helpers: owning handles, quiet error stacks, readable messages.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>
#include <vector>

namespace ringside::trace::h5 {

// Owns an hid_t and closes it with the right H5*close for its type.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(other.release()) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = other.release();
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  hid_t release() {
    hid_t id = id_;
    id_ = H5I_INVALID_HID;
    return id;
  }
  void reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// Turns off HDF5's automatic error printing for this thread while alive: the
// library reports errors itself, once, with context.
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t old_func_ = nullptr;
  void* old_data_ = nullptr;
};

// A dataset transfer property list that brings its own type-conversion and
// background buffers.  A read or write whose memory type differs from the file's
// (file types are packed, memory types are not) otherwise has HDF5 allocate and
// zero 1 MiB of each at every H5Dread/H5Dwrite, whatever the number of rows: the
// larger part of the probe's cost per flush, and of a small table's read.  Requests
// larger than the buffers are converted in strips.  One thread uses it at a time.
class TransferBuffers {
 public:
  // `bytes`: the size of each buffer, at least one record of the largest type used.
  explicit TransferBuffers(size_t bytes);
  // The property list, or H5P_DEFAULT if it could not be made (HDF5 then allocates).
  hid_t get() const { return dxpl_.valid() ? dxpl_.get() : H5P_DEFAULT; }

 private:
  std::vector<std::byte> conversion_;
  std::vector<std::byte> background_;
  Handle dxpl_;
};

// The deepest messages of the current HDF5 error stack, e.g.
// "H5Dread: filter returned failure (Fletcher32 checksum error)".
std::string last_error();

// "<what> failed on <path>: <last_error()>"
std::string failure(const std::string& what, const std::string& path);

}  // namespace ringside::trace::h5
