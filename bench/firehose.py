#!/usr/bin/env python3
"""Does the agent slow down a job that logs faster than the server stores? (issue 11)

A job prints N metric lines at a target rate (default 1,000,000 at 100,000 lines/s) and records
its own wall time. It runs standalone (stdout drained by `cat > /dev/null`) and as a tunectl run
on a real server and agent (tests/e2e/cluster.py), alternating, --reps times; the table gives
the job's wall time both ways and their ratio (1.00 = the agent costs the job nothing), and
checks that every printed line was stored exactly once. Exit 1 when a check fails.

Usage: bench/firehose.py [--lines N] [--rate R] [--reps 3] [--bin build-release]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/e2e"))

JOB = r'''
import os, sys, time
n, rate = int(sys.argv[1]), float(sys.argv[2])
t0 = time.monotonic()
w = sys.stdout.write
for i in range(n):
    w(f"step {i + 1} samples/s: {1000 + i % 7}.0\n")
    if i % 1000 == 999:
        sys.stdout.flush()
        ahead = (i + 1) / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
sys.stdout.flush()
with open(os.environ["FIREHOSE_OUT"], "a") as f:
    f.write(f"{time.monotonic() - t0}\n")
'''

SPEC = """
name: firehose
command: ["python3", "{job}", "{{lines}}", "{{rate}}"]
params:
  lines: {{type: int, default: {lines}, min: 1}}
  rate: {{type: float, default: {rate}, min: 1}}
metrics:
  samples_per_s: {{pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary}}
env: {{FIREHOSE_OUT: "{out}"}}
run: {{repeats: 1, warmup_steps: 0, timeout: 10m, selector: {{pool: cpu}}}}
"""


def last_time(path):
    with open(path) as f:
        return float(f.read().split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rate", type=float, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(HERE, "../build-release"))
    a = ap.parse_args()
    os.environ["TUNECTL_BIN_DIR"] = os.path.abspath(a.bin)
    from cluster import Cluster  # reads TUNECTL_BIN_DIR at import

    c = Cluster()
    failed = []
    try:
        job = c.write("job.py", JOB)
        out = os.path.join(c.dir, "times")
        c.cli("workload", "apply", "-f",
              c.write("firehose.yaml", SPEC.format(job=job, lines=a.lines, rate=a.rate, out=out)))
        c.start_agent("node-1", slots=1)
        alone, agent = [], []
        for rep in range(a.reps):
            def standalone():
                sink = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
                subprocess.run(["python3", job, str(a.lines), str(a.rate)], stdout=sink.stdin,
                               env=dict(os.environ, FIREHOSE_OUT=out), check=True)
                sink.stdin.close()
                sink.wait()
                alone.append(last_time(out))

            def as_run():
                bid = int(c.cli("baseline", "create", "--workload", "firehose").stdout)
                c.wait_for(lambda: c.items("run", "list", "--baseline", str(bid))[0]["state"]
                           in ("succeeded", "failed", "lost", "cancelled"), timeout=900,
                           what="the firehose run to end")
                agent.append(last_time(out))
                run = c.items("run", "list", "--baseline", str(bid))[0]
                if run["state"] != "succeeded":
                    failed.append(f"rep {rep + 1}: run {run['id']} {run['state']}: {run['reason']}")
                if run["samples"] != a.lines:
                    failed.append(f"rep {rep + 1}: run {run['id']} stored {run['samples']} "
                                  f"samples of {a.lines} printed")

            for f in ((standalone, as_run) if rep % 2 == 0 else (as_run, standalone)):
                f()
            print(f"rep {rep + 1}: job alone {alone[-1]:.2f} s, as a tunectl run "
                  f"{agent[-1]:.2f} s", flush=True)
        ideal = a.lines / a.rate
        print(f"\n| lines | target rate | ideal | job alone (median) | job as a run (median) "
              f"| as a run / alone |\n|---|---|---|---|---|---|")
        ma, mr = statistics.median(alone), statistics.median(agent)
        print(f"| {a.lines:,} | {a.rate:,.0f}/s | {ideal:.1f} s | {ma:.2f} s "
              f"({min(alone):.2f}–{max(alone):.2f}) | {mr:.2f} s ({min(agent):.2f}–"
              f"{max(agent):.2f}) | {mr / ma:.2f} |")
        print("\nChecks:")
        print(f"- {'ok' if not failed else 'FAIL'}: every run succeeded with every printed line "
              f"stored once ({a.reps} runs × {a.lines:,} lines)")
        for f in failed:
            print(f"  - {f}")
    finally:
        c.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
