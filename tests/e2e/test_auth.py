"""Who may do what (issue 15), through the real server, agents and CLI over mutual TLS with a CA
made by this test: a client without a token, with a revoked token, and a viewer trying to freeze
are refused and audited; an agent token cannot call TuningService and cannot register under
another agent's name; without a token nobody receives an Assign; the actor of a change is the
token's identity. The embedded default's own CA (no set-up) is what every other e2e test runs on.
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, SRC, Cluster  # noqa: E402

DEMO = os.path.join(SRC, "examples", "workloads", "demo.yaml")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA."""
    os.makedirs(d, exist_ok=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN=e2e test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign",
            cwd=d)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                 "extendedKeyUsage=serverAuth\n"),
                      ("client", "extendedKeyUsage=clientAuth\n")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}-key.pem", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext",
                cwd=d)
    return {n: os.path.join(d, n) for n in ("ca.pem", "server.pem", "server-key.pem",
                                             "client.pem", "client-key.pem")}


class AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.pki_dir = tempfile.mkdtemp(prefix="tunectl-pki-")
        pki = make_pki(cls.pki_dir)
        cls.pki = pki
        cls.c = Cluster(server_args=("--tls-cert", pki["server.pem"], "--tls-key",
                                     pki["server-key.pem"], "--client-ca", pki["ca.pem"]))
        # Every client of this cluster presents the test's client certificate (mutual TLS).
        cls.c.extra_env.update(TUNECTL_CA=pki["ca.pem"], TUNECTL_CLIENT_CERT=pki["client.pem"],
                         TUNECTL_CLIENT_KEY=pki["client-key.pem"])

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        shutil.rmtree(cls.pki_dir, ignore_errors=True)

    def sql(self, statement):
        p = self.c.psql(statement)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def as_token(self, token, *args, **env):
        """The CLI with only this token (no context), the test's CA and client certificate."""
        e = dict(self.c.env, TUNECTL_SERVER=self.c.addr, TUNECTL_CONFIG=os.devnull, **env)
        e.pop("TUNECTL_TOKEN", None)
        if token:
            e["TUNECTL_TOKEN"] = token
        return subprocess.run([os.path.join(BIN, "tunectl"), *args], capture_output=True,
                              text=True, env=e, timeout=120)

    def refusals(self):
        rows = self.sql("SELECT actor || '|' || (detail->>'method') || '|' || (detail->>'reason') "
                        "FROM audit_events WHERE kind = 'auth.refused' ORDER BY id")
        return rows.splitlines()

    def token(self, name, role, *extra):
        out = self.c.json("token", "create", name, "--role", role, *extra)
        self.assertEqual(out["role"], role)
        self.assertTrue(out["secret"].startswith("tct_"), out)
        return out["secret"]

    def test_roles_tokens_and_agents(self):
        c = self.c
        me = c.json("auth", "whoami")
        self.assertEqual(me["role"], "admin", me)
        self.assertTrue(me["tls"], me)

        # No token: refused, and the refusal is in the audit trail.
        p = self.as_token(None, "workload", "list")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("needs a token", p.stderr)
        self.assertTrue(any(r.startswith("anonymous|/tunectl.v1.TuningService/ListWorkloads|")
                            for r in self.refusals()), self.refusals())

        # Mutual TLS: the CA alone, without the client certificate, does not get through.
        p = self.as_token(None, "workload", "list", TUNECTL_CLIENT_CERT="", TUNECTL_CLIENT_KEY="")
        self.assertEqual(p.returncode, 4, p.stderr)

        viewer = self.token("bob", "viewer")
        operator = self.token("carol", "operator")
        agent = self.token("n9", "agent")

        # The operator's change is recorded under the token's identity, whatever the client says.
        p = self.as_token(operator, "workload", "apply", "-f", DEMO, USER="mallory")
        self.assertEqual(p.returncode, 0, p.stderr)
        actors = self.sql("SELECT DISTINCT actor FROM audit_events WHERE kind LIKE 'workload%'")
        self.assertEqual(actors.split(), ["user:carol"], actors)

        # A viewer reads, but may not freeze: PERMISSION_DENIED naming the role needed, audited.
        self.assertEqual(self.as_token(viewer, "workload", "list").returncode, 0)
        p = self.as_token(viewer, "experiment", "freeze", "1")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("FreezeExperiment needs role admin", p.stderr)
        self.assertIn('"bob" has role viewer', p.stderr)
        self.assertTrue(any(r.startswith("user:bob|/tunectl.v1.TuningService/FreezeExperiment|")
                            for r in self.refusals()), self.refusals())

        # An agent token may not call TuningService.
        p = self.as_token(agent, "workload", "list")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("agent tokens may only open agent sessions", p.stderr)

        # A revoked token is refused from then on.
        c.cli("token", "revoke", "carol")
        p = self.as_token(operator, "baseline", "list")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("unknown or revoked", p.stderr)
        listed = {t["name"]: t for t in c.items("token", "list", "--all")}
        self.assertIsNotNone(listed["carol"]["revoked_at"], listed)
        self.assertNotIn("secret", listed["bob"])

        # Agents: the n9 token registers as n9, not as n8; without a token nobody gets a session.
        def agent_proc(name, token, log):
            e = dict(c.env, TUNECTL_CONFIG=os.devnull)
            e.pop("TUNECTL_TOKEN", None)
            if token:
                e["TUNECTL_TOKEN"] = token
            f = open(os.path.join(c.dir, log), "wb")
            proc = subprocess.Popen(
                [os.path.join(BIN, "tunectl-agent"), "--server", c.addr, "--name", name,
                 "--workdir", SRC, "--runs-dir", c.runs_dir(name), "--label", "pool=cpu"],
                stdout=f, stderr=subprocess.STDOUT, env=e)
            f.close()
            c.agents[f"{name}-{log}"] = proc
            return os.path.join(c.dir, log)

        impostor = agent_proc("n8", agent, "agent-impostor.log")
        anonymous = agent_proc("anon", None, "agent-anon.log")
        agent_proc("n9", agent, "agent-n9.log")
        c.wait_for(lambda: any(a["name"] == "n9" and a["connected"]
                               for a in c.items("agent", "list")), what="agent n9")
        c.wait_for(lambda: "bound to agent" in open(impostor, errors="replace").read(),
                   timeout=60, what="the impostor's refusal")
        c.wait_for(lambda: "needs a token" in open(anonymous, errors="replace").read(),
                   timeout=60, what="the anonymous agent's refusal")
        names = [a["name"] for a in c.items("agent", "list")]
        self.assertEqual(names, ["n9"], names)
        refused = self.refusals()
        self.assertTrue(any(r.startswith("agent:n9|/tunectl.v1.AgentService/Session|")
                            and "bound to agent" in r for r in refused), refused)
        self.assertTrue(any(r.startswith("anonymous|/tunectl.v1.AgentService/Session|")
                            for r in refused), refused)

        # The audit chain covers the refusals too, and still verifies.
        c.wait_for(lambda: c.json("audit", "verify")["ok"], timeout=60, what="a sealed chain")

    def test_http_endpoint_is_https_with_the_servers_certificate(self):
        import urllib.request
        c = self.c
        # cluster.http_get verifies the server against the test's CA
        self.assertEqual(c.http_get("/healthz"), (200, "ok\n"))
        with self.assertRaises(Exception):  # plain HTTP against the TLS endpoint gets no answer
            urllib.request.urlopen(f"http://127.0.0.1:{c.http_port}/healthz", timeout=10)
        with open(os.path.join(c.dir, "server.log"), errors="replace") as f:
            self.assertIn("/metrics and /healthz on HTTPS port", f.read())

    def test_z_a_lost_local_admin_context_is_replaced_and_its_token_revoked(self):
        c = self.c
        c.metrics_with("tunectl_insecure_transport 0")
        old = c.json("auth", "whoami")["name"]
        with open(c.config) as f:
            old_token = [l.split(": ", 1)[1] for l in f.read().splitlines()
                         if l.strip().startswith("token:")][0]
        os.unlink(c.config)
        c.stop_server()
        c.start_server()
        st = os.stat(c.config)
        self.assertEqual(st.st_mode & 0o777, 0o600)
        self.assertEqual(c.json("auth", "whoami")["role"], "admin")
        p = self.as_token(old_token, "workload", "list")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("unknown or revoked", p.stderr)
        tokens = [t for t in c.items("token", "list", "--all") if t["name"] == old]
        self.assertEqual([t["revoked_by"] is not None for t in tokens], [True, False], tokens)


class TransportFlagsTest(unittest.TestCase):
    def test_plaintext_only_when_asked_and_said(self):
        c = Cluster(server_args=("--insecure",))
        try:
            me = c.json("auth", "whoami")  # the local admin context has no CA: plaintext
            self.assertFalse(me["tls"], me)
            self.assertEqual(me["role"], "admin")
            c.metrics_with("tunectl_insecure_transport 1")
            with open(os.path.join(c.dir, "server.log"), errors="replace") as f:
                self.assertIn("PLAINTEXT: --insecure", f.read())
        finally:
            c.close()

    def test_an_external_database_without_tls_is_refused_before_anything_starts(self):
        for flags, says in ((["--db", "postgresql://nobody@127.0.0.1:1/x"], "--tls-cert"),
                            (["--db", "postgresql://nobody@127.0.0.1:1/x", "--tls-cert", "a.pem"],
                             "give both"),
                            (["--insecure", "--client-ca", "ca.pem"], "choose one")):
            p = subprocess.run([os.path.join(BIN, "tunectl-server"), "--listen", "127.0.0.1:0",
                                "--http", "", *flags], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(says, p.stderr)


if __name__ == "__main__":
    unittest.main()
