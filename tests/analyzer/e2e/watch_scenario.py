#!/usr/bin/env python3
"""`ringside watch` on a running sim job: a rank stops before op 22 of the world
communicator; the watch must report exactly that root while the job runs (as an
event, a page through --on-finding and Prometheus gauges), nothing else, and end
with the same final report as `ringside analyze`."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

METRIC = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def check_prometheus(text):
    """The text exposition rules the file must follow; returns problems."""
    problems, typed = [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if len(parts) < 4:
                problems.append("line %d: HELP/TYPE without text" % n)
            if line.startswith("# TYPE "):
                if parts[3] not in ("gauge", "counter", "untyped", "summary", "histogram"):
                    problems.append("line %d: unknown type %s" % (n, parts[3]))
                typed.add(parts[2])
            continue
        m = METRIC.match(line)
        if not m:
            problems.append("line %d: not a sample: %r" % (n, line))
            continue
        if m.group(1) not in typed:
            problems.append("line %d: %s has no TYPE line before it" % (n, m.group(1)))
        labels = m.group(3) or ""
        pos = 0
        while pos < len(labels):
            lm = LABEL.match(labels, pos)
            if not lm:
                problems.append("line %d: bad label syntax at %r" % (n, labels[pos:]))
                break
            pos = lm.end()
    return problems


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin-dir", required=True)
    p.add_argument("--sim-lib-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--cluster", required=True)
    o = p.parse_args()
    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    traces = os.path.join(o.work_dir, "traces")
    env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib_dir)
    job = subprocess.Popen(
        [os.path.join(o.bin_dir, "simrun"), "-n", "8", "--nodes", "2", "--timeout", "25",
         "--cluster", o.cluster, "--", os.path.join(o.bin_dir, "ringside"), "run", "-o", traces,
         "--", os.path.join(o.bin_dir, "train_example"), "--steps", "60"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = os.path.join(o.work_dir, "events.jsonl")
    prom = os.path.join(o.work_dir, "metrics.prom")
    paged = os.path.join(o.work_dir, "paged")
    final = os.path.join(o.work_dir, "final.json")
    watch = subprocess.run(
        [os.path.join(o.bin_dir, "ringside"), "watch", traces, "--poll", "1", "--until", "240",
         "--events", events, "--prom", prom, "--json", final, "-q",
         "--on-finding", 'echo "$RINGSIDE_FINDING_KIND/$RINGSIDE_FINDING_SUBKIND $RINGSIDE_FINDING_RANKS" >> ' + paged],
        env=env, capture_output=True, text=True, timeout=300)
    job.wait(timeout=120)
    print(watch.stdout[-3000:])
    print(watch.stderr[-2000:], file=sys.stderr)
    failures = []
    if watch.returncode != 1:
        failures.append("watch exited %d, expected 1 (findings)" % watch.returncode)
    new = []
    with open(events) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "new":
                new.append((e["finding"]["kind"], e["finding"].get("subkind"), e["finding"]["ranks"]))
    if new != [("hang", "missing_rank", [3])]:
        failures.append("new-finding events %s, expected exactly hang/missing_rank [3]" % new)
    if not os.path.exists(paged) or open(paged).read().split("\n")[0] != "hang/missing_rank 3":
        failures.append("--on-finding did not run once with the hang's details")
    problems = check_prometheus(open(prom).read()) if os.path.exists(prom) else ["no --prom file"]
    failures += ["--prom: " + x for x in problems]
    if 'ringside_job_hung{job="' not in open(prom).read():
        failures.append("--prom has no ringside_job_hung gauge")
    report = json.load(open(final))
    first = report["findings"][0] if report["findings"] else {}
    if report["verdict"] != "hung" or first.get("subkind") != "missing_rank" or first.get("ranks") != [3]:
        failures.append("final report: verdict %s, first %s" % (report["verdict"], first))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
