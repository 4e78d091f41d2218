"""End to end, faults injected into the real binaries (issue 11): a job that prints binary garbage
and long lines of multi-byte characters on stderr does not wedge its node; a job that closes its
output and ignores SIGTERM still meets its timeout; a second agent claiming a live agent's name
is refused and told who holds it; workload files nested too deeply, too large, with duplicate keys
or a NUL are refused with a clear message, and the server stays up."""
import json
import os
import time
import unittest

from cluster import Cluster

JOB = r'''
import os, sys, time
mode = sys.argv[1]
if mode == "slow":
    # Records itself; a copy that finds an earlier copy still alive records the overlap.
    book = os.environ["FAULTS_BOOK"]
    with open(book, "a+") as f:
        f.seek(0)
        for line in f.read().split():
            try:
                with open(f"/proc/{int(line)}/stat") as st:
                    if ") Z " not in st.read():  # alive, not a zombie waiting to be reaped
                        f.write(f"overlap:{line}\n")
            except (OSError, ValueError):
                pass
        f.write(f"{os.getpid()}\n")
    for step in range(1, 61):
        try:  # lives on when its agent dies (its pipe's reader gone), as real jobs often do
            print(f"step {step} samples/s: {1000 + step % 3:.1f}", flush=True)
        except OSError:
            pass
        time.sleep(0.1)
    os._exit(0)
if mode == "garbage":
    err = sys.stderr.buffer
    err.write(bytes(range(256)) * 8 + b"\n")          # every byte value, NUL included
    err.write("\u2588".encode() * 700 + b"\n")         # a tqdm bar: 2100 bytes of 3-byte chars
    err.write(b"\xff\xfe half \xe2\x96\n")
    err.flush()
for step in range(1, 31):
    print(f"step {step} samples/s: {1000 + step % 3:.1f}", flush=True)
    time.sleep(0.01)
if mode == "garbage":
    sys.exit(3)
if mode == "mute":
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.close(1); os.close(2)
    time.sleep(120)
'''

SPEC = """
name: {name}
command: ["python3", "{job}", "{{mode}}"]
params:
  mode: {{type: enum, values: [ok, garbage, mute, slow], default: {mode}}}
metrics:
  samples_per_s: {{pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary}}
env: {{FAULTS_BOOK: "{book}"}}
run: {{repeats: 1, warmup_steps: 0, timeout: {timeout}, selector: {{pool: cpu}}}}
"""


class FaultsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.start_agent("node-1", slots=1)
        job = cls.c.write("job.py", JOB)
        cls.book = os.path.join(cls.c.dir, "book")
        for mode in ("ok", "garbage", "mute", "slow"):
            cls.c.cli("workload", "apply", "-f", cls.c.write(f"{mode}.yaml", cls.spec(mode, job)))

    @classmethod
    def spec(cls, mode, job, name=None):
        return SPEC.format(name=name or mode, job=job, mode=mode, book=cls.book,
                           timeout="60s" if mode == "slow" else "3s")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def runs_of(self, baseline_id):
        return [r for r in self.c.items("run", "list", "--limit", "0") if r.get("baseline_id") == baseline_id]

    def baseline(self, mode):
        p = self.c.cli("baseline", "create", "--workload", mode, "--repeats", "1", "--wait", "-o",
                       "json", check=False)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return json.loads(p.stdout)

    def test_binary_stderr_fails_its_run_and_the_node_keeps_working(self):
        t0 = time.time()
        b = self.baseline("garbage")
        runs = self.runs_of(b["id"])
        self.assertEqual(len(runs), 1, runs)
        self.assertEqual(runs[0]["state"], "failed", runs)
        self.assertIn("exit code 3", runs[0]["reason"])
        shown = self.c.json("run", "show", str(runs[0]["id"]))
        self.assertIn("\u2588", shown.get("stderr_tail", ""), shown)
        self.assertIn("\ufffd", shown.get("stderr_tail", ""), shown)
        self.assertLess(time.time() - t0, 60)
        # The next run on the same node runs normally.
        ok = self.baseline("ok")
        self.assertEqual(ok["state"], "completed", ok)
        # One session throughout: the bad bytes never ended the stream.
        self.assertEqual(self.c.log("agent-node-1.log").count("session with"), 0,
                         self.c.log("agent-node-1.log"))

    def test_a_job_that_closes_its_output_and_ignores_sigterm_meets_its_timeout(self):
        t0 = time.time()
        b = self.baseline("mute")
        runs = self.runs_of(b["id"])
        self.assertEqual(len(runs), 1, runs)
        self.assertEqual(runs[0]["state"], "failed", runs)
        self.assertIn("timeout", runs[0]["reason"], runs)
        self.assertLess(time.time() - t0, 60)

    def test_a_second_agent_with_a_live_agents_name_is_refused(self):
        log = os.path.join(self.c.dir, "agent-dup.log")
        import subprocess
        from cluster import BIN, SRC
        with open(log, "wb") as f:
            dup = subprocess.Popen(
                [os.path.join(BIN, "tunectl-agent"), "--server", self.c.addr, "--name", "node-1",
                 "--workdir", SRC, "--runs-dir", self.c.runs_dir("dup"), "--label", "pool=other"],
                stdout=f, stderr=subprocess.STDOUT, env=self.c.env)
        try:
            self.c.wait_for(lambda: "refused this agent" in open(log, errors="replace").read(),
                            timeout=30, what="the duplicate agent's refusal")
            text = open(log, errors="replace").read()
            self.assertIn("agent name node-1 is held by a live agent on host", text)
            agents = self.c.items("agent", "list")
            self.assertEqual([a["name"] for a in agents], ["node-1"], agents)
            self.assertEqual(agents[0]["labels"], {"pool": "cpu"}, agents)  # not overwritten
        finally:
            dup.terminate()
            dup.wait(timeout=20)

    def test_a_killed_agents_job_never_runs_twice_at_once(self):
        import signal
        p = self.c.cli("baseline", "create", "--workload", "slow", "--repeats", "1", "-o", "json")
        bid = json.loads(p.stdout)["id"]
        self.c.wait_for(lambda: any(r["state"] == "running" for r in self.runs_of(bid)),
                        timeout=60, what="the slow run to start")
        time.sleep(1)
        first = open(self.book).read().split()[0]
        self.c.agents["node-1"].send_signal(signal.SIGKILL)  # the job lives on without it
        self.c.agents["node-1"].wait(timeout=20)
        os.kill(int(first), 0)  # still running: an orphan
        self.c.start_agent("node-1", slots=1)
        self.c.wait_for(lambda: all(r["state"] in ("succeeded", "failed", "lost")
                                    for r in self.runs_of(bid)),
                        timeout=120, what="the retried run to end")
        runs = self.runs_of(bid)
        self.assertEqual(runs[0]["state"], "succeeded", runs)
        book = open(self.book).read()
        self.assertNotIn("overlap", book, book)  # the retry started only after the orphan died
        self.assertEqual(len(book.split()), 2, book)
        self.assertIn("earlier run of this agent left running", self.c.log("agent-node-1.log"))

    def apply(self, name, text):
        return self.c.cli("workload", "apply", "-f", self.c.write(name, text), check=False)

    def test_hostile_workload_files_are_refused_and_the_server_stays_up(self):
        deep = self.apply("deep.json", '{"name": ' + "[" * 50000 + "]" * 50000 + "}")
        self.assertNotEqual(deep.returncode, 0)
        self.assertNotEqual(deep.returncode, 139, "the CLI crashed")
        self.assertIn("nested more than 64 levels", deep.stderr)
        big = self.apply("big.yaml", "name: big\ndescription: " + "x" * (3 << 20) + "\n")
        self.assertNotEqual(big.returncode, 0)
        self.assertIn("allowed at most 1048576", big.stderr)
        dup = self.apply("dup.yaml", self.spec("ok", "x", name="dup") + "name: other\n")
        self.assertNotEqual(dup.returncode, 0)
        self.assertIn('key "name" appears twice', dup.stderr)
        nul = self.apply("nul.yaml", self.spec("ok", "a\\0b", name="nul"))
        self.assertNotEqual(nul.returncode, 0)
        self.assertIn("NUL character", nul.stderr)
        self.assertIsNone(self.c.server.poll(), "the server died")
        names = [w["name"] for w in self.c.items("workload", "list")]
        self.assertNotIn("big", names)
        self.assertNotIn("dup", names)


if __name__ == "__main__":
    unittest.main()
