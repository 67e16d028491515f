#include "core/rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/errors.h"

namespace ringside::bench {

namespace {

std::string to_hex(const ncclUniqueId& uid) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : uid.internal) {
    auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

bool from_hex(const std::string& hex, ncclUniqueId& uid) {
  if (hex.size() != 2 * sizeof uid.internal) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof uid.internal; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    uid.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  return true;
}

std::string file_key(const ProcessIdentity& id) {
  return id.job_key.empty() ? "-" : id.job_key;
}

void write_id_file(const std::string& path, const std::string& key, const ncclUniqueId& uid) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "ringside-rendezvous " << key << " " << to_hex(uid) << "\n";
    if (!out) {
      throw UsageError(
          "cannot write the rendezvous file '" + tmp +
          "'; pass --rendezvous a path in a directory shared by all nodes and writable");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot rename '" + tmp + "' to the rendezvous file '" + path + "'");
  }
}

// The id in `path` if the file is fresh and belongs to this job.
bool read_id_file(const std::string& path, const std::string& key, std::time_t not_before,
                  ncclUniqueId& uid) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_mtime < not_before) return false;
  std::ifstream in(path);
  std::string magic, file_key_text, hex;
  if (!(in >> magic >> file_key_text >> hex)) return false;
  return magic == "ringside-rendezvous" && file_key_text == key && from_hex(hex, uid);
}

}  // namespace

uint64_t hash_unique_id(const ncclUniqueId& uid) {
  uint64_t h = 1469598103934665603ull;
  for (char c : uid.internal) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

ncclUniqueId agree_unique_id(const ProcessIdentity& id, const RendezvousOptions& options) {
  ncclUniqueId uid{};
  if (id.mpi) {
    if (id.proc == 0) RINGSIDE_NCCL_CHECK(ncclGetUniqueId(&uid));
    mpi_broadcast(id, &uid, sizeof uid);
    return uid;
  }
  const char* comm_id = std::getenv("NCCL_COMM_ID");
  if (id.nprocs == 1 || (comm_id != nullptr && *comm_id != '\0')) {
    RINGSIDE_NCCL_CHECK(ncclGetUniqueId(&uid));
    return uid;
  }
  if (options.file.empty()) {
    throw UsageError("this is process " + std::to_string(id.proc) + " of " +
                     std::to_string(id.nprocs) + " (from " + id.source +
                     " variables) and there is no way to agree on the NCCL id: launch with "
                     "mpirun/srun --mpi=pmix, set NCCL_COMM_ID=<host of rank 0>:<port>, or pass "
                     "--rendezvous FILE on a shared file system");
  }
  const std::string key = file_key(id);
  if (id.proc == 0) {
    RINGSIDE_NCCL_CHECK(ncclGetUniqueId(&uid));
    write_id_file(options.file, key, uid);
    return uid;
  }
  // A file older than two minutes before we started belongs to an earlier run.
  const std::time_t not_before = std::time(nullptr) - 120;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options.timeout_seconds);
  while (!read_id_file(options.file, key, not_before, uid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw RuntimeError("timed out after " + std::to_string(options.timeout_seconds) +
                         " s waiting for process 0 to write the rendezvous file '" + options.file +
                         "' with job key '" + key +
                         "'; check that the path is shared by all nodes");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return uid;
}

}  // namespace ringside::bench
