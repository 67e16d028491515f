#!/usr/bin/env python3
"""End-to-end scenario: the example on the sim under the probe, then the analyzer.

run_scenario.py --bin-dir B --sim-lib-dir L --work-dir W --ranks 8 --nodes 2
                [--cluster FILE] [--timeout 20] [--program P] --expect SPEC -- [program args]

--timeout is the job's time limit (simrun's, like Slurm's): how a hung job ends.  A job
expected to end by itself (any verdict but hung) that reaches it fails the scenario at
once, naming the limit: its traces hold a job cut short, not the scenario.

P: train_example (under `ringside run`), nccl_bench (its own --trace-dir) or
nccl_bench_probe (nccl_bench under `ringside run`).

SPEC is ';'-separated key=value: verdict=..., findings=0, kind=..., subkind=...,
ranks=5 or ranks=4,5, nodes=node2 or nodes=node2,node3, comm=world, seq=22,
cause=throttling, pattern=structural; warning=TEXT: a warning holds TEXT; named=N: findings plus slow links named below
the cost bar (links.below_cost) number N; below_cost_ok=1: the expected finding may
also be such a link.  Exit 0 when every expectation holds.
"""
import argparse, json, os, shutil, subprocess, sys


def fail(msg, report=None):
    print("FAIL: " + msg, file=sys.stderr)
    if report is not None:
        print(json.dumps(report.get("findings", []), indent=1)[:4000], file=sys.stderr)
    sys.exit(1)


def check_probe_cpu(o, exp, report):
    """Traces written by the probe say what it cost: every rank of a healthy run has a
    share of one core, small and positive (where the kernel accounts per-thread CPU)."""
    if o.program == "nccl_bench" or exp.get("verdict") != "healthy":
        return
    if not os.path.exists("/proc/self/task/%d/schedstat" % os.getpid()):
        return
    cpu = report["usage"].get("probe_cpu_pct")
    if not isinstance(cpu, dict):
        fail("usage.probe_cpu_pct is %r, expected the probe's CPU share" % (cpu,), report)
    if cpu["ranks"] != o.ranks or not 0 < cpu["mean"] <= cpu["max"] < 100:
        fail("implausible usage.probe_cpu_pct %r" % (cpu,), report)


def main():
    p = argparse.ArgumentParser()
    for a in ("--bin-dir", "--sim-lib-dir", "--work-dir", "--expect"):
        p.add_argument(a, required=True)
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--cluster", default="")
    p.add_argument("--timeout", default="60")
    p.add_argument("--program", default="train_example",
                   choices=("train_example", "nccl_bench", "nccl_bench_probe"))
    p.add_argument("args", nargs="*")
    o = p.parse_args()
    shutil.rmtree(o.work_dir, ignore_errors=True)
    traces = os.path.join(o.work_dir, "traces")
    os.makedirs(o.work_dir)
    env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib_dir)
    cmd = [os.path.join(o.bin_dir, "simrun"), "-n", str(o.ranks), "--nodes", str(o.nodes), "--timeout", o.timeout]
    if o.cluster:
        cmd += ["--cluster", o.cluster]
    if o.program == "nccl_bench":
        # nccl_bench writes its own traces (same format), no probe needed.
        cmd += ["--", os.path.join(o.bin_dir, "nccl_bench")] + o.args + ["--trace-dir", traces]
    elif o.program == "nccl_bench_probe":
        # As a user traces any NCCL program: under the probe (with NCCL's profiler plugin).
        cmd += ["--", os.path.join(o.bin_dir, "ringside"), "run", "-o", traces, "--",
                os.path.join(o.bin_dir, "nccl_bench")] + o.args
    else:
        cmd += ["--", os.path.join(o.bin_dir, "ringside"), "run", "-o", traces, "--",
                os.path.join(o.bin_dir, "train_example")] + o.args
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    print("job exit %d" % run.returncode)
    exp = dict(kv.split("=", 1) for kv in o.expect.split(";") if kv)
    if exp.get("verdict") != "hung" and "time limit of" in run.stderr:
        fail("the job did not end within its time limit of %s s (simrun stopped it): the host "
             "was too slow or loaded for this scenario, whose traces now hold a job cut short; "
             "job stderr: %s" % (o.timeout, run.stderr[-1500:]))
    report_path = os.path.join(o.work_dir, "report.json")
    ana = subprocess.run([os.path.join(o.bin_dir, "ringside"), "analyze", traces, "--json", report_path,
                          "--no-progress"], capture_output=True, text=True)
    print(ana.stdout)
    if ana.returncode not in (0, 1):
        fail("analyze exited %d: %s\njob stderr: %s" % (ana.returncode, ana.stderr, run.stderr[-2000:]))
    report = json.load(open(report_path))
    if report.get("schema") != "ringside.report/1":
        fail("wrong schema %r" % report.get("schema"))
    if "verdict" in exp and report["verdict"] != exp["verdict"]:
        fail("verdict %s, expected %s" % (report["verdict"], exp["verdict"]), report)
    if "findings" in exp and len(report["findings"]) != int(exp["findings"]):
        fail("%d findings, expected %s" % (len(report["findings"]), exp["findings"]), report)
    below_cost = report["links"].get("below_cost", [])
    named = len(report["findings"]) + len(below_cost)
    if "named" in exp and named != int(exp["named"]):
        fail("%d findings and slow links below the cost bar, expected %s: %s" %
             (named, exp["named"], json.dumps(below_cost)[:2000]), report)
    if (ana.returncode == 0) != (len(report["findings"]) == 0):
        fail("exit code %d does not match the findings" % ana.returncode, report)
    check_probe_cpu(o, exp, report)
    if "warning" in exp and not any(exp["warning"] in w for w in report.get("warnings", [])):
        fail("no warning holds %r" % exp["warning"], report)
    if "kind" not in exp:
        return
    pool = report["findings"] + (below_cost if exp.get("below_cost_ok") == "1" else [])
    cands = [f for f in pool if f["kind"] == exp["kind"]
             and ("subkind" not in exp or f.get("subkind") == exp["subkind"])]
    if not cands:
        fail("no %s/%s finding" % (exp["kind"], exp.get("subkind", "*")), report)
    f = cands[0]
    if "ranks" in exp and f["ranks"] != [int(x) for x in exp["ranks"].split(",")]:
        fail("ranks %s, expected %s" % (f["ranks"], exp["ranks"]), report)
    if "nodes" in exp and f["nodes"] != exp["nodes"].split(","):
        fail("nodes %s, expected %s" % (f["nodes"], exp["nodes"]), report)
    if "comm" in exp and f.get("comm_label") != exp["comm"]:
        fail("comm %s, expected %s" % (f.get("comm_label"), exp["comm"]), report)
    if "seq" in exp and f.get("seq") != int(exp["seq"]):
        fail("seq %s, expected %s" % (f.get("seq"), exp["seq"]), report)
    for key in ("cause", "pattern"):
        if key in exp and f.get(key) != exp[key]:
            fail("%s %s, expected %s" % (key, f.get(key), exp[key]), report)
    print("PASS: %s" % f["evidence"])


if __name__ == "__main__":
    main()
