#!/usr/bin/env python3
"""Reads a trace with h5py only, checking it against docs/trace-format.md.

usage: h5py_contract_test.py FIXTURE_WRITER DOC WORKDIR
The fixture writer produces a file with known values; this script knows the
values and the doc, not the project's code.
"""
import os
import re
import shutil
import subprocess
import sys

import h5py


def doc_sections(doc_path):
    sections, current = {}, None
    for line in open(doc_path, encoding="utf-8"):
        if line.startswith("### "):
            current = line[4:].strip().replace("`", "")
            sections[current] = []
        elif current and line.startswith("|---"):
            sections[current].pop()  # the row above a separator is the header
        elif current and line.startswith("|"):
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            sections[current].append(cells)
    return sections


def main():
    writer, doc, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    path = subprocess.run([writer, workdir], check=True, capture_output=True,
                          text=True).stdout.strip()
    assert re.search(r"ringside-fixture-r000005\.h5$", path), path
    sections = doc_sections(doc)
    failures = []

    def check(cond, msg):
        if not cond:
            failures.append(msg)

    with h5py.File(path, "r", libver="latest", swmr=True) as f:
        # Attributes: every documented one present with the documented type.
        for name, typ, *_ in sections["attributes"]:
            check(name in f.attrs, f"attribute {name} missing")
            if name in f.attrs:
                v = f.attrs[name]
                if typ == "int64":
                    check(hasattr(v, "dtype") and v.dtype.kind == "i", f"{name} not int64: {v!r}")
                else:
                    check(isinstance(v, str), f"{name} not a string: {v!r}")
        check(set(f.attrs) == {row[0] for row in sections["attributes"]},
              f"undocumented attributes: {set(f.attrs) - {r[0] for r in sections['attributes']}}")
        check(f.attrs["schema_version"] == 1, "schema_version")
        check(f.attrs["rank"] == 5 and f.attrs["world_size"] == 8, "rank/world")
        check(f.attrs["node"] == "node2", f"node {f.attrs['node']}")
        check(f.attrs["simulated"] == 1, "a ringside-sim device name marks the trace simulated")

        # Datasets: fields in documented order.
        for ds in ("ops", "pending", "gpu_samples", "events", "comms", "stats"):
            names = list(f[ds].dtype.names)
            documented = [row[0] for row in sections[ds]]
            check(names == documented, f"{ds} fields {names} != doc {documented}")

        ops = f["ops"][:]
        check(len(ops) == 100, f"ops rows {len(ops)}")
        # Values, decoded with the doc's enumeration tables.
        op_names = {int(r[0]): r[1].split()[0] for r in sections["op values"]}
        check(op_names[int(ops["op"][0])] == "all_reduce", "op decodes to all_reduce")
        check(all(ops["seq"] == range(100)), "seq 0..99")
        check(all(ops["bytes"] == ops["count"] * 4), "float32 (dtype 7) bytes = 4 * count")
        check(all(ops["dtype"] == 7), "dtype float32")
        check(all(ops["t_dev_end_ns"] > ops["t_dev_start_ns"]), "device end after start")
        check(all(ops["t_exit_ns"] >= ops["t_enter_ns"]), "exit after enter")
        flag_bits = {int(r[1]): r[2] for r in sections["flags bits"]}
        check("events on the stream" in flag_bits[int(ops["flags"][0])], "flag 8 = device timed")
        status = {int(r[0]): r[1] for r in sections["status values"]}
        last = f["stats"][-1]
        first = int(last["pending_start"]) - 1
        pend = f["pending"][first:first + int(last["pending_ops"])]
        check(len(pend) == 1 and status[int(pend["status"][0])] == "device_pending",
              f"pending snapshot {pend}")
        check(pend["flush_index"][0] == last["flush_index"], "pending is current")
        wall = f.attrs["clock_realtime_ns"] + int(ops["t_enter_ns"][0])
        check(wall >= f.attrs["clock_realtime_ns"], "wall clock formula")
        ev = f["events"][0]
        kinds = {int(r[0]): r[1] for r in sections["kind values"]}
        check(kinds[int(ev["kind"])] == "xid" and ev["value"] == 79, f"event {ev}")
        check(ev["text"] == b"event 4", f"event text {ev['text']!r}")
        s = f["gpu_samples"][0]
        check(s["sm_clock_mhz"] == 1980 and s["temperature_c"] == 63, f"sample {s}")
        c = f["comms"][0]
        check(c["nranks"] == 8 and c["rank"] == 3 and c["parent_id"] == 1000, f"comm {c}")
        st = f["stats"][-1]
        check(st["ops_recorded"] == 101 and st["pending_ops"] == 1, f"stats {st}")

    if failures:
        print("h5py contract FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("h5py contract: trace matches docs/trace-format.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
