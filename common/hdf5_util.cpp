#include "hdf5_util.h"

#include <vector>

namespace ringside::trace::h5 {

void Handle::reset() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE:
      H5Fclose(id_);
      break;
    case H5I_GROUP:
      H5Gclose(id_);
      break;
    case H5I_DATASET:
      H5Dclose(id_);
      break;
    case H5I_DATASPACE:
      H5Sclose(id_);
      break;
    case H5I_DATATYPE:
      H5Tclose(id_);
      break;
    case H5I_ATTR:
      H5Aclose(id_);
      break;
    case H5I_GENPROP_LST:
      H5Pclose(id_);
      break;
    default:
      break;
  }
  id_ = H5I_INVALID_HID;
}

TransferBuffers::TransferBuffers(size_t bytes)
    : conversion_(bytes), background_(bytes), dxpl_(H5Pcreate(H5P_DATASET_XFER)) {
  if (dxpl_.valid() &&
      H5Pset_buffer(dxpl_.get(), bytes, conversion_.data(), background_.data()) < 0)
    dxpl_.reset();
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &old_func_, &old_data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() {
  H5Eset_auto2(H5E_DEFAULT, old_func_, old_data_);
}

namespace {
herr_t collect(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  std::string line = err->func_name ? err->func_name : "?";
  char minor[256] = {0};
  if (H5Eget_msg(err->min_num, nullptr, minor, sizeof minor) < 0) minor[0] = '\0';
  line += ": ";
  line += err->desc ? err->desc : "";
  if (minor[0] != '\0') {
    line += " (";
    line += minor;
    line += ")";
  }
  out->push_back(std::move(line));
  return 0;
}
}  // namespace

std::string last_error() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &lines);
  H5Eclear2(H5E_DEFAULT);
  if (lines.empty()) return "unknown HDF5 error";
  // The innermost entries say what actually went wrong; keep the last two.
  std::string msg = lines.back();
  if (lines.size() >= 2) msg = lines[lines.size() - 2] + "; " + msg;
  return msg;
}

std::string failure(const std::string& what, const std::string& path) {
  return what + " failed on " + path + ": " + last_error();
}

}  // namespace ringside::trace::h5
