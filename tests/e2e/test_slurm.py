"""End to end through a real single-node Slurm (slurmctld, slurmd and munged started here from
scripts/lib/slurm.sh): tunectl-agent --executor slurm submits each run with sbatch and follows it.

- a baseline and an experiment complete through Slurm; a second job waits with Slurm's reason
  (Resources) shown in `run list`; the samples stored are the metric lines the jobs printed;
- `experiment cancel` scancels the running job: it leaves squeue's active states;
- a job requeued by `scontrol requeue` is stopped and retried as a new attempt, and the baseline
  completes;
- the agent killed (SIGKILL) while its job runs, then restarted, adopts the job by its id: the run
  finishes in its first attempt with every printed sample stored once.
Needs root (slurmd and munged run as root and munge); skipped otherwise, with the reason."""
import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from cluster import SRC, Cluster, free_port

SLURM_LIB = os.path.join(SRC, "scripts", "lib", "slurm.sh")

# 2 CPUs per job on the 2-CPU test node: Slurm runs one at a time, the next pends on Resources.
WORKLOAD = """name: {name}
command: [sh, -c, 'echo "host=$(hostname) job=$SLURM_JOB_ID"; i=1; while [ $i -le {{steps}} ];
  do echo "sps: {{level}}"; echo "{{{{\\"loss\\": 0.5, \\"step\\": $i}}}}" >&2; i=$((i+1));
  sleep 0.1; done']
params:
  level: {{type: int, default: 100, min: 1}}
  steps: {{type: int, default: {steps}, min: 1}}
metrics:
  sps: {{pattern: 'sps: ([0-9.]+)', better: higher, role: primary}}
  loss: {{json: loss, better: lower}}
run: {{repeats: {repeats}, warmup_steps: 0, selector: {{pool: slurm}}, resources: {{cpus_per_task: 2}}}}
"""


def slurm_sh(root, munge, ctld, slurmd, command):
    env = dict(os.environ, SLURM_CI_ROOT=root, MUNGE_CI_ROOT=munge,
               SLURM_CI_CTLD_PORT=str(ctld), SLURM_CI_SLURMD_PORT=str(slurmd))
    return subprocess.run(["bash", "-c", f"source {SLURM_LIB} && {command}"], env=env,
                          capture_output=True, text=True, timeout=120)


@unittest.skipUnless(os.geteuid() == 0, "a private Slurm needs root (slurmd, munged as munge)")
@unittest.skipUnless(shutil.which("slurmctld") and shutil.which("munged"),
                     "slurm-wlm and munge are not installed (scripts/bootstrap installs them)")
