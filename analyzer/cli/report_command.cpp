// `ringside report --from report.json --html FILE`: the HTML report drawn from a
// report JSON written earlier (`ringside analyze --json`), without the traces.

#include "cli/commands.h"
#include "report/input_file.h"
#include "report/output_file.h"
#include "report/report.h"
#include "report/report_html.h"

namespace ringside::analysis::cli {

void write_html_report(const nlohmann::json& report, const std::string& path) {
  if (Status st = write_output_file(path, render_html(report), '<'); !st.ok())
    throw InputError("--html " + st.message());
}

namespace {

nlohmann::json read_report(const std::string& path) {
  const auto text = read_input_file(path);
  if (!text) throw InputError("--from " + path + ": cannot open the report JSON");
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded())
    throw InputError("--from " + path + ": not JSON (write one with ringside analyze --json)");
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (schema == j.end() || !schema->is_string() || *schema != kReportSchema)
    throw InputError("--from " + path + ": not a ringside report (schema \"" +
                     std::string(kReportSchema) + "\" expected)");
  for (const char* key : {"job", "verdict"}) {
    if (!j.contains(key) || !j[key].is_string())
      throw InputError("--from " + path + ": the report has no string field \"" + key + "\"");
  }
  for (const char* key : {"nodes", "findings"}) {
    if (!j.contains(key) || !j[key].is_array())
      throw InputError("--from " + path + ": the report has no list \"" + key + "\"");
  }
  return j;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  struct Args {
    std::string from;
    std::string html;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Render a report JSON (ringside analyze --json) again, as HTML (exit 0 healthy, "
      "1 findings, 2 bad input)");
  cmd->add_option("--from", args->from, "the report JSON (schema ringside.report/1)")->required();
  cmd->add_option("--html", args->html, "write the self-contained HTML report to FILE")->required();
  cmd->callback([args, &exit_code] {
    const nlohmann::json report = read_report(args->from);
    write_html_report(report, args->html);
    exit_code = report["findings"].empty() ? 0 : 1;
  });
}

}  // namespace ringside::analysis::cli
