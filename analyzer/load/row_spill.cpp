#include "load/row_spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace ringside::analysis {
namespace {

using trace::OpRecord;

static_assert(sizeof(OpRecord) == 96, "a field added to OpRecord must be added to the spill codec");

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}
// Wrapping difference: exact for any two values.
int64_t minus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t plus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Writes into a buffer sized for the longest row (kMaxRowBytes).
class Output {
 public:
  explicit Output(char* p) : p_(p) {}
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void delta(int64_t value, int64_t base) { varint(zigzag(minus(value, base))); }
  void bytes(const void* v, size_t n) {
    std::memcpy(p_, v, n);
    p_ += n;
  }
  char* at() const { return p_; }

 private:
  char* p_;
};
// A row's longest encoding: its mask, 12 varints of at most 10 bytes (4 times, a
// communicator's index and sequence number, count, bytes, a stream's index, group, peer and
// peer sequence number), two new values of 8 bytes and 5 plain bytes.
constexpr size_t kMaxRowBytes = 1 + 12 * 10 + 2 * 8 + 5;

class Input {
 public:
  explicit Input(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool delta(int64_t base, int64_t& v) {
    uint64_t z;
    if (!varint(z)) return false;
    v = plus(base, unzigzag(z));
    return true;
  }
  bool bytes(void* out, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

// Values seen so far (communicator ids, streams), coded as their index; a new one as
// the next index followed by its 8 bytes.  A rank has a few.
class Dictionary {
 public:
  size_t index(uint64_t v) {
    if (values_.size() <= kScanned) {
      for (size_t i = 0; i < values_.size(); ++i) {
        if (values_[i] == v) return i;
      }
    } else if (auto it = where_.find(v); it != where_.end()) {
      return it->second;
    }
    return values_.size();
  }
  size_t add(uint64_t v) {
    values_.push_back(v);
    if (values_.size() > kScanned) {
      if (where_.empty()) {
        for (size_t i = 0; i < values_.size(); ++i) where_.emplace(values_[i], i);
      } else {
        where_.emplace(v, values_.size() - 1);
      }
    }
    return values_.size() - 1;
  }
  size_t size() const { return values_.size(); }
  uint64_t at(size_t i) const { return values_[i]; }

 private:
  static constexpr size_t kScanned = 32;
  std::vector<uint64_t> values_;
  std::unordered_map<uint64_t, size_t> where_;
};

// Bits of the mask byte: which times hold kUnknownTime (and are not coded).
constexpr uint8_t kNoExit = 1, kNoDevStart = 2, kNoDevEnd = 4;

}  // namespace

void encode_op_rows(std::span<const OpRecord> rows, std::string& out) {
  const size_t start = out.size();
  out.resize(start + max_encoded_bytes(rows.size()));
  out.resize(start + encode_op_rows(rows, out.data() + start));
}

size_t max_encoded_bytes(size_t rows) {
  return rows * kMaxRowBytes;
}

size_t encode_op_rows(std::span<const OpRecord> rows, char* out) {
  Output o(out);
  Dictionary comms, streams;
  std::vector<uint64_t> last_seq;  // per communicator of `comms`
  OpRecord prev{};
  for (const OpRecord& r : rows) {
    const uint8_t mask = (r.t_exit_ns == trace::kUnknownTime ? kNoExit : 0) |
                         (r.t_dev_start_ns == trace::kUnknownTime ? kNoDevStart : 0) |
                         (r.t_dev_end_ns == trace::kUnknownTime ? kNoDevEnd : 0);
    o.bytes(&mask, 1);
    o.delta(r.t_enter_ns, prev.t_enter_ns);
    if (!(mask & kNoExit)) o.delta(r.t_exit_ns, r.t_enter_ns);
    if (!(mask & kNoDevStart)) o.delta(r.t_dev_start_ns, r.t_enter_ns);
    if (!(mask & kNoDevEnd))
      o.delta(r.t_dev_end_ns, (mask & kNoDevStart) ? r.t_enter_ns : r.t_dev_start_ns);
    const size_t c = comms.index(r.comm_id);
    o.varint(c);
    if (c == comms.size()) {
      o.bytes(&r.comm_id, sizeof r.comm_id);
      comms.add(r.comm_id);
      last_seq.push_back(0);
    }
    o.delta(static_cast<int64_t>(r.seq), static_cast<int64_t>(last_seq[c]));
    last_seq[c] = r.seq;
    o.delta(static_cast<int64_t>(r.count), static_cast<int64_t>(prev.count));
    o.delta(static_cast<int64_t>(r.bytes), static_cast<int64_t>(prev.bytes));
    const size_t s = streams.index(r.stream);
    o.varint(s);
    if (s == streams.size()) {
      o.bytes(&r.stream, sizeof r.stream);
      streams.add(r.stream);
    }
    o.delta(r.group_id, prev.group_id);
    o.delta(r.peer, prev.peer);
    o.delta(r.peer_seq, prev.peer_seq);
    const uint8_t small[5] = {r.op, r.dtype, r.redop, r.flags, r.status};
    o.bytes(small, sizeof small);
    prev = r;
  }
  return static_cast<size_t>(o.at() - out);
}

bool decode_op_rows(std::string_view in, size_t count, std::vector<OpRecord>& out) {
  out.resize(count);
  Input input(in);
  Dictionary comms, streams;
  std::vector<uint64_t> last_seq;
  OpRecord prev{};
  for (OpRecord& r : out) {  // every field is set
    uint8_t mask;
    if (!input.bytes(&mask, 1) || !input.delta(prev.t_enter_ns, r.t_enter_ns)) return false;
    r.t_exit_ns = r.t_dev_start_ns = r.t_dev_end_ns = trace::kUnknownTime;
    if (!(mask & kNoExit) && !input.delta(r.t_enter_ns, r.t_exit_ns)) return false;
    if (!(mask & kNoDevStart) && !input.delta(r.t_enter_ns, r.t_dev_start_ns)) return false;
    if (!(mask & kNoDevEnd) &&
        !input.delta((mask & kNoDevStart) ? r.t_enter_ns : r.t_dev_start_ns, r.t_dev_end_ns))
      return false;
    uint64_t c, s;
    int64_t v;
    if (!input.varint(c) || c > comms.size()) return false;
    if (c == comms.size()) {
      uint64_t id;
      if (!input.bytes(&id, sizeof id)) return false;
      comms.add(id);
      last_seq.push_back(0);
    }
    r.comm_id = comms.at(c);
    if (!input.delta(static_cast<int64_t>(last_seq[c]), v)) return false;
    r.seq = last_seq[c] = static_cast<uint64_t>(v);
    if (!input.delta(static_cast<int64_t>(prev.count), v)) return false;
    r.count = static_cast<uint64_t>(v);
    if (!input.delta(static_cast<int64_t>(prev.bytes), v)) return false;
    r.bytes = static_cast<uint64_t>(v);
    if (!input.varint(s) || s > streams.size()) return false;
    if (s == streams.size()) {
      uint64_t id;
      if (!input.bytes(&id, sizeof id)) return false;
      streams.add(id);
    }
    r.stream = streams.at(s);
    if (!input.delta(prev.group_id, v)) return false;
    r.group_id = static_cast<uint32_t>(v);
    if (!input.delta(prev.peer, v)) return false;
    r.peer = static_cast<int32_t>(v);
    if (!input.delta(prev.peer_seq, v)) return false;
    r.peer_seq = static_cast<uint32_t>(v);
    uint8_t small[5];
    if (!input.bytes(small, sizeof small)) return false;
    r.op = small[0];
    r.dtype = small[1];
    r.redop = small[2];
    r.flags = small[3];
    r.status = small[4];
    prev = r;
  }
  return input.done();
}

RowSpill::RowSpill(const std::string& dir) {
  std::string path = (dir.empty() ? std::string(".") : dir) + "/ringside-rows.XXXXXX";
  fd_ = mkostemp(path.data(), O_CLOEXEC);
  if (fd_ >= 0) unlink(path.c_str());
}

RowSpill::~RowSpill() {
  if (fd_ >= 0) close(fd_);
}

bool RowSpill::keep(int64_t rank, std::span<const OpRecord> rows) {
  if (fd_ < 0 || rank < 0) return false;
  // Sized for the longest encoding once, not cleared and filled again for every rank.
  if (buffer_.size() < max_encoded_bytes(rows.size()))
    buffer_.resize(max_encoded_bytes(rows.size()));
  const size_t bytes = encode_op_rows(rows, buffer_.data());
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n =
        pwrite(fd_, buffer_.data() + done, bytes - done, static_cast<off_t>(end_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // no room: this rank's rows stay in the trace
    done += static_cast<size_t>(n);
  }
  if (kept_.size() <= static_cast<size_t>(rank)) kept_.resize(static_cast<size_t>(rank) + 1);
  kept_[static_cast<size_t>(rank)] = {end_, bytes, rows.size(), true};
  end_ += bytes;
  return true;
}

bool RowSpill::rows(int64_t rank, std::vector<OpRecord>& out) const {
  if (fd_ < 0 || rank < 0 || static_cast<size_t>(rank) >= kept_.size()) return false;
  const Kept& k = kept_[static_cast<size_t>(rank)];
  if (!k.kept) return false;
  read_buffer_.resize(k.bytes);
  size_t done = 0;
  while (done < k.bytes) {
    const ssize_t n =
        pread(fd_, read_buffer_.data() + done, k.bytes - done, static_cast<off_t>(k.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return decode_op_rows(read_buffer_, k.rows, out);
}

}  // namespace ringside::analysis
