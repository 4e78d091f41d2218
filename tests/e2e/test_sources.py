"""End to end, metrics read beside the job's lines, with the real binaries: a real
prometheus-node-exporter scraped during the run (a counter becomes a rate: CPU-seconds per second
while the job burns a core; a gauge through the agent's --node-exporter), recorded dcgm-exporter
output served by a small HTTP server (GPU utilisation of the GPUs a selector names, averaged), an
exporter that is not there (named in the run's warnings and the baseline's failure), and
TensorBoard event files the job writes into its run directory (simple_value and tensor values at
the steps the job logged)."""
import http.server
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import unittest

from cluster import Cluster, SRC, free_port

# Debian's python3-torch (installed by scripts/bootstrap) lives beside Debian's interpreter; the
# `python3` on PATH may be another one (CI's is a pyenv build without torch).
TORCH_PYTHON = "/usr/bin/python3"

FIXTURES = os.path.join(SRC, "tests", "fixtures", "prometheus")

# A job that keeps one core busy for ~4 s and prints a step line now and then.
BURN_JOB = r'''
import time
t0 = time.time()
step = 0
while time.time() - t0 < 4.0:
    x = 0
    for i in range(200000):
        x += i * i
    step += 1
    if step % 5 == 0:
        print(f"step {step} busy {x % 7}", flush=True)
'''

# A job that writes TensorBoard event files as torch's SummaryWriter does (TFRecord framing with
# masked CRC-32C; Event{wall_time, step, summary{value{tag, simple_value}}}) and, for the second
# tag, the new-style tensor{dtype: DT_FLOAT, float_val} value; written by hand here so that the
# test does not need TensorFlow or tensorboard installed.
TB_JOB = r'''
import os, struct, time

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def masked(data):
    x = crc32c(data)
    return ((((x >> 15) | (x << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF

def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload

def event(step, values):
    body = field(1, 1, struct.pack("<d", time.time())) + field(2, 0, varint(step))
    if values is None:
        return body + field(3, 2, b"brain.Event:2")
    summary = b"".join(field(1, 2, v) for v in values)
    return body + field(5, 2, summary)

def simple(tag, v):
    return field(1, 2, tag.encode()) + field(2, 5, struct.pack("<f", v))

def tensor(tag, v):
    t = field(1, 0, varint(1)) + field(5, 2, struct.pack("<f", v))  # DT_FLOAT, packed float_val
    return field(1, 2, tag.encode()) + field(8, 2, t)

def record(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))

d = os.path.join(os.environ["TUNECTL_RUN_DIR"], "tb")
os.makedirs(d, exist_ok=True)
path = os.path.join(d, "events.out.tfevents.%010d.node.%d.0" % (time.time(), os.getpid()))
with open(path, "wb") as f:
    f.write(record(event(0, None)))
    for step in range(10, 210, 10):
        f.write(record(event(step, [simple("train/loss", 3.0 - step / 100.0),
                                    tensor("perf/tokens_per_s", 1000.0 + step)])))
        f.flush()
        time.sleep(0.05)
print("done", flush=True)
'''


