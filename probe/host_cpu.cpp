#include "host_cpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ringside::probe {

int64_t process_run_delay_ns() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return 0;
  int64_t total = 0;
  while (const dirent* e = readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // the thread ended meanwhile, or no schedstat
    char buf[96];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "<ns on a CPU> <ns waiting for one> <timeslices>"
    char* end = nullptr;
    std::strtoll(buf, &end, 10);
    if (end == buf) continue;
    const long long waited = std::strtoll(end, nullptr, 10);
    if (waited > 0) total += waited;
  }
  closedir(tasks);
  return total;
}

}  // namespace ringside::probe
