// Stream workers, legacy default stream ordering and the per-device stream registry.
#include "stream.h"

#include <pthread.h>
#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "capture.h"
#include "device_busy.h"
#include "sim_internal.h"

namespace ringside::sim {

namespace {

std::atomic<uint64_t> g_next_stream_id{1};

struct DeviceStreams {
  std::mutex mu;  // orders submissions to synchronizing streams (no dependency cycles)
  std::vector<std::weak_ptr<StreamCore>> all;
  std::shared_ptr<StreamCore> legacy;
};

DeviceStreams& registry(int device) {
  // Leaked on purpose: stream workers may outlive static destruction at exit.
  static auto* table = new std::vector<DeviceStreams>(256);
  return (*table)[static_cast<size_t>(device) & 255];
}

}  // namespace

StreamCore::StreamCore(int device, unsigned flags, int priority, StreamKind kind)
    : device_(device), flags_(flags), priority_(priority), kind_(kind), id_(g_next_stream_id++) {
  slow_factor_ = ringsim_device_slow_factor(device);
}

std::shared_ptr<StreamCore> StreamCore::create(int device, unsigned flags, int priority,
                                               StreamKind kind) {
  auto s = std::make_shared<StreamCore>(device, flags, priority, kind);
  std::thread([s] { s->run(); }).detach();
  register_stream(s);
  return s;
}

uint64_t StreamCore::enqueue(Task task) {
  std::lock_guard<std::mutex> lk(mu_);
  if (capture_) {
    task.deps.clear();  // a graph's work is ordered by its launch stream
    capture_->record(std::move(task));
    return enqueued_;
  }
  queue_.push_back(std::move(task));
  ++enqueued_;
  work_cv_.notify_one();
  return enqueued_;
}

bool StreamCore::begin_capture(std::shared_ptr<CaptureSeq> seq) {
  std::lock_guard<std::mutex> lk(mu_);
  if (capture_) return false;
  capture_ = std::move(seq);
  return true;
}

std::shared_ptr<CaptureSeq> StreamCore::end_capture() {
  std::lock_guard<std::mutex> lk(mu_);
  return std::exchange(capture_, nullptr);
}

std::shared_ptr<CaptureSeq> StreamCore::capture() {
  std::lock_guard<std::mutex> lk(mu_);
  return capture_;
}

uint64_t StreamCore::last_enqueued() {
  std::lock_guard<std::mutex> lk(mu_);
  return enqueued_;
}

bool StreamCore::done(uint64_t seq) {
  return completed_.load(std::memory_order_acquire) >= seq;
}

void StreamCore::wait(uint64_t seq) {
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return completed_.load(std::memory_order_relaxed) >= seq; });
}

void StreamCore::retire() {
  std::lock_guard<std::mutex> lk(mu_);
  retired_ = true;
  work_cv_.notify_one();
}

namespace {
// A hung device: the stream's worker never runs another task.
[[noreturn]] void hang_forever() {
  std::mutex m;
  std::condition_variable never;
  std::unique_lock<std::mutex> lk(m);
  for (;;) never.wait(lk);
}
}  // namespace

void StreamCore::run() {
  pthread_setname_np(pthread_self(), "sim-stream");  // `top -H`, gdb
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return !queue_.empty() || retired_; });
      if (queue_.empty()) return;  // retired and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (stalled_) {
      if ((task.flags & RINGSIM_TASK_EVENT) == 0 || stall_event_used_) hang_forever();
      stall_event_used_ = true;
    }
    for (StreamDep& d : task.deps) d.stream->wait(d.seq);
    if (task.flags & RINGSIM_TASK_STALL_GATE) stalled_ = true;
    auto start = std::chrono::steady_clock::now();
    // An event record is no kernel: it does not make the device busy.
    const bool kernel = task.fn && (task.flags & RINGSIM_TASK_EVENT) == 0;
    if (kernel) device_busy_begin(device_);
    if (task.fn) task.fn();
    if ((task.flags & RINGSIM_TASK_NO_STRETCH) == 0 && slow_factor_ > 1) {
      // slow_gpu: the task takes factor x its measured time.
      auto took = std::chrono::steady_clock::now() - start;
      std::this_thread::sleep_for(
          std::chrono::duration_cast<std::chrono::nanoseconds>(took * (slow_factor_ - 1)));
    }
    if (kernel) device_busy_end(device_);
    std::lock_guard<std::mutex> lk(mu_);
    completed_.fetch_add(1, std::memory_order_release);
    done_cv_.notify_all();
  }
}

