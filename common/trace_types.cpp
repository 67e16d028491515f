#include "trace_types.h"

#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "ringside/trace_schema.h"

namespace ringside::trace {
namespace {

template <typename T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
  if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
  if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  if constexpr (std::is_same_v<T, char>) return H5T_NATIVE_CHAR;
}

template <typename Member>
void insert(hid_t type, const char* name, size_t offset) {
  if constexpr (std::is_array_v<Member>) {
    // Fixed-size NUL-terminated text.
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, sizeof(Member));
    H5Tset_strpad(str, H5T_STR_NULLTERM);
    H5Tinsert(type, name, offset, str);
    H5Tclose(str);
  } else {
    H5Tinsert(type, name, offset, native_type<Member>());
  }
}

hid_t make_op_type_at(hid_t type, size_t base) {
#define X(ctype, name, unit, desc) \
  insert<decltype(OpRecord::name)>(type, #name, base + offsetof(OpRecord, name));
  RINGSIDE_OP_FIELDS(X)
#undef X
  return type;
}

hid_t make_op_type() {
  return make_op_type_at(H5Tcreate(H5T_COMPOUND, sizeof(OpRecord)), 0);
}

hid_t make_pending_type() {
  hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(PendingRecord));
  insert<uint64_t>(type, "flush_index", offsetof(PendingRecord, flush_index));
  return make_op_type_at(type, offsetof(PendingRecord, op));
}

#define RINGSIDE_MAKE_TYPE(fn, Struct, LIST)              \
  hid_t fn() {                                            \
    hid_t type = H5Tcreate(H5T_COMPOUND, sizeof(Struct)); \
    LIST(RINGSIDE_INSERT_FIELD_##Struct)                  \
    return type;                                          \
  }

#define RINGSIDE_INSERT_FIELD_SampleRecord(ctype, name, unit, desc) \
  insert<decltype(SampleRecord::name)>(type, #name, offsetof(SampleRecord, name));
#define RINGSIDE_INSERT_FIELD_CommRecord(ctype, name, unit, desc) \
  insert<decltype(CommRecord::name)>(type, #name, offsetof(CommRecord, name));
#define RINGSIDE_INSERT_FIELD_StatsRecord(ctype, name, unit, desc) \
  insert<decltype(StatsRecord::name)>(type, #name, offsetof(StatsRecord, name));
#define RINGSIDE_INSERT_FIELD_LinkRecord(ctype, name, unit, desc) \
  insert<decltype(LinkRecord::name)>(type, #name, offsetof(LinkRecord, name));
#define RINGSIDE_INSERT_FIELD_ProgressRecord(ctype, name, unit, desc) \
  insert<decltype(ProgressRecord::name)>(type, #name, offsetof(ProgressRecord, name));
#define RINGSIDE_INSERT_FIELD_EventRecord(ctype, name, unit, desc) \
  insert<decltype(EventRecord::name)>(type, #name, offsetof(EventRecord, name));

RINGSIDE_MAKE_TYPE(make_sample_type, SampleRecord, RINGSIDE_SAMPLE_FIELDS)
RINGSIDE_MAKE_TYPE(make_comm_type, CommRecord, RINGSIDE_COMM_FIELDS)
RINGSIDE_MAKE_TYPE(make_stats_type, StatsRecord, RINGSIDE_STATS_FIELDS)
RINGSIDE_MAKE_TYPE(make_event_type, EventRecord, RINGSIDE_EVENT_FIELDS)
RINGSIDE_MAKE_TYPE(make_link_type, LinkRecord, RINGSIDE_LINK_FIELDS)
RINGSIDE_MAKE_TYPE(make_progress_type, ProgressRecord, RINGSIDE_PROGRESS_FIELDS)

#define RINGSIDE_FIELD_INFO(ctype, name, unit, desc) FieldInfo{#name, #ctype, unit, desc},

std::vector<DatasetSpec> build_specs() {
  std::vector<DatasetSpec> specs;
  specs.push_back(
      {kOpsDataset, sizeof(OpRecord), make_op_type, {RINGSIDE_OP_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kPendingDataset,
                   sizeof(PendingRecord),
                   make_pending_type,
                   {RINGSIDE_PENDING_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kSamplesDataset,
                   sizeof(SampleRecord),
                   make_sample_type,
                   {RINGSIDE_SAMPLE_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kEventsDataset,
                   sizeof(EventRecord),
                   make_event_type,
                   {RINGSIDE_EVENT_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kCommsDataset,
                   sizeof(CommRecord),
                   make_comm_type,
                   {RINGSIDE_COMM_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kStatsDataset,
                   sizeof(StatsRecord),
                   make_stats_type,
                   {RINGSIDE_STATS_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kLinksDataset,
                   sizeof(LinkRecord),
                   make_link_type,
                   {RINGSIDE_LINK_FIELDS(RINGSIDE_FIELD_INFO)}});
  specs.push_back({kProgressDataset,
                   sizeof(ProgressRecord),
                   make_progress_type,
                   {RINGSIDE_PROGRESS_FIELDS(RINGSIDE_FIELD_INFO)}});
  return specs;
}

}  // namespace

const std::vector<DatasetSpec>& dataset_specs() {
  // Never destroyed: a producer's writer thread may still append while the
  // process runs its exit handlers, after function statics are torn down.
  static const auto* specs = new std::vector<DatasetSpec>(build_specs());
  return *specs;
}

const DatasetSpec& dataset_spec(const char* name) {
  for (const auto& spec : dataset_specs()) {
    if (std::strcmp(spec.name, name) == 0) return spec;
  }
  throw std::logic_error(std::string("no dataset spec named ") + name);
}

h5::Handle packed_copy(hid_t memory_type) {
  h5::Handle copy(H5Tcopy(memory_type));
  H5Tpack(copy.get());
  return copy;
}

}  // namespace ringside::trace
