"""The embedded PostgreSQL's hardening (issue 15), through the real server on a fresh data
directory: every login needs a password (no `trust`), the server runs as a role that is not a
superuser and cannot rewrite the tuning log or the audit trail, the socket directory is private
(a long data-dir path gets a fresh random directory under /tmp, never a predictable name; a
symlink planted where the socket directory goes is refused), and `tunectl-server token create`
makes a working token beside the running server, printing the secret only on stdout.
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, SRC, Cluster  # noqa: E402

DEMO = os.path.join(SRC, "examples", "workloads", "demo.yaml")


def socket_dir(c):
    with open(os.path.join(c.pg_dir(), "data", "postmaster.pid")) as f:
        return f.read().splitlines()[4]


class EmbeddedPgTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_every_login_needs_its_password(self):
        c = self.c
        with open(os.path.join(c.pg_dir(), "data", "pg_hba.conf")) as f:
            hba = [l for l in f.read().splitlines() if l.strip() and not l.startswith("#")]
        self.assertEqual(hba, ["local all all scram-sha-256"])
        for user in ("postgres", "tunectl_server"):
            p = c.psql("SELECT 1", user=user, passfile=os.devnull)
            self.assertNotEqual(p.returncode, 0, f"{user} logged in without a password")
            self.assertIn("password", p.stderr)
        self.assertEqual(c.psql("SELECT 1").stdout.strip(), "1")
        st = os.stat(os.path.join(c.data_dir, "pgpass"))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        # no TCP listener
        self.assertEqual(c.psql("SHOW listen_addresses").stdout.strip(), "")

    def test_the_server_role_cannot_rewrite_the_trail(self):
        c = self.c
        c.cli("workload", "apply", "-f", DEMO)
        as_server = lambda sql: c.psql(sql, user="tunectl_server")  # noqa: E731
        self.assertEqual(
            as_server("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").stdout.strip(),
            "f")
        self.assertNotEqual(as_server("SELECT count(*) FROM audit_events").stdout.strip(), "0")
        for sql in ("UPDATE tuning_log SET actor = actor",
                    "DELETE FROM audit_events",
                    "TRUNCATE tuning_log",
                    "ALTER TABLE audit_events DISABLE TRIGGER USER",
                    "SET session_replication_role = replica"):
            p = as_server(sql)
            self.assertNotEqual(p.returncode, 0, sql)
            self.assertRegex(p.stderr, "permission denied|must be owner", sql)
        # and the server says nothing is wrong with its role
        self.assertNotIn("superuser", c.log("server.log"))

    def test_socket_directory_is_private(self):
        sock = socket_dir(self.c)
        self.assertEqual(sock, os.path.join(self.c.pg_dir(), "sock"))
        st = os.lstat(sock)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)

    def test_server_token_create_beside_the_running_server(self):
        c = self.c
        p = subprocess.run([os.path.join(BIN, "tunectl-server"), "token", "create", "--name",
                            "ops-alice", "--role", "viewer", "--data-dir", c.data_dir],
                           capture_output=True, text=True, env=c.env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        secret = p.stdout.strip()
        self.assertRegex(secret, r"^tct_[0-9a-f]{64}$")
        self.assertNotIn(secret, p.stderr)
        env = dict(c.env, TUNECTL_SERVER=c.addr, TUNECTL_TOKEN=secret,
                   TUNECTL_CA=os.path.join(c.data_dir, "tls", "ca.pem"),
                   TUNECTL_CONFIG=os.devnull)
        who = subprocess.run([os.path.join(BIN, "tunectl"), "auth", "whoami", "-o", "json"],
                             capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(who.returncode, 0, who.stderr)
        self.assertIn('"ops-alice"', who.stdout)
        self.assertIn('"viewer"', who.stdout)
        listed = subprocess.run([os.path.join(BIN, "tunectl-server"), "token", "list", "-o", "json",
                                 "--data-dir", c.data_dir],
                                capture_output=True, text=True, env=c.env, timeout=120)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("ops-alice", listed.stdout)
        self.assertNotIn(secret, listed.stdout)
        doc = json.loads(listed.stdout)  # the CLI's TokenList shape (docs/output.md)
        self.assertEqual((doc["apiVersion"], doc["kind"]), ("tunectl/v1", "TokenList"))
        alice = next(t for t in doc["items"] if t["name"] == "ops-alice")
        self.assertEqual(alice["role"], "viewer")
        self.assertIsNone(alice["revoked_at"])
        bad = subprocess.run([os.path.join(BIN, "tunectl-server"), "token", "create", "--name",
                              "Bad Name", "--role", "viewer", "--data-dir", c.data_dir],
                             capture_output=True, text=True, env=c.env, timeout=120)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("Bad Name", bad.stderr)


class StoppedDataDirTest(unittest.TestCase):
    def test_server_token_create_on_a_data_dir_no_server_runs_on(self):
        base = tempfile.mkdtemp(prefix="tunectl-e2e-stopped-")
        os.chmod(base, 0o755)
        data = os.path.join(base, "data")
        server = os.path.join(BIN, "tunectl-server")
        p = subprocess.run([server, "token", "create", "--name", "first-admin", "--role", "admin",
                            "--data-dir", data], capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout.strip(), r"^tct_[0-9a-f]{64}$")
        self.assertIn("starting its PostgreSQL for this call", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(data, "pg", "data", "postmaster.pid")),
                         "the PostgreSQL started for the call is still running")
        listed = subprocess.run([server, "token", "list", "--data-dir", data], capture_output=True,
                                text=True, timeout=180)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("first-admin\tadmin", listed.stdout)


class TrustDataDirTest(unittest.TestCase):
    def test_a_data_dir_made_with_trust_is_switched_to_passwords(self):
        """What an older tunectl made: initdb -A trust, the socket in <data-dir>/pg/sock."""
        base = tempfile.mkdtemp(prefix="tunectl-e2e-trust-")
        os.chmod(base, 0o755)
        data = os.path.join(base, "data")
        pg = os.path.join(data, "pg")
        os.makedirs(os.path.join(pg, "sock"))
        os.chmod(data, 0o755)
        for d in (pg, os.path.join(pg, "sock")):
            os.chmod(d, 0o700)
        as_pg = []
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", "postgres", pg], check=True)
            as_pg = ["runuser", "-u", "postgres", "--"]
        subprocess.run([*as_pg, "/usr/lib/postgresql/15/bin/initdb", "-D",
                        os.path.join(pg, "data"), "-U", "postgres", "-A", "trust"],
                       check=True, capture_output=True, timeout=120)
        c = Cluster(data_dir=data)
        try:
            with open(os.path.join(pg, "data", "pg_hba.conf")) as f:
                self.assertNotIn(" trust", f.read())
            p = c.psql("SELECT 1", passfile=os.devnull)
            self.assertNotEqual(p.returncode, 0, "postgres logged in without a password")
            self.assertEqual(c.psql("SELECT 1").stdout.strip(), "1")
            self.assertIn("switching the embedded PostgreSQL from trust", c.log("server.log"))
        finally:
            c.close()


class LongPathTest(unittest.TestCase):
    def test_a_long_data_dir_gets_a_fresh_random_socket_directory(self):
        base = tempfile.mkdtemp(prefix="tunectl-e2e-long-")
        os.chmod(base, 0o755)
        long_dir = os.path.join(base, "d" * 60, "e" * 40)
        os.makedirs(long_dir)
        for d in (os.path.dirname(long_dir), long_dir):
            os.chmod(d, 0o755)
        c = Cluster(data_dir=os.path.join(long_dir, "data"))
        try:
            sock = socket_dir(c)
            self.assertTrue(sock.startswith("/tmp/tunectl-pg-"), sock)
            st = os.lstat(sock)
            self.assertTrue(stat.S_ISDIR(st.st_mode))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
            c.cli("workload", "apply", "-f", DEMO)
            c.stop_server()
            self.assertFalse(os.path.exists(sock), "the random socket directory outlived PG")
        finally:
            c.close()


class PlantedSymlinkTest(unittest.TestCase):
    def test_a_symlink_where_the_socket_directory_goes_is_refused(self):
        base = tempfile.mkdtemp(prefix="tunectl-e2e-plant-")
        os.chmod(base, 0o755)
        data = os.path.join(base, "data")
        os.makedirs(os.path.join(data, "pg"), mode=0o700)
        target = tempfile.mkdtemp(prefix="tunectl-e2e-target-")
        os.symlink(target, os.path.join(data, "pg", "sock"))
        p = subprocess.run([os.path.join(BIN, "tunectl-server"), "--data-dir", data, "--listen",
                            "127.0.0.1:0", "--http", "", "--admin-config",
                            os.path.join(base, "client-config")],
                           capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("symlink", p.stderr)
        self.assertIn(os.path.join(data, "pg", "sock"), p.stderr)
        self.assertEqual(os.listdir(target), [], "something was created through the symlink")


if __name__ == "__main__":
    unittest.main()
