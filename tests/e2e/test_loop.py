"""End to end, the whole loop on the demo workload with the real binaries:
baseline → hypothesis → experiment (--vary num_workers) → improved, confirmed → freeze → config v2
→ tuning log; and a no-effect change (log_interval) that is never called improved."""
import csv
import io
import json
import os
import unittest

from cluster import SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")


class LoopE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        # one slot: control and variant never compete for the 2 cores at the same moment
        cls.c.start_agent("node-1", slots=1)
        cls.c.cli("workload", "apply", "-f", DEMO)
        cls.baseline = json.loads(cls.c.cli("baseline", "create", "--wait", "-o", "json").stdout)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_loop(self):
        c = self.c
        self.assertEqual(self.baseline["state"], "completed")
        h = json.loads(c.cli("hypothesis", "create", "--param", "num_workers=4",
                             "--expect", "samples_per_s +10%",
                             "--evidence", "data_wait_ms is most of step_time_ms",
                             "--statement", "the data pipeline starves the trainer",
                             "-o", "json").stdout)
        self.assertEqual(h["baseline_id"], self.baseline["id"])
        self.assertFalse(h["locked"])

        p = c.cli("experiment", "run", "--hypothesis", str(h["id"]), "--wait", "-o", "json")
        # progress per arm while it runs, with the estimate so far once pairs have finished
        self.assertRegex(p.stderr, r"control [^;]*done[^;]*; variant ")
        self.assertRegex(p.stderr, r"samples_per_s [+-][0-9.]+% \[[^]]+\] so far on [0-9]+ usable")
        e = json.loads(p.stdout)
        self.assertEqual(e["state"], "decided")
        if e["decision"] != "improved":
            # On a loaded 2-core machine the variant's short runs sometimes fail to settle, and
            # the verdict then rightly refuses the call; it must say so, and the rest of the loop
            # (freeze, log) cannot be exercised on this run.
            why = " ".join(e["reasons"])
            self.assertEqual(e["decision"], "inconclusive", e)
            self.assertTrue("unusable more often" in why or "more runs than the control" in why
                            or "not shown non-inferior" in why, e)
            self.skipTest("the variant's runs did not settle on this machine: " + why[:200])
        self.assertEqual(e["decision"], "improved", e)
        self.assertEqual(e["hypothesis_result"], "confirmed", e)
        self.assertEqual(e["change"]["to"], {"num_workers": 4})
        m = {x["metric"]: x for x in e["metrics"]}
        self.assertGreater(m["samples_per_s"]["ratio"], 1.10)
        self.assertGreater(m["samples_per_s"]["ci_low"], 1.0)
        self.assertEqual(m["loss"]["guardrail"], "pass")
        # sequential: the clear effect stops the experiment before the cap, unless variant runs
        # were lost (a variant that lost more runs than the control goes on to the cap)
        if e["unusable"]["variant"] <= e["unusable"]["control"]:
            self.assertLess(e["look"]["finished_pairs"], e["max_pairs"], e)
        self.assertEqual(e["max_pairs"], e["repeats"])
        self.assertEqual(e["runs"]["done"], 2 * e["look"]["finished_pairs"])
        self.assertEqual(e["runs"]["total"], 2 * e["look"]["finished_pairs"])
        self.assertLessEqual(e["pairs"], e["look"]["finished_pairs"])  # usable pairs
        self.assertTrue(c.json("hypothesis", "show", str(h["id"]))["locked"])
        # the interleaving is on record
        runs = [r for r in c.items("run", "list", "--limit", "0") if r.get("arm")]
        arms = "".join(r["arm"][0] for r in sorted(runs, key=lambda r: r["index"]))
        self.assertTrue(arms.startswith("cvvc"), arms)

        table = c.cli("experiment", "show", str(e["id"])).stdout
        for word in ("METRIC", "CONTROL", "VARIANT", "95% CI", "samples_per_s", "improved",
                     "usable pair(s) of",
                     "method: samples_per_s: split paired: Huber pace + mean lost time"):
            self.assertIn(word, table)
        if e["look"]["finished_pairs"] < e["max_pairs"]:
            self.assertIn("stopped early", table)

        f = c.cli("experiment", "freeze", str(e["id"]))
        self.assertIn("config v2", f.stdout)
        cfg = c.json("config", "show", "demo")
        self.assertEqual(cfg["version"], 2)
        self.assertEqual(cfg["params"]["num_workers"], 4)
        self.assertEqual([v["version"] for v in cfg["lineage"]], [1, 2])
        self.assertEqual(cfg["lineage"][1]["experiment_id"], e["id"])
        self.assertIn("--num-workers 4", c.cli("config", "export", "demo", "--format", "args").stdout)
        self.assertIn("NUM_WORKERS=4", c.cli("config", "export", "demo", "--format", "env").stdout)
        self.assertEqual(json.loads(c.cli("config", "export", "demo").stdout)["num_workers"], 4)

        log = c.items("log", "--limit", "0")
        self.assertEqual(len(log), 1)
        entry = log[0]
        self.assertEqual(entry["change"], "num_workers 1→4")
        self.assertEqual(entry["hypothesis"]["expected"], "samples_per_s +10%")
        self.assertEqual(entry["hypothesis"]["result"], "confirmed")
        self.assertGreater(entry["primary"]["ratio"], 1.1)
        self.assertEqual(entry["frozen"], "v2")
        self.assertEqual(entry["decision"], "improved")
        rows = list(csv.DictReader(io.StringIO(c.cli("log", "-o", "csv").stdout)))
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["experiment_id"], str(e["id"]))
        self.assertEqual((rows[0]["kind"], rows[0]["change"]), ("decided", "num_workers 1→4"))
        # raw numbers a spreadsheet can use: the log's ratio and CI, not "+32.2%"
        self.assertAlmostEqual(float(rows[0]["ratio"]), entry["primary"]["ratio"], places=9)
        self.assertLess(float(rows[0]["ci_low"]), float(rows[0]["ratio"]))

        # no real effect: never a false "improved"
        n = json.loads(c.cli("experiment", "run", "--vary", "log_interval=5", "--wait", "-o", "json").stdout)
        self.assertIn(n["decision"], ("unchanged", "inconclusive"), n)
        self.assertEqual(n["config_version"], 2)  # against the frozen config's level
        p = c.cli("experiment", "freeze", str(n["id"]), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--force --reason", p.stderr)
        self.assertEqual(len(c.items("log", "--param", "log_interval")), 1)

        # the log pages: the newest entries first, the token continues with older ones
        page = c.json("log", "--limit", "1")
        self.assertEqual([x["experiment"] for x in page["items"]], [n["id"]])
        older = c.json("log", "--limit", "1", "--page-token", page["next_page_token"])
        self.assertEqual([x["experiment"] for x in older["items"]], [e["id"]])
        self.assertIsNone(older["next_page_token"])
        table = c.cli("log", "--limit", "1")
        self.assertIn("--page-token " + page["next_page_token"], table.stderr)
        self.assertEqual(len(c.items("log", "--since", "1h")), 2)  # by the server's clock
        self.assertEqual(c.items("log", "--since", "2999-01-01"), [])
        for args, expected in [(["log", "--since", "yesterday"], "--since: \"yesterday\""),
                               (["log", "--page-token", "runs:1"], "not a page token of the log"),
                               (["experiment", "list", "--limit", "5000"], "allowed 1..1000")]:
            p = c.cli(*args, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(expected, p.stderr)

    def test_refusals_change_nothing(self):
        c = self.c
        before = c.cli("experiment", "list", "-o", "json").stdout
        cases = [
            (["--vary", "num_workers=8", "--vary", "prefetch_factor=4"], "single-variable rule"),
            (["--vary", "num_wrkers=8"], 'did you mean "num_workers"'),
            (["--vary", "num_workers=eight"], '"eight" is not an integer'),
            (["--vary", "num_workers=99"], "out of range; allowed 0..64"),
            (["--vary", "precision=fp16"], "allowed: fp32, bf16"),
        ]
        for args, expected in cases:
            p = c.cli("experiment", "run", *args, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(expected, p.stderr)
        self.assertEqual(c.cli("experiment", "list", "-o", "json").stdout, before)

    def test_the_pitch_command_works_as_written(self):
        p = self.c.cli("experiment", "run", "--vary", "num_workers=8")
        eid = int(p.stdout.strip())
        e = self.c.json("experiment", "show", str(eid))
        self.assertEqual(e["change"]["to"], {"num_workers": 8})
        self.c.cli("experiment", "cancel", str(eid))
        self.c.wait_for(lambda: self.c.json("experiment", "show", str(eid))["runs"]["active"] == 0,
                        what="cancelled runs to stop")


if __name__ == "__main__":
    unittest.main(verbosity=2)
