"""End to end: the current config's job gets slower part-way through its series with no config
change (the demo reads a slowdown factor from a file, as a degraded node would): `regress show`
raises one regression alert naming the first slow run; the stable series raises none."""
import json
import os
import unittest

from cluster import SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")


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
        c.cli("baseline", "create", "--repeats", "10", "--wait")
        stable = c.json("regress", "show", "demo")
        self.assertGreaterEqual(len(stable["series"]), 5)
        self.assertEqual(stable["change_points"], [])
        self.assertEqual(stable["alerts"], [])

        with open(self.slow, "w") as f:
            f.write("1.3\n")  # every step 30 % slower from now on
        b2 = json.loads(c.cli("baseline", "create", "--repeats", "10", "--wait", "-o", "json").stdout)
        slow_ids = {r["id"] for r in c.json("run", "list", "--baseline", str(b2["id"]))}
        r = c.json("regress", "show", "demo")
        # the series holds the comparable runs (a run marked unusable is left out, with its reason)
        self.assertGreaterEqual(len(r["series"]), 10)
        self.assertGreaterEqual(sum(p["run_id"] in slow_ids for p in r["series"]), 5)
        first_slow = min(p["run_id"] for p in r["series"] if p["run_id"] in slow_ids)
        self.assertEqual(len(r["change_points"]), 1, r["change_points"])
        cp = r["change_points"][0]
        self.assertTrue(cp["regression"])
        self.assertEqual(cp["first_run_id"], first_slow)
        self.assertLess(cp["after"], cp["before"] * 0.85)
        self.assertEqual(len([a for a in r["alerts"] if a.startswith("regression:")]), 1)
        self.assertIn(f"starting with run {first_slow}", r["alerts"][0])
        self.assertIn("REGRESSION", c.cli("regress", "show", "demo").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
