#include "report/report_html.h"

#include <stdexcept>

#include "report/report_json.h"

namespace ringside::analysis {

extern const char kReportHtmlTemplate[];  // report/html/report.html (CMake)

namespace {

constexpr std::string_view kTitleSlot = "@RINGSIDE_TITLE@";
constexpr std::string_view kJsonSlot = "@RINGSIDE_REPORT_JSON@";

std::string title_of(const nlohmann::json& report) {
  std::string title = "ringside report";
  if (auto it = report.find("job"); it != report.end() && it->is_string())
    title += ": job " + it->get<std::string>();
  if (auto it = report.find("verdict"); it != report.end() && it->is_string())
    title += " (" + it->get<std::string>() + ")";
  return title;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& j) {
  const std::string text = json_text(j);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const nlohmann::json& report) {
  const std::string_view page = kReportHtmlTemplate;
  const size_t title = page.find(kTitleSlot);
  const size_t data = page.find(kJsonSlot);
  if (title == std::string_view::npos || data == std::string_view::npos || title > data)
    throw std::logic_error("the HTML report template lacks its title or data slot");
  std::string out;
  out.reserve(page.size() + 1024);
  out += page.substr(0, title);
  out += html_escape(title_of(report));
  out += page.substr(title + kTitleSlot.size(), data - title - kTitleSlot.size());
  out += script_safe_json(report);
  out += page.substr(data + kJsonSlot.size());
  return out;
}

}  // namespace ringside::analysis
