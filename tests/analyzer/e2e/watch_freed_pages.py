#!/usr/bin/env python3
"""`ringside watch` keeps what a poll frees for the next poll: the allocator's decay time
(jemalloc's dirty_decay_ms) is raised in every arena for the watch, to 20 polls and 60 s at
least, and left alone for `ringside analyze`.  Read from the allocator's own statistics
at exit (MALLOC_CONF stats_print, as JSON).  Skipped (77) where `ringside` is not linked
with jemalloc."""
import argparse
import json
import os
import shutil
import subprocess
import sys


def allocator_settings(cmd, cwd):
    """Runs cmd with jemalloc's exit statistics; returns them, or None without jemalloc."""
    env = dict(os.environ, MALLOC_CONF="stats_print:true,stats_print_opts:J")
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    start = r.stderr.find('{\n"jemalloc"')
    if start < 0:
        start = r.stderr.find('{"jemalloc"')
    if start < 0:
        return None
    stats, _ = json.JSONDecoder().raw_decode(r.stderr[start:])
    return stats["jemalloc"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin-dir", required=True)
    p.add_argument("--work-dir", required=True)
    o = p.parse_args()
    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    ringside = os.path.join(o.bin_dir, "ringside")
    traces = os.path.join(o.work_dir, "traces")
    subprocess.run([ringside, "synth", "-o", traces, "-n", "8", "-N", "2", "--steps", "30"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    failures = []
    # A closed job: the watch ends by itself after its polls.
    for poll, want in (("0.2", 60000), ("4", 80000)):
        j = allocator_settings([ringside, "watch", traces, "--poll", poll, "--quiet"], o.work_dir)
        if j is None:
            print("ringside is not linked with jemalloc: nothing to check")
            return 77
        if j["arenas"]["dirty_decay_ms"] != want:
            failures.append("watch --poll %s: arenas.dirty_decay_ms %s, expected %d" %
                            (poll, j["arenas"]["dirty_decay_ms"], want))
        for index, arena in j["stats.arenas"].items():
            if index != "merged" and arena.get("dirty_decay_ms") != want:
                failures.append("watch --poll %s: arena %s keeps freed pages %s ms, expected %d" %
                                (poll, index, arena.get("dirty_decay_ms"), want))
    j = allocator_settings([ringside, "analyze", traces], o.work_dir)
    if j["arenas"]["dirty_decay_ms"] != j["opt"]["dirty_decay_ms"]:
        failures.append("analyze changed the allocator's decay: %s, default %s" %
                        (j["arenas"]["dirty_decay_ms"], j["opt"]["dirty_decay_ms"]))
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("watch keeps freed pages 60 s (--poll 0.2) and 80 s (--poll 4); analyze: default")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
