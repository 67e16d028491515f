// The stand-in libraries carry the real libraries' SONAMEs and symbol version nodes, and
// export every function the real ones do (so binaries linked against them load and bind).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "sim_test_util.h"

using namespace ringside::sim::test;

namespace {

const std::string kSim = RINGSIDE_SIM_LIB_DIR_STR;
const std::string kCuda = CUDA_LIB_DIR_STR;

std::string soname(const std::string& lib) {
  auto r =
      run_command("readelf -d " + lib + " | sed -n 's/.*Library soname: \\[\\(.*\\)\\]/\\1/p'");
  return r.out.substr(0, r.out.find('\n'));
}

// Version definitions (names) of a library, sorted.
std::set<std::string> version_nodes(const std::string& lib) {
  auto r = run_command("readelf -V " + lib +
                       " | sed -n '/Version definition/,/Version needs/p' | grep -o 'Name: [^ ]*'");
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) out.insert(line);
  return out;
}

// Defined function symbols with their version, e.g. "cudaMalloc@@libcudart.so.13".
std::set<std::string> exported_functions(const std::string& lib) {
  auto r = run_command("readelf -W --dyn-syms " + lib +
                       " | awk '$4==\"FUNC\" && $7!=\"UND\" {print $8}'");
  std::set<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) out.insert(line);
  return out;
}

TEST(SimLibs, SonamesMatchTheRealLibraries) {
  EXPECT_EQ(soname(kSim + "/libcudart.so.13"), soname(kCuda + "/libcudart.so.13"));
  EXPECT_EQ(soname(kSim + "/libcudart.so.13"), "libcudart.so.13");
  EXPECT_EQ(soname(kSim + "/libcuda.so.1"), soname(kCuda + "/stubs/libcuda.so"));
  EXPECT_EQ(soname(kSim + "/libnvidia-ml.so.1"), "libnvidia-ml.so.1");
}

TEST(SimLibs, CudartVersionNodeMatches) {
  auto real = version_nodes(kCuda + "/libcudart.so.13");
  ASSERT_FALSE(real.empty());
  EXPECT_EQ(version_nodes(kSim + "/libcudart.so.13"), real);
}

TEST(SimLibs, ExportsEveryRealFunctionWithTheSameVersion) {
  auto real_rt = exported_functions(kCuda + "/libcudart.so.13");
  auto sim_rt = exported_functions(kSim + "/libcudart.so.13");
  ASSERT_GT(real_rt.size(), 100u);
  for (const std::string& f : real_rt) EXPECT_TRUE(sim_rt.count(f)) << "libcudart misses " << f;
  auto real_drv = exported_functions(kCuda + "/stubs/libcuda.so");
  auto sim_drv = exported_functions(kSim + "/libcuda.so.1");
  ASSERT_GT(real_drv.size(), 100u);
  for (const std::string& f : real_drv) EXPECT_TRUE(sim_drv.count(f)) << "libcuda misses " << f;
}

TEST(SimLibs, NoInternalSymbolsLeak) {
  for (const char* lib : {"libcuda.so.1", "libcudart.so.13", "libnvidia-ml.so.1"}) {
    for (const std::string& f : exported_functions(kSim + "/" + lib)) {
      bool ok = f.rfind("cu", 0) == 0 || f.rfind("__cuda", 0) == 0 || f.rfind("nvml", 0) == 0 ||
                f.rfind("ringsim_", 0) == 0;
      EXPECT_TRUE(ok) << lib << " exports " << f;
    }
  }
}

}  // namespace
