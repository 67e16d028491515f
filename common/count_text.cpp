#include "ringside/count_text.h"

namespace ringside {

std::string count_text(int64_t n, std::string_view noun) {
  std::string s = std::to_string(n);
  s += ' ';
  s += noun;
  if (n != 1) s += 's';
  return s;
}

}  // namespace ringside
