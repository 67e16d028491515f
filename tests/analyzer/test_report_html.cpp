// The HTML report: text from traces can never become markup or end the script
// that holds the report (hostile job, node and communicator names), the page is
// drawn from the report JSON alone, and the `views` it draws are bounded.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "report/finding_timeline.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/view_data.h"
#include "test_util.h"

namespace ringside::analysis::test {
namespace {

const std::string kHostile =
    "</script><script>alert(\"x\")</script><!-- ' \" & \xe2\x80\xa8 \xe2\x80\xa9 ✓ 名";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

nlohmann::json hostile_report() {
  Report r;
  r.job = kHostile;
  r.ranks = 2;
  r.nodes = {"node<b>1</b>", kHostile};
  r.verdict = "degraded";
  Finding f;
  f.kind = "straggler";
  f.ranks = {1};
  f.nodes = {kHostile};
  f.comm = 0x1234;
  f.comm_label = "tp<img src=x onerror=alert(1)>";
  f.evidence = "rank 1 on " + kHostile + " is slow";
  f.next_command = "srun -w '" + kHostile + "' nvidia-smi";
  r.findings.push_back(f);
  nlohmann::json j = report_to_json(r);
  j["views"] = {{"gpus", {{{"rank", 1}, {"node", kHostile}, {"pci_bus_id", kHostile}}}}};
  return j;
}

// The text between the data script's tags.
std::string embedded_json(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const size_t begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = page.find("</script>", begin);
  return page.substr(begin + open.size(), end - begin - open.size());
}

TEST(ReportHtml, ScriptSafeJsonCannotCloseTheScriptAndReadsBackTheSame) {
  const nlohmann::json j = {{"job", kHostile}, {kHostile, {1, 2}}};
  const std::string text = script_safe_json(j);
  for (const char* bad : {"<", ">", "&", "\xe2\x80\xa8", "\xe2\x80\xa9"})
    EXPECT_EQ(text.find(bad), std::string::npos) << bad;
  EXPECT_NE(text.find("\\u003c/script\\u003e"), std::string::npos);
  EXPECT_NE(text.find("\\u2028"), std::string::npos);
  EXPECT_NE(text.find("✓ 名"), std::string::npos);  // other unicode stays readable
  EXPECT_EQ(nlohmann::json::parse(text), j);
}

TEST(ReportHtml, HtmlEscapeEscapesMarkupAndQuotes) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain ✓"), "plain ✓");
}

TEST(ReportHtml, HostileNamesStayText) {
  const nlohmann::json report = hostile_report();
  const std::string page = render_html(report);
  // Only the page's own two scripts: no name opened or closed one.
  EXPECT_EQ(count(page, "<script"), 2u);
  EXPECT_EQ(count(page, "</script>"), 2u);
  EXPECT_EQ(count(page, "<!--"), 1u);  // the page's own comment
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<b>1"), std::string::npos);
  // The title is escaped markup; the data reads back exactly, unicode included.
  EXPECT_NE(
      page.find("<title>ringside report: job &lt;/script&gt;&lt;script&gt;alert(&quot;x&quot;)"),
      std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(embedded_json(page)), report);
  // The script draws names with textContent / setAttribute only.
  EXPECT_EQ(page.find("innerHTML"), std::string::npos);
  EXPECT_EQ(page.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(page.find("document.write"), std::string::npos);
}

TEST(ReportHtml, PageIsSelfContained) {
  const std::string page = render_html(hostile_report());
  for (const char* remote :
       {"https://", "<link", "<img", "<iframe", "@import", "url(", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(count(page, remote), 0u) << remote;
  // The one http:// is the SVG namespace, an identifier that is never fetched.
  EXPECT_EQ(count(page, "http://"), 1u);
  EXPECT_NE(page.find("\"http://www.w3.org/2000/svg\""), std::string::npos);
}

TEST(ReportHtml, ViewsAreBoundedAndShowTheStraggler) {
  TempDir dir("html-views");
  auto spec = small_spec(dir.path());
  Report r = synth_and_analyze(spec, {"straggler:rank=5,factor=1.2"});
  ASSERT_FALSE(r.findings.empty());
  ASSERT_TRUE(r.extra.contains("views"));
  const nlohmann::json& v = r.extra["views"];
  ASSERT_EQ(v["gpus"].size(), static_cast<size_t>(spec.ranks));
  for (const auto& g : v["gpus"]) {
    EXPECT_LE(g["series"]["t_s"].size(), kGpuSeriesPoints);
    EXPECT_FALSE(g["series"]["t_s"].empty());  // synth writes GPU samples
  }
  ASSERT_EQ(v["lateness"]["ranks"].size(), static_cast<size_t>(spec.ranks));
  for (const auto& q : v["lateness"]["ranks"])
    EXPECT_EQ(q["q_ms"].size(), std::size(kViewQuantiles));
  // The straggler arrives later than its peers: its median lateness is the largest.
  double worst = -1;
  int64_t worst_rank = -1;
  for (const auto& q : v["lateness"]["ranks"]) {
    if (q["q_ms"][4].get<double>() > worst) {
      worst = q["q_ms"][4].get<double>();
      worst_rank = q["rank"].get<int64_t>();
    }
  }
  EXPECT_EQ(worst_rank, 5);
  EXPECT_FALSE(v["busbw"]["per_comm"].empty());
  EXPECT_LE(v["busbw"]["per_comm"].size(), kMaxBusBwViews);
  // Its timeline: rank 5's lane first, and it arrived last at most of those ops.
  ASSERT_EQ(v["timelines"].size(), 1u);
  const auto& t = v["timelines"][0];
  EXPECT_EQ(t["finding"], 0);
  EXPECT_EQ(t["lanes"][0], 5);
  EXPECT_LE(t["lanes"].size(), kTimelineLanes);
  ASSERT_EQ(t["ops"].size(), kTimelineOps);
  size_t last = 0;
  for (const auto& o : t["ops"]) {
    last += o["last_rank"] == 5;
    ASSERT_EQ(o["arrival_s"].size(), t["lanes"].size());
    EXPECT_FALSE(o["arrival_s"][0].is_null());
    EXPECT_FALSE(o["end_s"][0].is_null());
  }
  EXPECT_GE(last, kTimelineOps / 2);
}

TEST(ReportHtml, HangTimelineEndsAtTheStuckOpWithoutTheMissingRank) {
  TempDir dir("html-hang");
  Report r = synth_and_analyze(small_spec(dir.path()), {"stop:rank=2,op=57"});
  ASSERT_FALSE(r.findings.empty());
  ASSERT_EQ(r.findings[0].kind, "hang");
  const nlohmann::json& t = r.extra["views"]["timelines"][0];
  EXPECT_EQ(t["finding"], 0);
  EXPECT_EQ(t["stuck_seq"], r.findings[0].seq.value());
  EXPECT_EQ(t["lanes"][0], 2);
  const auto& stuck = t["ops"].back();
  EXPECT_EQ(stuck["seq"], t["stuck_seq"]);
  EXPECT_TRUE(stuck["arrival_s"][0].is_null());  // rank 2 never arrived
  for (size_t i = 1; i < t["lanes"].size(); ++i) {
    EXPECT_FALSE(stuck["arrival_s"][i].is_null());  // the others wait in it
    EXPECT_TRUE(stuck["end_s"][i].is_null());
  }
}

TEST(ReportHtml, MissingTraceHasNoTimelineAndItsGpuIsUntraced) {
  TempDir dir("html-missing");
  Report r = synth_and_analyze(small_spec(dir.path()), {"missing:rank=3"});
  ASSERT_NE(find_kind(r, "missing_trace"), nullptr);
  const nlohmann::json& v = r.extra["views"];
  EXPECT_TRUE(v["timelines"].empty());
  EXPECT_EQ(v["gpus"][3]["traced"], false);
  EXPECT_TRUE(v["gpus"][3]["series"]["t_s"].empty());
  EXPECT_EQ(v["gpus"][2]["traced"], true);
}

TEST(ReportHtml, ReportCommandRendersTheSamePageAsAnalyze) {
  TempDir dir("html-cli");
  synth_and_analyze(small_spec(dir.path() + "/traces"), {"straggler:rank=5,factor=1.2"});
  const std::string json = dir.path() + "/report.json", a = dir.path() + "/a.html",
                    b = dir.path() + "/b.html";
  auto analyze = run_cli(
      {"analyze", dir.path() + "/traces", "-q", "--no-progress", "--json", json, "--html", a});
  ASSERT_EQ(analyze.exit_code, 1) << analyze.err;
  auto report = run_cli({"report", "--from", json, "--html", b});
  ASSERT_EQ(report.exit_code, 1) << report.err;
  auto read = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string page = read(a);
  EXPECT_EQ(page, read(b));
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(ReportHtml, ReportCommandRejectsWhatIsNotAReport) {
  TempDir dir("html-bad");
  const std::string bad = dir.path() + "/bad.json", out = dir.path() + "/out.html";
  std::ofstream(bad) << "{\"schema\": \"something/2\"}";
  auto r = run_cli({"report", "--from", bad, "--html", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a ringside report"), std::string::npos) << r.err;
  std::ofstream(bad) << "not json";
  r = run_cli({"report", "--from", bad, "--html", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not JSON"), std::string::npos) << r.err;
  r = run_cli({"report", "--from", dir.path() + "/absent.json", "--html", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ringside::analysis::test
