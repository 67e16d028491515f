#include "diff/diff_input.h"

#include <filesystem>

#include "analyze.h"
#include "report/input_file.h"
#include "report/report.h"
#include "report/report_json.h"

namespace ringside::analysis {

Result<nlohmann::json> load_diff_input(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    return Status::error(path + ": no such file or directory");
  if (std::filesystem::is_directory(status)) {
    AnalyzeOptions options;
    options.progress = false;
    auto report = analyze_directory(path, options);
    if (!report.ok()) return report.status();
    return report_to_json(report.value());
  }
  const auto text = read_input_file(path);
  if (!text) return Status::error(path + ": cannot be read");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded())
    return Status::error(path +
                         ": neither a trace directory nor JSON (give a `ringside analyze --json` "
                         "report or a trace directory)");
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kReportSchema)
    return Status::error(path + ": not a ringside report (schema is not " +
                         std::string(kReportSchema) + ")");
  return j;
}

}  // namespace ringside::analysis
