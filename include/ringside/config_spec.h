// Typed option specs: one table per component drives parsing, validation
// (all errors reported at once), dumping and the docs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/status.h"

namespace ringside::config {

enum class Type {
  kBool,     // 1/0, true/false, yes/no, on/off
  kInt,      // decimal integer, whole string
  kDouble,   // decimal number, whole string
  kString,   // any text (may be constrained by `choices`)
  kSeconds,  // number with optional unit: 500ms, 2s, 5m, 1h (no unit = seconds)
  kBytes,    // integer with optional unit: 8, 64K, 1M, 8G (powers of 1024)
};

struct OptionSpec {
  const char* name;  // e.g. "RINGSIDE_OUTPUT"
  Type type;
  const char* default_value;  // in the same syntax as the user would type it
  const char* description;
  double min = 0;  // numeric bounds, inclusive; ignored when min > max
  double max = -1;
  const char* choices = nullptr;  // kString: "a|b|c" or nullptr for free text
};

// Text from the environment as messages show it: printable() (control
// characters and invalid UTF-8 become '?'), and past `max_bytes` cut at a
// character boundary and ended with "... (N bytes)", so that a huge or binary
// value can neither flood every rank's log nor drive its terminal.
inline constexpr size_t kEchoBytes = 80;
std::string echo(std::string_view text, size_t max_bytes = kEchoBytes);

// Longest value a kString option takes (a path at most PATH_MAX).
inline constexpr size_t kMaxStringBytes = 4096;

// Strict parsers: the whole string must be consumed, else an error naming it.
Result<int64_t> parse_int(std::string_view text);
Result<double> parse_double(std::string_view text);
Result<bool> parse_bool(std::string_view text);
Result<double> parse_seconds(std::string_view text);
Result<uint64_t> parse_bytes(std::string_view text);

class Values {
 public:
  bool has(const std::string& name) const;
  // Parsed values; the name must be in the spec (else std::out_of_range).
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;  // kDouble and kSeconds
  uint64_t get_bytes(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  // Whether the value came from the environment rather than the default.
  bool is_set(const std::string& name) const;

  void set(const OptionSpec& spec, std::string text, bool from_user);  // text already validated
  const std::map<std::string, std::string>& raw() const { return text_; }

 private:
  std::map<std::string, std::string> text_;
  std::map<std::string, Type> types_;
  std::map<std::string, bool> from_user_;
};

struct ParseResult {
  Values values;                    // every option, bad ones at their default
  std::vector<std::string> errors;  // one line per problem, naming the variable and the fix
};

// Validates one value against its spec.
Status validate(const OptionSpec& spec, std::string_view text);

// Reads every spec'd variable from `env` (a NULL-terminated environ array).
// Any variable starting with `prefix` that is not in the spec is an error.
ParseResult parse_env(std::span<const OptionSpec> specs, std::string_view prefix, char** env);

// "NAME=value (default|set)" lines, for RINGSIDE_DUMP_CONFIG and --help.
std::string dump(std::span<const OptionSpec> specs, const Values& values);
// A compact JSON object {name: value} of the effective configuration.
std::string to_json(std::span<const OptionSpec> specs, const Values& values);
// A Markdown table of the specs (name, type, default, description) for docs.
std::string markdown_table(std::span<const OptionSpec> specs);

const char* type_name(Type type);

}  // namespace ringside::config
