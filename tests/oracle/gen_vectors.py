#!/usr/bin/python3
"""Generates tests/oracle/vectors.json: reference values computed with scipy, independently of
tunectl's C++ statistics. Run with Debian's python3 (apt install python3-scipy):

    /usr/bin/python3 tests/oracle/gen_vectors.py > tests/oracle/vectors.json
"""
import json
import math

import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(20261202)
out = {"scipy_version": scipy.__version__, "t_cdf": [], "t_quantile": [], "welch": [],
       "verdict": [], "mannwhitney": [], "adjust": [], "bootstrap": []}

for df in [1, 2, 3.5, 5, 9.7, 30, 200]:
    for t in [-6, -2.5, -1, -0.1, 0, 0.3, 1.7, 3, 12]:
        out["t_cdf"].append({"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))})
    for p in [0.001, 0.025, 0.05, 0.1, 0.5, 0.9, 0.95, 0.975, 0.999]:
        out["t_quantile"].append({"p": p, "df": df, "q": float(stats.t.ppf(p, df))})


def welch(x, y, alpha=0.05):
    x, y = np.asarray(x, float), np.asarray(y, float)
    res = stats.ttest_ind(y, x, equal_var=False)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    se = math.sqrt(vx + vy)
    d = y.mean() - x.mean()
    q = stats.t.ppf(1 - alpha / 2, df)
    return {"t": float(res.statistic), "p": float(res.pvalue), "df": float(df),
            "diff": float(d), "lo": float(d - q * se), "hi": float(d + q * se)}


for nx, ny, shift, sx, sy in [(5, 5, 0.0, 1, 1), (4, 7, 0.5, 1, 2), (10, 10, 2.0, 0.3, 0.3),
                              (3, 3, -1.0, 0.1, 1.5), (20, 12, 0.05, 1, 1), (6, 6, 8.0, 1, 1)]:
    x = rng.normal(10, sx, nx)
    y = rng.normal(10 + shift, sy, ny)
    w = welch(x, y)
    out["welch"].append({"x": x.tolist(), "y": y.tolist(), **w})


def decide(c, v, min_effect, better, role, tolerance, alpha=0.05, margin=0.5):
    """tunectl's verdict rules (README: Experiments and verdicts), recomputed here with scipy:
    one CI d ± t(1-alpha/2, df)·se on logs; improved when its near end is past margin·δ and the
    estimate is at least δ; unchanged when it lies within ±δ; guardrails non-inferior when the
    worsening's upper bound stays within the tolerance."""
    lc, lv = np.log(c), np.log(v)
    w = welch(lc, lv, alpha)
    d, se, df = w["diff"], (w["hi"] - w["diff"]) / stats.t.ppf(1 - alpha / 2, w["df"]), w["df"]
    b = stats.t.ppf(1 - alpha / 2, df)
    m = math.log1p(min_effect)
    higher = better == "higher"
    dg = d if higher else -d
    lo_g, hi_g = dg - b * se, dg + b * se
    if lo_g >= margin * m and dg >= m:
        decision = "improved"
    elif hi_g <= -margin * m and -dg >= m:
        decision = "regressed"
    elif d - b * se >= -m and d + b * se <= m:
        decision = "unchanged"
    else:
        decision = "inconclusive"
    guard = ""
    if role == "guardrail":
        allowed = math.log1p(tolerance) if tolerance > 0 else m
        worst, least = -dg + b * se, -dg - b * se
        guard = "pass" if worst < allowed else "fail" if least > allowed else "inconclusive"
    b90 = stats.t.ppf(1 - alpha, df)
    return {"ratio": math.exp(d), "ci_low": math.exp(d - b * se), "ci_high": math.exp(d + b * se),
            "ci90_low": math.exp(d - b90 * se), "ci90_high": math.exp(d + b90 * se),
            "p": w["p"], "decision": decision, "guardrail": guard}


cases = [
    # name, control level, variant level, cv, n, min_effect, better, role, tolerance
    ("clear_improvement", 2400, 5500, 0.02, 5, 0.03, "higher", "primary", 0),
    ("clear_regression", 2400, 2000, 0.02, 5, 0.03, "higher", "primary", 0),
    ("equivalent", 2400, 2401, 0.005, 8, 0.03, "higher", "primary", 0),
    ("noisy_inconclusive", 2400, 2500, 0.2, 4, 0.03, "higher", "primary", 0),
    ("lower_is_better_improved", 13.2, 5.8, 0.03, 5, 0.03, "lower", "observed", 0),
    ("small_real_change", 100, 101, 0.002, 10, 0.03, "higher", "primary", 0),
    ("half_min_effect", 100, 101.5, 0.003, 10, 0.03, "higher", "primary", 0),
    ("guardrail_pass", 1.377, 1.378, 0.002, 5, 0.05, "lower", "guardrail", 0.01),
    ("guardrail_fail", 1.377, 1.50, 0.005, 5, 0.05, "lower", "guardrail", 0.01),
    ("guardrail_inconclusive", 1.377, 1.39, 0.03, 3, 0.05, "lower", "guardrail", 0.01),
]
for name, lc, lv, cv, n, me, better, role, tol in cases:
    c = lc * np.exp(rng.normal(0, cv, n))
    v = lv * np.exp(rng.normal(0, cv, n))
    out["verdict"].append({"name": name, "control": c.tolist(), "variant": v.tolist(),
                           "min_effect": me, "better": better, "role": role, "tolerance": tol,
                           **decide(c, v, me, better, role, tol)})

# Mann–Whitney U: scipy's method="auto" (exact for n <= 8 without ties, else asymptotic).
for nx, ny, shift, ties in [(4, 5, 0.0, False), (6, 6, 1.0, False), (8, 7, -0.7, False),
                            (3, 8, 2.0, False), (10, 12, 0.4, False), (9, 9, 0.0, True),
                            (20, 15, 0.8, False), (5, 5, 0.3, True)]:
    x = rng.normal(0, 1, nx)
    y = rng.normal(shift, 1, ny)
    if ties:
        x, y = np.round(x, 0), np.round(y, 0)
    r = stats.mannwhitneyu(x, y, alternative="two-sided", method="auto")
    out["mannwhitney"].append({"x": x.tolist(), "y": y.tolist(), "u": float(r.statistic),
                               "p": float(r.pvalue)})


def holm(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.maximum.accumulate(np.minimum(1, (m - np.arange(m)) * p[order]))
    out_ = np.empty(m)
    out_[order] = adj
    return out_


def bh(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.minimum.accumulate((np.minimum(1, m / np.arange(1, m + 1) * p[order]))[::-1])[::-1]
    out_ = np.empty(m)
    out_[order] = adj
    return out_


for p in [[0.01, 0.04, 0.03, 0.005], [0.2, 0.001, 0.05, 0.049, 0.8, 0.011], [0.5], [0.03, 0.03, 0.04]]:
    out["adjust"].append({"p": p, "holm": holm(p).tolist(), "bh": bh(p).tolist()})

# BCa bootstrap of the ratio of medians (scipy.stats.bootstrap, independent resampling).
for n, ratio, cv in [(10, 1.2, 0.05), (12, 1.0, 0.03), (15, 0.9, 0.1)]:
    x = 100 * np.exp(rng.normal(0, cv, n))
    y = 100 * ratio * np.exp(rng.normal(0, cv, n))
    res = stats.bootstrap((x, y), lambda a, b: np.median(b) / np.median(a), vectorized=False,
                          paired=False, n_resamples=20000, method="BCa", confidence_level=0.95,
                          random_state=np.random.default_rng(1))
    out["bootstrap"].append({"x": x.tolist(), "y": y.tolist(),
                             "low": float(res.confidence_interval.low),
                             "high": float(res.confidence_interval.high)})

print(json.dumps(out, indent=1))
