#include "report/view_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/finding_timeline.h"
#include "report/quantile.h"

namespace ringside::analysis {
namespace {

// `x` to 4 significant digits (keeps the report small); null if not finite.
nlohmann::json num(double x) {
  if (!std::isfinite(x)) return nullptr;
  if (x == 0) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(x))));
  const double rounded = std::round(x * scale) / scale;
  // Whole numbers without a fraction ("610", not "610.0").
  if (std::fabs(rounded) < 1e15 && rounded == std::trunc(rounded))
    return static_cast<int64_t>(rounded);
  return rounded;
}

nlohmann::json quantiles(std::vector<float> v) {
  nlohmann::json q = nlohmann::json::array();
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  for (double p : kViewQuantiles) q.push_back(num(quantile_sorted(v, p)));
  return q;
}

std::string hex(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// `series` in at most `points` runs of consecutive points, averaged (NaN ignored).
std::vector<GpuPoint> merge_points(const std::vector<GpuPoint>& series, size_t points) {
  const size_t n = series.size();
  if (n <= points) return series;
  std::vector<GpuPoint> out;
  for (size_t p = 0; p < points; ++p) {
    const size_t begin = p * n / points, end = (p + 1) * n / points;
    GpuPoint m;
    m.t_ns = series[(begin + end) / 2].t_ns;
    float GpuPoint::*fields[] = {&GpuPoint::sm_clock_mhz, &GpuPoint::temperature_c,
                                 &GpuPoint::power_w, &GpuPoint::util_gpu_pct};
    for (auto field : fields) {
      double sum = 0;
      int count = 0;
      for (size_t i = begin; i < end; ++i) {
        if (!std::isnan(series[i].*field)) {
          sum += series[i].*field;
          ++count;
        }
      }
      m.*field = count ? static_cast<float>(sum / count) : std::nanf("");
    }
    out.push_back(m);
  }
  return out;
}

nlohmann::json gpus_json(const Context& ctx) {
  nlohmann::json out = nlohmann::json::array();
  const size_t points = std::clamp(kGpuSeriesBudget / std::max<size_t>(1, ctx.set.ranks.size()),
                                   kMinGpuSeriesPoints, kGpuSeriesPoints);
  const auto& stats = ctx.stats.ranks();
  for (const RankInfo& ri : ctx.set.ranks) {
    nlohmann::json g = {{"rank", ri.rank},
                        {"node", ri.node},
                        {"local_rank", ri.local_rank},
                        {"device", ri.gpu_device},
                        {"pci_bus_id", ri.gpu_pci_bus_id},
                        {"gpu_name", ri.gpu_name},
                        {"traced", ri.has_file}};
    if (static_cast<size_t>(ri.rank) < stats.size()) {
      const Lateness& l = stats[static_cast<size_t>(ri.rank)].total;
      g["ops"] = l.groups;
      g["late_ops"] = l.above;
      g["last_arrivals"] = l.last;
      g["mean_excess_ms"] = num(l.mean_excess() / 1e6);
    }
    const GpuSummary& s = ri.gpu;
    g["sm_clock_mhz"] = num(s.median_sm_clock_mhz);
    g["max_temperature_c"] = s.max_temperature_c;
    g["slowdown_fraction"] = num(s.slowdown_fraction());
    nlohmann::json t = nlohmann::json::array(), sm = t, temp = t, power = t, util = t;
    for (const GpuPoint& p : merge_points(s.series, points)) {
      t.push_back(num((static_cast<double>(ri.to_job(p.t_ns)) - ctx.job_start_ns) / 1e9));
      sm.push_back(num(p.sm_clock_mhz));
      temp.push_back(num(p.temperature_c));
      power.push_back(num(p.power_w));
      util.push_back(num(p.util_gpu_pct));
    }
    g["series"] = {{"t_s", t},
                   {"sm_clock_mhz", sm},
                   {"temperature_c", temp},
                   {"power_w", power},
                   {"util_pct", util}};
    out.push_back(std::move(g));
  }
  return out;
}

nlohmann::json lateness_json(const Context& ctx) {
  nlohmann::json ranks = nlohmann::json::array();
  const auto& stats = ctx.stats.ranks();
  for (size_t r = 0; r < stats.size(); ++r) {
    if (stats[r].arrival_late_ms.empty()) continue;
    ranks.push_back({{"rank", r},
                     {"ops", stats[r].arrivals_seen},
                     {"q_ms", quantiles(stats[r].arrival_late_ms)}});
  }
  return {{"quantiles", kViewQuantiles}, {"ranks", ranks}};
}

nlohmann::json busbw_json(const Context& ctx) {
  std::vector<const CommLinkStats*> order;
  for (const CommLinkStats& l : ctx.groups.comm_links()) {
    if (!l.busbw.empty()) order.push_back(&l);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->count > b->count; });
  if (order.size() > kMaxBusBwViews) order.resize(kMaxBusBwViews);
  nlohmann::json out = nlohmann::json::array();
  for (const CommLinkStats* l : order) {
    const CommInfo& c = ctx.set.comms[static_cast<size_t>(l->comm)];
    out.push_back({{"comm", hex(c.id)},
                   {"comm_label", c.label},
                   {"op", trace::op_kind_name(static_cast<trace::OpKind>(l->op))},
                   {"bytes", uint64_t{1} << l->size_log2},
                   {"ops", l->count},
                   {"q_gbps", quantiles(l->busbw)}});
  }
  return {{"quantiles", kViewQuantiles}, {"per_comm", out}};
}

nlohmann::json timelines_json(const Context& ctx, const std::vector<Finding>& findings,
                              size_t batch) {
  nlohmann::json out = nlohmann::json::array();
  for (const FindingTimeline& t : finding_timelines(ctx, findings, batch)) {
    const CommInfo& c = ctx.set.comms[static_cast<size_t>(t.comm)];
    nlohmann::json ops = nlohmann::json::array();
    for (const TimelineOp& o : t.ops) {
      nlohmann::json arrival = nlohmann::json::array(), end = arrival;
      for (double a : o.arrival_s) arrival.push_back(num(a));
      for (double e : o.end_s) end.push_back(num(e));
      ops.push_back({{"seq", o.seq},
                     {"op", trace::op_kind_name(static_cast<trace::OpKind>(o.op))},
                     {"bytes", o.bytes},
                     {"last_rank", o.last_rank},
                     {"arrival_s", arrival},
                     {"end_s", end}});
    }
    out.push_back({{"finding", t.finding},
                   {"comm", hex(c.id)},
                   {"comm_label", c.label},
                   {"lanes", t.lanes},
                   {"stuck_seq", t.stuck ? nlohmann::json(*t.stuck) : nullptr},
                   {"ops", ops}});
  }
  return out;
}

}  // namespace

nlohmann::json view_data(const Context& ctx, const std::vector<Finding>& findings, size_t batch) {
  return {{"gpus", gpus_json(ctx)},
          {"lateness", lateness_json(ctx)},
          {"busbw", busbw_json(ctx)},
          {"timelines", timelines_json(ctx, findings, batch)}};
}

}  // namespace ringside::analysis
