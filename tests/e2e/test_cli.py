"""The command line a performance engineer expects (issue 16), on the real binaries: an exit code
for every kind of bad input with the nearest command or flag suggested, `version`/`--version`, the
workload named positionally or with --workload, contexts, and shell completion that asks the
server for names.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, SRC, Cluster  # noqa: E402

DEMO = os.path.join(SRC, "examples", "workloads", "demo.yaml")


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.cli("workload", "apply", "-f", DEMO)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def run_cli(self, *args, **env):
        e = dict(self.c.env, TUNECTL_SERVER=self.c.addr, **env)
        return subprocess.run([os.path.join(BIN, "tunectl"), *args], capture_output=True,
                              text=True, env=e, timeout=120)

    def test_exit_codes_for_every_kind_of_bad_input(self):
        cases = [
            (["experimnet", "list"], 2, 'did you mean "experiment"?'),
            (["experiment", "run", "--varry", "num_workers=2"], 2, "did you mean --vary?"),
            (["experiment", "show", "abc"], 2, 'id: "abc" is not a valid number'),
            (["experiment", "show"], 2, "id is required"),
            (["workload", "list", "-o", "xml"], 2, "xml"),
            (["experiment", "run", "--vary", "num_workers=999"], 2, "measure one first"),
            (["goal", "set", "demo", "--metric", "nope", "--target", "1"], 2, "nope"),
            (["experiment", "show", "999999"], 3, "999999"),
            (["--server", "127.0.0.1:1", "workload", "list"], 4, "cannot reach"),
        ]
        for args, code, says in cases:
            with self.subTest(args=args):
                p = self.run_cli(*args)
                self.assertEqual(p.returncode, code, p.stderr)
                self.assertIn(says, p.stderr)
                self.assertEqual(p.stdout, "")
        p = self.run_cli("workload", "list", TUNECTL_TOKEN="tct_" + "0" * 64,
                         TUNECTL_CONFIG=os.devnull,
                         TUNECTL_CA=os.path.join(self.c.data_dir, "tls", "ca.pem"))
        self.assertEqual(p.returncode, 5, p.stderr)

    def test_alone_or_with_a_noun_it_says_what_there_is(self):
        p = self.run_cli()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("experiment", p.stdout)
        p = self.run_cli("experiment")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("freeze", p.stdout)

    def test_version_names_the_client_and_the_server(self):
        for args in (["version"], ["--version"]):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"client: tunectl \S+\nserver: tunectl-server \S+ ")
        j = self.c.json("version")
        self.assertEqual(j["client"], j["server"])
        p = self.run_cli("--server", "127.0.0.1:1", "version")
        self.assertEqual(p.returncode, 4)
        self.assertIn("client: tunectl", p.stdout)

    def test_the_workload_positional_or_with_the_flag(self):
        a = self.c.json("baseline", "list", "demo")
        b = self.c.json("baseline", "list", "--workload", "demo")
        self.assertEqual(a, b)
        p = self.run_cli("baseline", "list", "demo", "--workload", "other")
        self.assertEqual(p.returncode, 2)
        self.assertIn("workload named twice", p.stderr)
        self.assertEqual(self.c.json("config", "show", "--workload", "demo")["workload"], "demo")

    def test_contexts_list_and_use(self):
        rows = self.c.items("context", "list")
        self.assertEqual([r["current"] for r in rows], [True])
        self.assertTrue(rows[0]["token"])
        p = self.run_cli("context", "use", "nope")
        self.assertEqual(p.returncode, 3)
        self.assertIn(rows[0]["name"], p.stderr)
        self.assertEqual(self.run_cli("context", "use", rows[0]["name"]).returncode, 0)

    def complete(self, shell, words):
        """COMPREPLY for a command line being typed, with the script from `completion`."""
        script = self.run_cli("completion", shell).stdout
        line = " ".join(words)
        prog = (f"{script}\nCOMP_WORDS=({line} ''); COMP_CWORD={len(words)}; _tunectl; "
                "printf '%s\\n' \"${COMPREPLY[@]}\"")
        env = dict(self.c.env, TUNECTL_SERVER=self.c.addr,
                   PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
        p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_completion_of_commands_flags_and_names_from_the_server(self):
        self.assertIn("experiment", self.complete("bash", ["tunectl"]))
        self.assertEqual(self.complete("bash", ["tunectl", "experiment"]),
                         ["run", "show", "list", "cancel", "freeze"])
        self.assertIn("--vary", self.complete_prefix(["tunectl", "experiment", "run"], "--v"))
        self.assertEqual(self.complete("bash", ["tunectl", "baseline", "create", "--workload"]),
                         ["demo"])
        self.assertIn("num_workers=",
                      self.complete("bash", ["tunectl", "experiment", "run", "--vary"]))

    def complete_prefix(self, words, cur):
        script = self.run_cli("completion", "bash").stdout
        prog = (f"{script}\nCOMP_WORDS=({' '.join(words)} '{cur}'); COMP_CWORD={len(words)}; "
                "_tunectl; printf '%s\\n' \"${COMPREPLY[@]}\"")
        p = subprocess.run(["bash", "-c", prog], capture_output=True, text=True,
                           env=dict(self.c.env), timeout=60)
        return p.stdout.split()

    def test_zsh_gets_a_script_and_fish_is_refused(self):
        p = self.run_cli("completion", "zsh")
        self.assertEqual(p.returncode, 0)
        self.assertIn("bashcompinit", p.stdout)
        p = self.run_cli("completion", "fish")
        self.assertEqual(p.returncode, 2)
        self.assertIn("allowed: bash, zsh", p.stderr)


if __name__ == "__main__":
    unittest.main()
