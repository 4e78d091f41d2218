"""A throw-away tunectl cluster of real binaries for end-to-end tests.

tunectl-server (embedded PostgreSQL in a temp data dir, fixed free port on 127.0.0.1),
tunectl-agent processes, and a `cli()` helper that runs the real `tunectl` binary.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("TUNECTL_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SRC = os.environ.get("TUNECTL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))


# A sanitizer's report in a log (scripts/test-sanitize runs these tests on instrumented binaries):
# ASan and LSan open with "==PID==ERROR: …Sanitizer", UBSan with "file:line:col: runtime error:".
SANITIZER_REPORT = re.compile(
    r"^==\d+==ERROR: (?:AddressSanitizer|LeakSanitizer)\b|^\S+:\d+:\d+: runtime error: "
    r"|^WARNING: ThreadSanitizer:", re.M)


def sanitizer_reports(text, context=40):
    """Each sanitizer report in `text`, as the lines from its first line on (at most `context`)."""
    lines = text.splitlines()
    starts = [text.count("\n", 0, m.start()) for m in SANITIZER_REPORT.finditer(text)]
    return ["\n".join(lines[i:i + context]) for i in starts]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, server_args=(), agent_timeout=20, data_dir=None):
        self.server_args = tuple(server_args)  # e.g. ("--clock-offset", "6h")
        self.agent_timeout = agent_timeout
        self.dir = tempfile.mkdtemp(prefix="tunectl-e2e-")
        os.chmod(self.dir, 0o755)  # the embedded PostgreSQL may run as another user
        self.data_dir = data_dir or os.path.join(self.dir, "data")
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.http_port = free_port()
        # The server writes its local admin context (address, its CA, an admin token) here, and
        # the CLI and the agents read it: each cluster has its own.
        self.config = os.path.join(self.dir, "client-config")
        self.extra_env = {"TUNECTL_CONFIG": self.config}  # a test may add to it
        self.server = None
        self.agents = {}
        self.start_server()

    @property
    def env(self):
        """The environment of this cluster's processes: the test's (read when a process starts,
        so a variable a test sets later reaches the agents and their jobs) plus `extra_env`."""
        env = dict(os.environ)
        env.pop("TUNECTL_TOKEN", None)
        env.pop("TUNECTL_CA", None)
        env.update(self.extra_env)
        return env

    # --- processes ----------------------------------------------------------------------------
    def start_server(self, timeout=60):
        log = open(os.path.join(self.dir, "server.log"), "ab")
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.server = subprocess.Popen(
            [os.path.join(BIN, "tunectl-server"), "--data-dir", self.data_dir,
             "--listen", self.addr, "--port-file", port_file,
             "--agent-timeout", str(self.agent_timeout),
             "--http", f"127.0.0.1:{self.http_port}", *self.server_args],
            stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        deadline = time.time() + timeout
        while not os.path.exists(port_file):
            if self.server.poll() is not None:
                raise RuntimeError("server exited:\n" + self.log("server.log"))
            if time.time() > deadline:
                raise RuntimeError("server did not start:\n" + self.log("server.log"))
            time.sleep(0.1)

    def stop_server(self):
        if self.server and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            self.server.wait(timeout=60)

    def start_agent(self, name, labels=("pool=cpu",), slots=2, extra=(), server=None,
                    runs_dir=None):
        log = open(os.path.join(self.dir, f"agent-{name}.log"), "ab")
        args = [os.path.join(BIN, "tunectl-agent"), "--server", server or self.addr, "--name",
                name, "--slots", str(slots), "--workdir", SRC, "--runs-dir",
                runs_dir or self.runs_dir(name), "--batch-ms", "200",
                # the server's local admin context, also when --server is a proxy in between
                "--context", f"local-{self.addr}", *extra]
        for l in labels:
            args += ["--label", l]
        self.agents[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                             env=self.env)
        log.close()
        self.wait_for(lambda: any(a["name"] == name and a["connected"]
                                  for a in self.items("agent", "list")), what=f"agent {name}")

    def http_get(self, path):
        """(status, body) of GET <path> on the server's HTTP endpoint: HTTPS with the server's CA
        (<data-dir>/tls/ca.pem), or plain HTTP when the server runs --insecure."""
        import ssl
        import urllib.error
        import urllib.request
        if "--insecure" in self.server_args:
            url, ctx = f"http://127.0.0.1:{self.http_port}{path}", None
        else:
            url = f"https://127.0.0.1:{self.http_port}{path}"
            ca = self.extra_env.get("TUNECTL_CA") or os.path.join(self.data_dir, "tls", "ca.pem")
            ctx = ssl.create_default_context(cafile=ca)
        try:
            with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metrics_with(self, text, timeout=15):
        """/metrics once it contains `text`: the server answers from a snapshot of the database
        that its health probe refreshes every 2 s, so a change shows within a few seconds."""
        body = ""
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, body = self.http_get("/metrics")
            if status == 200 and text in body:
                return body
            time.sleep(0.25)
        raise AssertionError(f"/metrics did not show {text!r} within {timeout}s:\n{body}")

    # --- the embedded PostgreSQL, for outages ------------------------------------------------
    def pg_dir(self):
        return os.path.join(self.data_dir, "pg")

    def psql(self, statement, user="postgres", passfile=None):
        """One statement over the embedded PostgreSQL's socket, logged in as `user` with the
        password the server keeps in <data-dir>/pgpass (or `passfile`); the CompletedProcess."""
        with open(os.path.join(self.pg_dir(), "data", "postmaster.pid")) as f:
            lines = f.read().splitlines()
        psql = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
        env = dict(os.environ, PGPASSFILE=passfile or os.path.join(self.data_dir, "pgpass"))
        return subprocess.run([psql, "-w", "-h", lines[4], "-p", lines[3], "-U", user,
                               "-d", "tunectl", "-v", "ON_ERROR_STOP=1", "-Atc", statement],
                              capture_output=True, text=True, timeout=60, env=env)

    def pg_pids(self):
        """The embedded PostgreSQL's postmaster and every process it started."""
        with open(os.path.join(self.pg_dir(), "data", "postmaster.pid")) as f:
            master = int(f.readline())
        pids = [master]
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                            pids.append(int(d))
                except (OSError, ValueError, IndexError):
                    pass
        return pids

    def pg_signal(self, sig):
        for pid in self.pg_pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def pg_ctl(self, *args):
        pg_bin = "/usr/lib/postgresql/15/bin"
        cmd = [os.path.join(pg_bin, "pg_ctl"), "-D", os.path.join(self.pg_dir(), "data"), *args]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=90)

    def pg_stop(self):
        self.pg_ctl("-m", "fast", "-w", "stop")

    def pg_start(self):
        self.pg_ctl("-l", os.path.join(self.pg_dir(), "server.log"), "-w", "-o",
                    "-k " + os.path.join(self.pg_dir(), "sock"), "start")

    def runs_dir(self, agent):
        return os.path.join(self.dir, "runs", agent)

    def close(self):
        """Stops the processes and removes the cluster's folder; fails, keeping the folder, when
        a server or agent log holds a sanitizer report (their stderr goes only there)."""
        for p in self.agents.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.agents.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.stop_server()
        self.check_sanitizer_reports()
        if os.environ.get("TUNECTL_E2E_KEEP"):  # to read the logs of a failed test
            print(f"kept {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def check_sanitizer_reports(self):
        found = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    found += [f"{name}:\n{r}" for r in sanitizer_reports(f.read())]
        if found:
            raise AssertionError(f"sanitizer reports in the logs of {self.dir}:\n\n" +
                                 "\n\n".join(found))

    # --- helpers ------------------------------------------------------------------------------
    def cli(self, *args, check=True, stdin=None):
        env = dict(self.env, TUNECTL_SERVER=self.addr)
        p = subprocess.run([os.path.join(BIN, "tunectl"), *args], capture_output=True, text=True,
                           env=env, input=stdin, timeout=300)
        reports = sanitizer_reports(p.stderr)
        if reports:
            raise AssertionError(f"tunectl {' '.join(args)}: sanitizer report:\n" + reports[0])
        if check and p.returncode != 0:
            raise AssertionError(f"tunectl {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
        return p

    def json(self, *args):
        return json.loads(self.cli(*args, "-o", "json").stdout)

    def items(self, *args):
        """The rows of a list command: one page of a <Kind>List (docs/output.md)."""
        page = self.json(*args)
        assert list(page) == ["apiVersion", "kind", "items", "next_page_token"], page
        assert page["apiVersion"] == "tunectl/v1" and page["kind"].endswith("List"), page
        return page["items"]

    def log(self, name):
        try:
            with open(os.path.join(self.dir, name), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def wait_for(self, pred, timeout=120, what="condition"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred():
                return
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}\nserver:\n{self.log('server.log')}")

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path


def metric_lines(output_log, patterns, json_keys):
    """Counts, independently of the agent, the metric values a run printed."""
    n = 0
    with open(output_log, errors="replace") as f:
        for raw in f:
            line = raw[2:].rstrip("\n")  # "O " / "E " stream prefix
            for p in patterns:
                if re.search(p, line):
                    n += 1
            if line.lstrip().startswith("{"):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    n += sum(1 for k in json_keys if isinstance(obj.get(k), (int, float)))
    return n


class BlackholeProxy:
    """A TCP proxy on 127.0.0.1 to `target_port`. blackhole() silences every connection open at
    that moment in both directions without closing it (a half-open link: a node that vanished, a
    NAT entry that expired); connections made afterwards are forwarded again."""

    def __init__(self, target_port):
        import threading
        self._threading = threading
        self.target = target_port
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        self.conns = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                continue
            state = {"dead": False}
            self.conns.append((client, upstream, state))
            for a, b in ((client, upstream), (upstream, client)):
                self._threading.Thread(target=self._pump, args=(a, b, state), daemon=True).start()

    @staticmethod
    def _pump(src, dst, state):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                if not state["dead"]:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                return
            if state["dead"]:
                continue  # swallowed: neither side hears from the other again
            try:
                dst.sendall(data)
            except OSError:
                return

    def blackhole(self):
        for _, _, state in self.conns:
            state["dead"] = True

    def close(self):
        self.closed = True
        self.sock.close()
        for a, b, _ in self.conns:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass
