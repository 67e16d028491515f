#include "bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

#include "core/errors.h"
#include "ringside/count_text.h"
#include "ringside/bandwidth.h"

namespace ringside::bench {

namespace {

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

std::byte* at(void* base, size_t elements, size_t elt) {
  return static_cast<std::byte*>(base) + elements * elt;
}

}  // namespace

IterEvents::IterEvents(std::span<const LocalRank> ranks, int count) : ranks_(ranks) {
  if (count == 0) return;
  for (const LocalRank& l : ranks_) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
    std::vector<cudaEvent_t>& ev = events_.emplace_back(static_cast<size_t>(count), nullptr);
    for (cudaEvent_t& e : ev) RINGSIDE_CUDA_CHECK(cudaEventCreate(&e));
  }
}

IterEvents::~IterEvents() {
  for (size_t i = 0; i < events_.size(); ++i) {
    cudaSetDevice(ranks_[i].cs.device);
    for (cudaEvent_t e : events_[i]) cudaEventDestroy(e);
  }
}

void IterEvents::record(int index) {
  for (size_t i = 0; i < events_.size(); ++i) {
    RINGSIDE_CUDA_CHECK(cudaSetDevice(ranks_[i].cs.device));
    RINGSIDE_CUDA_CHECK(
        cudaEventRecord(events_[i][static_cast<size_t>(index)], ranks_[i].cs.stream));
  }
}

double IterEvents::max_seconds(int from, int to) const {
  double worst = 0;
  for (size_t i = 0; i < events_.size(); ++i) {
    float ms = 0;
    RINGSIDE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i][static_cast<size_t>(from)],
                                             events_[i][static_cast<size_t>(to)]));
    worst = std::max(worst, static_cast<double>(ms) * 1e-3);
  }
  return worst;
}

IterStats summarize_iterations(std::span<const double> seconds) {
  IterStats st;
  if (seconds.empty()) return st;
  std::vector<double> sorted(seconds.begin(), seconds.end());
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  st.min_us = sorted.front() * 1e6;
  st.max_us = sorted.back() * 1e6;
  // Nearest rank: the smallest value with at least 99% of the samples at or below it.
  st.p99_us = sorted[std::min(n - 1, (n * 99 + 99) / 100 - 1)] * 1e6;
  double sum = 0;
  for (double v : sorted) sum += v;
  const double mean = sum / static_cast<double>(n);
  double var = 0;
  for (double v : sorted) var += (v - mean) * (v - mean);
  const double stdev = std::sqrt(var / static_cast<double>(n));
  st.cv_pct = mean > 0 ? stdev / mean * 100 : 0;
  return st;
}

Runner::Runner(World& world, const BenchOptions& options, const Report& report, OpTrace* trace,
               int thread)
    : world_(world),
      o_(options),
      report_(report),
      trace_(trace),
      first_(static_cast<size_t>(thread) * static_cast<size_t>(options.gpus_per_process)),
      printing_(thread == 0),
      wd_(world.watchdog()),
      cs_(world.comm_streams(first_, static_cast<size_t>(options.gpus_per_process))) {
  for (const DataType* t : o_.dtypes) {
    const Counts c = o_.collective->counts(o_.max_bytes / static_cast<uint64_t>(t->size),
                                           static_cast<size_t>(t->size), world_.nranks());
    buffer_bytes_ =
        std::max(buffer_bytes_, std::max(c.send, c.recv) * static_cast<size_t>(t->size));
  }
  buffer_bytes_ = std::max<size_t>(buffer_bytes_, 16);
  for (LocalRank& l : mine()) {
    Local b;
    RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
    RINGSIDE_CUDA_CHECK(cudaMalloc(&b.send, buffer_bytes_));
    RINGSIDE_CUDA_CHECK(cudaMalloc(&b.recv, buffer_bytes_));
    RINGSIDE_CUDA_CHECK(cudaMemset(b.send, 0, buffer_bytes_));
    RINGSIDE_CUDA_CHECK(cudaMemset(b.recv, 0, buffer_bytes_));
    if (o_.check_iters > 0) b.host.resize(buffer_bytes_);
    locals_.push_back(std::move(b));
  }
}

Runner::~Runner() {
  // After a failure the device may never finish its work, and cudaFree waits for it.
  if (wd_.failed()) return;
  const auto ls = mine();
  for (size_t i = 0; i < locals_.size(); ++i) {
    cudaSetDevice(ls[i].cs.device);
    cudaFree(locals_[i].send);
    cudaFree(locals_[i].recv);
  }
}

