// Flat byte encoding of the passes' partial states, exchanged between the processes
// of a parallel analysis (parallel/process_group.h).  Both ends are the same build of
// the same program, so plain values (trivially copied: pairs and tuples of them too) are
// written as their bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ringside::analysis {

template <typename T>
concept PlainBytes =
    std::is_trivially_copy_constructible_v<T> && std::is_trivially_destructible_v<T>;

class ByteWriter {
 public:
  template <PlainBytes T>
  void put(const T& v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <PlainBytes T>
  void put_vector(std::span<const T> v) {
    put<uint64_t>(v.size());
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  template <PlainBytes T>
  void put_vector(const std::vector<T>& v) {
    put_vector(std::span<const T>(v));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.append(s);
  }
  std::string take() { return std::move(buf_); }

 private:
  std::string buf_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  template <PlainBytes T>
  T get() {
    T v{};
    std::memcpy(static_cast<void*>(&v), take(sizeof(T)), sizeof(T));
    return v;
  }
  template <PlainBytes T>
  std::vector<T> get_vector() {
    const auto n = get<uint64_t>();
    std::vector<T> v(n);
    if (n > 0) std::memcpy(static_cast<void*>(v.data()), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    return std::string(take(n), n);
  }
  bool done() const { return at_ == data_.size(); }

 private:
  const char* take(size_t n) {
    if (n > data_.size() - at_)
      throw std::runtime_error("parallel analysis: a process sent a truncated partial state");
    const char* p = data_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view data_;
  size_t at_ = 0;
};

}  // namespace ringside::analysis
