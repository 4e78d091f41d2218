"""The verbs a user reaches for in week one (issue 16), on the real binaries: workload show,
delete (only without history), archive and unarchive; agent remove (only when disconnected, its
unfinished run requeued, not lost); run list --experiment, experiment list --state, config export
--version; each mutation in the audit trail with the token's actor. No run has to finish: a
stopped agent leaves its run to the queue.
"""
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster  # noqa: E402

# A job that runs long enough to be held by its agent when the agent stops.
SLEEPY = """name: {name}
command: ["sleep", "{{secs}}"]
params:
  secs: {{type: int, default: 120, min: 1, max: 3600}}
  workers: {{type: enum, values: ["1", "2"], default: "1"}}
metrics:
  sps: {{pattern: 'sps: ([0-9.]+)', better: higher, role: primary, min_effect: 0.03}}
run: {{repeats: 2, timeout: 10m, selector: {{pool: {pool}}}}}
"""


class VerbsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def run_cli(self, *args):
        return self.c.cli(*args, check=False)

    def apply(self, name, pool="none"):
        self.c.cli("workload", "apply", "-f", self.c.write(f"{name}.yaml",
                                                           SLEEPY.format(name=name, pool=pool)))

    def assert_refused(self, args, code, *says):
        p = self.run_cli(*args)
        self.assertEqual(p.returncode, code, f"{args}: {p.stderr}")
        for s in says:
            self.assertIn(s, p.stderr)
        return p

    def names(self, *flags):
        return [w["name"] for w in self.c.items("workload", "list", *flags)]

    def test_a_workload_without_history_is_deleted_one_with_history_archived(self):
        self.apply("fresh")
        show = self.c.json("workload", "show", "fresh")
        self.assertEqual([p["name"] for p in show["params"]], ["secs", "workers"])
        self.assertEqual(show["params"][0]["range"], "1..3600")
        self.assertEqual(show["params"][1]["range"], "1|2")
        self.assertEqual(show["metrics"][0]["role"], "primary")
        self.assertEqual(show["config_version"], 1)
        self.assertIn("repeats 2", show["run_policy"])
        self.assertEqual(show["history"], {"baselines": 0, "experiments": 0, "runs": 0,
                                           "log_entries": 0})
        self.assertIn("secs", self.run_cli("workload", "show", "fresh").stdout)
        self.assertIn("param,secs,int,120,1..3600",
                      self.run_cli("workload", "show", "fresh", "-o", "csv").stdout)
        self.assertIn("deleted", self.c.cli("workload", "delete", "fresh").stdout)
        self.assertNotIn("fresh", self.names("--all"))
        self.assert_refused(["workload", "show", "fresh"], 3, "not found")
        self.assert_refused(["workload", "delete", "fresh"], 3, "not found")

        self.apply("kept")
        self.c.cli("baseline", "create", "kept", "--repeats", "1")  # queued: no agent matches
        self.assert_refused(["workload", "delete", "kept"], 2, "1 baseline, 1 run",
                            "tunectl workload archive kept")
        self.assertEqual(self.c.json("workload", "show", "kept")["history"]["baselines"], 1)
        out = self.c.cli("workload", "archive", "kept").stdout
        self.assertIn("archived", out)
        self.assertNotIn("kept", self.names())
        archived = {w["name"]: w["archived"] for w in self.c.items("workload", "list", "--all")}
        self.assertTrue(archived["kept"])
        self.assertIn("ARCHIVED", self.run_cli("workload", "list", "--all").stdout)
        for args in (["baseline", "create", "kept"],
                     ["experiment", "run", "kept", "--vary", "workers=2"],
                     ["regress", "run", "kept", "--duration", "1m"]):
            self.assert_refused(args, 2, "workload kept is archived",
                                "tunectl workload unarchive kept")
        self.assertEqual(len(self.c.items("baseline", "list", "kept")), 1)  # history still read
        self.c.cli("workload", "unarchive", "kept")
        self.assertIn("kept", self.names())
        self.assertFalse(self.c.json("workload", "show", "kept")["archived"])
        audit = self.c.items("audit", "export", "--since", "1h")
        kinds = [e["kind"] for e in audit]
        for kind in ("workload.deleted", "workload.archived", "workload.unarchived"):
            self.assertEqual(kinds.count(kind), 1, kinds)

    def test_agent_remove_refuses_a_connected_agent_and_requeues_what_a_gone_one_held(self):
        self.apply("held", pool="verbs")
        self.c.start_agent("verbs-1", labels=("pool=verbs",), slots=1)
        bid = self.c.cli("baseline", "create", "held", "--repeats", "1").stdout.strip()
        self.c.wait_for(lambda: [r["state"] for r in self.c.items("run", "list", "--baseline",
                                                                   bid)] == ["running"],
                        what="the run to start")
        self.assert_refused(["agent", "remove", "verbs-1"], 2,
                            "agent verbs-1 is connected; stop it first")
        agent = self.c.agents.pop("verbs-1")
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
        self.c.wait_for(lambda: not [a for a in self.c.items("agent", "list")
                                     if a["name"] == "verbs-1"][0]["connected"],
                        what="the agent to be disconnected")
        out = self.c.cli("agent", "remove", "verbs-1").stdout
        self.assertIn("agent verbs-1 removed", out)
        self.assertIn("1 unfinished run(s) it held requeued", out)
        self.assertNotIn("verbs-1", [a["name"] for a in self.c.items("agent", "list")])
        runs = self.c.items("run", "list", "--baseline", bid)
        self.assertEqual([(r["state"], r["attempt"]) for r in runs], [("queued", 2)])
        self.assert_refused(["agent", "remove", "verbs-1"], 3, "not found")
        audit = self.c.items("audit", "export", "--since", "1h")
        removed = [e for e in audit if e["kind"] == "agent.removed"]
        self.assertEqual(len(removed), 1, audit)
        self.assertNotIn(removed[0]["actor"], ("", "server"))  # the token's identity

    def test_filters_and_past_config_versions(self):
        self.apply("filters")
        self.assert_refused(["experiment", "list", "--state", "done"], 2,
                            "allowed: running, measured, decided, frozen, closed, cancelled")
        self.assertEqual(self.c.items("experiment", "list", "--state", "decided", "--limit", "5"),
                         [])
        self.assert_refused(["experiment", "list", "--workload", "nope"], 3, "nope")
        self.assert_refused(["run", "list", "--experiment", "999"], 3, "experiment 999")
        self.assert_refused(["run", "list", "--experiment", "1", "--baseline", "1"], 2,
                            "give one")
        self.assertEqual(self.c.items("log", "--since", "1d"), [])
        self.assert_refused(["config", "export", "filters", "--version", "9"], 3,
                            "no config version 9")
        one = self.c.json("config", "export", "filters", "--version", "1", "--format", "json")
        self.assertEqual(one["secs"], 120)
        self.assertEqual(self.c.cli("config", "export", "filters", "--format", "env").stdout,
                         self.c.cli("config", "export", "filters", "--version", "1", "--format",
                                    "env").stdout)

    def test_help_and_completion_know_the_new_verbs(self):
        p = subprocess.run([os.path.join(BIN, "tunectl"), "experiment", "run", "--help"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("max(10, 2 x run.repeats)", p.stdout)
        script = self.c.cli("completion", "bash").stdout
        for word in ("show delete archive unarchive", "remove", "--experiment", "--state",
                     "--version", "_tunectl_ids agents"):
            self.assertIn(word, script)


if __name__ == "__main__":
    unittest.main()
