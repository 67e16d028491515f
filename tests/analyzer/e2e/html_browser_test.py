#!/usr/bin/env python3
"""The HTML report in a real browser (headless Chromium).

html_browser_test.py --bin-dir B --sim-lib-dir L --work-dir W --cluster FILE [--chromium PATH]

Runs the demo's job (train_example on 8 sim ranks over 2 nodes, node2's GPU 1
made 1.5x slower) under the probe, writes the HTML report with `ringside analyze
--html` and again with `ringside report --from report.json --html` (they must be
identical), loads it in headless Chromium and checks that the script ran without
errors and drew the culprit's GPU cell, its timeline and the link matrix; saves a
screenshot under W.  Draws a hang's page (synth traces) and checks its hang point
and who waits for whom, and a report without `views` (an older ringside's).  Then
renders the first report with hostile job, node and communicator names and checks
that none of them became markup.  Exit 77 (skipped) only when Chromium is not
installed.
"""
import argparse, json, os, re, shutil, subprocess, sys

SKIP = 77
HOSTILE = "</script><script>document.body.setAttribute('data-pwned','1')</script>" \
          "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\"> ' & \u2028 ✓ 名"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, timeout, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def chromium_load(chromium, work, page, name, extra):
    """Loads `page`; returns (dom, browser log).  A private profile per load."""
    profile = os.path.join(work, "profile-" + name)
    shutil.rmtree(profile, ignore_errors=True)
    cmd = [chromium, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
           # Virtual time: the page is given 20 s of its own clock however loaded the host.
           "--virtual-time-budget=20000", "--window-size=1280,3000"] + extra
    if os.geteuid() == 0:
        cmd.append("--no-sandbox")
    r = run(cmd + ["file://" + os.path.abspath(page)], timeout=240)
    if r.returncode != 0:
        fail("chromium exited %d: %s" % (r.returncode, r.stderr[-3000:]))
    return r.stdout, r.stderr


