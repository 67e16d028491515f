// Damage done to a copy of a trace directory: random bit flips and byte runs,
// truncation, and structural edits through HDF5 (hostile attribute values,
// hostile record fields, deleted objects), plus directory-level trouble
// (duplicate, missing and mislinked files).  Everything is drawn from the
// generator, so a seed reproduces a case exactly.
#pragma once

#include <filesystem>
#include <random>
#include <string>

namespace ringside::fuzz {

// Applies one to three mutations to the traces in `dir` and says what it did.
std::string mutate_directory(const std::filesystem::path& dir, std::mt19937_64& rng);

}  // namespace ringside::fuzz
