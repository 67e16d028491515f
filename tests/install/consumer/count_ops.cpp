// Prints each trace file's rank and op count: what a site's own tooling would start from.
#include <cstdio>

#include "ringside/trace_reader.h"

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    auto reader = ringside::trace::TraceReader::open(argv[i]);
    if (!reader.ok()) {
      std::fprintf(stderr, "count_ops: %s\n", reader.message().c_str());
      status = 2;
      continue;
    }
    std::printf("rank %lld: %llu ops\n", static_cast<long long>(reader.value()->meta().rank),
                static_cast<unsigned long long>(reader.value()->op_count()));
  }
  return status;
}
