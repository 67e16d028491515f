// Each rank's op rows, kept by the first pass of an analysis of the whole job for the
// passes after it.
//
// Every pass over the whole job visits every rank's rows (matching, then lateness, and
// compute attribution between them when the job needs it).  Read from the trace, each
// pass opens every file and decompresses every row again: two thirds of what an analysis
// of a large job costs.  Held in memory, the rows would make memory grow with the job's
// length.  So the first pass writes each rank's rows, compactly encoded (about a third of
// their 96 bytes in memory), to a temporary file, and the later passes read them back
// from it (mostly from the page cache), one rank at a time.  The file is unlinked as soon
// as it is made: it goes with the process, however that ends.  Rows it could not keep (no
// temporary file, or no room left in it) are read from the trace again, as without it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/trace_schema.h"

namespace ringside::analysis {

class RowSpill {
 public:
  // A spill in a new temporary file in directory `dir`; one that keeps nothing when the
  // file cannot be made there.
  explicit RowSpill(const std::string& dir);
  ~RowSpill();
  RowSpill(const RowSpill&) = delete;
  RowSpill& operator=(const RowSpill&) = delete;

  // Keeps rank `rank`'s rows (any rank id from 0); false, keeping nothing for it, when
  // the file cannot take them.
  bool keep(int64_t rank, std::span<const trace::OpRecord> rows);
  // Rank `rank`'s rows as kept, into `out`; false when none were kept for it or they
  // cannot be read back.
  bool rows(int64_t rank, std::vector<trace::OpRecord>& out) const;
  bool usable() const { return fd_ >= 0; }

 private:
  struct Kept {
    uint64_t offset = 0, bytes = 0, rows = 0;
    bool kept = false;
  };
  int fd_ = -1;
  uint64_t end_ = 0;        // bytes written so far
  std::vector<Kept> kept_;  // by rank
  std::string buffer_;      // one rank's encoded rows; its size only grows
  mutable std::string read_buffer_;
};

// The encoding, exact for every field: per row, each field against the row before's
// (times against the row's own entry), zigzag varints; communicators and streams as
// indices into the values seen so far.  Appends to `out`.
void encode_op_rows(std::span<const trace::OpRecord> rows, std::string& out);
// The same into `out`, which holds at least max_encoded_bytes(rows.size()); returns the
// bytes written.
size_t encode_op_rows(std::span<const trace::OpRecord> rows, char* out);
size_t max_encoded_bytes(size_t rows);
// Decodes `count` rows of `in` into `out` (replacing what it held); false if `in` does
// not hold exactly that many.
bool decode_op_rows(std::string_view in, size_t count, std::vector<trace::OpRecord>& out);

}  // namespace ringside::analysis
