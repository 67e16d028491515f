#include "validate/baseline.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.h"
#include "ringside/config_spec.h"

namespace ringside::bench {

Baseline Baseline::load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw UsageError("--baseline '" + path + "': cannot open the file; give a readable JSON file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

Baseline Baseline::parse(const std::string& text, const std::string& source) {
  Baseline b;
  b.source_ = source;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError("baseline " + source + ": not valid JSON: " + e.what());
  }
  auto fail = [&](const std::string& where, const std::string& what) -> UsageError {
    return UsageError("baseline " + source + ": " + where + ": " + what +
                      " (see docs/nccl_bench.md, 'Floor table')");
  };
  if (!j.is_object()) throw fail("top level", "must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "schema" && it.key() != "models" && it.key() != "comment") {
      throw fail(it.key(), "unknown key; allowed: schema, models, comment");
    }
  }
  if (!j.contains("schema") || j["schema"] != "ringside.baseline/1") {
    throw fail("schema", "must be \"ringside.baseline/1\"");
  }
  if (!j.contains("models") || !j["models"].is_object()) throw fail("models", "must be an object");
  for (auto m = j["models"].begin(); m != j["models"].end(); ++m) {
    if (!m.value().is_object()) throw fail("models." + m.key(), "must be an object of tests");
    for (auto t = m.value().begin(); t != m.value().end(); ++t) {
      const std::string where = "models." + m.key() + "." + t.key();
      if (t.key() != kTestIntra && t.key() != kTestInter && t.key() != kTestGlobal &&
          t.key() != kTestCopy && t.key() != kTestIntraPair) {
        throw fail(where, std::string("unknown test; use ") + kTestIntra + ", " + kTestIntraPair +
                              ", " + kTestInter + ", " + kTestGlobal + " or " + kTestCopy);
      }
      if (!t.value().is_object()) throw fail(where, "must map sizes (\"64M\") to GB/s");
      for (auto s = t.value().begin(); s != t.value().end(); ++s) {
        auto size = config::parse_bytes(s.key());
        if (!size.ok()) throw fail(where + "." + s.key(), "size: " + size.message());
        if (!s.value().is_number() || s.value().get<double>() <= 0) {
          throw fail(where + "." + s.key(), "must be a positive number of GB/s");
        }
        b.floors_[m.key()][t.key()][*size] = s.value().get<double>();
      }
    }
  }
  return b;
}

void Baseline::override_with(const Baseline& other) {
  for (const auto& [model, tests] : other.floors_) {
    for (const auto& [test, sizes] : tests) {
      for (const auto& [size, gbps] : sizes) floors_[model][test][size] = gbps;
    }
  }
  source_ = source_.empty() ? other.source_ : source_ + " + " + other.source_;
}

std::optional<double> Baseline::floor(const std::string& model, const std::string& test,
                                      uint64_t size) const {
  for (const std::string& key : {model, std::string("default")}) {
    auto m = floors_.find(key);
    if (m == floors_.end()) continue;
    auto t = m->second.find(test);
    if (t == m->second.end()) return std::nullopt;
    auto s = t->second.find(size);
    if (s == t->second.end()) return std::nullopt;
    return s->second;
  }
  return std::nullopt;
}

}  // namespace ringside::bench
