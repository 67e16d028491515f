// docs/trace-format.md must list every dataset field and attribute exactly as
// the schema defines them (name, type, unit), in order.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "ringside/trace_schema.h"
#include "trace_types.h"

namespace ringside::trace {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" `");
  size_t e = s.find_last_not_of(" `");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Table rows of each "### `name`" section: section -> rows of cells.
std::map<std::string, std::vector<std::vector<std::string>>> doc_tables() {
  std::ifstream in(std::string(RINGSIDE_SOURCE_DIR) + "/docs/trace-format.md");
  EXPECT_TRUE(in.good()) << "docs/trace-format.md missing";
  std::map<std::string, std::vector<std::vector<std::string>>> tables;
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      section = trim(line.substr(4));
      continue;
    }
    if (section.empty() || line.rfind("|", 0) != 0 || line.find("---") != std::string::npos)
      continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) cells.push_back(trim(cell));
    if (!cells.empty() && cells[0] != "field" && cells[0] != "attribute") {
      tables[section].push_back(cells);
    }
  }
  return tables;
}

std::string doc_type(const FieldInfo& f) {
  if (f.name == "text") return "char[" + std::to_string(kTextLen) + "]";
  return f.type;
}

TEST(TraceDoc, EveryDatasetFieldIsDocumentedInOrder) {
  auto tables = doc_tables();
  for (const DatasetSpec& spec : dataset_specs()) {
    ASSERT_TRUE(tables.count(spec.name)) << "no section ### `" << spec.name << "` in the doc";
    const auto& rows = tables[spec.name];
    ASSERT_EQ(rows.size(), spec.fields.size()) << "dataset " << spec.name;
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_GE(rows[i].size(), 4u);
      EXPECT_EQ(rows[i][0], spec.fields[i].name) << spec.name << " row " << i;
      EXPECT_EQ(rows[i][1], doc_type(spec.fields[i])) << spec.name << "." << spec.fields[i].name;
      EXPECT_EQ(rows[i][2], spec.fields[i].unit) << spec.name << "." << spec.fields[i].name;
    }
  }
}

TEST(TraceDoc, EveryAttributeIsDocumented) {
  auto tables = doc_tables();
  ASSERT_TRUE(tables.count("attributes"));
  std::vector<std::pair<std::string, std::string>> expected;
#define X(kind, name, desc) \
  expected.push_back({#name, std::string(#kind) == "Int" ? "int64" : "string"});
  RINGSIDE_META_FIELDS(X)
#undef X
  const auto& rows = tables["attributes"];
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], expected[i].first);
    EXPECT_EQ(rows[i][1], expected[i].second) << expected[i].first;
  }
}

}  // namespace
}  // namespace ringside::trace
