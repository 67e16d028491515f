#!/usr/bin/env python3
"""The demo on the sim, with and without its fault: `ringside diff` names the
straggler's recovery (faulty -> healthy) and its regression (healthy -> faulty,
exit 1); `ringside export --perfetto` of the faulty run follows the Trace Event
Format's rules.

diff_demo.py --bin-dir B --sim-lib-dir L --work-dir W --scenarios DIR
"""
import argparse, json, os, shutil, subprocess, sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run_demo(o, cluster, traces):
    env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib_dir)
    cmd = [os.path.join(o.bin_dir, "simrun"), "-n", "8", "--nodes", "2", "--timeout", "300",
           "--cluster", os.path.join(o.scenarios, cluster), "--",
           os.path.join(o.bin_dir, "ringside"), "run", "-o", traces, "--",
           os.path.join(o.bin_dir, "train_example"), "--steps", "40"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        fail("%s: job exited %d: %s" % (cluster, run.returncode, run.stderr[-2000:]))


def diff(o, a, b):
    r = subprocess.run([os.path.join(o.bin_dir, "ringside"), "diff", a, b, "--json", "-"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        fail("diff exited %d: %s" % (r.returncode, r.stderr))
    print(subprocess.run([os.path.join(o.bin_dir, "ringside"), "diff", a, b],
                         capture_output=True, text=True).stdout)
    return r.returncode, json.loads(r.stdout)


def named(changes, area, what):
    return [c for c in changes if c["area"] == area and what in c["what"] and c["exceeds_threshold"]]


def check_trace_events(path):
    doc = json.load(open(path))
    events = doc["traceEvents"]
    processes, threads, tracks, slices, findings = {}, set(), {}, 0, []
    for e in events:
        for key in ("ph", "name", "pid", "tid"):
            if key not in e:
                fail("event without %s: %r" % (key, e))
        if e["ph"] == "M":
            if e["name"] == "process_name":
                processes[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                threads.add((e["pid"], e["tid"]))
            continue
        if not isinstance(e.get("ts"), (int, float)):
            fail("event without a numeric ts: %r" % e)
        if e["ph"] == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail("slice without a duration: %r" % e)
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
            slices += 1
        elif e["ph"] == "i":
            findings.append(e)
        elif e["ph"] != "C":
            fail("unexpected phase %r" % e)
    for key, spans in tracks.items():
        if key[0] not in processes or key not in threads:
            fail("track %r has no process_name or thread_name" % (key,))
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for b, end in spans:
            while open_ends and open_ends[-1] <= b:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                fail("slices overlap without nesting on track %r at %s" % (key, b))
            open_ends.append(end)
    if sorted(processes.values()) != ["node1", "node2"]:
        fail("processes %r, expected one per node" % processes)
    if not any(f["args"]["kind"] == "straggler" and f["args"]["ranks"] == [5] for f in findings):
        fail("no straggler finding for rank 5 among the instants: %r" % findings)
    print("export: %d slices on %d tracks, %d findings" % (slices, len(tracks), len(findings)))


def main():
    p = argparse.ArgumentParser()
    for a in ("--bin-dir", "--sim-lib-dir", "--work-dir", "--scenarios"):
        p.add_argument(a, required=True)
    o = p.parse_args()
    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    faulty, healthy = os.path.join(o.work_dir, "faulty"), os.path.join(o.work_dir, "healthy")
    run_demo(o, "straggler_gpu.json", faulty)
    run_demo(o, "healthy.json", healthy)
    # The repair: rank 5 (node2's GPU 1) is no longer late; nothing about it got worse.
    rc, d = diff(o, faulty, healthy)
    if not named(d["better"], "rank_lateness", "rank 5 "):
        fail("faulty -> healthy does not name rank 5's recovery: %s" % json.dumps(d, indent=1))
    if [c for c in d["worse"] if "rank 5 " in c["what"]]:
        fail("faulty -> healthy says rank 5 got worse: %s" % json.dumps(d, indent=1))
    # The fault: a regression naming rank 5.
    rc, d = diff(o, healthy, faulty)
    if rc != 1 or not named(d["worse"], "rank_lateness", "rank 5 "):
        fail("healthy -> faulty: exit %d, rank 5 not named: %s" % (rc, json.dumps(d, indent=1)))
    out = os.path.join(o.work_dir, "timeline.json")
    r = subprocess.run([os.path.join(o.bin_dir, "ringside"), "export", faulty, "--perfetto", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("export exited %d: %s" % (r.returncode, r.stderr))
    check_trace_events(out)
    print("PASS")


if __name__ == "__main__":
    main()
