"""End to end, isolated slots with the real binaries: each slot of an agent owns its GPUs (the job
sees its own CUDA_VISIBLE_DEVICES and TUNECTL_SLOT), and on a 2-slot agent whose slots are not
isolated an experiment's control and variant never run at the same time (database timestamps)."""
import datetime
import json
import unittest

from cluster import Cluster

# A short job that prints what it was given and a steady metric.
WORKLOAD = """name: slots
command: [sh, -c, 'echo "slot=$TUNECTL_SLOT gpus=$CUDA_VISIBLE_DEVICES"; i=1; while [ $i -le 30 ];
  do echo "sps: {level}"; i=$((i+1)); sleep 0.05; done']
params:
  level: {type: int, default: 100, min: 1}
metrics:
  sps: {pattern: 'sps: ([0-9.]+)', better: higher, role: primary}
run: {repeats: 4, warmup_steps: 0, selector: {pool: cpu}}
"""


def iso(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


class SlotsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", slots=2, extra=("--gpus", "0,1"))
        cls.c.cli("workload", "apply", "-f", cls.c.write("slots.yaml", WORKLOAD))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_slots_own_their_gpus_and_an_experiment_never_overlaps(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "slots", "--wait",
                             "-o", "json").stdout)
        runs = c.items("run", "list", "--baseline", str(b["id"]))
        self.assertEqual(len(runs), 4)
        placements = {r["placement"] for r in runs}
        self.assertTrue(placements <= {"slot 0, GPUs 0", "slot 1, GPUs 1"}, placements)
        self.assertEqual(len(placements), 2, placements)  # 4 runs over 2 slots: both were used
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            self.assertEqual(r["slot"], int(r["placement"][5]))
        agent = [a for a in c.items("agent", "list") if a["name"] == "node-1"][0]
        self.assertFalse(agent["isolated_slots"])

        e = json.loads(c.cli("experiment", "run", "--workload", "slots", "--vary", "level=120",
                             "--repeats", "4", "--wait", "-o", "json").stdout)
        runs = [r for r in c.items("run", "list", "--limit", "0")
                if r["experiment_id"] == e["id"]]
        self.assertGreaterEqual(len(runs), 2)
        spans = [(iso(r["started_at"]), iso(r["finished_at"]), r["arm"]) for r in runs]
        for i, (s1, f1, a1) in enumerate(spans):
            for s2, f2, a2 in spans[i + 1:]:
                self.assertFalse(s1 < f2 and s2 < f1, f"runs overlapped: {spans}")
        shown = c.json("experiment", "show", str(e["id"]))
        self.assertIn("never ran at the same time", shown["placement"])


if __name__ == "__main__":
    unittest.main()