Runner::Setup Runner::make_setup(const DataType* type, const RedOp* op, int root,
                                 uint64_t size) const {
  Setup s;
  s.type = type;
  s.op = op;
  s.root = root;
  s.size = size;
  s.c = o_.collective->counts(size / static_cast<uint64_t>(type->size),
                              static_cast<size_t>(type->size), world_.nranks());
  return s;
}

void Runner::describe(const char* phase, const Setup& s, bool in_place) {
  what_ = std::string(phase) + o_.collective->name + " of " + std::to_string(s.size) + " bytes (" +
          s.type->name;
  if (o_.collective->op_rows) what_ += std::string(", ") + s.op->name;
  if (o_.collective->has_root) what_ += ", root " + std::to_string(s.root);
  what_ += in_place ? ", in place)" : ", out of place)";
}

void Runner::issue(const Setup& s, bool in_place, bool capturing) {
  const auto ls = mine();
  const size_t elt = static_cast<size_t>(s.type->size);
  const bool grouped = ls.size() > 1;
  // Events recorded inside a group would precede the op's launch at ncclGroupEnd.
  const bool timed = !capturing && !grouped && o_.agg_iters == 1;
  if (grouped) RINGSIDE_NCCL_CHECK(ncclGroupStart());
  for (size_t i = 0; i < ls.size(); ++i) {
    const int rank = ls[i].rank;
    CollArgs a{};
    a.send = in_place
                 ? at(locals_[i].recv, s.c.send_inplace_offset * static_cast<size_t>(rank), elt)
                 : locals_[i].send;
    a.recv = in_place
                 ? at(locals_[i].recv, s.c.recv_inplace_offset * static_cast<size_t>(rank), elt)
                 : locals_[i].recv;
    a.count = s.c.param;
    a.type = s.type->nccl;
    a.op = s.op->nccl;
    const bool premul = o_.collective->has_redop && s.op->nccl == kPreMulSum;
    if (premul) {
      // nccl-tests' mulsum: a scalar per rank, the op made for this one call.
      unsigned char scalar[8] = {};
      store_value(s.type->nccl, scalar, 0, premul_scalar(rank));
      RINGSIDE_NCCL_WATCH(wd_, cs_, what_,
                          ncclRedOpCreatePreMulSum(&a.op, scalar, s.type->nccl,
                                                   ncclScalarHostImmediate, ls[i].cs.comm));
    }
    a.root = s.root;
    a.rank = rank;
    a.nranks = world_.nranks();
    a.comm = ls[i].cs.comm;
    a.stream = ls[i].cs.stream;
    if (trace_ != nullptr) trace_->before(first_ + i, timed);
    RINGSIDE_NCCL_WATCH(wd_, cs_, what_, o_.collective->run(a));
    if (premul) RINGSIDE_NCCL_WATCH(wd_, cs_, what_, ncclRedOpDestroy(a.op, a.comm));
    if (trace_ != nullptr) {
      OpDesc d;
      d.kind = o_.collective->kind;
      d.count = s.c.param;
      d.bytes = nccl_tests_size(o_.collective->kind, s.c.param, s.type->size, world_.nranks());
      d.dtype = static_cast<uint8_t>(s.type->nccl);
      d.redop =
          o_.collective->has_redop ? static_cast<uint8_t>(s.op->nccl) : 0;  // mulsum: kPreMulSum
      d.peer = o_.collective->has_root ? s.root : -1;
      d.flags = static_cast<uint8_t>((in_place ? trace::kFlagInPlace : 0) |
                                     (capturing ? trace::kFlagGraphCapture : 0) |
                                     ((grouped || o_.agg_iters > 1) ? trace::kFlagInGroup : 0));
      if (d.kind == trace::OpKind::kSend) {
        d.peer = (rank + 1) % world_.nranks();
        trace_->after(first_ + i, d);
        d.kind = trace::OpKind::kRecv;
        d.peer = (rank - 1 + world_.nranks()) % world_.nranks();
      }
      trace_->after(first_ + i, d);
      trace_->end_op(first_ + i);
    }
  }
  if (grouped) RINGSIDE_NCCL_WATCH(wd_, cs_, what_, ncclGroupEnd());
}

void Runner::sync_all(bool trace_complete, bool timed) {
  wd_.wait(cs_, what_, {}, timed);
  if (!trace_complete || trace_ == nullptr) return;
  for (size_t i = 0; i < cs_.size(); ++i) trace_->complete(first_ + i);
}

