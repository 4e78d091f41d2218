#!/usr/bin/env python3
"""What the token check and TLS cost a CLI call, side by side in one run.

Starts two embedded tunectl-servers with the real binaries (tests/e2e/cluster.py): the default
(TLS with its own CA, token checked on every call) and one with --insecure (plaintext, token still
checked). Then, alternating between them, times whole CLI processes (`tunectl auth whoami`, the
cheapest authorised call, and `tunectl workload list`): process start, config and CA read,
TLS handshake, the server's token lookup (one indexed SELECT) and the answer. It also times a
refused call (no token: the refusal is written to the audit trail before the answer).
Reports the median per call for each, median of --reps rounds.

  python3 bench/cli_transport.py --bin-dir build [--calls 30] [--reps 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    os.environ["TUNECTL_BIN_DIR"] = os.path.abspath(args.bin_dir)
    import cluster  # noqa: E402 (reads TUNECTL_BIN_DIR)

    tls = cluster.Cluster()
    plain = cluster.Cluster(server_args=("--insecure",))
    try:
        cli = os.path.join(cluster.BIN, "tunectl")

        def one(c, argv, anonymous=False):
            env = dict(c.env, TUNECTL_SERVER=c.addr)
            if anonymous:
                env["TUNECTL_CONFIG"] = os.devnull
                if c is tls:  # still trust the server's CA: only the token is missing
                    env["TUNECTL_CA"] = os.path.join(c.dir, "data", "tls", "ca.pem")
            t0 = time.perf_counter()
            p = subprocess.run([cli, *argv], env=env, capture_output=True)
            ms = (time.perf_counter() - t0) * 1000
            ok = p.returncode == (5 if anonymous else 0)
            if not ok:
                raise SystemExit(f"{argv} exited {p.returncode}: {p.stderr.decode()}")
            return ms

        cases = [("auth whoami", ["auth", "whoami"], False),
                 ("workload list", ["workload", "list"], False),
                 ("refused (no token)", ["workload", "list"], True)]
        rounds = {(name, which): [] for name, _, _ in cases for which in ("tls", "plain")}
        for _ in range(args.reps):
            for name, argv, anon in cases:
                per = {"tls": [], "plain": []}
                for _ in range(args.calls):  # alternate: the machine's noise hits both alike
                    per["tls"].append(one(tls, argv, anon))
                    per["plain"].append(one(plain, argv, anon))
                for which in per:
                    rounds[(name, which)].append(statistics.median(per[which]))
        print(f"| call | TLS + token (ms) | --insecure + token (ms) | ratio |")
        print(f"|---|---|---|---|")
        for name, _, _ in cases:
            t = statistics.median(rounds[(name, "tls")])
            p = statistics.median(rounds[(name, "plain")])
            print(f"| {name} | {t:.1f} | {p:.1f} | {t / p:.2f} |")
    finally:
        tls.close()
        plain.close()


if __name__ == "__main__":
    main()
