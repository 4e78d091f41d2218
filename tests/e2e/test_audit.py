"""End to end, the tamper-evident audit trail with the real binaries: the server seals what it
records into a hash chain; `audit verify` is OK untouched; an audit event edited as the database
superuser with the append-only trigger disabled is named (link, row, "edited") and the command
exits non-zero; a head kept with `audit head` catches a chain rebuilt after the edit; TRUNCATE is
refused; the kept head is signed with the server's Ed25519 key and a forged one is caught.
`audit export` writes every row as CSV and JSON, and each sealed row re-hashes from the file alone
(docs/security.md, "Export"); a viewer may not export."""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import unittest

from cluster import BIN, SRC, Cluster

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
        return self.c.psql(statement)

    def record_and_seal(self, target):
        """A workload and a goal recorded (audit events), then sealed by the server."""
        c = self.c
        c.cli("workload", "apply", "-f", DEMO)
        c.cli("goal", "set", "demo", "--metric", "samples_per_s", "--target", str(target))
        c.wait_for(lambda: c.json("audit", "verify")["pending"] == 0, timeout=30,
                   what="the sealer to seal the new audit events")

    def test_audit_chain(self):
        c = self.c
        self.record_and_seal(1000)
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

    def test_audit_export(self):
        c = self.c
        self.record_and_seal(2000)
        links = c.json("audit", "verify")["links"]

        p = c.cli("audit", "export", "--since", "2000-01-01", "-o", "csv")
        rows = list(csv.DictReader(io.StringIO(p.stdout, newline="")))
        self.assertEqual(list(rows[0]), ["seq", "source", "id", "at", "at_us", "actor", "kind",
                                         "entity", "entity_id", "workload_id", "experiment_id",
                                         "payload", "hash", "prev_hash"])
        self.assertGreaterEqual(len(rows), links)
        self.assertIn(f"exported {len(rows)} row(s)", p.stderr)
        applied = [r for r in rows if r["kind"] == "workload.created"]
        self.assertEqual(len(applied), 1, rows)
        self.assertEqual(json.loads(applied[0]["payload"])["name"], "demo")
        self.assertTrue(any(r["kind"] == "goal.set" for r in rows), rows)
        # Re-hashed from the file alone, as docs/security.md says: each link after the one before.
        prev = "0" * 64
        for i, r in enumerate(rows[:links]):
            self.assertEqual(r["seq"], str(i + 1))
            if r["source"] == "audit":
                fields = [r["at_us"], r["actor"], r["kind"], r["entity"], r["entity_id"],
                          r["payload"]]
            else:
                fields = [r["at_us"], r["workload_id"], r["experiment_id"], r["kind"],
                          r["actor"], r["payload"]]
            canonical = f"{r['source']}\n{r['id']}\n" + "".join(
                f"{len(f.encode())}:{f}\n" for f in fields)
            self.assertEqual(r["prev_hash"], prev)
            prev = hashlib.sha256((prev + "\n" + canonical).encode()).hexdigest()
            self.assertEqual(r["hash"], prev, r)
        self.assertEqual(prev, c.json("audit", "verify")["head"]["hash"])

        # JSON: an AuditEntryList of the same rows; a window that ends before them is empty
        export = json.loads(c.cli("audit", "export", "--since", "2000-01-01", "-o", "json").stdout)
        self.assertEqual((export["apiVersion"], export["kind"], export["next_page_token"]),
                         ("tunectl/v1", "AuditEntryList", None))
        items = export["items"]
        self.assertEqual([(i["source"], i["id"], i["hash"]) for i in items[:links]],
                         [(r["source"], int(r["id"]), r["hash"]) for r in rows[:links]])
        self.assertEqual(json.loads(c.cli("audit", "export", "--since", "2000-01-01", "--until",
                                          "2001-01-01", "-o", "json").stdout)["items"], [])
        table = c.cli("audit", "export", "--since", "1d").stdout
        self.assertTrue(table.startswith("SEQ"), table)
        self.assertIn("workload.created", table)

        bad = c.cli("audit", "export", "--since", "yesterday", check=False)
        self.assertEqual(bad.returncode, 2)
        self.assertIn('--since: "yesterday"', bad.stderr)
        self.assertEqual(bad.stdout, "")
        missing = c.cli("audit", "export", "-o", "csv", check=False)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("--since: required", missing.stderr)

        # the rows say who did what, token administration included: admin only
        secret = c.json("token", "create", "auditor-view", "--role", "viewer")["secret"]
        env = dict(c.env, TUNECTL_SERVER=c.addr, TUNECTL_TOKEN=secret)
        viewer = subprocess.run([os.path.join(BIN, "tunectl"), "audit",
                                 "export", "--since", "1d"], capture_output=True, text=True,
                                env=env, timeout=120)
        self.assertEqual(viewer.returncode, 5, viewer.stderr)
        self.assertIn("ExportAudit needs role admin", viewer.stderr)
        # while a viewer still verifies the chain
        verify = subprocess.run([os.path.join(BIN, "tunectl"), "audit",
                                 "verify"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(verify.returncode, 0, verify.stderr)


if __name__ == "__main__":
    unittest.main()
