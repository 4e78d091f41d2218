"""End to end, built-in log formats with the real binaries: a job that prints Megatron-LM's
training_log lines gives samples/s, TFLOP/s and `lm loss` with no regex in the workload, at the
iteration the line names; one that prints Hugging Face Trainer's dict lines (not JSON) gives loss
and the final train_samples_per_second. The samples stored are the lines printed."""
import json
import os
import unittest

from cluster import Cluster

# Megatron-LM's format (core_v0.14: timestamp and --log-throughput), with ANSI colour around the
# loss as some launchers add, and a progress bar redrawn with '\r' between log lines.
MEGATRON_JOB = r'''
import sys, time
print("> building GPT model ...", flush=True)
for it in range(1, 31):
    ms = 100.0 + (it % 3)
    print(f" [2026-12-05 08:00:{it:02d}] iteration {it:8d}/{30:8d} | consumed samples: "
          f"{it * 128:12d} | elapsed time per iteration (ms): {ms:.1f} | throughput per GPU "
          f"(TFLOP/s/GPU): {231.9 + it % 2:.1f} | learning rate: {3e-4:.6E} | global batch size: "
          f"{128:5d} | \x1b[1mlm loss: {2.5 - it / 100:.6E}\x1b[0m | loss scale: 1.0 | grad norm: "
          f"{0.5:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |",
          flush=True)
    sys.stdout.write(f"\rprogress {it}/30")
    sys.stdout.write("\n")
    time.sleep(0.02)
'''

# Hugging Face Trainer's ProgressCallback: str(logs), the newer quoted-values form, and the
# final speed metrics.
HF_JOB = r'''
import time
for step in range(1, 21):
    print(str({'loss': f"{2.0 - step / 50:.4g}", 'grad_norm': f"{1.5:.4g}",
               'learning_rate': f"{5e-05:.4g}", 'epoch': f"{step / 20:.4g}"}), flush=True)
    time.sleep(0.02)
print(str({'train_runtime': 12.5, 'train_samples_per_second': 163.84,
           'train_steps_per_second': 1.6, 'train_loss': 1.8, 'epoch': 1.0}), flush=True)
'''

WORKLOADS = {
    "megatron": """name: meg
command: [python3, '{script}']
params:
  lr: {{type: float, default: 0.0003}}
metrics:
  samples_per_s: {{parser: megatron, role: primary}}
  tflops: {{parser: megatron, field: tflops_per_gpu}}
  lm_loss: {{parser: megatron}}
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""",
    "hf": """name: hf
command: [python3, '{script}']
params:
  lr: {{type: float, default: 0.0003}}
metrics:
  loss: {{parser: hf_trainer, role: primary}}
  sps: {{parser: hf_trainer, field: train_samples_per_second}}
{extra}run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
""",
}


