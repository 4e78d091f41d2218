"""End to end: the current config's job gets slower part-way through its series with no config
change (the demo reads a slowdown factor from a file, as a degraded node would): `regress show`
raises one regression alert naming the first slow run, records it once in the tuning log and
exposes it on /metrics; the stable series raises none. A stability run that slows down within
itself is a regression; one whose job stops before its duration ended early and is none; a
periodic check queues its runs in an open window of its schedule."""
import datetime as dt
import json
import os
import time
import unittest

from cluster import SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")

# A job that stops by itself after 40 steps (~2 s) whatever the stability run's duration: it does
# not read TUNECTL_DURATION_S.
SHORT_JOB = """
import time
for step in range(1, 41):
    print(f"step {step} samples/s: {1000 + step % 3}", flush=True)
    time.sleep(0.05)
"""
SHORT = """
name: short
command: ["python3", "{job}"]
metrics:
  samples_per_s: {{pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary}}
run: {{repeats: 1, warmup_steps: 0}}
"""


class RegressE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.slow = os.path.join(cls.c.dir, "slowdown")
        os.environ["DEMO_SLOWDOWN_FILE"] = cls.slow  # inherited by the agent and its jobs
        try:
            cls.c.start_agent("node-1", slots=1)
        finally:
            del os.environ["DEMO_SLOWDOWN_FILE"]
        cls.c.cli("workload", "apply", "-f", DEMO)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_slowdown_raises_one_alert_at_the_first_slow_run(self):
        c = self.c
        c.cli("baseline", "create", "--workload", "demo", "--repeats", "10", "--wait")
        stable = c.json("regress", "show", "demo")
        self.assertGreaterEqual(len(stable["series"]), 5)
        self.assertEqual(stable["change_points"], [])
        self.assertEqual(stable["alerts"], [])

        with open(self.slow, "w") as f:
            f.write("1.3\n")  # every step 30 % slower from now on
        b2 = json.loads(c.cli("baseline", "create", "--workload", "demo", "--repeats", "14", "--wait", "-o", "json").stdout)
        slow_ids = {r["id"] for r in c.items("run", "list", "--baseline", str(b2["id"]))}
        r = c.json("regress", "show", "demo")
        # the series holds the comparable runs (a run marked unusable is left out, with its reason)
        self.assertGreaterEqual(len(r["series"]), 10)
        self.assertGreaterEqual(sum(p["run_id"] in slow_ids for p in r["series"]), 6)
        first_slow = min(p["run_id"] for p in r["series"] if p["run_id"] in slow_ids)
        # one regression (a later partial recovery on a busy machine may show as an improvement)
        worse = [cp for cp in r["change_points"] if cp["regression"]]
        self.assertEqual(len(worse), 1, r["change_points"])
        cp = worse[0]
        self.assertEqual(cp["first_run_id"], first_slow,
                         [(p["run_id"], round(p["value"], 1)) for p in r["series"]])
        self.assertLess(cp["after"], cp["before"] * 0.85)
        self.assertEqual(len([a for a in r["alerts"] if a.startswith("regression:")]), 1)
        self.assertIn(f"starting with run {first_slow}", r["alerts"][0])
        self.assertIn("REGRESSION", c.cli("regress", "show", "demo").stdout)

        # Confirmed once (not once per run that followed): a regression in the tuning log, and an
        # alert on /metrics.
        rec = [g for g in r["regressions"] if g["type"] == "change_point"]
        self.assertEqual(len(rec), 1, r["regressions"])
        self.assertEqual(rec[0]["first_bad_run"], first_slow)
        log = [e for e in c.items("log", "--limit", "0") if e["kind"] == "regression"]
        self.assertEqual(len(log), 1, log)
        self.assertEqual(log[0]["first_bad_run"], first_slow)
        self.assertEqual(log[0]["decision"], "regressed")
        self.assertIn("regressed", c.cli("log").stdout)
        metrics = c.metrics_with('tunectl_regression_alerts{kind="change_point",'
                                 'metric="samples_per_s",workload="demo"} 1\n')
        self.assertIn("tunectl_scheduler_leader 1\n", metrics)
        self.assertEqual(c.http_get("/healthz"), (200, "ok\n"))
        self.assertEqual(c.http_get("/nope")[0], 404)

    def test_stability_run_that_slows_down_is_a_regression(self):
        c = self.c
        with open(self.slow, "w") as f:
            f.write("1.0\n")
        bad = c.cli("regress", "run", "demo", "--duration", "2", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--duration", bad.stderr)
        s = c.json("regress", "run", "demo", "--duration", "24s")
        self.assertEqual(s["verdict"], "pending")
        run = s["run_id"]
        c.wait_for(lambda: c.json("run", "show", str(run))["state"] == "running", timeout=60,
                   what="the stability run to start")
        time.sleep(10)
        with open(self.slow, "w") as f:
            f.write("1.6\n")  # the node degrades part-way through the long run
        c.wait_for(lambda: any(x["run_id"] == run and x["verdict"] != "pending"
                               for x in c.json("regress", "show", "demo")["stability_runs"]),
                   timeout=120, what="the stability run's verdict")
        with open(self.slow, "w") as f:
            f.write("1.0\n")
        r = c.json("regress", "show", "demo")
        st = [x for x in r["stability_runs"] if x["run_id"] == run][0]
        self.assertEqual(st["state"], "succeeded")  # stopped at its duration, as asked
        self.assertEqual(st["verdict"], "regression", st)
        # a slowdown, or — when the slow part is most of the run — no steady state: both alert
        self.assertRegex(st["message"], "degraded part-way|never reached a steady state")
        self.assertNotIn(run, [p["run_id"] for p in r["series"]])
        log = [e for e in c.items("log", "--limit", "0") if e.get("detector") == "stability"]
        self.assertEqual([e["first_bad_run"] for e in log], [run])
        c.metrics_with('tunectl_regression_alerts{kind="stability",metric="samples_per_s",'
                       'workload="demo"} 1\n')
        # The node is fixed: resolving the regression stops its alert and is logged.
        rid = [g["id"] for g in r["regressions"] if g["type"] == "stability"][0]
        p = c.cli("regress", "resolve", str(rid), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--reason", p.stderr)  # what fixed it is required
        out = c.cli("regress", "resolve", str(rid), "--reason", "slowdown file reset").stdout
        self.assertIn("resolved: slowdown file reset", out)
        c.metrics_with('tunectl_regression_alerts{kind="stability",metric="samples_per_s",'
                       'workload="demo"} 0\n')
        self.assertEqual([e["reason"] for e in c.items("log", "--limit", "0") if e["kind"] == "resolved"],
                         ["slowdown file reset"])

    def test_a_job_that_stops_before_its_duration_ended_early_and_is_no_regression(self):
        c = self.c
        job = c.write("short.py", SHORT_JOB)
        c.cli("workload", "apply", "-f", c.write("short.yaml", SHORT.format(job=job)))
        p = c.cli("regress", "run", "short", "--duration", "60s", "--wait", check=False)
        # No evidence either way: a CI gate fails, and says why and how to fix the job.
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("ended early", p.stderr)
        self.assertIn("TUNECTL_DURATION_S", p.stderr)
        r = c.json("regress", "show", "short")
        st = r["stability_runs"][0]
        self.assertEqual(st["state"], "succeeded", st)
        self.assertEqual(st["verdict"], "ended early", st)
        self.assertEqual([g for g in r["regressions"] if g["type"] == "stability"], [])
        self.assertFalse([e for e in c.items("log", "--limit", "0")
                          if e["kind"] == "regression" and e["workload"] == "short"])
        _, body = c.http_get("/metrics")
        self.assertNotIn('workload="short"} 1', body)

    def test_watch_queues_checks_in_an_open_window(self):
        c = self.c
        now = dt.datetime.now(dt.timezone.utc)
        start, end = now - dt.timedelta(minutes=1), now + dt.timedelta(minutes=20)
        c.cli("schedule", "create", "now", "--window", f"daily {start:%H:%M}-{end:%H:%M}",
              "--on-window-end", "requeue")
        bad = c.cli("regress", "schedule", "demo", "--schedule", "nope", check=False)
        self.assertEqual(bad.returncode, 3)
        self.assertIn("schedules: now", bad.stderr)
        before = len(c.items("run", "list", "--limit", "0"))
        w = c.json("regress", "schedule", "demo", "--schedule", "now", "--repeats", "2")
        self.assertEqual(w["state"], "active")
        self.assertIn("window open until", w["status"])
        c.wait_for(lambda: c.json("regress", "show", "demo")["watch"]["checks"] == 1, timeout=30,
                   what="the first periodic check")
        c.wait_for(lambda: (lambda runs: len(runs) == before + 2 and all(
            x["state"] in ("succeeded", "failed") for x in runs))(c.items("run", "list", "--limit", "0")),
            timeout=120, what="the check's two runs")
        time.sleep(2)
        self.assertEqual(c.json("regress", "show", "demo")["watch"]["checks"], 1)  # one per window
        self.assertIn("stopped", c.cli("regress", "stop", "demo").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
