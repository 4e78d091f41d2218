#!/usr/bin/env python3
"""A small demo training loop with a real data-loading stage (Python 3 standard library only).

Each batch is "read" (simulated storage latency) and "decoded" (real CPU work: SHA-256 over a
buffer, which releases the GIL) by the data loader; each step then "computes" (more SHA-256).
With num_workers=0 the main thread loads every batch itself, as PyTorch's DataLoader does; with
N workers, N threads prefetch up to N*prefetch_factor batches, so loading overlaps compute.
That makes num_workers (and prefetch_factor, at few workers) truly change samples/s, while
log_interval (DEMO_LOG_INTERVAL) only changes how often it prints.

Per log interval it prints
  step: 12 samples/s: 2011.3 step_time_ms: 15.91 data_wait_ms: 9.80
  {"loss": 2.2931, "step": 12}
Set DEMO_SLOWDOWN_FILE to a file holding a factor (e.g. 1.3) to slow data reads and every step,
as a degraded node would; the file is re-read every batch.
With TUNECTL_DURATION_S set (a tunectl stability run) it trains for that many seconds instead of
--steps, as a time-limited training job would. With DEMO_CHECKPOINT_EVERY=N it "saves a
checkpoint" (a 150 ms pause) every N steps and prints "saving checkpoint at step N" before that
step's metrics, as real trainers do; the workload's run.skip_steps leaves those steps out.
"""
import argparse
import hashlib
import itertools
import json
import math
import os
import queue
import random
import sys
import threading
import time

READ_MS = 12.0       # simulated storage latency per batch
DECODE_BYTES = 2 << 20  # hashed once per batch by the loader (CPU)
COMPUTE_BYTES = 10 << 20  # hashed once per step by the trainer (CPU)
WARMUP_STEPS = 3     # the first steps pay a one-off "compilation" cost
WARMUP_MS = 25.0


def slowdown():
    path = os.environ.get("DEMO_SLOWDOWN_FILE")
    if not path:
        return 1.0
    try:
        with open(path) as f:
            return max(0.1, float(f.read().strip() or 1.0))
    except (OSError, ValueError):
        return 1.0


def load_batch(index, buf):
    time.sleep(READ_MS * slowdown() / 1000.0)  # a degraded node reads slower too
    hashlib.sha256(buf).digest()
    return index


def loader_thread(q, next_index, lock, stop, buf):
    while not stop.is_set():
        with lock:
            i = next_index[0]
            next_index[0] += 1
        batch = load_batch(i, buf)
        while not stop.is_set():
            try:
                q.put(batch, timeout=0.1)
                break
            except queue.Full:
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--prefetch-factor", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    if args.num_workers < 0 or args.steps < 1 or args.batch_size < 1 or args.prefetch_factor < 1:
        print("error: --num-workers >= 0, --steps/--batch-size/--prefetch-factor >= 1", file=sys.stderr)
        return 2
    log_interval = int(os.environ.get("DEMO_LOG_INTERVAL", "1"))
    if log_interval < 1:
        print("error: DEMO_LOG_INTERVAL must be >= 1", file=sys.stderr)
        return 2
    duration_s = float(os.environ.get("TUNECTL_DURATION_S", "0") or 0)
    checkpoint_every = int(os.environ.get("DEMO_CHECKPOINT_EVERY", "0") or 0)
    rng = random.Random(args.seed)
    decode_buf = os.urandom(DECODE_BYTES)
    compute_buf = os.urandom(COMPUTE_BYTES)

    stop = threading.Event()
    q = None
    threads = []
    if args.num_workers > 0:
        q = queue.Queue(maxsize=args.num_workers * args.prefetch_factor)
        next_index, lock = [0], threading.Lock()
        for _ in range(args.num_workers):
            t = threading.Thread(target=loader_thread, args=(q, next_index, lock, stop, decode_buf),
                                 daemon=True)
            t.start()
            threads.append(t)

    print(f"demo trainer: num_workers={args.num_workers} prefetch_factor={args.prefetch_factor} "
          f"steps={args.steps} batch_size={args.batch_size} log_interval={log_interval}", flush=True)
    interval_start = begin = time.perf_counter()
    wait_s = 0.0
    steps = itertools.count(1) if duration_s > 0 else range(1, args.steps + 1)
    for step in steps:
        if duration_s > 0 and time.perf_counter() - begin >= duration_s:
            break
        t0 = time.perf_counter()
        if q is None:
            load_batch(step, decode_buf)
        else:
            q.get()
        t1 = time.perf_counter()
        wait_s += t1 - t0
        hashlib.sha256(compute_buf).digest()
        if step <= WARMUP_STEPS:
            time.sleep(WARMUP_MS / 1000.0)
        factor = slowdown()
        if factor > 1.0:
            time.sleep((time.perf_counter() - t0) * (factor - 1.0))
        if checkpoint_every and step % checkpoint_every == 0:
            time.sleep(0.15)
            print(f"saving checkpoint at step {step}", flush=True)
        if step % log_interval == 0 or step == args.steps:
            n = step % log_interval or log_interval
            elapsed = time.perf_counter() - interval_start
            loss = 2.0 * math.exp(-step / 40.0) + 0.5 + rng.gauss(0, 0.002)
            print(f"step: {step} samples/s: {args.batch_size * n / elapsed:.1f} "
                  f"step_time_ms: {1000 * elapsed / n:.2f} data_wait_ms: {1000 * wait_s / n:.2f}",
                  flush=True)
            print(json.dumps({"loss": round(loss, 4), "step": step}), flush=True)
            interval_start = time.perf_counter()
            wait_s = 0.0
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