class FormatsE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.addClassCleanup(cls.c.close)
        cls.c.start_agent("node-1", slots=2)
        for name, job, kind, extra in (
                ("meg", MEGATRON_JOB, "megatron", ""), ("hf", HF_JOB, "hf", ""),
                # the job never evaluates: its runs and the baseline say which field is missing
                ("hf-eval", HF_JOB, "hf", "  eval_loss: {parser: hf_trainer}\n")):
            script = cls.c.write(f"{name}_job.py", job)
            text = WORKLOADS[kind].format(script=script, extra=extra).replace(
                "name: hf\n", f"name: {name}\n")
            cls.c.cli("workload", "apply", "-f", cls.c.write(f"{name}.yaml", text))

    def metrics_of(self, baseline):
        runs = self.c.items("run", "list", "--baseline", str(baseline["id"]))
        self.assertEqual(len(runs), 2)
        out = []
        for r in runs:
            self.assertEqual(r["state"], "succeeded", r)
            out.append({m["metric"]: m for m in self.c.json("run", "show", str(r["id"]))["metrics"]})
        return runs, out

    def test_megatron_lines_give_samples_per_s_tflops_and_loss_with_no_regex(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "meg", "--wait",
                             "-o", "json").stdout)
        self.assertEqual(b["state"], "completed", b)
        runs, metrics = self.metrics_of(b)
        for r, m in zip(runs, metrics):
            self.assertEqual(set(m), {"samples_per_s", "tflops", "lm_loss"})
            for name in m:
                self.assertEqual(m[name]["samples"], 30, (name, m[name]))  # one per iteration
            # 128 samples per iteration of ~101 ms: ~1267 samples/s
            self.assertAlmostEqual(m["samples_per_s"]["median"], 128 * 1000 / 101.0, delta=15)
            self.assertAlmostEqual(m["tflops"]["median"], 232.4, delta=0.6)
            self.assertLess(m["lm_loss"]["median"], 2.5)
            self.assertEqual(r["samples"], 90)

    def test_hf_trainer_dict_lines_give_loss_and_samples_per_s(self):
        c = self.c
        b = json.loads(c.cli("baseline", "create", "--workload", "hf", "--wait",
                             "-o", "json").stdout)
        self.assertEqual(b["state"], "completed", b)
        runs, metrics = self.metrics_of(b)
        for r, m in zip(runs, metrics):
            self.assertEqual(m["loss"]["samples"], 20, m["loss"])
            self.assertEqual(m["sps"]["samples"], 1, m["sps"])
            self.assertAlmostEqual(m["sps"]["median"], 163.84)
            self.assertEqual(r["samples"], 21)

    def test_a_field_no_line_has_is_named_in_the_run_and_the_baselines_failure(self):
        c = self.c
        p = c.cli("baseline", "create", "--workload", "hf-eval", "--wait", "-o", "json",
                  check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("metric eval_loss has no value in any run", p.stderr)
        self.assertIn("no line of the hf_trainer format had the field eval_loss", p.stderr)
        b = c.items("baseline", "list", "--workload", "hf-eval")[0]
        for r in c.items("run", "list", "--baseline", str(b["id"])):
            m = {x["metric"]: x for x in c.json("run", "show", str(r["id"]))["metrics"]}
            self.assertEqual(m["eval_loss"]["samples"], 0)
            self.assertIn("no sample: no line of the hf_trainer format had the field eval_loss",
                          m["eval_loss"]["warnings"])

    def test_derived_tokens_tflops_and_mfu_from_megatron_iteration_time(self):
        # 7e9 parameters, global batch 128 x 4096 tokens, 5630.1 ms per iteration, 8 H100 SXM bf16:
        #   tokens/s      = 128 * 4096 * 1000 / 5630.1        = 93122.3246
        #   TFLOP/s / GPU = 6 * 7e9 * 93122.3246 / 8 / 1e12   = 488.8922
        #   MFU %         = 100 * 488.8922 / 989.4            = 49.4130
        c = self.c
        job = c.write("derived_job.py", r'''
import time
for it in range(1, 31):
    print(f" [2026-12-05 08:00:{it:02d}] iteration {it:8d}/{30:8d} | consumed samples: "
          f"{it * 128:12d} | elapsed time per iteration (ms): 5630.1 | global batch size: "
          f"{128:5d} | lm loss: {2.5 - it / 100:.6E} |", flush=True)
    time.sleep(0.02)
''')
        spec = f"""name: derived
command: [python3, '{job}']
params:
  global_batch: {{type: int, default: 128}}
  n_params: {{type: float, default: 7.0e9}}
  gpus: {{type: int, default: 8}}
metrics:
  iter_ms: {{parser: megatron, role: guardrail}}
  tokens_per_s: {{expr: "{{global_batch}} * 4096 * 1000 / iter_ms", better: higher, role: primary}}
  tflops: {{expr: "6 * {{n_params}} * tokens_per_s / {{gpus}} / 1e12", unit: TFLOP/s, better: higher}}
  mfu: {{expr: "100 * tflops / peak_tflops('h100-sxm', 'bf16')", unit: "%", better: higher}}
run: {{repeats: 2, warmup_steps: 0, selector: {{pool: cpu}}}}
"""
        bad = c.cli("workload", "apply", "-f",
                    c.write("derived-bad.yaml", spec.replace("/ iter_ms", "/ iter_msec")),
                    check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("iter_msec", bad.stderr)
        self.assertIn("its metrics: iter_ms, tokens_per_s, tflops, mfu", bad.stderr)
        c.cli("workload", "apply", "-f", c.write("derived.yaml", spec))
        b = json.loads(c.cli("baseline", "create", "--workload", "derived", "--wait",
                             "-o", "json").stdout)
        self.assertEqual(b["state"], "completed", b)
        runs, metrics = self.metrics_of(b)
        for r, m in zip(runs, metrics):
            self.assertEqual(set(m), {"iter_ms", "tokens_per_s", "tflops", "mfu"})
            for name in m:
                self.assertEqual(m[name]["samples"], 30, (name, m[name]))
            self.assertAlmostEqual(m["tokens_per_s"]["median"], 93122.3246, delta=1e-3)
            self.assertAlmostEqual(m["tflops"]["median"], 488.8922, delta=1e-4)
            self.assertAlmostEqual(m["mfu"]["median"], 49.4130, delta=1e-4)


if __name__ == "__main__":
    unittest.main()
