// Small HDF5 helpers: owning handles, quiet error stacks, readable messages.
#pragma once

#include <hdf5.h>

#include <string>

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

// The deepest messages of the current HDF5 error stack, e.g.
// "H5Dread: filter returned failure (Fletcher32 checksum error)".
std::string last_error();

// "<what> failed on <path>: <last_error()>"
std::string failure(const std::string& what, const std::string& path);

}  // namespace ringside::trace::h5