def console_errors(log):
    """Console messages and uncaught exceptions the browser logged.  Chromium logs
    every console message at one level (INFO:CONSOLE), whatever its kind; the page
    never writes to the console, so any message is an error."""
    return [line for line in log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def check_console_is_seen(chromium, work):
    """A page with a console error and an exception: both must show in the log, or
    the checks below could not fail."""
    page = os.path.join(work, "console-check.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><script>console.error("ringside-console-check")</script>'
                '<script>ringsideUndefinedFunction()</script></body></html>')
    _, log = chromium_load(chromium, work, page, "console-check", ["--dump-dom"])
    seen = console_errors(log)
    if not any("ringside-console-check" in l for l in seen) or not any("ringsideUndefinedFunction" in l for l in seen):
        fail("the browser's log shows no console messages; cannot check the page:\n" + log[-3000:])


def attr_of(dom, elem_id, attr):
    m = re.search(r'<[^>]*\bid="%s"[^>]*>' % re.escape(elem_id), dom)
    if not m:
        return None
    a = re.search(r'\b%s="([^"]*)"' % re.escape(attr), m.group(0))
    return a.group(1) if a else ""


def main():
    p = argparse.ArgumentParser()
    for a in ("--bin-dir", "--sim-lib-dir", "--work-dir", "--cluster"):
        p.add_argument(a, required=True)
    p.add_argument("--chromium", default="")
    o = p.parse_args()
    chromium = o.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not os.access(chromium, os.X_OK):
        print("SKIP: chromium is not installed (scripts/lib.sh install_packages installs Debian's chromium)")
        sys.exit(SKIP)

    shutil.rmtree(o.work_dir, ignore_errors=True)
    os.makedirs(o.work_dir)
    # The demo's cluster with the slow GPU made slower (1.5x): the culprit must be
    # found however loaded the machine running the test is.
    cluster = json.load(open(o.cluster))
    cluster["faults"]["slow_gpu"]["factor"] = 1.5
    o.cluster = os.path.join(o.work_dir, "cluster.json")
    json.dump(cluster, open(o.cluster, "w"))
    traces = os.path.join(o.work_dir, "traces")
    ringside = os.path.join(o.bin_dir, "ringside")
    env = dict(os.environ, LD_LIBRARY_PATH=o.sim_lib_dir)
    job = run([os.path.join(o.bin_dir, "simrun"), "-n", "8", "--nodes", "2", "--cluster", o.cluster,
               "--timeout", "300", "--", ringside, "run", "-o", traces, "--",
               os.path.join(o.bin_dir, "train_example"), "--steps", "40"], timeout=600, env=env)
    if job.returncode != 0:
        fail("the job failed (%d): %s" % (job.returncode, job.stderr[-3000:]))

    report_json = os.path.join(o.work_dir, "report.json")
    page = os.path.join(o.work_dir, "report.html")
    again = os.path.join(o.work_dir, "report-from-json.html")
    ana = run([ringside, "analyze", traces, "-q", "--no-progress", "--json", report_json, "--html", page],
              timeout=600)
    if ana.returncode != 1:
        fail("analyze exited %d (1 expected: the injected straggler): %s" % (ana.returncode, ana.stderr))
    report = json.load(open(report_json))
    first = report["findings"][0]
    if first["kind"] != "straggler" or first["ranks"] != [5]:
        fail("first finding %s %s, expected the straggler rank 5" % (first["kind"], first["ranks"]))
    rep = run([ringside, "report", "--from", report_json, "--html", again], timeout=120)
    if rep.returncode != 1:
        fail("report --from exited %d: %s" % (rep.returncode, rep.stderr))
    if open(page, "rb").read() != open(again, "rb").read():
        fail("the page drawn from report.json differs from analyze's")
    print("HTML report: %s (%d bytes)" % (page, os.path.getsize(page)))

    check_console_is_seen(chromium, o.work_dir)
    dom, log = chromium_load(chromium, o.work_dir, page, "report", ["--dump-dom"])
    open(os.path.join(o.work_dir, "report.dom.html"), "w").write(dom)
    errors = console_errors(log)
    if errors:
        fail("console errors:\n" + "\n".join(errors))
    if attr_of(dom, "report-data", "type") is None or '<body' not in dom:
        fail("no page in the dumped DOM:\n" + dom[:2000] + "\n" + log[-2000:])
    body = re.search(r"<body[^>]*>", dom).group(0)
    if 'data-error=' in body:
        fail("the page's script failed: " + body)
    if 'data-rendered="1"' not in body:
        fail("the page's script did not finish: " + body)
    # The culprit's cell stands out.
    if attr_of(dom, "gpu-r5", "data-culprit") != "1":
        fail("rank 5's GPU cell is not marked as the culprit")
    if len(re.findall(r'class="gpu[ "]', dom)) != 8:
        fail("the GPU grid does not hold 8 cells")
    # The timeline of its finding, with its late arrivals.
    ops = attr_of(dom, "timeline-0", "data-ops")
    if not ops or int(ops) < 1:
        fail("no timeline drawn")
    if not re.search(r'class="tl-bar tl-late"[^>]*data-rank="5"', dom):
        fail("the timeline shows no late arrival of rank 5")
    # The link matrix: node x node, with observed bandwidths, and rank x rank.
    if attr_of(dom, "node-link-matrix", "data-n") != "2":
        fail("no 2 x 2 node link matrix")
    if len(re.findall(r'class="lm-cell"[^>]*data-gbps=', dom)) < 2:
        fail("the link matrix shows no observed bandwidth")
    if attr_of(dom, "rank-link-matrix", "data-n") != "8":
        fail("no 8 x 8 rank link matrix")
    for view in ("cdf-lateness", "cdf-busbw"):
        if not attr_of(dom, view, "data-series") or attr_of(dom, view, "data-series") == "0":
            fail("the %s chart has no series" % view)
    if attr_of(dom, "spark-r5", "class") is None:
        fail("no GPU counter sparklines for rank 5")

    shot = os.path.join(o.work_dir, "report.png")
    _, log = chromium_load(chromium, o.work_dir, page, "shot", ["--screenshot=" + shot])
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        fail("no screenshot written: " + log[-2000:])
    print("screenshot: %s (%d bytes)" % (shot, os.path.getsize(shot)))

    # A hang (synth: rank 2 never enters world op 57): the hang point, the rank that
    # never arrived and who waits for it.
    hang_traces = os.path.join(o.work_dir, "hang-traces")
    hang_page = os.path.join(o.work_dir, "hang.html")
    r = run([ringside, "synth", "-o", hang_traces, "-n", "8", "-N", "2", "--steps", "40",
             "--fault", "stop:rank=2,op=57"], timeout=300)
    if r.returncode != 0:
        fail("synth failed: " + r.stderr)
    r = run([ringside, "analyze", hang_traces, "-q", "--no-progress", "--html", hang_page], timeout=300)
    if r.returncode != 1:
        fail("analyze of the hang exited %d: %s" % (r.returncode, r.stderr))
    dom, log = chromium_load(chromium, o.work_dir, hang_page, "hang", ["--dump-dom"])
    if console_errors(log) or 'data-rendered="1"' not in re.search(r"<body[^>]*>", dom).group(0):
        fail("the hang's page did not render cleanly:\n" + "\n".join(console_errors(log)))
    if attr_of(dom, "hang-point-0", "stroke") is None:
        fail("the hang's timeline has no hang point")
    if not re.search(r'class="tl-missing"[^>]*>never arrived<', dom):
        fail("the hang's timeline does not show the rank that never arrived")
    if not re.search(r'class="tl-wait"[^>]*>7 ranks wait for rank 2<', dom):
        fail("the hang's timeline does not say who waits for whom")

    # A report written before `views` existed: the findings are drawn, nothing fails.
    old = json.load(open(report_json))
    del old["views"]
    old_json = os.path.join(o.work_dir, "no-views.json")
    json.dump(old, open(old_json, "w"))
    old_page = os.path.join(o.work_dir, "no-views.html")
    r = run([ringside, "report", "--from", old_json, "--html", old_page], timeout=120)
    if r.returncode != 1:
        fail("report --from (no views) exited %d: %s" % (r.returncode, r.stderr))
    dom, log = chromium_load(chromium, o.work_dir, old_page, "no-views", ["--dump-dom"])
    if console_errors(log) or 'data-rendered="1"' not in re.search(r"<body[^>]*>", dom).group(0):
        fail("a report without views did not render cleanly:\n" + "\n".join(console_errors(log)))
    if attr_of(dom, "finding-0", "class") is None or "has no views" not in dom:
        fail("a report without views does not show its findings and say what is missing")

    # Hostile names: job id, node names and communicator labels from a trace are text.
    text = open(report_json).read()
    text = text.replace('"node2"', json.dumps("node2" + HOSTILE)).replace('"world"', json.dumps("world" + HOSTILE))
    hostile = json.loads(text)
    hostile["job"] = HOSTILE
    hostile_json = os.path.join(o.work_dir, "hostile.json")
    json.dump(hostile, open(hostile_json, "w"))
    hostile_page = os.path.join(o.work_dir, "hostile.html")
    rep = run([ringside, "report", "--from", hostile_json, "--html", hostile_page], timeout=120)
    if rep.returncode != 1:
        fail("report --from (hostile names) exited %d: %s" % (rep.returncode, rep.stderr))
    dom, log = chromium_load(chromium, o.work_dir, hostile_page, "hostile", ["--dump-dom"])
    body = re.search(r"<body[^>]*>", dom).group(0)
    if "data-pwned" in body:
        fail("a hostile name ran as script: " + body)
    if 'data-rendered="1"' not in body or "data-error=" in body:
        fail("the page with hostile names did not render: " + body)
    if len(re.findall(r"<script\b", dom)) != 2 or "<img" in dom:
        fail("a hostile name became markup")
    if "&lt;/script&gt;&lt;script&gt;document.body" not in dom or "✓ 名" not in dom:
        fail("the hostile names are not shown as text")
    if console_errors(log):
        fail("console errors with hostile names:\n" + "\n".join(console_errors(log)))
    print("PASS: culprit cell, timelines (straggler, hang), link matrix, charts drawn; hostile names stay text")


if __name__ == "__main__":
    main()
