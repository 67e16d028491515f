#include "ringside/safe_text.h"

namespace ringside {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (2..4 bytes, no overlong
// forms, surrogates or C1 controls), 0 if there is none.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    if (c == 0xC2) lo = 0xA0;  // C2 80..C2 9F encode the C1 controls
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

bool bare_shell_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("_./:,=@%+-").find(c) != std::string_view::npos;
}

}  // namespace

std::string printable(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if ((c >= 0x20 && c < 0x7F) || (c == '\n' && keep_newlines)) {
      n = 1;
    } else if (c >= 0x80) {
      n = utf8_sequence(s, i);
    }
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string shell_quote(std::string_view s) {
  const std::string text = printable(s);
  bool bare = !text.empty();
  for (char c : text) bare = bare && bare_shell_char(c);
  if (bare) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace ringside
