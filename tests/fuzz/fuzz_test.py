#!/usr/bin/env python3
"""Fuzzes `ringside analyze` with damaged trace directories.

fuzz_test.py --ringside R --trace-fuzz F --work-dir W [--cases N] [--seed S]
             [--bin-dir B --sim-lib-dir L] [--keep DIR]

Makes the corpora first, each with a fault so that a sound analysis never ends
HEALTHY: synthetic traces (a straggler, a stopped rank; the same writer as the
probe) and, when --bin-dir has the sim and the example, real probe traces of a
job whose rank stalls, killed by its time limit the way a launcher ends it.
Then trace_fuzz damages copies of them and judges each analysis.
"""
import argparse, os, shutil, subprocess, sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ringside", required=True)
    p.add_argument("--trace-fuzz", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--cases", default="100")
    p.add_argument("--seed", default="1")
    p.add_argument("--timeout", default="120")
    p.add_argument("--bin-dir", default="")
    p.add_argument("--sim-lib-dir", default="")
    p.add_argument("--cluster", default="")
    p.add_argument("--keep", default="")
    o = p.parse_args()
    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    corpora = []

    def synth(name, *args):
        out = os.path.join(o.work_dir, name)
        subprocess.run([o.ringside, "synth", "-o", out, "-n", "8", "-N", "2", "--steps", "30",
                        "--job-id", "fuzz"] + list(args), check=True, stdout=subprocess.DEVNULL)
        corpora.append(out)

    synth("straggler", "--fault", "straggler:rank=5,factor=1.6")
    synth("stop", "--fault", "stop:rank=3,op=20", "--tp", "2")
    simrun = os.path.join(o.bin_dir, "simrun") if o.bin_dir else ""
    if simrun and os.path.exists(simrun) and o.cluster:
        out = os.path.join(o.work_dir, "probe-stall")
        env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib_dir)
        job = subprocess.run([simrun, "-n", "8", "--nodes", "2", "--timeout", "20", "--cluster",
                              o.cluster, "--", os.path.join(o.bin_dir, "ringside"), "run", "-o",
                              out, "--", os.path.join(o.bin_dir, "train_example"), "--steps", "30"],
                             env=env, capture_output=True, text=True)
        if not os.path.isdir(out) or not os.listdir(out):
            print("fuzz_test: the probe corpus job left no traces (exit %d):\n%s"
                  % (job.returncode, job.stderr[-2000:]), file=sys.stderr)
            return 1
        corpora.append(out)
    cmd = [o.trace_fuzz, "--ringside", o.ringside, "--cases", o.cases, "--seed", o.seed,
           "--timeout", o.timeout, "--work", os.path.join(o.work_dir, "cases")]
    for c in corpora:
        cmd += ["--corpus", c]
    if o.keep:
        cmd += ["--keep", o.keep]
    print("fuzz_test: corpora " + ", ".join(os.path.basename(c) for c in corpora), flush=True)
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