uint64_t submit(const std::shared_ptr<StreamCore>& s, std::function<void()> fn, unsigned flags,
                std::vector<StreamDep> extra_deps) {
  Task t{std::move(fn), flags, std::move(extra_deps)};
  if (!s->blocking() || s->capture()) return s->enqueue(std::move(t));
  DeviceStreams& reg = registry(s->device());
  std::lock_guard<std::mutex> lk(reg.mu);
  if (s->kind() == StreamKind::kLegacy) {
    // Legacy stream work starts after all prior work of the device's blocking streams.
    for (auto& w : reg.all) {
      auto other = w.lock();
      if (!other || other == s || !other->blocking()) continue;
      uint64_t seq = other->last_enqueued();
      if (seq > 0 && !other->done(seq)) t.deps.push_back({other, seq});
    }
  } else if (reg.legacy) {
    // ...and blocking streams' work starts after prior legacy stream work.
    uint64_t seq = reg.legacy->last_enqueued();
    if (seq > 0 && !reg.legacy->done(seq)) t.deps.push_back({reg.legacy, seq});
  }
  return s->enqueue(std::move(t));
}

void register_stream(const std::shared_ptr<StreamCore>& s) {
  DeviceStreams& reg = registry(s->device());
  std::lock_guard<std::mutex> lk(reg.mu);
  std::erase_if(reg.all, [](const std::weak_ptr<StreamCore>& w) { return w.expired(); });
  reg.all.push_back(s);
}

std::shared_ptr<StreamCore> legacy_stream(int device) {
  DeviceStreams& reg = registry(device);
  {
    std::lock_guard<std::mutex> lk(reg.mu);
    if (reg.legacy) return reg.legacy;
  }
  auto s = std::make_shared<StreamCore>(device, 0, 0, StreamKind::kLegacy);
  std::thread([s] { s->run(); }).detach();
  std::lock_guard<std::mutex> lk(reg.mu);
  if (reg.legacy) {  // another thread won the race; ours drains and exits
    s->retire();
    return reg.legacy;
  }
  reg.legacy = s;
  reg.all.push_back(s);
  return s;
}

namespace {
struct PerThreadStreams {
  std::vector<std::shared_ptr<StreamCore>> by_device;
  ~PerThreadStreams() {
    for (auto& s : by_device)
      if (s) s->retire();
  }
};
}  // namespace

std::shared_ptr<StreamCore> per_thread_stream(int device) {
  thread_local PerThreadStreams streams;
  if (streams.by_device.size() <= static_cast<size_t>(device))
    streams.by_device.resize(static_cast<size_t>(device) + 1);
  auto& s = streams.by_device[static_cast<size_t>(device)];
  if (!s) s = StreamCore::create(device, 0, 0, StreamKind::kPerThread);
  return s;
}

void synchronize_device(int device) {
  std::vector<std::pair<std::shared_ptr<StreamCore>, uint64_t>> targets;
  {
    DeviceStreams& reg = registry(device);
    std::lock_guard<std::mutex> lk(reg.mu);
    for (auto& w : reg.all) {
      if (auto s = w.lock()) targets.emplace_back(s, s->last_enqueued());
    }
  }
  for (auto& [s, seq] : targets) s->wait(seq);
}

}  // namespace ringside::sim
