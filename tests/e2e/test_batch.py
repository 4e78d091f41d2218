"""End to end: a batch on a schedule whose window opens a few seconds into the test runs only
inside it, and `batch show` says what waits for which window; on a schedule with the requeue
policy, a run still going at the window's end is stopped and queued again for the next window."""
import datetime as dt
import json
import os
import time
import unittest

from cluster import SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")


def iso(s):
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)


class BatchE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", slots=1)
        # 200 steps instead of the demo's 60: with 4-8 loader threads a step takes ~6 ms, and a
        # 60-step run (a third of a second, the first dozen steps served from the prefetch queue)
        # is too short to settle reliably on a loaded 2-core machine; such runs are rightly left
        # out as unsteady, and a decision then has too few pairs.
        with open(DEMO) as f:
            text = f.read().replace("steps:           {type: int, default: 60,",
                                    "steps:           {type: int, default: 200,")
        # The loss guardrail at 3 %, not 1 %: more loader threads reorder batches, which moves the
        # loss by a few tenths of a percent; with runs left out the boundary for the pairs compared
        # cannot always show 1 % non-inferiority within the cap. This test is about windows.
        text = text.replace("role: guardrail, tolerance: 0.01", "role: guardrail, tolerance: 0.03")
        assert "default: 200" in text and "tolerance: 0.03" in text
        cls.c.cli("workload", "apply", "-f", cls.c.write("demo.yaml", text))
        cls.c.cli("baseline", "create", "--repeats", "3", "--wait")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_batch_runs_only_inside_its_window(self):
        c = self.c
        now = dt.datetime.now(dt.timezone.utc)
        start = (now + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
        if (start - now).total_seconds() < 8:  # leave time to look before it opens
            start += dt.timedelta(minutes=1)
        end = start + dt.timedelta(minutes=10)
        window = f"daily {start:%H:%M}-{end:%H:%M}"
        p = c.cli("schedule", "create", "soon", "--window", window, "--tz", "UTC")
        self.assertIn("next window", p.stdout)
        bad = c.cli("schedule", "create", "x", "--window", "Mon-Fry 01:00-02:00", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('"Mon-Fry" is not a day range', bad.stderr)
        self.assertEqual(len(c.items("schedule", "list")), 1)

        # num_workers=2 on a 2-core machine settles mid-run into alternating fast/slow steps, which
        # the per-run analysis rightly calls unsteady; 4 and 8 are steady. A cap of 10 pairs leaves
        # room for runs the analysis leaves out (the boundary is the one for the pairs compared).
        b = json.loads(c.cli("batch", "create", "--vary", "num_workers=4,8", "--schedule", "soon",
                             "--repeats", "10", "-o", "json").stdout)
        self.assertEqual(len(b["experiments"]), 2)
        self.assertIn("run only inside schedule soon", b["waiting"])
        self.assertIn("next window", b["waiting"])
        time.sleep(2)
        queued = [r for r in c.items("run", "list", "--limit", "0") if r["experiment_id"]]
        self.assertTrue(queued)
        self.assertTrue(all(r["state"] == "queued" for r in queued), queued)
        self.assertIn("waiting for schedule soon", queued[0]["wait_reason"])

        c.wait_for(lambda: c.json("batch", "show", str(b["id"]))["state"] == "done",
                   timeout=300, what="the batch to finish inside its window")
        runs = [r for r in c.items("run", "list", "--limit", "0") if r["experiment_id"]]
        first = min(iso(r["started_at"]) for r in runs)
        self.assertGreaterEqual(first, start, "a run started before the window opened")
        shown = c.json("batch", "show", str(b["id"]))
        # Each member is decided by the batch's correction. (On 2 cores, 8 loader threads often
        # make runs that never settle or slow down; such a member is rightly not called improved,
        # so the decision itself is not what this test checks.)
        for e in shown["experiments"]:
            self.assertEqual(e["state"], "decided", e)
            self.assertEqual(e["decision"], e["adjusted_decision"], e)
            if e["decision"] == "improved":
                self.assertLess(e["adjusted_p"], 0.05)
        self.assertIn("Holm", c.cli("batch", "show", str(b["id"])).stdout)


    def test_idle_probe_keeps_runs_off_a_busy_node(self):
        c = self.c
        free = os.path.join(c.dir, "node-free")
        c.start_agent("prod-node", labels=("pool=prod",), slots=1,
                      extra=("--idle-probe", f"test -f {free}"))
        with open(DEMO) as f:
            text = f.read().replace("name: demo", "name: demo-prod").replace(
                "selector: {pool: cpu}", "selector: {pool: prod}")
        c.cli("workload", "apply", "-f", c.write("prod.yaml", text))
        bid = c.cli("baseline", "create", "--workload", "demo-prod", "--repeats", "1").stdout.strip()
        time.sleep(2)
        runs = c.items("run", "list", "--baseline", bid)
        self.assertEqual(runs[0]["state"], "queued")
        self.assertIn("idle probe fails", runs[0]["wait_reason"])
        agent = [a for a in c.items("agent", "list") if a["name"] == "prod-node"][0]
        self.assertTrue(agent["busy"])
        open(free, "w").close()  # production work is gone
        c.wait_for(lambda: c.json("baseline", "show", bid)["state"] != "running", timeout=60,
                   what="the run to start once the node is free")
        # It ran (whether one 60-step run on a loaded machine settled is another question).
        self.assertEqual(c.items("run", "list", "--baseline", bid)[0]["state"], "succeeded")

    def test_window_end_stops_and_requeues_a_run_that_overruns(self):
        c = self.c
        # Windows: the first 25 s of every minute. The variant trains 40x longer than the
        # baseline's runs it was expected from (~100 s), so it is still running when its window
        # closes.
        c.cli("schedule", "create", "minutely", "--cron", "* * * * *", "--duration", "25s",
              "--on-window-end", "requeue")
        self.assertIn("requeue", c.cli("schedule", "list").stdout)
        bad = c.cli("schedule", "create", "y", "--cron", "* * * * *", "--duration", "25s",
                    "--on-window-end", "kill", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('--on-window-end: "kill" is not a policy; allowed: finish', bad.stderr)
        self.assertNotIn("y", [s["name"] for s in c.items("schedule", "list")])
        b = json.loads(c.cli("batch", "create", "--workload", "demo", "--vary", "steps=8000",
                             "--schedule", "minutely",
                             "-o", "json").stdout)
        exp = b["experiments"][0]["id"]

        def variant_runs():
            return [r for r in c.items("run", "list", "--limit", "0") if r["experiment_id"] == exp and
                    r["arm"] == "variant"]

        c.wait_for(lambda: any(r["attempt"] >= 2 for r in variant_runs()), timeout=150,
                   what="a variant run stopped at the window's end and requeued")
        r = [r for r in variant_runs() if r["attempt"] >= 2][0]
        self.assertIn("end of its window", r["reason"])
        if r["state"] == "queued":
            self.assertIn("waiting for schedule minutely", r["wait_reason"])
        self.assertTrue(all(x["state"] not in ("failed", "lost") for x in variant_runs()))
        c.cli("batch", "cancel", str(b["id"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
