// How a table's rows are read into records: in the file's own type, then moved into
// the records here, where every field the records hold is stored as the same type.
//
// Files store each table packed (trace_types.h: no padding), the records in memory
// have the compiler's padding.  Read in the records' type, every H5Dread converts:
// HDF5 looks up the conversion path by comparing both compound types member by
// member, copies and registers both types, converts member by member through a
// background buffer, and closes the copies again: most of what reading a few new rows
// of a table costs, at every poll of a live trace.  Read in the file's own type, it
// copies the bytes; the rows are then spread to their records in place.
//
// A file whose fields are stored differently (another byte order, another width: not
// what this project writes) is read through HDF5's conversion as before.  Record
// fields the file lacks (fields added after it was written) read as 0; file fields
// the records lack are skipped.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringside::trace {

class RowLayout {
 public:
  RowLayout() = default;  // read through HDF5's conversion
  // `file_type`: the dataset's; `memory_type` and `record_size`: the records'.
  RowLayout(hid_t file_type, hid_t memory_type, size_t record_size);
  // Whether rows are read in the file's own type (then spread() places them).
  bool raw() const { return raw_; }
  // Bytes of one row in the file's type.
  size_t file_row_size() const { return file_size_; }
  // `count` rows read raw to the start of `rows`, which holds `count` records: each
  // moved to its record, in place (from the last: a record is never smaller than its
  // packed row).
  void spread(void* rows, size_t count) const;

 private:
  struct Field {
    uint32_t from, to, size;  // offset in the file's row, in the record; bytes
  };
  std::vector<Field> fields_;
  size_t file_size_ = 0;
  size_t record_size_ = 0;
  bool raw_ = false;
  bool same_ = false;  // the file's rows are the records byte for byte
};

}  // namespace ringside::trace
