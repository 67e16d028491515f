#include "row_layout.h"

#include <cstring>

#include "hdf5_util.h"

namespace ringside::trace {

RowLayout::RowLayout(hid_t file_type, hid_t memory_type, size_t record_size)
    : record_size_(record_size) {
  h5::QuietErrors quiet;
  file_size_ = H5Tget_size(file_type);
  const int members = H5Tget_nmembers(memory_type);
  // A row read raw must fit where its record goes, for the rows to spread in place.
  if (file_size_ == 0 || file_size_ > record_size_ || members <= 0) return;
  bool same = file_size_ == record_size_ && H5Tget_nmembers(file_type) == members;
  for (int i = 0; i < members; ++i) {
    const auto m = static_cast<unsigned>(i);
    char* name = H5Tget_member_name(memory_type, m);
    if (name == nullptr) return;
    const int in_file = H5Tget_member_index(file_type, name);
    H5free_memory(name);
    if (in_file < 0) {
      same = false;  // a field added later: its bytes stay 0
      continue;
    }
    const auto f = static_cast<unsigned>(in_file);
    h5::Handle memory_field(H5Tget_member_type(memory_type, m));
    h5::Handle file_field(H5Tget_member_type(file_type, f));
    if (!memory_field.valid() || !file_field.valid() ||
        H5Tequal(memory_field.get(), file_field.get()) <= 0)
      return;  // stored differently: HDF5 converts it
    const size_t from = H5Tget_member_offset(file_type, f);
    const size_t to = H5Tget_member_offset(memory_type, m);
    const size_t size = H5Tget_size(memory_field.get());
    if (from + size > file_size_ || to + size > record_size_) return;
    same = same && from == to;
    fields_.push_back(
        {static_cast<uint32_t>(from), static_cast<uint32_t>(to), static_cast<uint32_t>(size)});
  }
  raw_ = true;
  same_ = same;
}

void RowLayout::spread(void* rows, size_t count) const {
  if (same_ || count == 0) return;
  auto* base = static_cast<std::byte*>(rows);
  std::vector<std::byte> row(file_size_);
  for (size_t i = count; i-- > 0;) {
    // Row i's bytes lie at or before its record: copied out before the record is
    // written.  Rows before it lie before the record and are left as they are.
    std::memcpy(row.data(), base + i * file_size_, file_size_);
    std::byte* record = base + i * record_size_;
    std::memset(record, 0, record_size_);
    for (const Field& f : fields_) std::memcpy(record + f.to, row.data() + f.from, f.size);
  }
}

}  // namespace ringside::trace
