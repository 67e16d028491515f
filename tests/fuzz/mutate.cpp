#include "mutate.h"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

namespace ringside::fuzz {
namespace {

namespace fs = std::filesystem;
using Rng = std::mt19937_64;

size_t pick(Rng& rng, size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

std::vector<fs::path> traces_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::error_code ec;  // a symlink loop planted earlier is not a trace to damage
    if (e.path().extension() == ".h5" && fs::is_regular_file(e.symlink_status(ec)))
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Integers that break naive code: signs, widths, overflow edges.
int64_t hostile_int(Rng& rng) {
  static const int64_t values[] = {-1,
                                   0,
                                   1,
                                   2,
                                   -2,
                                   255,
                                   int64_t{1} << 24,
                                   int64_t{1} << 28,
                                   int64_t{1} << 31,
                                   (int64_t{1} << 31) - 1,
                                   int64_t{1} << 32,
                                   int64_t{1} << 40,
                                   1000000000000,
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max() - 1,
                                   std::numeric_limits<int64_t>::min() + 1};
  if (pick(rng, 4) == 0) return static_cast<int64_t>(rng());
  return values[pick(rng, std::size(values))];
}

std::string hostile_text(Rng& rng) {
  switch (pick(rng, 6)) {
    case 0:
      return "";
    case 1:
      return std::string(100 * 1024, 'x');
    case 2:
      return "node\x1b[2J\x1b]0;title\x07;rm -rf ~";
    case 3:
      return "\xff\xfe\xc3(\x80";
    case 4:
      return "node2";  // another node's name
    default:
      return std::string(1, static_cast<char>(rng()));
  }
}

std::string bit_flips(const fs::path& p, Rng& rng) {
  auto bytes = read_bytes(p);
  if (bytes.empty()) return "nothing to flip";
  const size_t flips = size_t{1} << (2 * pick(rng, 4));  // 1, 4, 16 or 64
  for (size_t i = 0; i < flips; ++i)
    bytes[pick(rng, bytes.size())] ^= static_cast<char>(1u << pick(rng, 8));
  write_bytes(p, bytes);
  return std::to_string(flips) + " bit flips in " + p.filename().string();
}

std::string byte_run(const fs::path& p, Rng& rng) {
  auto bytes = read_bytes(p);
  if (bytes.empty()) return "nothing to overwrite";
  const size_t at = pick(rng, bytes.size());
  const size_t len = std::min(bytes.size() - at, 1 + pick(rng, 256));
  const int fill = static_cast<int>(pick(rng, 3));
  for (size_t i = 0; i < len; ++i)
    bytes[at + i] = fill == 0 ? '\0' : fill == 1 ? '\xff' : static_cast<char>(rng());
  write_bytes(p, bytes);
  return std::to_string(len) + " bytes overwritten at " + std::to_string(at) + " in " +
         p.filename().string();
}

std::string truncate_file(const fs::path& p, Rng& rng) {
  const auto size = fs::file_size(p);
  const auto keep = size ? pick(rng, static_cast<size_t>(size)) : 0;
  fs::resize_file(p, keep);
  return p.filename().string() + " truncated to " + std::to_string(keep) + " bytes";
}

// Names of the attributes of the file's root group.
std::vector<std::string> attribute_names(hid_t file) {
  std::vector<std::string> names;
  H5O_info_t info{};
  if (H5Oget_info(file, &info) < 0) return names;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    char name[256] = {};
    if (H5Aget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                           H5P_DEFAULT) > 0)
      names.emplace_back(name);
  }
  return names;
}

std::string edit_attribute(hid_t file, Rng& rng) {
  const auto names = attribute_names(file);
  if (names.empty()) return "no attributes";
  const std::string& name = names[pick(rng, names.size())];
  if (pick(rng, 8) == 0) {
    H5Adelete(file, name.c_str());
    return "attribute " + name + " deleted";
  }
  hid_t attr = H5Aopen(file, name.c_str(), H5P_DEFAULT);
  if (attr < 0) return "attribute " + name + " not opened";
  hid_t type = H5Aget_type(attr);
  std::string what;
  if (H5Tget_class(type) == H5T_STRING) {
    const std::string text = hostile_text(rng);
    const char* p = text.c_str();
    if (H5Tis_variable_str(type) > 0) H5Awrite(attr, type, &p);
    what = "attribute " + name + " = text of " + std::to_string(text.size()) + " bytes";
  } else {
    const int64_t v = hostile_int(rng);
    H5Awrite(attr, H5T_NATIVE_INT64, &v);
    what = "attribute " + name + " = " + std::to_string(v);
  }
  H5Tclose(type);
  H5Aclose(attr);
  return what;
}

// Sets one member of one record of a compound dataset to a hostile value.
std::string edit_record(hid_t file, const char* dataset, Rng& rng) {
  hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT);
  if (ds < 0) return std::string("no dataset ") + dataset;
  std::string what = std::string("dataset ") + dataset + " empty";
  hid_t space = H5Dget_space(ds);
  hid_t ftype = H5Dget_type(ds);
  hid_t mtype = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  const int members = H5Tget_class(mtype) == H5T_COMPOUND ? H5Tget_nmembers(mtype) : 0;
  if (pick(rng, 10) == 0) {
    what = std::string("dataset ") + dataset + " deleted";
    H5Tclose(mtype);
    H5Tclose(ftype);
    H5Sclose(space);
    H5Dclose(ds);
    H5Ldelete(file, dataset, H5P_DEFAULT);
    return what;
  }
  if (n > 0 && members > 0) {
    const size_t size = H5Tget_size(mtype);
    std::vector<unsigned char> rows(static_cast<size_t>(n) * size);
    if (H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) >= 0) {
      const unsigned m = static_cast<unsigned>(pick(rng, static_cast<size_t>(members)));
      const size_t offset = H5Tget_member_offset(mtype, m);
      hid_t member_type = H5Tget_member_type(mtype, m);
      const size_t width = std::min<size_t>(H5Tget_size(member_type), 8);
      H5Tclose(member_type);
      char* name = H5Tget_member_name(mtype, m);
      // Often a whole run of rows, since one bad row is the easy case.
      const size_t first = pick(rng, static_cast<size_t>(n));
      const size_t count = pick(rng, 2) ? 1 : static_cast<size_t>(n) - first;
      const int64_t v = hostile_int(rng);
      for (size_t r = first; r < first + count; ++r)
        std::memcpy(rows.data() + r * size + offset, &v, width);
      H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
      what = std::string("dataset ") + dataset + " rows " + std::to_string(first) + ".." +
             std::to_string(first + count - 1) + " field " + (name ? name : "?") + " = " +
             std::to_string(v);
      H5free_memory(name);
    }
  }
  H5Tclose(mtype);
  H5Tclose(ftype);
  H5Sclose(space);
  H5Dclose(ds);
  return what;
}

