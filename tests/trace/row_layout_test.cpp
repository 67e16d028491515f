// Rows read in the file's own type and spread to records (common/row_layout.h): the
// same records as HDF5's conversion gives, for the project's files and for files
// whose fields differ.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstring>
#include <vector>

#include "hdf5_util.h"
#include "ringside/trace_schema.h"
#include "row_layout.h"
#include "trace_types.h"

namespace ringside::trace {
namespace {

std::vector<OpRecord> sample_ops(size_t n) {
  std::vector<OpRecord> ops(n);
  std::memset(ops.data(), 0, n * sizeof(OpRecord));  // padding too: compared bytewise
  for (size_t i = 0; i < n; ++i) {
    ops[i].seq = 1000 + i;
    ops[i].t_enter_ns = -5 - static_cast<int64_t>(i);
    ops[i].t_dev_end_ns = static_cast<int64_t>(i) << 40;
    ops[i].count = 7 * i + 1;
    ops[i].stream = 0xabcdef0000 + i;
    ops[i].op = static_cast<uint8_t>(i % 9);
    ops[i].status = static_cast<uint8_t>(i % 3);
    ops[i].peer = static_cast<int32_t>(i) - 3;
  }
  return ops;
}

// `records` converted by HDF5 to `file_type`, one row after another.
std::vector<std::byte> to_file_rows(const std::vector<OpRecord>& records, hid_t memory_type,
                                    hid_t file_type) {
  const size_t n = records.size();
  std::vector<std::byte> buf(n * std::max(sizeof(OpRecord), H5Tget_size(file_type)));
  std::memcpy(buf.data(), records.data(), n * sizeof(OpRecord));
  std::vector<std::byte> background(buf.size());
  EXPECT_GE(H5Tconvert(memory_type, file_type, n, buf.data(), background.data(), H5P_DEFAULT), 0);
  buf.resize(n * H5Tget_size(file_type));
  return buf;
}

// `rows` in a buffer of records, spread in place.
std::vector<OpRecord> spread(const RowLayout& layout, const std::vector<std::byte>& rows,
                             size_t n) {
  std::vector<OpRecord> out(n);
  std::memset(out.data(), 0x5a, n * sizeof(OpRecord));  // what HDF5 wrote past the rows
  std::memcpy(out.data(), rows.data(), rows.size());
  layout.spread(out.data(), n);
  return out;
}

// The packed type without `skip`, plus `extra` (an int64 field the records lack), with
// `swapped` stored big-endian.
h5::Handle file_type_variant(hid_t packed, const char* skip, const char* extra,
                             const char* swapped) {
  size_t size = 0;
  const int members = H5Tget_nmembers(packed);
  for (int i = 0; i < members; ++i) {
    char* name = H5Tget_member_name(packed, static_cast<unsigned>(i));
    if (std::strcmp(name, skip) != 0) {
      h5::Handle t(H5Tget_member_type(packed, static_cast<unsigned>(i)));
      size += H5Tget_size(t.get());
    }
    H5free_memory(name);
  }
  if (extra != nullptr) size += 8;
  h5::Handle type(H5Tcreate(H5T_COMPOUND, size));
  size_t at = 0;
  if (extra != nullptr) {
    H5Tinsert(type.get(), extra, 0, H5T_STD_I64LE);
    at = 8;
  }
  for (int i = 0; i < members; ++i) {
    char* name = H5Tget_member_name(packed, static_cast<unsigned>(i));
    if (std::strcmp(name, skip) != 0) {
      h5::Handle t(H5Tget_member_type(packed, static_cast<unsigned>(i)));
      if (std::strcmp(name, swapped) == 0) {
        h5::Handle be(H5Tcopy(t.get()));
        H5Tset_order(be.get(), H5T_ORDER_BE);
        H5Tinsert(type.get(), name, at, be.get());
      } else {
        H5Tinsert(type.get(), name, at, t.get());
      }
      at += H5Tget_size(t.get());
    }
    H5free_memory(name);
  }
  return type;
}

struct Types {
  h5::Handle memory{dataset_spec(kOpsDataset).make_memory_type()};
  h5::Handle packed = packed_copy(memory.get());
};

TEST(RowLayout, TheProjectsPackedRowsSpreadToTheRecordsHdf5WouldGive) {
  Types t;
  const RowLayout layout(t.packed.get(), t.memory.get(), sizeof(OpRecord));
  ASSERT_TRUE(layout.raw());
  EXPECT_EQ(layout.file_row_size(), H5Tget_size(t.packed.get()));
  EXPECT_LT(layout.file_row_size(), sizeof(OpRecord)) << "the file's rows are packed";
  for (size_t n : {1u, 2u, 37u}) {
    const auto ops = sample_ops(n);
    const auto rows = to_file_rows(ops, t.memory.get(), t.packed.get());
    const auto back = spread(layout, rows, n);
    EXPECT_EQ(std::memcmp(back.data(), ops.data(), n * sizeof(OpRecord)), 0) << n << " rows";
  }
}

TEST(RowLayout, AFieldTheFileLacksReadsAsZeroAndOneItHasExtraIsSkipped) {
  Types t;
  const h5::Handle older = file_type_variant(t.packed.get(), "peer", "retired_field", "");
  const RowLayout layout(older.get(), t.memory.get(), sizeof(OpRecord));
  ASSERT_TRUE(layout.raw());
  auto ops = sample_ops(5);
  const auto rows = to_file_rows(ops, t.memory.get(), older.get());
  const auto back = spread(layout, rows, 5);
  for (auto& o : ops) o.peer = 0;
  EXPECT_EQ(std::memcmp(back.data(), ops.data(), 5 * sizeof(OpRecord)), 0);
}

TEST(RowLayout, AFieldStoredDifferentlyLeavesTheRowsToHdf5sConversion) {
  Types t;
  const h5::Handle swapped = file_type_variant(t.packed.get(), "", nullptr, "seq");
  EXPECT_FALSE(RowLayout(swapped.get(), t.memory.get(), sizeof(OpRecord)).raw());
  // Rows wider than their records cannot spread in place: converted by HDF5 too.
  h5::Handle wide(H5Tcopy(t.packed.get()));
  H5Tset_size(wide.get(), sizeof(OpRecord) + 8);
  EXPECT_FALSE(RowLayout(wide.get(), t.memory.get(), sizeof(OpRecord)).raw());
}

}  // namespace
}  // namespace ringside::trace
