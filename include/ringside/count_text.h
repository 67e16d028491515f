// Counts in messages: "1 rank", "8 ranks".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringside {

// `n` and the noun, with an "s" unless n is 1 (nouns whose plural adds "s": rank, node,
// GPU, op).
std::string count_text(int64_t n, std::string_view noun);

}  // namespace ringside