std::string structural(const fs::path& p, Rng& rng) {
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::string what = "not an HDF5 file";
  hid_t file = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file >= 0) {
    static const char* datasets[] = {"ops", "comms", "events", "stats", "pending", "gpu_samples"};
    what = pick(rng, 3) == 0 ? edit_attribute(file, rng)
                             : edit_record(file, datasets[pick(rng, std::size(datasets))], rng);
    H5Fclose(file);
  }
  H5Eset_auto2(H5E_DEFAULT, func, data);
  return what + " (" + p.filename().string() + ")";
}

std::string directory_edit(const fs::path& dir, const std::vector<fs::path>& traces, Rng& rng) {
  const fs::path& victim = traces[pick(rng, traces.size())];
  std::error_code ec;  // an edit that cannot be made (name taken) is simply skipped
  switch (pick(rng, 6)) {
    case 0:
      fs::remove(victim);
      return victim.filename().string() + " removed";
    case 1:
      fs::resize_file(victim, 0);
      return victim.filename().string() + " emptied";
    case 2: {
      const fs::path& other = traces[pick(rng, traces.size())];
      if (other != victim) fs::copy_file(other, victim, fs::copy_options::overwrite_existing, ec);
      return victim.filename().string() + " replaced by a copy of " + other.filename().string();
    }
    case 3:
      fs::remove(victim);
      fs::create_symlink("no-such-file.h5", victim, ec);
      return victim.filename().string() + " is a dangling symlink";
    case 4: {
      const fs::path loop = dir / (victim.stem().string() + "-loop.h5");
      fs::create_symlink(loop.filename(), loop, ec);
      return "a symlink loop among the traces";
    }
    default: {
      fs::copy_file(victim, dir / ("zz-" + victim.filename().string()), ec);
      return "a second copy of " + victim.filename().string();
    }
  }
}

}  // namespace

std::string mutate_directory(const fs::path& dir, Rng& rng) {
  std::string what;
  const size_t count = 1 + (pick(rng, 4) == 0 ? pick(rng, 3) : 0);
  for (size_t i = 0; i < count; ++i) {
    const auto traces = traces_in(dir);
    if (traces.empty()) break;
    const fs::path& p = traces[pick(rng, traces.size())];
    std::string step;
    switch (pick(rng, 10)) {
      case 0:
      case 1:
      case 2:
        step = bit_flips(p, rng);
        break;
      case 3:
        step = byte_run(p, rng);
        break;
      case 4:
        step = truncate_file(p, rng);
        break;
      case 5:
        step = directory_edit(dir, traces, rng);
        break;
      default:
        step = structural(p, rng);
        break;
    }
    what += (what.empty() ? "" : "; ") + step;
  }
  return what;
}

}  // namespace ringside::fuzz
