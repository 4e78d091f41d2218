"""End to end, outages injected into the real binaries (issue 11), each bounded in time: the
server killed with SIGKILL mid-run and restarted; PostgreSQL frozen (SIGSTOP) and stopped for
20 s mid-run; an agent paused (SIGSTOP) past its lease, then resumed; a half-open connection
between agent and server; a node that cannot create its run directories. In each: every sample
the job printed is stored exactly once for the attempt that counts, no run stays non-terminal,
no job runs twice at once, and the user is told what is down."""
import json
import os
import signal
import subprocess
import time
import unittest

from cluster import BIN, Cluster, BlackholeProxy, metric_lines

JOB = r'''
import os, sys, time
steps, every = int(sys.argv[1]), float(sys.argv[2])
book = os.environ["OUTAGE_BOOK"]
with open(book, "a+") as f:  # a copy that finds an earlier copy alive records the overlap
    f.seek(0)
    for line in f.read().split():
        try:
            with open(f"/proc/{int(line)}/stat") as st:
                if ") Z " not in st.read():
                    f.write(f"overlap:{line}\n")
        except (OSError, ValueError):
            pass
    f.write(f"{os.getpid()}\n")
for step in range(1, steps + 1):
    try:
        print(f"step {step} samples/s: {1000 + step % 3:.1f}", flush=True)
    except OSError:
        pass
    time.sleep(every)
'''

SPEC = """
name: {name}
command: ["python3", "{job}", "{{steps}}", "{{every}}"]
params:
  steps: {{type: int, default: {steps}, min: 1}}
  every: {{type: float, default: 0.1, min: 0.001}}
metrics:
  samples_per_s: {{pattern: 'samples/s: ([0-9.]+)', better: higher, role: primary}}
env: {{OUTAGE_BOOK: "{book}"}}
run: {{repeats: 1, warmup_steps: 0, timeout: 5m, selector: {{pool: cpu}}}}
"""
PATTERN = [r"samples/s: ([0-9.]+)"]