std::span<LocalRank> Runner::mine() const {
  return std::span<LocalRank>(world_.locals())
      .subspan(first_, static_cast<size_t>(o_.gpus_per_process));
}

void Runner::barrier() {
  oob_barrier(wd_, cs_, what_);
}

double Runner::combine_time(double seconds) {
  const auto& cs = cs_;
  const int n = world_.nranks();
  std::vector<std::vector<double>> v(cs.size(), std::vector<double>(1, seconds));
  ncclRedOp_t op = ncclSum;
  if (o_.average == 0) {
    for (size_t i = 0; i < cs.size(); ++i) v[i][0] = mine()[i].rank == 0 ? seconds : 0.0;
  } else if (o_.average == 2) {
    op = ncclMin;
  } else if (o_.average == 3) {
    op = ncclMax;
  }
  double t = oob_allreduce(wd_, cs, v, op, what_)[0][0];
  if (o_.average == 1) t /= n;
  return t;
}

void Runner::warm_up(const DataType* type, const RedOp* op, int root) {
  if (o_.warmup_iters == 0) return;
  for (uint64_t size = o_.min_bytes; size <= o_.max_bytes; size = size == 0 ? 1 : size * 2) {
    const Setup s = make_setup(type, op, root, size);
    describe("warm-up ", s, false);
    for (int i = 0; i < o_.warmup_iters; ++i) issue(s, false, false);
    sync_all(true);
    if (size > o_.max_bytes / 2) break;
  }
}

Measurement Runner::bench_time(const Setup& s, bool in_place) {
  const auto ls = mine();
  describe("", s, in_place);
  // One op to settle, then line everyone up.
  issue(s, in_place, false);
  sync_all(true);
  barrier();

  const bool graph = o_.graph_launches > 0;
  if (graph) {
    for (LocalRank& l : ls) {
      RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
      RINGSIDE_CUDA_CHECK(cudaStreamBeginCapture(l.cs.stream, cudaStreamCaptureModeThreadLocal));
    }
  }
  // -I: an event before every iteration and one after the last, or with -z 3
  // (which waits after every iteration) a start and an end per iteration.
  const bool paired = o_.blocking == 3;
  IterEvents events(ls, !o_.per_iter_timing ? 0 : paired ? 2 * o_.iters : o_.iters + 1);
  double coll_only = 0;
  double t0 = now_seconds();
  for (int iter = 0; iter < o_.iters; ++iter) {
    const double t_iter = now_seconds();
    events.record(paired ? 2 * iter : iter);
    if (o_.agg_iters > 1) RINGSIDE_NCCL_CHECK(ncclGroupStart());
    for (int a = 0; a < o_.agg_iters; ++a) issue(s, in_place, graph);
    if (o_.agg_iters > 1) RINGSIDE_NCCL_WATCH(wd_, cs_, what_, ncclGroupEnd());
    if (o_.blocking == 1 || o_.blocking == 2) {
      sync_all(false, true);
      if (o_.blocking == 1) barrier();
    } else if (o_.blocking == 3) {
      sync_all(false, true);
      events.record(2 * iter + 1);
      coll_only += now_seconds() - t_iter;
      barrier();
    }
  }
  if (!paired) events.record(o_.iters);
  std::vector<cudaGraphExec_t> execs;
  if (graph) {
    for (LocalRank& l : ls) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t e = nullptr;
      RINGSIDE_CUDA_CHECK(cudaSetDevice(l.cs.device));
      RINGSIDE_CUDA_CHECK(cudaStreamEndCapture(l.cs.stream, &g));
      RINGSIDE_CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
      RINGSIDE_CUDA_CHECK(cudaGraphDestroy(g));
      execs.push_back(e);
    }
    barrier();
    t0 = now_seconds();
    for (int k = 0; k < o_.graph_launches; ++k) {
      for (size_t i = 0; i < ls.size(); ++i) {
        RINGSIDE_CUDA_CHECK(cudaSetDevice(ls[i].cs.device));
        RINGSIDE_CUDA_CHECK(cudaGraphLaunch(execs[i], ls[i].cs.stream));
      }
    }
  }
  sync_all(false, true);
  double seconds = (o_.blocking == 3 ? coll_only : now_seconds() - t0) /
                   (static_cast<double>(o_.iters) * o_.agg_iters);
  if (graph) seconds /= o_.graph_launches;
  for (size_t i = 0; i < execs.size(); ++i) {
    cudaSetDevice(ls[i].cs.device);
    cudaGraphExecDestroy(execs[i]);
  }
  if (trace_ != nullptr) {
    for (size_t i = 0; i < ls.size(); ++i) trace_->complete(first_ + i);
  }

  seconds = combine_time(seconds);
  Measurement m;
  m.time_us = seconds * 1e6;
  if (o_.per_iter_timing) m.iterations = iteration_stats(events, paired);
  const Bandwidth bw = compute_bandwidth(
      o_.collective->kind,
      nccl_tests_size(o_.collective->kind, s.c.param, s.type->size, world_.nranks()), seconds,
      world_.nranks());
  m.alg_gbps = bw.alg_gbps;
  m.bus_gbps = bw.bus_gbps;
  bw_sum_ += m.bus_gbps;
  ++bw_count_;

  m.checked = o_.check_iters > 0 && (!in_place || o_.collective->check_in_place);
  if (m.checked) {
    for (int c = 0; c < o_.check_iters; ++c) {
      m.wrong = check_once(s, in_place, ++rep_);
      if (m.wrong != 0) break;
    }
  }
  return m;
}

