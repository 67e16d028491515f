#include "ringside/config_spec.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "ringside/safe_text.h"

namespace ringside::config {
namespace {

std::string quoted(std::string_view text) {
  return "'" + echo(text) + "'";
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5ms" into number "12.5" and unit "ms".
std::pair<std::string_view, std::string_view> split_unit(std::string_view text) {
  size_t i = text.size();
  while (i > 0 && std::isalpha(static_cast<unsigned char>(text[i - 1]))) --i;
  return {text.substr(0, i), text.substr(i)};
}

}  // namespace

std::string echo(std::string_view text, size_t max_bytes) {
  size_t keep = text.size();
  if (keep > max_bytes) {
    keep = max_bytes;
    // Do not cut a UTF-8 sequence: back up over continuation bytes (10xxxxxx).
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  }
  std::string out = printable(text.substr(0, keep));
  if (keep < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

Result<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (!text.empty() && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    if (ec == std::errc::result_out_of_range)
      return Status::error(quoted(text) + " is out of range");
    return Status::error(quoted(text) + " is not an integer");
  }
  return value;
}

Result<double> parse_double(std::string_view text) {
  double value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (!text.empty() && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value)) {
    return Status::error(quoted(text) + " is not a number");
  }
  return value;
}

Result<bool> parse_bool(std::string_view text) {
  const std::string v = lower(text);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return Status::error(quoted(text) + " is not a boolean (use 1/0, true/false, yes/no, on/off)");
}

Result<double> parse_seconds(std::string_view text) {
  auto [number, unit] = split_unit(text);
  auto value = parse_double(number);
  if (!value.ok()) {
    return Status::error(quoted(text) + " is not a duration (e.g. 500ms, 2s, 5m, 1h)");
  }
  const std::string u = lower(unit);
  double scale = 0;
  if (u.empty() || u == "s")
    scale = 1;
  else if (u == "ms")
    scale = 1e-3;
  else if (u == "us")
    scale = 1e-6;
  else if (u == "m" || u == "min")
    scale = 60;
  else if (u == "h")
    scale = 3600;
  else
    return Status::error(quoted(text) + " has an unknown time unit " + quoted(unit) +
                         " (use ms, s, m or h)");
  return value.value() * scale;
}

Result<uint64_t> parse_bytes(std::string_view text) {
  auto [number, unit] = split_unit(text);
  auto value = parse_int(number);
  if (!value.ok() || value.value() < 0) {
    return Status::error(quoted(text) + " is not a size (e.g. 8, 64K, 1M, 8G)");
  }
  std::string u = lower(unit);
  if (u.size() == 2 && u[1] == 'b') u.pop_back();  // "KB" == "K"
  if (u.size() == 3 && u.substr(1) == "ib") u = u.substr(0, 1);
  uint64_t scale = 0;
  if (u.empty() || u == "b")
    scale = 1;
  else if (u == "k")
    scale = 1ULL << 10;
  else if (u == "m")
    scale = 1ULL << 20;
  else if (u == "g")
    scale = 1ULL << 30;
  else if (u == "t")
    scale = 1ULL << 40;
  else
    return Status::error(quoted(text) + " has an unknown size unit " + quoted(unit) +
                         " (use K, M, G or T)");
  const auto v = static_cast<uint64_t>(value.value());
  if (v != 0 && scale > UINT64_MAX / v) return Status::error(quoted(text) + " is too large");
  return v * scale;
}

const char* type_name(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kDouble:
      return "number";
    case Type::kString:
      return "string";
    case Type::kSeconds:
      return "duration";
    case Type::kBytes:
      return "size";
  }
  return "?";
}

namespace {
Result<double> numeric_value(const OptionSpec& spec, std::string_view text) {
  switch (spec.type) {
    case Type::kInt: {
      auto v = parse_int(text);
      if (!v.ok()) return v.status();
      return static_cast<double>(v.value());
    }
    case Type::kDouble:
      return parse_double(text);
    case Type::kSeconds:
      return parse_seconds(text);
    case Type::kBytes: {
      auto v = parse_bytes(text);
      if (!v.ok()) return v.status();
      return static_cast<double>(v.value());
    }
    default:
      return 0.0;
  }
}

std::string bound(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

Status validate(const OptionSpec& spec, std::string_view text) {
  const std::string prefix = std::string(spec.name) + "=" + echo(text) + ": ";
  switch (spec.type) {
    case Type::kBool: {
      auto v = parse_bool(text);
      return v.ok() ? Status{} : Status::error(prefix + v.message());
    }
    case Type::kString: {
      // Free text ends up in file names and trace attributes.
      if (text.size() > kMaxStringBytes) {
        return Status::error(prefix + "longer than " + std::to_string(kMaxStringBytes) + " bytes");
      }
      if (spec.choices == nullptr) return {};
      std::string choices = spec.choices;
      std::stringstream ss(choices);
      std::string item;
      while (std::getline(ss, item, '|')) {
        if (item == text) return {};
      }
      return Status::error(prefix + "must be one of " + choices);
    }
    default: {
      auto v = numeric_value(spec, text);
      if (!v.ok()) return Status::error(prefix + v.message());
      if (spec.min <= spec.max && (v.value() < spec.min || v.value() > spec.max)) {
        return Status::error(prefix + "must be between " + bound(spec.min) + " and " +
                             bound(spec.max) + " (" + type_name(spec.type) + ")");
      }
      return {};
    }
  }
}

ParseResult parse_env(std::span<const OptionSpec> specs, std::string_view prefix, char** env) {
  ParseResult result;
  std::set<std::string> known;
  for (const OptionSpec& spec : specs) {
    known.insert(spec.name);
    result.values.set(spec, spec.default_value, false);
  }
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    std::string_view value = entry.substr(eq + 1);
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!known.count(name)) {
      result.errors.push_back(echo(name) + " is not a known variable (see the list with " +
                              std::string(prefix) + "DUMP_CONFIG=1 or the docs); it is ignored");
      continue;
    }
    for (const OptionSpec& spec : specs) {
      if (name != spec.name) continue;
      if (Status s = validate(spec, value); !s.ok()) {
        result.errors.push_back(s.message() + "; using the default " + spec.default_value);
      } else {
        result.values.set(spec, std::string(value), true);
      }
    }
  }
  return result;
}

std::string dump(std::span<const OptionSpec> specs, const Values& values) {
  std::string out;
  for (const OptionSpec& spec : specs) {
    out += std::string(spec.name) + "=" + values.raw().at(spec.name) +
           (values.is_set(spec.name) ? "  (set)" : "  (default)") + "\n";
  }
  return out;
}

namespace {
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

std::string to_json(std::span<const OptionSpec> specs, const Values& values) {
  std::string out = "{";
  bool first = true;
  for (const OptionSpec& spec : specs) {
    if (!first) out += ",";
    first = false;
    out += "\"" + json_escape(spec.name) + "\":\"" + json_escape(values.raw().at(spec.name)) + "\"";
  }
  return out + "}";
}

std::string markdown_table(std::span<const OptionSpec> specs) {
  std::string out = "| variable | type | default | description |\n|---|---|---|---|\n";
  for (const OptionSpec& spec : specs) {
    std::string type = type_name(spec.type);
    if (spec.choices) type += " (" + std::string(spec.choices) + ")";
    if (spec.min <= spec.max) type += " [" + bound(spec.min) + ", " + bound(spec.max) + "]";
    out += "| `" + std::string(spec.name) + "` | " + type + " | `" + spec.default_value + "` | " +
           spec.description + " |\n";
  }
  return out;
}

}  // namespace ringside::config
