"""The output contract of docs/output.md on the real binaries (issue 16): every JSON document
starts with apiVersion and kind, every list is a <Kind>List, parameters are typed by their
declared types, what does not exist is null, CSV cells are raw numbers, and -o name prints
kind/id."""
import csv
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

JOB = ("import sys, random\n"
       "for i in range(40):\n"
       "    print(f'rate: {1000 + random.random():.3f}', flush=True)\n")

WORKLOAD = f"""name: out
command: ["python3", "-c", {json.dumps(JOB)}, "{{workers}}", "{{lr}}", "{{mode}}", "{{compile}}",
          "{{tag}}"]
params:
  workers: {{type: int, default: 4, min: 1}}
  lr:      {{type: float, default: 0.001}}
  mode:    {{type: enum, values: ["16", "32"], default: "32"}}
  compile: {{type: bool, default: true}}
  tag:     {{type: string, default: "007"}}
metrics:
  rate: {{pattern: 'rate: ([0-9.]+)', unit: samples/s, better: higher, role: primary}}
run:
  repeats: 2
  timeout: 2m
  selector: {{pool: cpu}}
"""

# A run whose series has a slow start, a NaN at step 20 and a checkpoint at step 30 (run.skip_steps).
# (No braces: a workload's command binds {name} placeholders.)
SERIES_JOB = ("for i in range(1, 61):\n"
              "    if i == 30: print('saving checkpoint', flush=True)\n"
              "    v = 'nan' if i == 20 else '%.1f' % ((500 if i <= 3 else 1000) + (i % 5) * 0.5)\n"
              "    print('rate: %s step %d' % (v, i), flush=True)\n")

SERIES = f"""name: series
command: ["python3", "-c", {json.dumps(SERIES_JOB)}]
metrics:
  rate: {{pattern: 'rate: (?P<value>\\S+) step (?P<step>[0-9]+)', better: higher, role: primary}}
run:
  repeats: 1
  warmup_steps: 2
  timeout: 2m
  selector: {{pool: cpu}}
  skip_steps: {{ckpt: 'saving checkpoint'}}
"""


