#include "load/window_rows.h"

#include <algorithm>

#include "ringside/trace_validate.h"

namespace ringside::analysis {
namespace {

// Appends rows [first, end) of the file to `out`; stops early at its end.
Status append_rows(const trace::TraceReader& reader, uint64_t first, uint64_t end,
                   std::vector<trace::OpRecord>& out) {
  if (first >= end) return {};
  const size_t old = out.size();
  out.resize(old + static_cast<size_t>(end - first));
  auto got = reader.read_ops(first, std::span<trace::OpRecord>(out.data() + old, end - first));
  if (!got.ok()) {
    out.resize(old);
    return got.status();
  }
  out.resize(old + got.value());
  return {};
}

}  // namespace

Status WindowRowCache::update(const std::string& path, const trace::TraceReader& reader,
                              uint64_t first, uint64_t end) {
  const FileIdentity id = file_identity(reader);
  Held& h = files_[path];
  const uint64_t held_end = h.first + h.held();
  // Rows never go away from a file that is still the same one: anything else is
  // a file read anew.
  if (h.id != id || first < h.first || end < held_end || first > held_end) {
    h = Held{};
    h.id = id;
    h.first = first;
  } else if (first > h.first) {
    const auto dropped = static_cast<size_t>(first - h.first);
    h.skip += dropped;
    if (h.skip * 8 >= h.rows.size()) {
      h.rows.erase(h.rows.begin(), h.rows.begin() + static_cast<long>(h.skip));
      h.skip = 0;
    }
    h.first = first;
    h.lowest.drop_before(first);
    // Past an invalid row that left, the rows after it were never checked.
    h.valid = h.valid >= dropped ? h.valid - dropped : 0;
  }
  const size_t before = h.rows.size();
  if (Status s = append_rows(reader, h.first + h.held(), end, h.rows); !s.ok()) {
    files_.erase(path);
    return s;
  }
  rows_read_ += h.rows.size() - before;
  h.lowest.append(h.first + (before - h.skip),
                  std::span<const trace::OpRecord>(h.rows).subspan(before));
  while (h.valid < h.held() && trace::validate_op(h.rows[h.skip + h.valid]).ok()) ++h.valid;
  return {};
}

std::span<const trace::OpRecord> WindowRowCache::rows(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) return {};
  const Held& h = it->second;
  return std::span<const trace::OpRecord>(h.rows).subspan(h.skip);
}

size_t WindowRowCache::valid_rows(const std::string& path) const {
  auto it = files_.find(path);
  return it == files_.end() ? 0 : it->second.valid;
}

void WindowRowCache::note_firsts(const std::string& path,
                                 const std::unordered_map<uint64_t, int32_t>& me_in,
                                 WindowFirsts& firsts) const {
  auto it = files_.find(path);
  if (it != files_.end()) it->second.lowest.note(me_in, firsts);
}

uint64_t WindowRowCache::rows_held() const {
  uint64_t n = 0;
  for (const auto& [path, h] : files_) n += h.held();
  return n;
}

Result<std::vector<trace::OpRecord>> read_op_rows(const trace::TraceReader& reader, uint64_t first,
                                                  uint64_t end) {
  std::vector<trace::OpRecord> all;
  if (Status s = append_rows(reader, first, std::min(end, reader.op_count()), all); !s.ok())
    return s;
  return all;
}

}  // namespace ringside::analysis
