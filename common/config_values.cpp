#include <stdexcept>

#include "ringside/config_spec.h"

namespace ringside::config {

namespace {
const std::string& lookup(const std::map<std::string, std::string>& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) throw std::out_of_range("config option not in spec: " + name);
  return it->second;
}
}  // namespace

bool Values::has(const std::string& name) const {
  return text_.count(name) != 0;
}

void Values::set(const OptionSpec& spec, std::string text, bool from_user) {
  text_[spec.name] = std::move(text);
  types_[spec.name] = spec.type;
  from_user_[spec.name] = from_user;
}

bool Values::is_set(const std::string& name) const {
  auto it = from_user_.find(name);
  return it != from_user_.end() && it->second;
}

// Values were validated by parse_env/validate, so parsing cannot fail here;
// a failure means a default in a spec table is wrong, which is a bug.
bool Values::get_bool(const std::string& name) const {
  auto v = parse_bool(lookup(text_, name));
  if (!v.ok()) throw std::logic_error(name + ": " + v.message());
  return v.value();
}

int64_t Values::get_int(const std::string& name) const {
  auto v = parse_int(lookup(text_, name));
  if (!v.ok()) throw std::logic_error(name + ": " + v.message());
  return v.value();
}

double Values::get_double(const std::string& name) const {
  const std::string& text = lookup(text_, name);
  auto t = types_.find(name);
  auto v =
      (t != types_.end() && t->second == Type::kSeconds) ? parse_seconds(text) : parse_double(text);
  if (!v.ok()) throw std::logic_error(name + ": " + v.message());
  return v.value();
}

uint64_t Values::get_bytes(const std::string& name) const {
  auto v = parse_bytes(lookup(text_, name));
  if (!v.ok()) throw std::logic_error(name + ": " + v.message());
  return v.value();
}

const std::string& Values::get_string(const std::string& name) const {
  return lookup(text_, name);
}

}  // namespace ringside::config
