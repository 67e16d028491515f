#include "analyze.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>

#include "clock/clock_align.h"
#include "diff/run_profile.h"
#include "load/row_spill.h"
#include "load/window_rows.h"
#include "match/comm_roles.h"
#include "match/group_table.h"
#include "match/rank_stats.h"
#include "parallel/byte_stream.h"
#include "parallel/rank_share.h"
#include "report/format.h"
#include "report/job_usage.h"
#include "report/view_data.h"
#include "ringside/trace_reader.h"
#include "whatif/what_if.h"

namespace ringside::analysis {
namespace {

struct ReadError {
  int64_t rank;
  std::string message;
};

// Where a pass reads each rank's rows: held in `cache` (a window's, read when the set was
// loaded), else from the rank's file, or from `spill` where an earlier pass kept them.
struct RowSource {
  WindowRowCache* cache = nullptr;
  RowSpill* spill = nullptr;
  bool keeps = false;  // this pass keeps the rows it reads from the files in `spill`
};

// Runs `fn(rank, rows, valid)` over the rank files of `share` in turn with the rank's op
// rows from its first_row on: held in `from.cache` (`valid`: how many of them, from the
// first, are known to pass trace::validate_op), else as an earlier pass kept them in
// `from.spill`, else read for this pass alone, one file at a time (or kept open in
// `readers`; `valid` 0).  Returns the ranks whose data could not all be read.
template <typename Fn>
std::vector<ReadError> for_each_rank_rows(TraceSet& set, std::span<const int64_t> share,
                                          const RowSource& from, const AnalyzeOptions& options,
                                          Progress& progress, const std::string& phase, Fn fn) {
  std::vector<ReadError> errors;
  size_t total = 0, done = 0;
  for (int64_t r : share) total += set.ranks[static_cast<size_t>(r)].has_file;
  trace::TraceReaderCache* readers = options.reader_cache;
  std::vector<trace::OpRecord> kept;
  for (int64_t r : share) {
    const RankInfo& ri = set.ranks[static_cast<size_t>(r)];
    if (!ri.has_file) continue;
    progress.update(phase, ++done, total);
    Status s;
    if (from.cache != nullptr) {
      s = fn(ri, from.cache->rows(ri.path), from.cache->valid_rows(ri.path));
    } else if (!from.keeps && from.spill != nullptr && from.spill->rows(ri.rank, kept)) {
      s = fn(ri, std::span<const trace::OpRecord>(kept), size_t{0});
    } else {
      auto reader = trace::open_trace_ops(ri.path, readers);
      auto rows = reader.ok() ? read_op_rows(*reader.value(), ri.first_row, ri.op_count)
                              : Result<std::vector<trace::OpRecord>>(reader.status());
      s = rows.ok() ? fn(ri, std::span<const trace::OpRecord>(rows.value()), size_t{0})
                    : rows.status();
      if (rows.ok() && s.ok() && from.keeps) from.spill->keep(ri.rank, rows.value());
      if (!rows.ok() && readers != nullptr) readers->forget(ri.path);
    }
    if (!s.ok() && ri.read_error.empty()) errors.push_back({ri.rank, s.message()});
  }
  progress.finish();
  return errors;
}

// A rank whose data could not all be read is not used (analyzed as missing).
void note_read_errors(TraceSet& set, const std::vector<ReadError>& errors) {
  for (const ReadError& e : errors) {
    RankInfo& ri = set.ranks[static_cast<size_t>(e.rank)];
    if (!ri.read_error.empty()) continue;
    ri.read_error = e.message;
    set.warnings.push_back(e.message + " (rank " + std::to_string(e.rank) +
                           ": not used, analyzed as missing)");
  }
}

// One pass over the rank files.  Alone: over every file.  In a parallel analysis, over
// this process's share; then every process's read errors and `save`d partial state are
// exchanged, in `pieces` pieces one after the other (`save(w, piece, pieces)`), and
// handed to `merge(r, piece, pieces, fresh)` in process order (= rank order), on every
// process.  Process 0, whose part comes first, merges the others into the state it
// has.  The others build the state anew from every part: `fresh` is set for the first
// part of each piece, whose state starts from it; `adopt` then takes the new state.
template <typename Fn, typename Save, typename Merge, typename Adopt>
void run_pass(TraceSet& set, ProcessGroup* group, std::span<const int64_t> share,
              const RowSource& from, const AnalyzeOptions& options, Progress& progress,
              const std::string& phase, size_t pieces, Fn fn, Save save, Merge merge, Adopt adopt) {
  std::vector<ReadError> errors =
      for_each_rank_rows(set, share, from, options, progress, phase, fn);
  if (group == nullptr) {
    note_read_errors(set, errors);
    return;
  }
  const bool first = group->rank() == 0;
  std::vector<ReadError> all_errors;
  for (size_t piece = 0; piece < pieces; ++piece) {
    ByteWriter w;
    if (piece == 0) {
      w.put<uint64_t>(errors.size());
      for (const ReadError& e : errors) {
        w.put<int64_t>(e.rank);
        w.put_string(e.message);
      }
    }
    save(w, piece, pieces);
    int part_index = 0;
    group->all_gather(w.take(), [&](std::string_view part) {
      ByteReader r(part);
      if (piece == 0) {
        for (auto n = r.get<uint64_t>(); n > 0; --n) {
          const auto rank = r.get<int64_t>();
          all_errors.push_back({rank, r.get_string()});
        }
      }
      const bool fresh = part_index++ == 0;
      if (first && fresh) return;  // its own state, already held
      merge(r, piece, pieces, fresh);
      if (!r.done())
        throw std::runtime_error("parallel analysis: a partial state was not all read");
    });
  }
  if (!first) adopt();
  note_read_errors(set, all_errors);
}

}  // namespace

std::string default_spill_dir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

Result<Report> analyze_directory(const std::string& dir, const AnalyzeOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const bool draws = options.progress && (options.group == nullptr || options.group->rank() == 0);
  Progress progress = draws ? Progress::for_stderr() : Progress(false);
  LoadOptions load;
  load.step = options.step;
  load.window_ops = options.window_ops;
  load.window_cache = options.window_cache;
  load.dir_cache = options.dir_cache;
  load.reader_cache = options.reader_cache;
  // Without a window the rows are the whole job: never held.
  WindowRowCache* row_cache = options.window_ops > 0 ? options.row_cache : nullptr;
  load.row_cache = row_cache;
  load.tables_cache = options.tables_cache;
  load.group = options.group;
  auto loaded = load_trace_set(dir, load, progress);
  if (!loaded.ok()) return loaded.status();
  TraceSet& set = loaded.value();

  Report report;
  report.job = set.job_id;
  report.step = set.step_id;
  report.dir = dir;
  report.ranks = set.world_size;
  report.nodes = set.nodes;
  report.simulated = set.simulated;
  report.clock = align_clocks(set);

  // A rank whose data cannot all be read is not used at all: a verdict never
  // rests on half a rank (its missing ops would look like a hang).
  exclude_unreadable_ranks(set);
  ProcessGroup* group = options.group;
  std::vector<int64_t> share;
  if (group != nullptr) {
    share = rank_share(set, group->rank(), group->size());
  } else {
    for (const RankInfo& ri : set.ranks) share.push_back(ri.rank);
  }
  // Without a window, the matching pass keeps the rows it reads for the passes after it.
  std::optional<RowSpill> spill;
  if (row_cache == nullptr && !options.spill_dir.empty()) spill.emplace(options.spill_dir);
  RowSource reading{row_cache, spill && spill->usable() ? &*spill : nullptr, false};
  RowSource matching = reading;
  matching.keeps = reading.spill != nullptr;
  using Rows = std::span<const trace::OpRecord>;
  // With the rows held in memory (a window of each rank), so is each rank's own compute
  // from one pass to the next: the passes after matching mostly measure the same one.
  std::vector<HeldOwnCompute> held(row_cache != nullptr ? set.ranks.size() : 0);
  auto held_of = [&](const RankInfo& ri) {
    return held.empty() ? nullptr : &held[static_cast<size_t>(ri.rank)];
  };
  // So is the per-op table, which grows with the job's length (load/mapped_array.h); a
  // watch's polls, which analyze a window each, keep it in memory.
  const std::string table_spill = row_cache == nullptr ? options.spill_dir : std::string();
  auto matched = std::make_unique<GroupTable>(set, table_spill);
  matched->plan_page_out(share);
  // The per-op table is exchanged a slice of communicators at a time (run_pass); the
  // processes after the first merge into a new table, `next`, which then replaces theirs.
  const size_t pieces = std::clamp<size_t>(set.comms.size(), 1, 16);
  std::unique_ptr<GroupTable> next;
  run_pass(
      set, group, share, matching, options, progress, "matching ops", pieces,
      [&](const RankInfo& ri, Rows rows, size_t valid) {
        Status s = matched->add_rank(ri, rows, held_of(ri), valid);
        matched->passed(ri.rank);
        return s;
      },
      [&](ByteWriter& w, size_t piece, size_t n) { matched->save_partial(w, piece, n); },
      [&](ByteReader& r, size_t piece, size_t n, bool fresh) {
        if (fresh && piece == 0) {
          next = std::make_unique<GroupTable>(set, table_spill);
          next->plan_page_out(share);
        }
        (next ? *next : *matched).merge_partial(r, piece, n);
      },
      [&] { matched = std::move(next); });
  // Ranks whose ops could not all be read added nothing to the table: they are
  // missing from here on (one pass over the files, whatever is damaged).
  exclude_unreadable_ranks(set);
  // Roles first: communicators of one role share what they show of running alongside.
  infer_comm_roles(set, *matched);
  matched->finalize();
  // Jobs whose communication runs alongside their compute (gradient buckets on a
  // stream of their own), or whose rooted collectives end on their members apart, are
  // measured again once that is known.
  if (matched->measures_again()) {
    matched->reset_gaps();
    // In place: a slice's gaps start anew once this process's own are saved.
    run_pass(
        set, group, share, reading, options, progress, "attributing compute", pieces,
        [&](const RankInfo& ri, Rows rows, size_t) {
          Status s = matched->add_gaps(ri, rows, held_of(ri));
          matched->passed(ri.rank);
          return s;
        },
        [&](ByteWriter& w, size_t piece, size_t n) { matched->save_gaps(w, piece, n); },
        [&](ByteReader& r, size_t piece, size_t n, bool fresh) {
          if (fresh) matched->reset_gaps(piece, n);
          matched->merge_gaps(r, piece, n);
        },
        [] {});
  }
  auto measured =
      std::make_unique<RankStatsPass>(*matched, options.thresholds.late_margin, options.views);
  run_pass(
      set, group, share, reading, options, progress, "measuring lateness", 1,
      [&](const RankInfo& ri, Rows rows, size_t) {
        return measured->add_rank(ri, rows, held_of(ri));
      },
      [&](ByteWriter& w, size_t, size_t) { measured->save_partial(w, share); },
      [&](ByteReader& r, size_t, size_t, bool fresh) {
        if (fresh)
          measured = std::make_unique<RankStatsPass>(*matched, options.thresholds.late_margin,
                                                     options.views);
        measured->merge_partial(r);
      },
      [] {});
  held = std::vector<HeldOwnCompute>();
  spill.reset();
  // The report is process 0's to build and write.
  if (group != nullptr && group->rank() != 0) return Report{};
  const GroupTable& table = *matched;
  const RankStatsPass& stats = *measured;
  // Data that became unreadable between the passes (a file still being written,
  // or changed under us): say so; its rank's lateness is partial.
  for (const auto& ri : set.ranks) {
    if (ri.has_file && !ri.read_error.empty())
      set.bad_ranks.push_back({ri.rank, ri.read_error + " (after matching: lateness partial)"});
  }

  const LinkMatrix links = build_link_matrix(set);
  const SiblingLateness siblings(set, table, options.thresholds.late_margin);
  Context ctx{set, table, stats, siblings, options.thresholds};
  ctx.links = &links;
  int64_t first = INT64_MAX, last = kNever;
  for (const auto& p : table.progress()) {
    if (p.ops_read == 0) continue;
    first = std::min(first, p.first_arrival);
    last = std::max(last, p.last_activity);
  }
  ctx.job_start_ns = first == INT64_MAX ? 0 : static_cast<double>(first);
  ctx.job_end_ns = last == kNever ? 0 : static_cast<double>(last);
  ctx.host_wait_s = ctx.mean_host_wait_s();

  std::vector<Finding> findings;
  detect_desyncs(ctx, findings);
  std::vector<std::string> hang_notes;
  detect_hangs(ctx, findings, hang_notes);
  LateRanks late = find_late_ranks(ctx);
  const OutlierOps outliers = find_outlier_ops(ctx);
  detect_imbalance(ctx, late, outliers, findings);
  detect_stragglers(ctx, late, outliers, findings);
  std::vector<Finding> links_below_cost;
  detect_slow_links(ctx, findings, links_below_cost);
  detect_gpu_health(ctx, findings);
  // Live, ranks whose files do not exist yet have simply not started tracing.
  if (!options.thresholds.live) detect_missing_traces(ctx, findings);

  // The ranks most behind their peers, whether or not they were reported:
  // lets a reader see how close to the thresholds a run was.
  // Ordered by the strongest evidence of lateness in any of its communicators (what
  // the straggler test decides on), then by mean excess.
  std::vector<std::tuple<double, double, int64_t>> order;
  for (size_t r = 0; r < stats.ranks().size(); ++r) {
    const RankLateness& rl = stats.ranks()[r];
    if (rl.total.groups == 0) continue;
    double evidence = rl.total.late_evidence();
    for (const auto& [ci, lc] : rl.per_comm) evidence = std::max(evidence, lc.late_evidence());
    for (int ci : siblings.comms_of(static_cast<int64_t>(r)))
      evidence = std::max(evidence, siblings.of(ci)->late_evidence());
    order.emplace_back(evidence, rl.total.mean_excess(), static_cast<int64_t>(r));
  }
  std::sort(order.rbegin(), order.rend());
  nlohmann::json top = nlohmann::json::array();
  for (size_t i = 0; i < order.size() && i < 8; ++i) {
    const int64_t rank = std::get<2>(order[i]);
    const RankLateness& rl = stats.ranks()[static_cast<size_t>(rank)];
    const Lateness& l = rl.total;
    nlohmann::json per_comm = nlohmann::json::array();
    for (const auto& [ci, lc] : rl.per_comm) {
      per_comm.push_back(
          {{"comm", set.comms[static_cast<size_t>(ci)].label},
           {"ran_alongside", table.comms()[static_cast<size_t>(ci)].alongside_groups},
           {"ops", lc.groups},
           {"mean_excess_ms", lc.mean_excess() / 1e6},
           {"late_ops", lc.above},
           {"not_late_ops", lc.below},
           {"late_evidence", lc.late_evidence()}});
    }
    // Its communicators against their siblings (match/sibling_lateness.h).
    nlohmann::json against_siblings = nlohmann::json::array();
    for (int ci : siblings.comms_of(rank)) {
      const Lateness& lc = *siblings.of(ci);
      against_siblings.push_back({{"comm", set.comms[static_cast<size_t>(ci)].label},
                                  {"ops", lc.groups},
                                  {"mean_excess_ms", lc.mean_excess() / 1e6},
                                  {"late_ops", lc.above},
                                  {"not_late_ops", lc.below},
                                  {"late_evidence", lc.late_evidence()}});
    }
    top.push_back({{"rank", rank},
                   {"ops", l.groups},
                   {"mean_excess_ms", l.mean_excess() / 1e6},
                   {"mean_gap_ms", l.mean_gap() / 1e6},
                   {"t", l.t_stat()},
                   {"positive_fraction", l.positive_fraction()},
                   {"late_ops", l.above},
                   {"not_late_ops", l.below},
                   {"late_evidence", l.late_evidence()},
                   {"last", l.last},
                   {"cost_s", l.cost_ns / 1e9},
                   {"per_comm", per_comm},
                   {"against_siblings", against_siblings}});
  }
  report.extra["late_ranks"] = top;
  report.extra["gap_cv"] = stats.median_gap_cv();
  report.extra["profile"] = build_run_profile(set, table, stats);
  // Every finding names its communicator the same way: role, members, label.
  for (Finding& f : findings) {
    const CommInfo* c = f.comm ? set.comm(*f.comm) : nullptr;
    if (c == nullptr) continue;
    f.comm_label = c->label;
    f.comm_role = c->role;
    f.comm_members = c->members;
  }
  report.findings = std::move(findings);
  report.links.source = links.observed()             ? "nccl_profiler"
                        : send_recv_pairs_timed(ctx) ? "send_recv"
                                                     : "none";
  report.links.matrix = links;
  report.links_below_cost = std::move(links_below_cost);
  report.warnings = set.warnings;
  report.warnings.insert(report.warnings.end(), hang_notes.begin(), hang_notes.end());
  if (links.unplaced_comms > 0) {
    report.warnings.push_back(std::to_string(links.unplaced_comms) +
                              " NCCL communicators of the profiler plugin's /links match no "
                              "traced communicator; their links are not used");
  }
  rank_findings_and_set_verdict(report);
  report.what_if = compute_what_if(ctx, report.findings);
  if (options.views) report.extra["views"] = view_data(ctx, report.findings, options.batch);
  for (const auto& ri : set.ranks) {
    if (!ri.has_file) report.missing_ranks.push_back(ri.rank);
  }
  int64_t traced = 0, closed = 0;
  for (const auto& ri : set.ranks) {
    traced += ri.has_file;
    closed += ri.has_file && ri.shutdown;
  }
  if (set.window.active()) {
    report.extra["window"] = {{"ops_per_rank", set.window.ops_per_rank},
                              {"start_s", ctx.job_start_ns / 1e9},
                              {"end_s", ctx.job_end_ns / 1e9}};
  }
  if (const auto host_wait = ctx.host_wait_s) {
    report.extra["host_cpu_wait_s"] = *host_wait;
    const double job = ctx.job_seconds();
    if (job > 0 && *host_wait >= ctx.th.imbalance_min_cost_fraction * job) {
      // Counted between the flushes around the job's span (from the process's start when
      // it flushed once): it can exceed the span.
      const std::string wait_share =
          *host_wait < job ? fmt("%.0f", 100 * *host_wait / job) + "% of the job"
                           : "more than the job lasted: counted between the flushes around it";
      report.warnings.push_back(
          "the hosts were short of CPU: each rank's threads waited " + fmt("%.2f", *host_wait) +
          " s on average for a core (" + wait_share +
          "; run-queue delay): timings are disturbed, and uneven compute that costs no more "
          "than that is not taken for data-dependent imbalance, nor a rank slow now and then "
          "for an intermittent straggler, nor ops a rank's host issued late for a straggler's");
    }
  }
  report.extra["usage"] = job_usage(set, ctx);
  report.extra["ranks_traced"] = traced;
  report.extra["ranks_closed"] = closed;
  if (table.unmatched_p2p() > 0) {
    report.warnings.push_back(
        std::to_string(table.unmatched_p2p()) +
        " send/recv ops have no matching peer op (peer untraced or still in flight)");
  }
  report.records = table.records() + stats.records();
  report.analysis_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace ringside::analysis