class OutputE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", slots=2)
        cls.c.cli("workload", "apply", "-f", "-", stdin=WORKLOAD)
        cls.b = json.loads(cls.c.cli("baseline", "create", "out", "--wait", "-o", "json").stdout)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def assertDocument(self, doc, kind):
        self.assertEqual(list(doc)[:2], ["apiVersion", "kind"], doc)
        self.assertEqual((doc["apiVersion"], doc["kind"]), ("tunectl/v1", kind))

    def test_documents_have_api_version_kind_and_typed_params(self):
        b = self.b
        self.assertDocument(b, "Baseline")
        self.assertEqual(b["state"], "completed", b)
        self.assertEqual(b["params"], {"compile": True, "lr": 0.001, "mode": "32", "tag": "007",
                                       "workers": 4})
        self.assertIsInstance(b["summary"][0]["median"], float)
        cfg = self.c.json("config", "show", "out")
        self.assertDocument(cfg, "Config")
        self.assertEqual(cfg["params"]["workers"], 4)
        self.assertEqual(cfg["params"]["tag"], "007")

    def test_missing_values_are_null(self):
        c = self.c
        [run] = c.items("run", "list", "--baseline", str(self.b["id"]), "--limit", "1")
        shown = c.json("run", "show", str(run["id"]))
        self.assertDocument(shown, "Run")
        self.assertIsNone(shown["experiment_id"])
        self.assertIsNone(shown["arm"])
        self.assertIsNone(shown["signal"])
        self.assertEqual(shown["exit_code"], 0)
        self.assertEqual(shown["params"]["compile"], True)
        h = json.loads(c.cli("hypothesis", "create", "--workload", "out", "--param", "workers=8",
                             "--expect", "rate +10%", "-o", "json").stdout)
        self.assertDocument(h, "Hypothesis")
        self.assertIsNone(h["experiment_id"])
        self.assertEqual(h["change"], {"description": h["change"]["description"],
                                       "from": {"workers": 4}, "to": {"workers": 8},
                                       "coupled": False})
        e = json.loads(c.cli("experiment", "run", "--hypothesis", str(h["id"]), "-o",
                             "json").stdout)
        self.assertDocument(e, "Experiment")
        for k in ("decision", "decided_at", "frozen_version", "batch_id", "correction"):
            self.assertIsNone(e[k], k)
        c.cli("experiment", "cancel", str(e["id"]))

    def test_lists_are_kind_lists(self):
        for args, kind in ((["agent", "list"], "AgentList"), (["workload", "list"], "WorkloadList"),
                           (["schedule", "list"], "ScheduleList"), (["log"], "LogEntryList")):
            page = self.c.json(*args)
            self.assertEqual(list(page), ["apiVersion", "kind", "items", "next_page_token"])
            self.assertEqual(page["kind"], kind)
        self.assertEqual(self.c.items("agent", "list")[0]["name"], "node-1")

    def test_csv_cells_are_raw_numbers(self):
        c = self.c
        rows = list(csv.DictReader(io.StringIO(
            c.cli("baseline", "show", str(self.b["id"]), "-o", "csv").stdout, newline="")))
        self.assertEqual(rows[0]["metric"], "rate")
        self.assertAlmostEqual(float(rows[0]["median"]), 1000.5, delta=1)
        float(rows[0]["cv"])  # a fraction, not "0.0%"
        [run] = c.items("run", "list", "--baseline", str(self.b["id"]), "--limit", "1")
        rows = list(csv.DictReader(io.StringIO(
            c.cli("run", "show", str(run["id"]), "-o", "csv").stdout, newline="")))
        self.assertEqual([r["metric"] for r in rows], ["rate"])
        self.assertGreater(float(rows[0]["median"]), 999)
        rows = list(csv.reader(io.StringIO(c.cli("config", "show", "out", "-o", "csv").stdout,
                                           newline="")))
        self.assertEqual(rows[0], ["param", "value"])
        self.assertIn(["workers", "4"], rows)

    def test_run_samples_are_the_runs_series_with_its_summarys_window(self):
        c = self.c
        c.cli("workload", "apply", "-f", "-", stdin=SERIES)
        b = json.loads(c.cli("baseline", "create", "series", "--wait", "-o", "json").stdout)
        [run] = c.items("run", "list", "--baseline", str(b["id"]))
        shown = c.json("run", "show", str(run["id"]))
        doc = c.json("run", "samples", str(run["id"]))
        self.assertDocument(doc, "RunSamples")
        self.assertEqual((doc["run_id"], doc["attempt"], doc["live"]), (run["id"], 1, False))
        [m] = doc["metrics"]
        self.assertEqual(m["metric"], "rate")
        self.assertEqual(m["samples"], 60)
        self.assertEqual(m["points_total"], 59)  # the NaN is not a point; the checkpoint's is
        self.assertEqual([p["step"] for p in m["points"]], [i for i in range(1, 61) if i != 20])
        self.assertFalse(m["decimated"])
        self.assertEqual(m["skipped"], [
            {"step": 20, "value": None, "reason": "nonfinite", "tag": None},
            {"step": 30, "value": 1000.0, "reason": "skip_step", "tag": "ckpt"}])
        # the window and median are the run's summary
        [summary] = shown["metrics"]
        self.assertEqual((m["median"], m["steady"]), (summary["median"], summary["steady"]))
        self.assertEqual(m["declared_warmup_steps"], 2)
        self.assertEqual(m["steady_to"], 60)
        self.assertEqual(m["steady_from"], m["warmup_end"] + 1)
        self.assertEqual(m["detected_warmup"], summary["detected_warmup"])
        # bounded: min and max per bucket, and it says from how many
        few = c.json("run", "samples", str(run["id"]), "--max-points", "10")["metrics"][0]
        self.assertTrue(few["decimated"])
        self.assertEqual(few["points_total"], 59)
        self.assertLessEqual(len(few["points"]), 10)
        self.assertEqual(min(p["value"] for p in few["points"]), 500.5)  # the slow start stays
        # CSV: raw columns, a row per sample (the NaN's value empty)
        rows = list(csv.DictReader(io.StringIO(
            c.cli("run", "samples", str(run["id"]), "-o", "csv").stdout, newline="")))
        self.assertEqual(len(rows), 60)
        self.assertEqual(rows[19], {"run_id": str(run["id"]), "attempt": "1", "metric": "rate",
                                    "step": "20", "value": "", "phase": "skipped",
                                    "skipped": "nonfinite", "tag": ""})
        self.assertEqual((rows[29]["value"], rows[29]["skipped"], rows[29]["tag"]),
                         ("1000", "skip_step", "ckpt"))
        self.assertEqual(rows[59]["phase"], "steady")
        # errors: an unknown run is not found (3); a bad value names the field and what is allowed
        p = c.cli("run", "samples", "999999", check=False)
        self.assertEqual(p.returncode, 3, p.stderr)
        p = c.cli("run", "samples", str(run["id"]), "--max-points", "5", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("max_points: 5", p.stderr)
        self.assertIn("10..100000", p.stderr)
        p = c.cli("run", "samples", str(run["id"]), "--metric", "rte", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('"rte"', p.stderr)
        self.assertIn("allowed: rate", p.stderr)
        p = c.cli("run", "samples", str(run["id"]), "--attempt", "3", check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("attempt: 3", p.stderr)

    def test_name_prints_kind_slash_id(self):
        c = self.c
        self.assertEqual(c.cli("workload", "list", "-o", "name").stdout, "workload/out\n")
        self.assertEqual(c.cli("baseline", "show", str(self.b["id"]), "-o", "name").stdout,
                         f"baseline/{self.b['id']}\n")
        p = c.cli("log", "-o", "name", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-o name", p.stderr)


if __name__ == "__main__":
    unittest.main()