class SlurmE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Not under the cluster's 0700 temp folder: munged runs as the munge user.
        base = f"/tmp/tunectl-e2e-slurm-{os.getpid()}"
        cls.slurm = (f"{base}/slurm", f"{base}/munge", free_port(), free_port())
        cls.base = base
        cls.addClassCleanup(cls.stop_slurm)  # also when the set-up fails half-way
        r = slurm_sh(*cls.slurm, "slurm_ci_start")
        if r.returncode != 0:
            raise AssertionError(f"Slurm did not start:\n{r.stdout}\n{r.stderr}")
        os.environ["SLURM_CONF"] = f"{cls.slurm[0]}/slurm.conf"  # the agent and squeue below
        cls.c = Cluster()
        cls.addClassCleanup(cls.c.close)
        cls.start_agent()
        for name, steps, repeats in (("sl", 12, 3), ("sl-rq", 40, 1), ("sl-ad", 60, 1)):
            cls.c.cli("workload", "apply", "-f", cls.c.write(
                f"{name}.yaml", WORKLOAD.format(name=name, steps=steps, repeats=repeats)))

    @classmethod
    def start_agent(cls):
        cls.c.start_agent("slurm-1", labels=("pool=slurm",), slots=2,
                          extra=("--executor", "slurm", "--partition", "debug",
                                 "--slurm-poll-ms", "300"))

    @classmethod
    def stop_slurm(cls):
        slurm_sh(*cls.slurm, "slurm_ci_stop")
        os.environ.pop("SLURM_CONF", None)
        shutil.rmtree(cls.base, ignore_errors=True)

    def runs_of(self, key, id_):
        return [r for r in self.c.items("run", "list", "--limit", "0") if r[key] == id_]

    def job_state(self, job_id):
        r = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"],
                           capture_output=True, text=True)
        return r.stdout.strip()

    def assert_samples_are_the_lines_printed(self, run):
        out = os.path.join(self.c.runs_dir("slurm-1"), f"{run['id']}-{run['attempt']}",
                           "output.log")
        with open(out) as f:
            text = f.read()
        printed = text.count("sps: ") + text.count('"loss"')
        self.assertGreater(printed, 0)
        self.assertEqual(run["samples"], printed, f"run {run['id']}: stored vs printed")

    def test_1_baseline_and_experiment_through_slurm(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "sl", "-o", "json").stdout)
        # The second job pends on Resources while the first holds both CPUs, and says so.
        seen = set()

        def waiting_on_resources():
            for r in self.runs_of("baseline_id", b["id"]):
                seen.add(r["wait_reason"] or "")
            return any("Resources" in w for w in seen)
        c.wait_for(waiting_on_resources, timeout=60, what="a run waiting on Slurm's Resources")
        c.wait_for(lambda: c.json("baseline", "show", str(b["id"]))["state"] != "running",
                   timeout=180, what="baseline done")
        runs = self.runs_of("baseline_id", b["id"])
        self.assertEqual(len(runs), 3)
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            self.assertTrue(r["external_id"].isdigit(), r)
            self.assertEqual(r["node"], "localhost", r)
            self.assertIsNone(r["slot"], r)  # a cluster job has no agent slot
            self.assert_samples_are_the_lines_printed(r)
            self.assertEqual(self.job_state(r["external_id"]), "COMPLETED")
        agent = [a for a in c.items("agent", "list") if a["name"] == "slurm-1"][0]
        self.assertEqual(agent["executor"], "slurm")

        e = json.loads(c.cli("experiment", "run", "--workload", "sl", "--vary", "level=120",
                             "--repeats", "4", "--wait", "-o", "json").stdout)
        runs = self.runs_of("experiment_id", e["id"])
        self.assertGreaterEqual(len(runs), 2)
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            self.assert_samples_are_the_lines_printed(r)
        # Later runs of the experiment are pinned to the node of its first run.
        self.assertTrue(any("first run" in (r["placement"] or "") for r in runs), runs)
        shown = c.json("experiment", "show", str(e["id"]))
        self.assertEqual(shown["state"], "decided", shown)

    def test_2_cancel_scancels_the_job(self):
        c = self.c
        # The variant runs for a minute: it is the one cancelled while it runs.
        e = json.loads(c.cli("experiment", "run", "--workload", "sl", "--vary", "steps=600",
                             "--repeats", "4", "-o", "json").stdout)

        def running_job():
            rs = [r for r in self.runs_of("experiment_id", e["id"])
                  if r["state"] == "running" and r["arm"] == "variant"]
            return rs[0]["external_id"] if rs and rs[0]["external_id"] else None
        c.wait_for(running_job, timeout=90, what="a running Slurm job")
        job = running_job()
        self.assertEqual(self.job_state(job), "RUNNING")
        c.cli("experiment", "cancel", str(e["id"]))
        c.wait_for(lambda: self.job_state(job) not in ("RUNNING", "PENDING", "COMPLETING"),
                   timeout=60, what=f"job {job} gone from squeue's active states")
        self.assertEqual(self.job_state(job), "CANCELLED")
        c.wait_for(lambda: all(r["state"] not in ("running", "assigned", "queued")
                               for r in self.runs_of("experiment_id", e["id"])),
                   timeout=60, what="the experiment's runs ended")

    def test_3_a_requeued_job_is_retried_and_the_baseline_completes(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "sl-rq", "-o", "json").stdout)

        def running_job():
            rs = [r for r in self.runs_of("baseline_id", b["id"])
                  if r["state"] == "running" and r["external_id"]]
            return rs[0] if rs else None
        c.wait_for(running_job, timeout=90, what="a running Slurm job")
        first = running_job()
        time.sleep(1)
        r = subprocess.run(["scontrol", "requeue", first["external_id"]], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        c.wait_for(lambda: c.json("baseline", "show", str(b["id"]))["state"] != "running",
                   timeout=180, what="baseline done after the requeue")
        runs = self.runs_of("baseline_id", b["id"])
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["state"], "succeeded", runs[0])
        self.assertGreaterEqual(runs[0]["attempt"], 2, runs[0])
        self.assertNotEqual(runs[0]["external_id"], first["external_id"])
        self.assert_samples_are_the_lines_printed(runs[0])
        # The requeued job does not run a second time inside the first attempt.
        self.assertNotIn(self.job_state(first["external_id"]), ("RUNNING", "PENDING"))

    def test_4_a_restarted_agent_adopts_its_running_job(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "sl-ad", "-o", "json").stdout)

        def running_with_samples():
            rs = [r for r in self.runs_of("baseline_id", b["id"])
                  if r["state"] == "running" and r["samples"] > 0]
            return rs[0] if rs else None
        c.wait_for(running_with_samples, timeout=90, what="a running job with samples")
        before = running_with_samples()
        c.agents["slurm-1"].send_signal(signal.SIGKILL)
        c.agents["slurm-1"].wait()
        self.assertEqual(self.job_state(before["external_id"]), "RUNNING")  # Slurm keeps it
        time.sleep(2)
        self.start_agent()
        c.wait_for(lambda: c.json("baseline", "show", str(b["id"]))["state"] != "running",
                   timeout=180, what="baseline done after the agent's restart")
        runs = self.runs_of("baseline_id", b["id"])
        self.assertEqual(len(runs), 1)
        r = runs[0]
        self.assertEqual(r["state"], "succeeded", r)
        self.assertEqual(r["attempt"], before["attempt"], "adopted, not retried")
        self.assertEqual(r["external_id"], before["external_id"])
        self.assert_samples_are_the_lines_printed(r)
        with open(os.path.join(c.dir, "agent-slurm-1.log"), errors="replace") as f:
            self.assertIn("following its slurm job again", f.read())


if __name__ == "__main__":
    unittest.main()
