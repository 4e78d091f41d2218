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