class _Recorded(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


class SourcesE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tunectl-sources-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        # A real node exporter on a free loopback port (scripts/lib/nodeexp.sh, the recipe).
        cls.nodeexp = f"127.0.0.1:{free_port()}"
        env = dict(os.environ, NODEEXP_ADDR=cls.nodeexp, NODEEXP_DIR=os.path.join(cls.tmp, "ne"))
        lib = os.path.join(SRC, "scripts", "lib", "nodeexp.sh")
        subprocess.run(["bash", "-c", f"source {lib} && nodeexp_start"], env=env, check=True)
        cls.addClassCleanup(subprocess.run, ["bash", "-c", f"source {lib} && nodeexp_stop"],
                            env=env)
        # Recorded dcgm-exporter output, served as the exporter would.
        with open(os.path.join(FIXTURES, "dcgm_exporter_scrape1.txt"), "rb") as f:
            _Recorded.body = f.read()
        cls.dcgm = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
        threading.Thread(target=cls.dcgm.serve_forever, daemon=True).start()
        cls.addClassCleanup(cls.dcgm.server_close)
        cls.addClassCleanup(cls.dcgm.shutdown)
        cls.c = Cluster()
        cls.addClassCleanup(cls.c.close)
        cls.c.start_agent("node-1", slots=1, extra=(
            "--node-exporter", f"http://{cls.nodeexp}/metrics",
            "--dcgm-exporter", f"http://127.0.0.1:{cls.dcgm.server_address[1]}/metrics"))

    def baseline(self, name, spec, ok=True):
        c = self.c
        c.cli("workload", "apply", "-f", c.write(f"{name}.yaml", spec))
        p = c.cli("baseline", "create", "--workload", name, "--wait", "-o", "json", check=False)
        b = c.items("baseline", "list", "--workload", name)[0]
        self.assertEqual(b["state"], "completed" if ok else "failed", (p.stdout, p.stderr))
        runs = c.items("run", "list", "--baseline", str(b["id"]))
        metrics = []
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            metrics.append({m["metric"]: m for m in c.json("run", "show", str(r["id"]))["metrics"]})
        return p, metrics

    def test_node_exporter_counter_is_a_rate_and_dcgm_gpus_are_averaged(self):
        job = self.c.write("burn.py", BURN_JOB)
        _, metrics = self.baseline("scrape", f"""name: scrape
command: [python3, '{job}']
params:
  n: {{type: int, default: 1}}
metrics:
  steps: {{pattern: 'step (?P<value>\\d+)', better: higher, role: primary}}
  cpu_user: {{prometheus: "http://{self.nodeexp}/metrics", match: 'node_cpu_seconds_total{{mode="user"}}',
             every: 500ms, agg: sum, unit: "CPU-s/s", better: lower}}
  mem_avail: {{prometheus: node, match: node_memory_MemAvailable_bytes, every: 1s, better: higher}}
  gpu_util: {{prometheus: dcgm, match: 'DCGM_FI_DEV_GPU_UTIL{{gpu=~"0|1"}}', every: 1s, better: higher}}
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""")
        with open(os.path.join(FIXTURES, "dcgm_exporter_scrape1.txt")) as f:
            util = {}
            for line in f:
                if line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
                    gpu = line.split('gpu="')[1].split('"')[0]
                    util[gpu] = float(line.rsplit(" ", 1)[1])
        expected_util = (util["0"] + util["1"]) / 2
        ncpu = os.cpu_count()
        for m in metrics:
            # ~4 s at 500 ms: a rate from the 2nd scrape on (the first has nothing to diff against).
            self.assertGreaterEqual(m["cpu_user"]["samples"], 4, m["cpu_user"])
            # One core busy in user mode (plus whatever else this machine runs), never above all.
            self.assertGreater(m["cpu_user"]["median"], 0.3, m["cpu_user"])
            self.assertLess(m["cpu_user"]["max"], ncpu + 0.5, m["cpu_user"])
            self.assertGreaterEqual(m["mem_avail"]["samples"], 2, m["mem_avail"])
            self.assertGreater(m["mem_avail"]["median"], 1e6)
            self.assertGreaterEqual(m["gpu_util"]["samples"], 2, m["gpu_util"])
            self.assertAlmostEqual(m["gpu_util"]["median"], expected_util, places=9)

    def test_an_exporter_that_is_not_there_is_named_in_the_run_and_the_baseline(self):
        job = self.c.write("burn2.py", BURN_JOB.replace("4.0", "1.5"))
        port = free_port()  # nothing listens here
        p, metrics = self.baseline("noexp", f"""name: noexp
command: [python3, '{job}']
params:
  n: {{type: int, default: 1}}
metrics:
  steps: {{pattern: 'step (?P<value>\\d+)', better: higher, role: primary}}
  power: {{prometheus: "http://127.0.0.1:{port}/metrics", match: DCGM_FI_DEV_POWER_USAGE,
          every: 250ms, better: lower}}
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""", ok=False)
        self.assertIn("metric power has no value in any run", p.stderr)
        for m in metrics:
            self.assertEqual(m["power"]["samples"], 0)
            w = m["power"]["warnings"]
            self.assertIn(f"no scrape of http://127.0.0.1:{port}/metrics", w)
            self.assertIn("scrapes failed", w)
            self.assertIn("connect", w)

    def test_tensorboard_event_files_give_the_steps_the_job_logged(self):
        job = self.c.write("tb.py", TB_JOB)
        _, metrics = self.baseline("tb", f"""name: tb
command: [python3, '{job}']
params:
  n: {{type: int, default: 1}}
metrics:
  loss: {{tensorboard: train/loss, better: lower, role: primary}}
  tokens_per_s: {{tensorboard: perf/tokens_per_s, better: higher}}
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""")
        for m in metrics:
            self.assertEqual(m["loss"]["samples"], 20, m["loss"])
            self.assertEqual(m["tokens_per_s"]["samples"], 20, m["tokens_per_s"])
            self.assertAlmostEqual(m["loss"]["min"], 1.0, places=6)   # step 200: 3.0 - 2.0
            self.assertAlmostEqual(m["loss"]["max"], 2.9, places=6)   # step 10
            self.assertAlmostEqual(m["tokens_per_s"]["median"], 1105.0, places=3)  # steps 10..200

    def test_a_real_torch_profiler_trace_gives_step_shares_in_run_show(self):
        maker = os.path.join(SRC, "tests", "fixtures", "profile", "make_torch_trace.py")
        job = self.c.write("prof.py", f"""
import os, subprocess, sys
out = os.path.join(os.environ["TUNECTL_RUN_DIR"], "prof", "trainer.pt.trace.json")
os.makedirs(os.path.dirname(out), exist_ok=True)
subprocess.run([{TORCH_PYTHON!r}, {maker!r}, out], check=True)
for step in range(1, 6):
    print(f"step {{step}} loss {{1.0 / step}}", flush=True)
""")
        _, metrics = self.baseline("prof", f"""name: prof
command: [python3, '{job}']
params:
  n: {{type: int, default: 1}}
metrics:
  loss: {{pattern: 'step (?P<step>\\d+) loss (?P<value>[0-9.]+)', better: lower, role: primary}}
profile: torch
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""")
        for m in metrics:
            # torch.profiler on the CPU: ProfilerStep#1..#3 with a data loader that sleeps in
            # its collate function, and no GPU (its shares are absent, not 0 %).
            self.assertEqual(m["profile_step_ms"]["samples"], 3, m["profile_step_ms"])
            self.assertEqual(m["profile_dataloader_pct"]["samples"], 3)
            self.assertGreater(m["profile_dataloader_pct"]["median"], 5)
            self.assertLess(m["profile_dataloader_pct"]["median"], 100)
            self.assertNotIn("profile_kernel_pct", m)
            self.assertIn("trainer.pt.trace.json", m["profile_step_ms"]["warnings"])


if __name__ == "__main__":
    unittest.main()
