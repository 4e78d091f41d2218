"""Input hardening (issue 15) through the real CLI and server: a name outside its documented
pattern and an oversize field are refused with exit 2, naming the field, the value or its size and
what is allowed, and nothing is stored; an agent with a label outside the pattern does not start.
"""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, SRC, Cluster  # noqa: E402

DEMO = os.path.join(SRC, "examples", "workloads", "demo.yaml")


class InputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.c.cli("workload", "apply", "-f", DEMO)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_a_schedule_name_outside_the_pattern_is_refused(self):
        c = self.c
        for bad in ("Nightly", "a b", "x;reboot", "n" * 64):
            p = c.cli("schedule", "create", bad, "--window", "Mon-Fri 01:00-06:00", check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("schedule name", p.stderr)
            self.assertIn("allowed: 1-63 of a-z 0-9 _ . -", p.stderr)
        self.assertEqual(c.items("schedule", "list"), [])

    def test_an_oversize_field_is_refused_naming_it_and_stores_nothing(self):
        c = self.c
        p = c.cli("hypothesis", "create", "--param", "num_workers=2", "--expect",
                  "samples_per_s +10%", "--statement", "s" * 20000, check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("statement: 20000 bytes; allowed at most 16384", p.stderr)
        self.assertEqual(c.items("hypothesis", "list"), [])

    def test_an_agent_label_outside_the_pattern_is_refused_at_start(self):
        p = subprocess.run([os.path.join(BIN, "tunectl-agent"), "--server", self.c.addr,
                            "--name", "n-bad", "--label", "gpu=H100 80GB"],
                           capture_output=True, text=True, timeout=60, env=self.c.env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('value "H100 80GB" is not a valid label value', p.stderr)


if __name__ == "__main__":
    unittest.main()
