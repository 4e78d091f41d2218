"""End to end: server (embedded PostgreSQL) + agent + CLI, `workload apply`, `baseline create`."""
import json
import statistics
import os
import signal
import subprocess
import time
import unittest

from cluster import BIN, SRC, Cluster, metric_lines

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")
DEMO_PATTERNS = [r"samples/s: (?P<value>[0-9.]+)", r"step_time_ms: ([0-9.]+)",
                 r"data_wait_ms: ([0-9.]+)",
                 r"saving checkpoint at step"]  # run.skip_steps marks are stored as samples too


def demo_variant(old, new, text=None):
    with open(DEMO) as f:
        text = text or f.read()
    assert old in text, old
    return text.replace(old, new)


class BaselineE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", labels=("pool=cpu", "gpu=none"), slots=2)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def assert_no_loss_no_duplicates(self, baseline_id):
        runs = self.c.items("run", "list", "--baseline", str(baseline_id))
        self.assertTrue(runs)
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            log = os.path.join(self.c.runs_dir(r["agent"]), f"{r['id']}-{r['attempt']}", "output.log")
            printed = metric_lines(log, DEMO_PATTERNS, ["loss"])
            self.assertGreater(printed, 0)
            self.assertEqual(r["samples"], printed, f"run {r['id']}: stored vs printed")

    def test_1_baseline_end_to_end(self):
        c = self.c
        p = c.cli("workload", "apply", "-f", DEMO)
        self.assertIn("workload demo created", p.stdout)
        # no flags: the only workload, repeats from its run policy (5)
        p = c.cli("baseline", "create", "--wait", "-o", "json")
        self.assertIn("runs done", p.stderr)  # progress while it runs
        b = json.loads(p.stdout)
        self.assertEqual(b["state"], "completed")
        self.assertEqual(b["repeats"], 5)
        self.assertEqual(b["runs"]["succeeded"], 5)
        by_metric = {s["metric"]: s for s in b["summary"]}
        self.assertEqual(set(by_metric), {"samples_per_s", "step_time_ms", "data_wait_ms", "loss"})
        sps = by_metric["samples_per_s"]
        # Every run counts with the value it delivered (docs/statistics.md): a run disturbed mid-run
        # (two CPU-bound runs on 2 cores) is noted in its warnings, not left out; the summary is
        # over the runs' values, each of which run show gives with how it was computed.
        values = []
        for r in c.items("run", "list", "--baseline", str(b["id"])):
            m = {x["metric"]: x for x in c.json("run", "show", str(r["id"]))["metrics"]}
            sm = m["samples_per_s"]
            self.assertIsNotNone(sm["value"], sm)
            self.assertIn("harmonic mean (work over time)", sm["value_how"])
            values.append(sm["value"])
            if not sm["usable"]:
                self.assertTrue(sm["warnings"])
        self.assertEqual(sps["n"], len(values))
        self.assertAlmostEqual(sps["median"], statistics.median(values), places=6)
        self.assertGreaterEqual(sps["n"], 2)
        self.assertGreater(sps["median"], 100)
        self.assertLessEqual(sps["min"], sps["median"])
        self.assertLessEqual(sps["median"], sps["max"])
        self.assertEqual(sps["role"], "primary")
        # show, list and run views agree
        shown = c.json("baseline", "show", str(b["id"]))
        self.assertEqual(shown["summary"], b["summary"])
        self.assertIn(b["id"], [x["id"] for x in c.items("baseline", "list")])
        self.assert_no_loss_no_duplicates(b["id"])
        table = c.cli("baseline", "show", str(b["id"])).stdout
        self.assertIn("samples_per_s", table)
        self.assertIn("MEDIAN", table)
        run = c.items("run", "list", "--baseline", str(b["id"]))[0]
        detail = c.json("run", "show", str(run["id"]))
        self.assertEqual(detail["params"]["num_workers"], 1)  # typed: an int param
        self.assertEqual({m["metric"] for m in detail["metrics"]}, {"samples_per_s", "step_time_ms", "data_wait_ms", "loss"})
        csv = c.cli("run", "list", "-o", "csv").stdout
        self.assertTrue(csv.startswith("id,for,#,attempt,state"))
        agents = c.items("agent", "list")
        self.assertEqual(agents[0]["labels"], {"gpu": "none", "pool": "cpu"})

    def test_2_bad_workloads_change_nothing(self):
        c = self.c
        before = c.cli("workload", "list", "-o", "json").stdout
        cases = [
            (demo_variant("run:\n", "colour: blue\nrun:\n"), 'unknown key "colour"'),
            (demo_variant("default: 1, min: 0, max: 64", "default: lots, min: 0, max: 64"),
             'params.num_workers.default: num_workers is an int parameter; "lots" is not an integer'),
            (demo_variant('command: ["python3", "examples/demo/train.py", "--num-workers", "{num_workers}",\n'
                          '          "--prefetch-factor", "{prefetch_factor}", "--steps", "{steps}"]\n', ""),
             "command: missing"),
            (demo_variant('"{num_workers}"', '"{workers}"'),
             "command[3]: placeholder {workers} names no parameter"),
        ]
        for text, expected in cases:
            path = c.write("bad.yaml", text)
            p = c.cli("workload", "apply", "-f", path, check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(expected, p.stderr)
            self.assertTrue(p.stderr.startswith("error: "))
            self.assertEqual(p.stdout, "")
        self.assertEqual(c.cli("workload", "list", "-o", "json").stdout, before)

    def test_3_unknown_workload_and_baseline(self):
        c = self.c
        before = c.cli("baseline", "list", "-o", "json").stdout
        p = c.cli("baseline", "create", "--workload", "nope", check=False)
        self.assertEqual(p.returncode, 3)
        self.assertIn('workload "nope" not found; known workloads: demo', p.stderr)
        self.assertEqual(c.cli("baseline", "list", "-o", "json").stdout, before)
        p = c.cli("baseline", "show", "999", check=False)
        self.assertEqual(p.returncode, 3)
        self.assertIn("baseline 999 not found", p.stderr)
        p = c.cli("run", "list", "-o", "yaml", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn('"yaml" is not a format; allowed: table, json, csv, name', p.stderr)

    def test_7_checkpoint_steps_are_left_out(self):
        c = self.c
        text = demo_variant("name: demo", "name: demo-ckpt")
        text = demo_variant('DEMO_CHECKPOINT_EVERY: "0"', 'DEMO_CHECKPOINT_EVERY: "80"', text)
        # 200 steps: a 60-step run on a loaded 2-core machine may never settle, and a baseline
        # without one steady run now fails (as it should)
        text = demo_variant("steps:           {type: int, default: 60",
                            "steps:           {type: int, default: 200", text)
        c.cli("workload", "apply", "-f", c.write("ckpt.yaml", text))
        # what is checked is the marks, not the steady state: a loaded machine may leave the run
        # without one (the baseline then rightly fails), so wait for the run, not the baseline
        bid = int(c.cli("baseline", "create", "--workload", "demo-ckpt", "--repeats", "1").stdout)
        c.wait_for(lambda: c.items("run", "list", "--baseline", str(bid))[0]["state"]
                   in ("succeeded", "failed"), timeout=180, what="the checkpointing run to end")
        run = c.items("run", "list", "--baseline", str(bid))[0]
        self.assertEqual(run["state"], "succeeded", run)
        log = os.path.join(c.runs_dir(run["agent"]), f"{run['id']}-{run['attempt']}", "output.log")
        with open(log) as f:
            self.assertEqual(f.read().count("saving checkpoint at step"), 2)  # steps 80 and 160
        m = {x["metric"]: x for x in c.json("run", "show", str(run["id"]))["metrics"]}
        self.assertEqual(set(m), {"samples_per_s", "step_time_ms", "data_wait_ms", "loss"})  # a mark, no metric
        for name in m:
            self.assertIn("2 sample(s) at skipped steps", m[name]["warnings"])
        self.assert_no_loss_no_duplicates(bid)  # the marks are stored like samples

    def test_4_selector_no_agent_matches_runs_wait_and_say_why(self):
        c = self.c
        text = demo_variant("name: demo", "name: demo-gpu")
        text = demo_variant("selector: {pool: cpu}", "selector: {pool: gpu}", text)
        c.cli("workload", "apply", "-f", c.write("gpu.yaml", text))
        out = c.cli("baseline", "create", "--workload", "demo-gpu", "--repeats", "1").stdout
        bid = int(out.strip())
        time.sleep(1.5)  # several dispatch passes
        runs = c.items("run", "list", "--baseline", str(bid))
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["state"], "queued")
        self.assertIn("no connected agent matches selector pool=gpu", runs[0]["wait_reason"])
        self.assertIn("node-1 {gpu=none,pool=cpu}", runs[0]["wait_reason"])
        table = c.cli("run", "list", "--baseline", str(bid)).stdout
        self.assertIn("no connected agent matches selector pool=gpu", table)
        # with two workloads, a bare `baseline create` asks which
        p = c.cli("baseline", "create", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("several workloads exist", p.stderr)
        self.assertIn("demo-gpu", p.stderr)

    def test_5_second_server_on_same_data_dir_is_refused(self):
        c = self.c
        p = subprocess.run([os.path.join(BIN, "tunectl-server"), "--data-dir",
                            os.path.join(c.dir, "data"), "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is in use by another tunectl-server", p.stdout + p.stderr)
        self.assertEqual(c.items("agent", "list")[0]["connected"], True)  # first server unharmed

    def test_6_server_restart_mid_baseline_loses_and_duplicates_nothing(self):
        c = self.c
        text = demo_variant("name: demo", "name: demo-long")
        text = demo_variant("steps:           {type: int, default: 60", "steps:           {type: int, default: 250", text)
        c.cli("workload", "apply", "-f", c.write("long.yaml", text))
        bid = int(c.cli("baseline", "create", "--workload", "demo-long", "--repeats", "4").stdout)
        c.wait_for(lambda: any(r["state"] == "running" and r["samples"] > 0
                               for r in c.items("run", "list", "--baseline", str(bid))),
                   what="a run with stored samples")
        in_flight = [r["id"] for r in c.items("run", "list", "--baseline", str(bid))
                     if r["state"] == "running"]
        c.stop_server()
        time.sleep(1.0)  # the agent keeps running its jobs and buffers their metrics
        c.start_server()
        c.wait_for(lambda: c.json("baseline", "show", str(bid))["state"] != "running",
                   timeout=180, what="baseline to finish after the restart")
        b = c.json("baseline", "show", str(bid))
        self.assertEqual(b["state"], "completed")
        self.assertEqual(b["runs"]["succeeded"], 4)
        self.assert_no_loss_no_duplicates(bid)
        # the runs in flight during the restart were re-adopted, not re-run: their metrics came
        # from the agent's outbox, resent after it reconnected
        runs = {r["id"]: r for r in c.items("run", "list", "--baseline", str(bid))}
        for rid in in_flight:
            self.assertEqual(runs[rid]["attempt"], 1, runs[rid])
        self.assertIn("unacked messages resent", c.log("agent-node-1.log"))

    def test_8_agent_restart_while_server_is_down_keeps_finished_results(self):
        c = self.c
        # The job waits for a file before it exits, so it cannot finish (and be delivered) before
        # the server is down, however slowly a sanitizer build stops the server.
        gate = os.path.join(c.dir, "spool-gate")
        text = demo_variant("name: demo", "name: demo-spool")
        text = demo_variant(
            'command: ["python3", "examples/demo/train.py", "--num-workers", "{num_workers}",\n'
            '          "--prefetch-factor", "{prefetch_factor}", "--steps", "{steps}"]',
            'command: ["sh", "-c", "python3 examples/demo/train.py --num-workers {num_workers} '
            '--prefetch-factor {prefetch_factor} --steps {steps} && '
            f'while [ ! -e {gate} ]; do sleep 0.1; done"]', text)
        c.cli("workload", "apply", "-f", c.write("spool.yaml", text))
        bid = int(c.cli("baseline", "create", "--workload", "demo-spool", "--repeats", "1").stdout)
        c.wait_for(lambda: c.items("run", "list", "--baseline", str(bid))[0]["state"] == "running",
                   what="the run to start")
        rid = c.items("run", "list", "--baseline", str(bid))[0]["id"]
        c.stop_server()
        self.assertNotIn(f"run {rid} finished", c.log("agent-node-1.log"))
        with open(gate, "w"):
            pass
        # The job finishes while the server is down; then the agent itself is restarted.
        c.wait_for(lambda: f"run {rid} finished" in c.log("agent-node-1.log"), timeout=60,
                   what="the job to finish on the agent")
        agent = c.agents["node-1"]
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=60)
        spool = os.path.join(c.runs_dir("node-1"), ".spool")
        self.assertTrue(os.listdir(spool), "the unacked results are on disk")
        c.start_server()
        c.start_agent("node-1", labels=("pool=cpu", "gpu=none"), slots=2)
        c.wait_for(lambda: c.json("baseline", "show", str(bid))["state"] != "running",
                   timeout=120, what="the baseline to finish from the spool")
        b = c.json("baseline", "show", str(bid))
        run = c.items("run", "list", "--baseline", str(bid))[0]
        self.assertEqual(run["state"], "succeeded", run)
        # Delivered. A single run on a loaded machine may not settle; the baseline then fails
        # for that reason, and only that one.
        if b["state"] != "completed":
            self.assertIn("no steady state", b.get("reason") or "", b)
        self.assertEqual(run["attempt"], 1)  # delivered, not re-run
        self.assert_no_loss_no_duplicates(bid)
        c.wait_for(lambda: not os.listdir(spool), timeout=10, what="the spool to empty once acked")


if __name__ == "__main__":
    unittest.main(verbosity=2)