IterStats Runner::iteration_stats(const IterEvents& events, bool paired) {
  // Each iteration's time is the slowest local GPU's, then the slowest process's.
  std::vector<double> times(static_cast<size_t>(o_.iters), 0.0);
  for (int it = 0; it < o_.iters; ++it) {
    const int from = paired ? 2 * it : it;  // to the next event either way
    times[static_cast<size_t>(it)] = events.max_seconds(from, from + 1) / o_.agg_iters;
  }
  std::vector<std::vector<double>> mine_times(cs_.size(), times);
  times = oob_allreduce(wd_, cs_, mine_times, ncclMax, what_)[0];
  return summarize_iterations(
      std::span<const double>(times).subspan(static_cast<size_t>(o_.per_iter_skip)));
}

int64_t Runner::check_once(const Setup& s, bool in_place, int rep) {
  const auto ls = mine();
  const size_t elt = static_cast<size_t>(s.type->size);
  const ncclDataType_t t = s.type->nccl;
  InputGen gen;
  gen.reduction = o_.collective->has_redop;
  gen.fp8 = s.type->size == 1 && s.type->is_float;
  gen.op = s.op->nccl;
  gen.nranks = world_.nranks();
  gen.rep = rep;
  const size_t image = in_place ? std::max(s.c.send, s.c.recv) : s.c.recv;
  describe("data check of ", s, in_place);

  // The recv buffer before the op: zeros, plus (in place) this rank's input.
  auto initial = [&](int rank, size_t j) -> double {
    const size_t off = s.c.send_inplace_offset * static_cast<size_t>(rank);
    if (in_place && j >= off && j < off + s.c.send) return as_type(t, gen(rank, j - off));
    return 0.0;
  };

  for (size_t i = 0; i < ls.size(); ++i) {
    const int rank = ls[i].rank;
    std::byte* host = locals_[i].host.data();
    RINGSIDE_CUDA_CHECK(cudaSetDevice(ls[i].cs.device));
    if (!in_place) {
      for (size_t k = 0; k < s.c.send; ++k) store_value(t, host, k, gen(rank, k));
      RINGSIDE_CUDA_CHECK(
          cudaMemcpy(locals_[i].send, host, s.c.send * elt, cudaMemcpyHostToDevice));
    }
    for (size_t j = 0; j < image; ++j) store_value(t, host, j, initial(rank, j));
    RINGSIDE_CUDA_CHECK(cudaMemcpy(locals_[i].recv, host, image * elt, cudaMemcpyHostToDevice));
  }
  issue(s, in_place, false);
  sync_all(true);

  std::vector<std::vector<double>> wrong(ls.size(), std::vector<double>(1, 0.0));
  for (size_t i = 0; i < ls.size(); ++i) {
    const int rank = ls[i].rank;
    std::byte* host = locals_[i].host.data();
    RINGSIDE_CUDA_CHECK(cudaSetDevice(ls[i].cs.device));
    RINGSIDE_CUDA_CHECK(cudaMemcpy(host, locals_[i].recv, image * elt, cudaMemcpyDeviceToHost));
    const bool receives = o_.collective->receives(rank, s.root);
    const size_t out_off = in_place ? s.c.recv_inplace_offset * static_cast<size_t>(rank) : 0;
    int64_t bad = 0;
    for (size_t j = 0; j < image; ++j) {
      const double got = load_value(t, host, j);
      const bool in_output = receives && j >= out_off && j < out_off + s.c.recv;
      const double want =
          in_output ? o_.collective->output(gen, s.c, rank, s.root, j - out_off) : initial(rank, j);
      const ncclRedOp_t op = in_output && gen.reduction ? s.op->nccl : ncclSum;
      if (!values_match(*s.type, op, got, want)) ++bad;
    }
    wrong[i][0] = static_cast<double>(bad);
  }
  return static_cast<int64_t>(oob_allreduce(wd_, cs_, wrong, ncclSum, what_)[0][0]);
}