class OutagesE2E(unittest.TestCase):
    """Each test brings its own cluster: an outage must not leak into the next test."""

    def cluster(self, steps, name="job", agent_timeout=20, start_agent=True):
        c = Cluster(agent_timeout=agent_timeout)
        self.addCleanup(c.close)
        job = c.write("job.py", JOB)
        self.book = os.path.join(c.dir, "book")
        c.cli("workload", "apply", "-f",
              c.write(f"{name}.yaml", SPEC.format(name=name, job=job, steps=steps, book=self.book)))
        if start_agent:
            c.start_agent("node-1", slots=1)
        return c

    def runs(self, c, bid):
        """The baseline's runs; while the database is still coming back (the server says so, exit
        4, and fails fast) the caller's wait loop asks again, as the message tells a user to."""
        p = c.cli("run", "list", "--baseline", str(bid), "-o", "json", check=False)
        if p.returncode == 4 and "database unavailable" in p.stderr:
            return [{"state": "database unavailable", "samples": 0, "attempt": 0}]
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["items"]

    def start(self, c, repeats=1, name="job"):
        bid = int(c.cli("baseline", "create", "--workload", name, "--repeats", str(repeats)).stdout)
        c.wait_for(lambda: any(r["state"] == "running" and r["samples"] > 0
                               for r in self.runs(c, bid)),
                   timeout=60, what="a run with stored samples")
        return bid

    def finish(self, c, bid, timeout=180):
        c.wait_for(lambda: all(r["state"] in ("succeeded", "failed", "cancelled", "lost")
                               for r in self.runs(c, bid)),
                   timeout=timeout, what=f"every run of baseline {bid} to end")
        return self.runs(c, bid)

    def assert_exactly_once(self, c, runs):
        """Stored samples == the lines the counted attempt printed, read from its output.log."""
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            log = os.path.join(c.runs_dir(r["agent"]), f"{r['id']}-{r['attempt']}", "output.log")
            printed = metric_lines(log, PATTERN, [])
            self.assertGreater(printed, 0, r)
            self.assertEqual(r["samples"], printed, f"run {r['id']}: stored vs printed")

    def assert_never_twice(self):
        with open(self.book) as f:
            book = f.read()
        self.assertNotIn("overlap", book, book)

    def test_a_server_killed_mid_run_restarts_and_the_run_is_stored_once(self):
        c = self.cluster(steps=120)
        bid = self.start(c)
        in_flight = [r["id"] for r in self.runs(c, bid) if r["state"] == "running"]
        c.server.kill()  # SIGKILL: no goodbye to the agent, the database left running
        c.server.wait(timeout=20)
        time.sleep(3)  # the job keeps printing; the agent keeps its batches
        c.start_server()
        runs = self.finish(c, bid)
        self.assert_exactly_once(c, runs)
        self.assertEqual([r["attempt"] for r in runs if r["id"] in in_flight], [1] * len(in_flight))
        self.assert_never_twice()

    def test_a_frozen_database_fails_requests_fast_and_the_server_recovers(self):
        c = self.cluster(steps=150)
        bid = self.start(c)
        c.pg_signal(signal.SIGSTOP)
        try:
            time.sleep(5)  # the health probe notices within its 3 s bound
            t0 = time.time()
            status, body = c.http_get("/healthz")
            self.assertEqual(status, 503, body)
            self.assertIn("database unreachable", body)
            p = c.cli("baseline", "list", check=False)
            self.assertLess(time.time() - t0, 10, "a request hung on the frozen database")
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("database unavailable", p.stderr)
            self.assertNotIn("is it running", p.stderr)
            time.sleep(8)
        finally:
            c.pg_signal(signal.SIGCONT)
        runs = self.finish(c, bid)
        self.assert_exactly_once(c, runs)
        c.wait_for(lambda: c.http_get("/healthz")[0] == 200, timeout=30, what="/healthz ok")
        self.assert_never_twice()

    def test_a_database_stopped_for_20s_is_named_and_the_server_recovers(self):
        c = self.cluster(steps=200)
        bid = self.start(c)
        c.pg_stop()
        try:
            time.sleep(3)
            p = c.cli("baseline", "list", check=False)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("database unavailable", p.stderr)
            self.assertNotIn("is it running", p.stderr)
            time.sleep(17)
        finally:
            c.pg_start()
        runs = self.finish(c, bid)
        self.assert_exactly_once(c, runs)
        self.assertEqual(runs[0]["attempt"], 1, runs)  # the agent was forgiven the outage
        self.assert_never_twice()
        self.assertEqual(c.cli("baseline", "list").returncode, 0)

    def test_an_agent_paused_past_its_lease_loses_its_run_once(self):
        c = self.cluster(steps=150, agent_timeout=6)
        bid = self.start(c)
        agent = c.agents["node-1"]
        agent.send_signal(signal.SIGSTOP)
        try:
            # Its session is closed and its run requeued once (the only agent: it waits queued).
            c.wait_for(lambda: self.runs(c, bid)[0]["attempt"] == 2, timeout=40,
                       what="the paused agent's run to be requeued")
            time.sleep(2)
            self.assertEqual(self.runs(c, bid)[0]["attempt"], 2, "requeued more than once")
        finally:
            agent.send_signal(signal.SIGCONT)
        runs = self.finish(c, bid)
        self.assertEqual(runs[0]["attempt"], 2, runs)  # one infrastructure retry, not three
        # The first attempt's job was stopped before the second started, and its late batches
        # were refused: the stored samples are exactly what attempt 2 printed.
        self.assert_exactly_once(c, runs)
        self.assert_never_twice()
        self.assertIn("gave up on it while this agent was away", c.log("agent-node-1.log"))

    def test_a_half_open_connection_is_noticed_and_the_run_finishes(self):
        c = self.cluster(steps=300, start_agent=False)
        proxy = BlackholeProxy(c.port)
        self.addCleanup(proxy.close)
        c.start_agent("node-1", slots=1, server=proxy.addr)
        bid = self.start(c)
        proxy.blackhole()  # the agent's stream: open on both ends, nothing gets through
        c.wait_for(lambda: "disconnected" in c.log("server.log"), timeout=40,
                   what="the server to drop the dead session (keepalive)")
        c.wait_for(lambda: c.log("agent-node-1.log").count("connected to") >= 2, timeout=60,
                   what="the agent to reconnect on a new connection")
        runs = self.finish(c, bid)
        self.assert_exactly_once(c, runs)
        self.assert_never_twice()

    def test_a_node_that_cannot_create_run_directories_sends_its_runs_elsewhere(self):
        c = self.cluster(steps=20, start_agent=False)
        # The broken node: its runs directory takes the health check's file, but every run
        # directory name it will need is already taken by a file.
        broken = c.runs_dir("broken")
        os.makedirs(broken)
        top = max([r["id"] for r in c.items("run", "list")] + [0])
        for rid in range(top + 1, top + 20):
            open(os.path.join(broken, f"{rid}-1"), "w").close()
        c.start_agent("broken", slots=1)
        bid = int(c.cli("baseline", "create", "--workload", "job", "--repeats", "3").stdout)
        c.wait_for(lambda: any(r["attempt"] == 2 for r in self.runs(c, bid)), timeout=60,
                   what="a run the broken node could not start to be retried")
        c.wait_for(lambda: "could not run here" in ({a["name"]: a for a in c.items("agent", "list")}
                   ["broken"]["unhealthy"] or ""), timeout=20, what="the broken node to say why")
        c.start_agent("node-1", slots=1)
        runs = self.finish(c, bid)
        self.assertEqual(sorted(r["state"] for r in runs), ["succeeded"] * 3, runs)
        self.assertEqual({r["agent"] for r in runs}, {"node-1"}, runs)
        self.assert_exactly_once(c, runs)
        b = c.json("baseline", "show", str(bid))
        self.assertEqual(b["runs"]["succeeded"], 3, b)


if __name__ == "__main__":
    unittest.main(verbosity=2)
