"""End to end, the tamper-evident audit trail with the real binaries: the server seals what it
records into a hash chain; `audit verify` is OK untouched; an audit event edited as the database
superuser with the append-only trigger disabled is named (link, row, "edited") and the command
exits non-zero; a head kept with `audit head` catches a chain rebuilt after the edit; TRUNCATE is
refused; the kept head is signed with the server's Ed25519 key and a forged one is caught."""
import json
import os
import shutil
import subprocess
import unittest

from cluster import SRC, Cluster

DEMO = os.path.join(SRC, "examples/workloads/demo.yaml")


class AuditE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def sql(self, statement):
        """As the database superuser, over the embedded PostgreSQL's socket."""
        with open(os.path.join(self.c.pg_dir(), "data", "postmaster.pid")) as f:
            lines = f.read().splitlines()
        port, sockdir = lines[3], lines[4]
        psql = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
        return subprocess.run([psql, "-h", sockdir, "-p", port, "-U", "postgres", "-d", "tunectl",
                               "-v", "ON_ERROR_STOP=1", "-Atc", statement],
                              capture_output=True, text=True, timeout=60)

    def test_audit_chain(self):
        c = self.c
        c.cli("workload", "apply", "-f", DEMO)
        c.cli("goal", "set", "demo", "--metric", "samples_per_s", "--target", "1000")
        c.wait_for(lambda: c.json("audit", "verify")["pending"] == 0, timeout=30,
                   what="the sealer to seal the new audit events")
        ok = c.cli("audit", "verify")
        self.assertIn("audit chain OK", ok.stdout)
        head = c.cli("audit", "head").stdout
        kept = c.write("head.json", head)
        self.assertGreater(json.loads(head)["seq"], 0)
        self.assertEqual(c.cli("audit", "verify", "--against", kept).returncode, 0)
        # the head is signed by the server's Ed25519 key; a kept head edited by hand is caught
        signed = json.loads(head)
        self.assertEqual(len(signed["signature"]), 128)
        self.assertEqual(len(signed["public_key"]), 64)
        self.assertIn(signed["public_key"], c.cli("audit", "verify").stdout)
        forged = dict(signed, hash="0" * 64)
        p = c.cli("audit", "verify", "--against", c.write("forged.json", json.dumps(forged)),
                  check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("the kept head was altered", p.stderr)

        p = self.sql("TRUNCATE audit_events")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot be truncated", p.stderr)

        first = self.sql("SELECT min(id) FROM audit_events").stdout.strip()
        p = self.sql("BEGIN; ALTER TABLE audit_events DISABLE TRIGGER USER; "
                     f"UPDATE audit_events SET actor = 'user:mallory' WHERE id = {first}; "
                     "ALTER TABLE audit_events ENABLE TRIGGER USER; COMMIT;")
        self.assertEqual(p.returncode, 0, p.stderr)
        bad = c.cli("audit", "verify", check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("edited", bad.stderr)
        report = json.loads(c.cli("audit", "verify", "-o", "json", check=False).stdout)
        self.assertFalse(report["ok"])
        self.assertEqual(report["broken"]["source"], "audit")
        self.assertEqual(str(report["broken"]["row_id"]), first)

        # rebuilt from scratch after the edit: consistent in itself, but not the kept head
        p = self.sql("BEGIN; ALTER TABLE audit_chain DISABLE TRIGGER USER; DELETE FROM audit_chain; "
                     "ALTER TABLE audit_chain ENABLE TRIGGER USER; COMMIT;")
        self.assertEqual(p.returncode, 0, p.stderr)
        c.wait_for(lambda: json.loads(c.cli("audit", "verify", "-o", "json",
                                            check=False).stdout)["pending"] == 0,
                   timeout=30, what="the sealer to seal everything again")
        self.assertEqual(c.cli("audit", "verify", check=False).returncode, 0)  # in itself
        again = c.cli("audit", "verify", "--against", kept, check=False)
        self.assertEqual(again.returncode, 1)
        self.assertIn("differs from the kept head", again.stdout)


if __name__ == "__main__":
    unittest.main()
