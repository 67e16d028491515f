// Text read from traces on its way to a terminal, a JSON document or a shell.
// Host names, job ids, comm names and event messages come from files that may
// be damaged or hostile: the reader makes them printable() on load, and a
// suggested command puts them in only through shell_quote().
#pragma once

#include <string>
#include <string_view>

namespace ringside {

// `s` with every control character (C0, DEL, C1) and every byte that is not
// part of valid UTF-8 replaced by '?', so that it can neither move the cursor,
// recolour or retitle a terminal nor make a JSON writer throw.  Valid UTF-8
// letters are kept; so are newlines when `keep_newlines`.
std::string printable(std::string_view s, bool keep_newlines = false);

// One shell word that a POSIX shell reads back as exactly printable(s): bare
// when it only holds [A-Za-z0-9_./:,=@%+-], otherwise in single quotes.
std::string shell_quote(std::string_view s);

}  // namespace ringside