Summary Runner::run() {
  Summary summary;
  if (printing_) report_.header();
  std::vector<int> roots;
  if (!o_.collective->has_root) {
    roots.push_back(-1);
  } else if (o_.root < 0) {
    for (int r = 0; r < world_.nranks(); ++r) roots.push_back(r);
  } else {
    if (o_.root >= world_.nranks()) {
      throw UsageError("-r " + std::to_string(o_.root) + " is not a rank of this job (" +
                       count_text(world_.nranks(), "rank") + "); give a root from 0 to " +
                       std::to_string(world_.nranks() - 1) + " or all");
    }
    roots.push_back(o_.root);
  }
  std::vector<const RedOp*> ops = o_.ops;
  if (!o_.collective->op_rows) ops.resize(1);  // nccl-tests shows one row, "none"

  for (const DataType* type : o_.dtypes) {
    for (const RedOp* op : ops) {
      for (int root_shown : roots) {
        const int root = root_shown < 0 ? 0 : root_shown;
        barrier();
        warm_up(type, op, root);
        // -N: every pass prints its rows; 0 runs until the job is stopped.
        for (int cycle = 0; o_.run_cycles == 0 || cycle < o_.run_cycles; ++cycle) {
          for (uint64_t size : bench_sizes(o_)) {
            const Setup s = make_setup(type, op, root, size);
            ResultRow row;
            row.size = std::max(s.c.send, s.c.recv) * static_cast<uint64_t>(type->size);
            row.count = s.c.param;
            row.type = type->name;
            row.redop = o_.collective->op_rows ? op->name : "none";
            row.root = root_shown;
            if (printing_) report_.row_start(row);
            row.out_of_place = bench_time(s, false);
            if (printing_) report_.measurement(row.out_of_place);
            row.in_place = bench_time(s, true);
            if (printing_) report_.measurement(row.in_place);
            if (printing_) report_.row_end();
            summary.wrong_total += row.out_of_place.wrong + row.in_place.wrong;
            if (o_.run_cycles != 0) summary.rows.push_back(std::move(row));  // else unbounded
            if (trace_ != nullptr) trace_->flush(first_, static_cast<size_t>(o_.gpus_per_process));
          }
        }
      }
    }
  }
  summary.avg_bus_gbps = bw_count_ > 0 ? bw_sum_ / bw_count_ : 0.0;
  summary.bandwidth_ok = !o_.min_busbw || summary.avg_bus_gbps >= *o_.min_busbw;
  summary.exit_code = (summary.wrong_total != 0 || !summary.bandwidth_ok) ? 1 : 0;
  if (printing_) report_.footer(summary);
  if (printing_) report_.write_json(summary);
  return summary;
}

Summary run_benchmark(World& world, const BenchOptions& options, const Report& report,
                      OpTrace* trace) {
  if (options.threads == 1) return Runner(world, options, report, trace).run();
  std::vector<Summary> summaries(static_cast<size_t>(options.threads));
  std::vector<std::exception_ptr> errors(summaries.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        summaries[static_cast<size_t>(t)] = Runner(world, options, report, trace, t).run();
      } catch (const CommFailure&) {
        errors[static_cast<size_t>(t)] = std::current_exception();
      } catch (const std::exception& e) {
        // The other threads' ranks would wait for this thread's forever.
        world.watchdog().stop(std::string("thread ") + std::to_string(t) + " failed: " + e.what());
        errors[static_cast<size_t>(t)] = std::current_exception();
      } catch (...) {
        world.watchdog().stop("thread " + std::to_string(t) + " failed");
        errors[static_cast<size_t>(t)] = std::current_exception();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  // The thread that failed first, not one that gave up because of it.
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const CommFailure& f) {
      if (f.kind() == FailureKind::kElsewhere) continue;
      throw;
    } catch (...) {
      throw;
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  // Checks and thresholds are already combined over all ranks: every thread agrees.
  return summaries.front();
}

}  // namespace ringside::bench
