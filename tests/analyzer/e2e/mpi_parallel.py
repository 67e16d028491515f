#!/usr/bin/env python3
"""`mpirun -n K ringside analyze DIR` writes the report one process writes: a small
synthetic job (tensor x pipeline x data parallel, gradient buckets run alongside the
compute, a straggler, one rank's ops damaged, a file that is not a trace) analyzed alone
and with K = 1, 2 and 4 processes; the JSON, text and HTML reports must be equal byte for
byte (no report field is a timing), and so must the warnings.  So must those of one process
whose later passes read the traces again instead of the rows the first pass kept
(`--no-spill`), or fall back to them (a spill directory that does not exist).  The
launches run at once (mpirun's start and end are most of their time).  Exit 77 (skipped)
if mpirun is absent.

mpi_parallel.py --ringside BIN --work-dir W
"""
import argparse, os, shutil, subprocess, sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ringside", required=True)
    ap.add_argument("--work-dir", required=True)
    o = ap.parse_args()
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("mpirun not found (Debian package openmpi-bin): skipped")
        return 77
    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    traces = os.path.join(o.work_dir, "traces")
    subprocess.run([o.ringside, "synth", "-o", traces, "-n", "32", "-N", "4", "--tp", "2",
                    "--pp", "2", "--steps", "100", "--buckets", "4", "--comm-streams",
                    "--overlap", "--clock-offset-ms", "20", "--seed", "7", "--chunk-records", "64",
                    "--fault", "straggler:rank=9,factor=1.3"], check=True,
                   stdout=subprocess.DEVNULL)
    # One rank's ops damaged past what loading the directory reads (its first 512 ops):
    # the pass that reads them fails, on whichever process reads that rank, and the
    # warning must be the one a single process gives.
    path = os.path.join(traces, "ringside-synth-r000021.h5")
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) * 88 // 100)
        f.write(b"\xff" * 64)
    # A file named like a trace that is not one: the listing's check (split across the
    # processes) skips it, with the warning one process gives.
    with open(os.path.join(traces, "ringside-synth-r000099.h5"), "wb") as f:
        f.write(b"not an HDF5 file\n" * 64)

    # Runs: one process, K processes (a number), one process with a spill option.
    spill_options = {"unkept": ["--no-spill"],
                     "no-spill-dir": ["--spill-dir", os.path.join(o.work_dir, "missing")]}

    def start(k):
        out = os.path.join(o.work_dir, "k%s" % k)
        os.makedirs(out)
        cmd = [o.ringside, "analyze", traces, "--no-progress", "--json",
               os.path.join(out, "report.json"), "--html", os.path.join(out, "report.html"),
               *spill_options.get(k, [])]
        if isinstance(k, int):
            root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
            cmd = [mpirun, "-n", str(k), "--oversubscribe", *root, "--mca", "btl", "self,vader",
                   *cmd]
        return out, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True)

    def finish(run):
        out, cmd, p = run
        try:
            stdout, stderr = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            fail("%s did not finish in 300 s" % " ".join(cmd))
        if p.returncode not in (0, 1):
            fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, stderr[-3000:]))
        with open(os.path.join(out, "report.txt"), "w") as f:
            f.write(stdout)
        warnings = sorted(l for l in stderr.splitlines() if l.startswith("ringside:"))
        return out, p.returncode, warnings

    runs = {k: start(k) for k in (None, 1, 2, 4, *spill_options)}
    alone, code, warnings = finish(runs[None])
    if code != 1:
        fail("the straggler was not found (exit %d)" % code)
    if not any("r000021.h5" in w and "'ops'" in w and "rank 21" in w for w in warnings):
        fail("no warning about the cut file: %s" % warnings)
    if not any("r000099.h5" in w for w in warnings):
        fail("no warning about the file that is not a trace: %s" % warnings)
    for k in (1, 2, 4, *spill_options):
        out, kcode, kwarnings = finish(runs[k])
        if kcode != code:
            fail("K=%s exited %d, one process %d" % (k, kcode, code))
        if kwarnings != warnings:
            fail("K=%s warned %s, one process %s" % (k, kwarnings, warnings))
        for name in ("report.json", "report.txt", "report.html"):
            with open(os.path.join(alone, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                if a.read() != b.read():
                    fail("K=%s: %s differs from one process's (diff %s %s)" %
                         (k, name, os.path.join(alone, name), os.path.join(out, name)))
        print("K=%s: reports equal to one process's" % k)
    shutil.rmtree(o.work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
