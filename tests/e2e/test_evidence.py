"""End to end, verdicts a referee would sign (issue 10), with the real binaries and a small job
whose behaviour a parameter sets: a variant that dies of CUDA OOM stops after its second failure
as regressed without running the rest; a variant whose runs are too short to settle ends with the
advice (text and -o json); a metric printed more coarsely than its minimum effect is not called;
a baseline with a metric that no run logged fails with exit 1, naming it."""
import json
import unittest

from cluster import Cluster

JOB = r'''
import argparse, random, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="ok")
ap.add_argument("--warm", type=int, default=3)
ap.add_argument("--steps", type=int, default=80)
ap.add_argument("--fast", default="no")
a = ap.parse_args()
rng = random.Random()
level = 1000.0 * (1 + rng.gauss(0, 0.004))          # run-to-run noise
for step in range(1, a.steps + 1):
    if a.mode == "oom" and step == 5:
        print("Traceback (most recent call last):", file=sys.stderr)
        print('  File "train.py", line 42, in <module>', file=sys.stderr)
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
              "79.15 GiB total capacity; 77.90 GiB already allocated)", file=sys.stderr)
        sys.exit(1)
    ramp = 0.3 + 0.7 * step / a.warm if step <= a.warm else 1.0
    sps = level * ramp * (1 + rng.gauss(0, 0.01))
    lat = (0.01 if a.fast == "yes" else 0.02) + (0.01 if rng.random() < 0.2 else 0.0)
    print(f"step {step} samples/s: {sps:.1f} latency_ms: {lat:.2f}", flush=True)
    time.sleep(0.003)
'''

SPEC = """
name: {name}
command: ["python3", "{job}", "--mode", "{{mode}}", "--warm", "{{warm}}", "--steps", "{{steps}}",
          "--fast", "{{fast}}"]
params:
  mode:  {{type: enum, values: [ok, oom], default: ok}}
  warm:  {{type: int, default: 3, min: 1}}
  steps: {{type: int, default: 80, min: 1}}
  fast:  {{type: enum, values: ["no", "yes"], default: "no"}}
metrics:
{metrics}
run: {{repeats: 6, warmup_steps: 0, selector: {{pool: cpu}}}}
"""
SPS = "  samples_per_s: {pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}"
LAT = "  latency_ms: {pattern: 'latency_ms: ([0-9.]+)', unit: ms, better: lower, role: primary, min_effect: 0.05}"
LOSS = "  loss: {json: loss, better: lower, role: guardrail}"


class EvidenceE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", slots=1)
        job = cls.c.write("job.py", JOB)
        for name, metrics in (("ev", SPS), ("coarse", LAT), ("noloss", SPS + "\n" + LOSS)):
            cls.c.cli("workload", "apply", "-f", cls.c.write(
                f"{name}.yaml", SPEC.format(name=name, job=job, metrics=metrics)))
        b = json.loads(cls.c.cli("baseline", "create", "--workload", "ev", "--repeats", "3",
                                 "--wait", "-o", "json").stdout)
        assert b["state"] == "completed", b

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def experiment(self, *args):
        p = self.c.cli("experiment", "run", *args, "--wait", "-o", "json", check=False)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return json.loads(p.stdout)

    def test_an_oom_variant_stops_after_its_second_failure_as_regressed(self):
        e = self.experiment("--workload", "ev", "--vary", "mode=oom")
        self.assertEqual(e["decision"], "regressed", e)
        self.assertEqual(e["stopped"], "failed: OOM", e)
        self.assertTrue(any("failed: OOM in 2 variant runs" in r for r in e["reasons"]), e)
        runs = [r for r in self.c.items("run", "list", "--limit", "0") if r.get("experiment_id") == e["id"]]
        variant = [r for r in runs if r["arm"] == "variant"]
        # Exactly two variant runs ran (and failed); the rest of the queued pairs never started.
        self.assertEqual(sum(r["state"] == "failed" for r in variant), 2, variant)
        self.assertFalse(any(r["state"] == "succeeded" for r in variant), variant)
        self.assertTrue(any(r["state"] == "cancelled" for r in runs), runs)
        failed = [r for r in variant if r["state"] == "failed"][0]
        self.assertIn("CUDA out of memory", self.c.json("run", "show", str(failed["id"]))["reason"])
        text = self.c.cli("experiment", "show", str(e["id"])).stdout
        self.assertIn("stopped at once: failed: OOM", text)

    def test_runs_too_short_to_settle_end_with_advice(self):
        # The variant's warm-up takes 70 of its 80 steps: no steady state in any of its runs. They
        # count with what they delivered (a slow start is a real loss for an 80-step job) and say so.
        e = self.experiment("--workload", "ev", "--vary", "warm=70")
        self.assertNotIn(e["decision"], ("improved", "unchanged"), e)
        advice = " | ".join(e["advice"])
        self.assertIn("runs too short for a steady state", advice, e)
        self.assertIn("raise steps to 160", advice, e)
        self.assertGreater(e["unusable"]["variant"], e["unusable"]["control"])
        text = self.c.cli("experiment", "show", str(e["id"])).stdout
        self.assertIn("advice: runs too short for a steady state", text)
        self.assertIn("counted with a note: run", text)
        self.assertIn("usable pair(s) of", text)
        # Every run compared is listed with its value, so the verdict can be recomputed.
        m = {x["metric"]: x for x in e["metrics"]}["samples_per_s"]
        self.assertEqual(len([r for r in m["control_runs"] if r["compared"]]), m["n_control"])
        for r in m["control_runs"] + m["variant_runs"]:
            self.assertGreater(r["value"], 0)
            self.assertIn("harmonic mean (work over time)", r["how"])
        self.assertEqual(len([r for r in m["variant_runs"] if r["compared"]]), m["n_variant"])

    def test_a_metric_printed_coarser_than_its_min_effect_is_not_called(self):
        b = json.loads(self.c.cli("baseline", "create", "--workload", "coarse", "--repeats", "2",
                                  "--wait", "-o", "json").stdout)
        self.assertEqual(b["state"], "completed", b)
        e = self.experiment("--workload", "coarse", "--vary", "fast=yes")
        m = {x["metric"]: x for x in e["metrics"]}["latency_ms"]
        self.assertEqual(m["decision"], "inconclusive", m)
        self.assertIn("below the metric's resolution", m["note"])
        self.assertAlmostEqual(m["resolution"], 0.01)
        self.assertNotIn(e["decision"], ("improved", "regressed"))
        self.assertIn("below the metric's resolution",
                      self.c.cli("experiment", "show", str(e["id"])).stdout)

    def test_a_metric_no_run_logged_fails_the_baseline_naming_it(self):
        p = self.c.cli("baseline", "create", "--workload", "noloss", "--repeats", "2", "--wait",
                       check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("metric loss has no value in any run: no log line matched it", p.stderr)
        b = self.c.items("baseline", "list")
        self.assertEqual([x["state"] for x in b if x["workload"] == "noloss"], ["failed"])


if __name__ == "__main__":
    unittest.main()
