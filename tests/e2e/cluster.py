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
import tempfile
import time

BIN = os.environ.get("TUNECTL_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
SRC = os.environ.get("TUNECTL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, server_args=()):
        self.server_args = tuple(server_args)  # e.g. ("--clock-offset", "6h")
        self.dir = tempfile.mkdtemp(prefix="tunectl-e2e-")
        os.chmod(self.dir, 0o755)  # the embedded PostgreSQL may run as another user
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.http_port = free_port()
        self.server = None
        self.agents = {}
        self.start_server()

    # --- processes ----------------------------------------------------------------------------
    def start_server(self, timeout=60):
        log = open(os.path.join(self.dir, "server.log"), "ab")
        port_file = os.path.join(self.dir, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.server = subprocess.Popen(
            [os.path.join(BIN, "tunectl-server"), "--data-dir", os.path.join(self.dir, "data"),
             "--listen", self.addr, "--port-file", port_file, "--agent-timeout", "20",
             "--http", f"127.0.0.1:{self.http_port}", *self.server_args],
            stdout=log, stderr=subprocess.STDOUT)
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

    def start_agent(self, name, labels=("pool=cpu",), slots=2, extra=()):
        log = open(os.path.join(self.dir, f"agent-{name}.log"), "ab")
        args = [os.path.join(BIN, "tunectl-agent"), "--server", self.addr, "--name", name,
                "--slots", str(slots), "--workdir", SRC, "--runs-dir", self.runs_dir(name),
                "--batch-ms", "200", *extra]
        for l in labels:
            args += ["--label", l]
        self.agents[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.wait_for(lambda: any(a["name"] == name and a["connected"]
                                  for a in self.json("agent", "list")), what=f"agent {name}")

    def http_get(self, path):
        """(status, body) of GET http://127.0.0.1:<http port><path> on the server."""
        import urllib.error
        import urllib.request
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=10) as r:
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

    def runs_dir(self, agent):
        return os.path.join(self.dir, "runs", agent)

    def close(self):
        for p in self.agents.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.agents.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        self.stop_server()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- helpers ------------------------------------------------------------------------------
    def cli(self, *args, check=True, stdin=None):
        env = dict(os.environ, TUNECTL_SERVER=self.addr)
        p = subprocess.run([os.path.join(BIN, "tunectl"), *args], capture_output=True, text=True,
                           env=env, input=stdin, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError(f"tunectl {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
        return p

    def json(self, *args):
        return json.loads(self.cli(*args, "-o", "json").stdout)

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
