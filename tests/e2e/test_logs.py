"""`tunectl run logs` on the real binaries (issue 16): a running job's lines reach `run logs -f`
within a second of the job printing them, relayed by the server from the agent that holds the
run; the follow ends by itself when the run ends, with every line of the agent's output.log;
--tail, -o json, a queued run, and an agent that is gone each say what they should. Beside it,
on the same cluster: `run show` of the running run is live, and Ctrl-C on a `--wait` says what
keeps running.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster  # noqa: E402

# Prints its wall-clock time on each line, so the test can tell how late a line reached it.
JOB = """
import sys, time
for i in range(1, int(sys.argv[1]) + 1):
    print(f"tick {i} at {time.time():.3f} sps: {100 + i % 3}", flush=True)
    time.sleep(0.2)
print("done", file=sys.stderr, flush=True)
"""

WORKLOAD = """name: {name}
command: [python3, '{job}', '{{ticks}}']
params:
  ticks: {{type: int, default: 40, min: 1, max: 1000}}
metrics:
  sps: {{pattern: 'sps: (?P<value>[0-9.]+)', better: higher, role: primary}}
run: {{repeats: 1, warmup_steps: 0, selector: {{pool: {pool}}}}}
"""


class RunLogsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("n1", slots=1)
        job = cls.c.write("ticks.py", JOB)
        for name, pool in (("ticks", "cpu"), ("nowhere", "none")):
            cls.c.cli("workload", "apply", "-f",
                      cls.c.write(f"{name}.yaml", WORKLOAD.format(name=name, job=job, pool=pool)))

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def run_of(self, baseline):
        runs = self.c.items("run", "list", "--baseline", str(baseline))
        self.assertEqual(len(runs), 1, runs)
        return runs[0]

    def baseline(self, workload, *args):
        b = self.c.json("baseline", "create", workload, *args)
        return self.run_of(b["id"])["id"]

    def test_1_follow_shows_each_line_within_a_second_and_ends_with_the_run(self):
        run = self.baseline("ticks", "--repeats", "1")
        env = dict(self.c.env, TUNECTL_SERVER=self.c.addr)
        # Started before the run does: it waits for the run to start, then follows it.
        p = subprocess.Popen([os.path.join(BIN, "tunectl"), "run", "logs", str(run), "-f"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        lines, lateness = [], []
        stderr = []
        threading.Thread(target=lambda: stderr.append(p.stderr.read()), daemon=True).start()
        live = None
        for raw in p.stdout:
            now = time.time()
            line = raw.decode()
            lines.append(line)
            if line.startswith("tick "):
                lateness.append(now - float(line.split()[3]))
            if line.startswith("tick 20 ") and live is None:
                # Halfway: `run show` computes the run's metric from the samples stored so far.
                live = self.c.json("run", "show", str(run))
        self.assertEqual(p.wait(timeout=60), 0, stderr)
        p.stdout.close()
        p.stderr.close()
        ticks = [l for l in lines if l.startswith("tick ")]
        self.assertEqual(len(ticks), 40, lines)
        self.assertEqual([int(l.split()[1]) for l in ticks], list(range(1, 41)))
        self.assertIn("done\n", lines)  # stderr too: output.log holds both, in order
        # Within a second of the job printing it (the server asks the agent every 250 ms).
        self.assertLess(statistics.median(lateness), 1.0, lateness)
        self.assertLess(max(lateness), 3.0, lateness)

        self.assertEqual(live["state"], "running", live)
        self.assertTrue(live["live"], live)
        sps = next(m for m in live["metrics"] if m["metric"] == "sps")
        self.assertGreater(sps["samples"], 0, sps)
        self.assertLess(sps["samples"], 40, sps)
        state = self.c.json("run", "show", str(run))["state"]
        self.assertEqual(state, "succeeded")
        # What -f showed is every line of the agent's output.log, and so is a plain read now.
        with open(os.path.join(self.c.runs_dir("n1"), f"{run}-1", "output.log")) as f:
            marked = f.read()
        # The local executor marks each line with its stream ("O " stdout, "E " stderr); the
        # user sees what the job printed.
        self.assertTrue(marked.startswith("O tick 1 ") and "E done\n" in marked, marked)
        on_disk = "".join(l[2:] for l in marked.splitlines(keepends=True))
        self.assertEqual("".join(lines), on_disk)
        self.assertEqual(self.c.cli("run", "logs", str(run)).stdout, on_disk)

        tail = self.c.cli("run", "logs", str(run), "--tail", "2").stdout
        self.assertEqual(tail.splitlines(), on_disk.splitlines()[-2:])

        docs = [json.loads(l) for l in
                self.c.cli("run", "logs", str(run), "-o", "json").stdout.splitlines()]
        self.assertEqual(len(docs), len(on_disk.splitlines()))
        self.assertEqual({d["kind"] for d in docs}, {"RunLogLine"})
        self.assertEqual(docs[0]["run"], run)
        self.assertEqual(docs[0]["attempt"], 1)
        self.assertEqual(docs[0]["agent"], "n1")
        self.assertEqual([d["line"] for d in docs], on_disk.splitlines())

    def test_2_a_queued_run_has_no_output_yet_and_says_how_to_follow_it(self):
        run = self.baseline("nowhere", "--repeats", "1")
        p = self.c.cli("run", "logs", str(run), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"run {run} is queued", p.stderr)
        self.assertIn(f"tunectl run logs {run} -f", p.stderr)
        bad = self.c.cli("run", "logs", str(run), "--attempt", "7", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("attempt: 7", bad.stderr)
        missing = self.c.cli("run", "logs", "999999", check=False)
        self.assertEqual(missing.returncode, 3, missing.stderr)

    def test_2b_ctrl_c_on_a_wait_says_the_baseline_keeps_running(self):
        b = self.c.json("baseline", "create", "nowhere", "--repeats", "1")["id"]
        env = dict(self.c.env, TUNECTL_SERVER=self.c.addr)
        p = subprocess.Popen([os.path.join(BIN, "tunectl"), "baseline", "show", str(b), "--wait"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(1.5)  # waiting by now: the run has no agent to go to
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 130, err)
        self.assertIn(f"baseline {b} keeps running on the server", err)
        self.assertIn(f"tunectl baseline show {b} --wait", err)
        self.assertEqual(self.c.json("baseline", "show", str(b))["state"], "running")

    def test_3_an_agent_that_is_gone_is_named(self):
        b = self.c.json("baseline", "create", "ticks", "--repeats", "1")
        self.c.cli("baseline", "show", str(b["id"]), "--wait", "--timeout", "2m")
        run = self.run_of(b["id"])["id"]
        self.c.agents["n1"].terminate()
        self.c.agents["n1"].wait(timeout=30)
        self.c.wait_for(lambda: not any(a["connected"] for a in self.c.items("agent", "list")),
                        what="n1 disconnected")
        p = self.c.cli("run", "logs", str(run), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("agent n1, which is not connected", p.stderr)
        self.assertIn(f"tunectl run show {run}", p.stderr)


if __name__ == "__main__":
    unittest.main()
