// HDF5 compound types and field tables generated from the X-macro lists in
// ringside/trace_schema.h.  Writer and reader use the same builders.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>
#include <vector>

#include "hdf5_util.h"

namespace ringside::trace {

struct FieldInfo {
  std::string name;
  std::string type;  // C type name as in the schema, e.g. "uint64_t"
  std::string unit;
  std::string description;
};

// One dataset of the format: its name, record size, the in-memory compound type
// and the field table (for docs and checks).
struct DatasetSpec {
  const char* name;
  size_t record_size;
  hid_t (*make_memory_type)();  // caller owns the returned type
  std::vector<FieldInfo> fields;
};

const std::vector<DatasetSpec>& dataset_specs();
const DatasetSpec& dataset_spec(const char* name);

// Same layout with no padding: what goes on disk.
h5::Handle packed_copy(hid_t memory_type);

}  // namespace ringside::trace
