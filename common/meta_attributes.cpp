#include "meta_attributes.h"

#include <cstdlib>
#include <cstring>

#include "hdf5_util.h"
#include "ringside/safe_text.h"
#include "ringside/trace_validate.h"

namespace ringside::trace {
namespace {

Status write_int(hid_t file, const char* name, int64_t value, const std::string& path) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  h5::Handle attr(H5Acreate2(file, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
  if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0) {
    return Status::error(h5::failure(std::string("writing attribute ") + name, path));
  }
  return {};
}

h5::Handle string_type() {
  h5::Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

Status write_str(hid_t file, const char* name, const std::string& value, const std::string& path) {
  h5::Handle space(H5Screate(H5S_SCALAR));
  h5::Handle type = string_type();
  h5::Handle attr(H5Acreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
  const char* data = value.c_str();
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), &data) < 0) {
    return Status::error(h5::failure(std::string("writing attribute ") + name, path));
  }
  return {};
}

Status missing(const char* name, const std::string& path) {
  return Status::error(path + ": attribute '" + name +
                       "' is missing or has the wrong type; the file is corrupt or was not "
                       "written by ringside");
}

Status read_int(hid_t file, const char* name, int64_t& value, const std::string& path) {
  if (H5Aexists(file, name) <= 0) return missing(name, path);
  h5::Handle attr(H5Aopen(file, name, H5P_DEFAULT));
  h5::Handle type(attr.valid() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER ||
      H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0) {
    return missing(name, path);
  }
  return {};
}

Status read_str(hid_t file, const char* name, std::string& value, const std::string& path) {
  if (H5Aexists(file, name) <= 0) return missing(name, path);
  h5::Handle attr(H5Aopen(file, name, H5P_DEFAULT));
  h5::Handle type(attr.valid() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING ||
      H5Tis_variable_str(type.get()) <= 0) {
    return missing(name, path);
  }
  h5::Handle mem = string_type();
  char* data = nullptr;
  if (H5Aread(attr.get(), mem.get(), &data) < 0) return missing(name, path);
  const std::string raw = data ? std::string(data, strnlen(data, kMaxTextAttribute + 1)) : "";
  if (data) H5free_memory(data);
  if (raw.size() > kMaxTextAttribute) {
    return Status::error(path + ": attribute '" + name + "' is longer than " +
                         std::to_string(kMaxTextAttribute) + " bytes (corrupt file)");
  }
  // Shown on terminals and put into JSON and suggested commands: never raw.
  value = printable(raw);
  return {};
}

// An attribute added within version 1: files written before it lack it.
Status read_optional_str(hid_t file, const char* name, std::string& value,
                         const std::string& path) {
  if (H5Aexists(file, name) == 0) {
    value.clear();
    return {};
  }
  return read_str(file, name, value, path);
}

}  // namespace

Status write_meta_attributes(hid_t file, const TraceMeta& meta, const std::string& path) {
  h5::QuietErrors quiet;
  TraceMeta m = meta;
  m.schema_version = kSchemaVersion;
#define RINGSIDE_WRITE_Int(name) write_int(file, #name, m.name, path)
#define RINGSIDE_WRITE_Str(name) write_str(file, #name, m.name, path)
#define RINGSIDE_WRITE_OptStr(name) write_str(file, #name, m.name, path)
#define X(kind, name, desc) \
  if (Status s = RINGSIDE_WRITE_##kind(name); !s.ok()) return s;
  RINGSIDE_META_FIELDS(X)
#undef X
#undef RINGSIDE_WRITE_Int
#undef RINGSIDE_WRITE_Str
#undef RINGSIDE_WRITE_OptStr
  return {};
}

Status read_meta_attributes(hid_t file, TraceMeta& meta, const std::string& path) {
  h5::QuietErrors quiet;
  if (H5Aexists(file, "schema_version") <= 0) {
    return Status::error(path + ": not a ringside trace (no 'schema_version' attribute)");
  }
  if (Status s = read_int(file, "schema_version", meta.schema_version, path); !s.ok()) return s;
  if (meta.schema_version != kSchemaVersion) {
    return Status::error(path + ": trace schema_version " + std::to_string(meta.schema_version) +
                         " is not supported by this build, which reads version " +
                         std::to_string(kSchemaVersion) +
                         (meta.schema_version > kSchemaVersion ? "; upgrade ringside" : ""));
  }
#define RINGSIDE_READ_Int(name) read_int(file, #name, meta.name, path)
#define RINGSIDE_READ_Str(name) read_str(file, #name, meta.name, path)
#define RINGSIDE_READ_OptStr(name) read_optional_str(file, #name, meta.name, path)
#define X(kind, name, desc) \
  if (Status s = RINGSIDE_READ_##kind(name); !s.ok()) return s;
  RINGSIDE_META_FIELDS(X)
#undef X
#undef RINGSIDE_READ_Int
#undef RINGSIDE_READ_Str
#undef RINGSIDE_READ_OptStr
  return {};
}

}  // namespace ringside::trace
