#!/usr/bin/env python3
"""fit_flash_eff.py: fit a GPU profile's flash-attention terms to kernel measurements.

The cost model (src/model/costmodel.c, k_flash) times one flash-attention kernel of F counted FLOPs
(the causal half of the scores' MACs; the backward 2.5 times the forward) as

    t = (F (1 + flash_half_keys / keys) (1 + flash_half_head_dim / head_dim) + gemm_half_flops)
        / (peak_flops flash_eff)

where keys is the number of keys a query row meets on average (the sequence, half of it with the causal
mask).  This script fits flash_eff, flash_half_keys and flash_half_head_dim to measured forward + backward
kernel speeds (data/validation/kernels/*.csv: one row per kernel configuration, the speed as its source
counts FLOPs, which is the cost model's count), least squares on log time, peak_flops and gemm_half_flops
read from the profile.  It prints the fit and every row's error; --write replaces the three lines in the
profile (their source says what they rest on).  --check MAX_RMS_PCT fails (exit 1) when the fit's RMS error
is above it.

Usage: tools/fit_flash_eff.py PROFILE CSV [--write] [--check MAX_RMS_PCT]
"""
import csv
import math
import re
import sys

# The benchmark's FLOP count (FlashAttention-2 paper, Section 4.1): forward 4 s^2 d h per sequence
# (two GEMMs of 2 s^2 d h), halved with the causal mask; backward 2.5 times the forward (five GEMMs).
FWD_FLOPS_PER_SCORE_DIM = 4
BWD_FACTOR = 2.5
CAUSAL_FRACTION = 0.5
TERA = 1e12
# Search ranges of the two terms (keys, head dims): far wider than any kernel's prologue or softmax cost.
HALF_KEYS_MAX = 4096.0
HALF_HEAD_DIM_MAX = 512.0
GRID = 64                 # points per range and round
ROUNDS = 6                # each round narrows the ranges around the best point


def load_rows(path):
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        causal = int(r["causal"]) == 1
        s, d, h, b = (float(r[k]) for k in ("seq", "head_dim", "heads", "batch"))
        fwd = FWD_FLOPS_PER_SCORE_DIM * s * s * d * h * b * (CAUSAL_FRACTION if causal else 1.0)
        rows.append({"row": r, "fwd": fwd, "keys": s * (CAUSAL_FRACTION if causal else 1.0), "head_dim": d,
                     "tflops": float(r["tflops"])})
    return rows


def profile_value(text, key, path):
    m = re.search(r"^\s*%s:\s*\{value:\s*([0-9.eE+-]+)" % key, text, re.M)
    if not m:
        sys.exit("%s: no %s line" % (path, key))
    return float(m.group(1))


def predicted_time(row, eff, half_keys, half_dim, peak, half_flops):
    work = (1 + half_keys / row["keys"]) * (1 + half_dim / row["head_dim"])
    t = 0.0
    for flops in (row["fwd"], BWD_FACTOR * row["fwd"]):
        t += (flops * work + half_flops) / (peak * eff)
    return t


def measured_time(row):
    return (1 + BWD_FACTOR) * row["fwd"] / (row["tflops"] * TERA)


def best_eff(rows, half_keys, half_dim, peak, half_flops):
    """flash_eff minimising the squared log errors for given terms: t is proportional to 1 / eff, so the
    best log eff is the mean log ratio of predicted (at eff 1) to measured time."""
    logs = [math.log(predicted_time(r, 1.0, half_keys, half_dim, peak, half_flops) / measured_time(r)) for r in rows]
    eff = math.exp(sum(logs) / len(logs))
    err = sum((math.log(predicted_time(r, eff, half_keys, half_dim, peak, half_flops) / measured_time(r))) ** 2
              for r in rows)
    return eff, err


def fit(rows, peak, half_flops):
    lo_k, hi_k, lo_d, hi_d = 0.0, HALF_KEYS_MAX, 0.0, HALF_HEAD_DIM_MAX
    best = None
    for _ in range(ROUNDS):
        for i in range(GRID + 1):
            hk = lo_k + (hi_k - lo_k) * i / GRID
            for j in range(GRID + 1):
                hd = lo_d + (hi_d - lo_d) * j / GRID
                eff, err = best_eff(rows, hk, hd, peak, half_flops)
                if best is None or err < best[0]:
                    best = (err, eff, hk, hd)
        _, _, hk, hd = best
        step_k, step_d = 2 * (hi_k - lo_k) / GRID, 2 * (hi_d - lo_d) / GRID
        lo_k, hi_k = max(0.0, hk - step_k), hk + step_k
        lo_d, hi_d = max(0.0, hd - step_d), hd + step_d
    return best


def write_profile(path, text, values, source):
    """Replace flash_eff's line in place and put the two optional terms at the end of params."""
    new = {key: '  %s: {value: %.6g, source: "%s"}' % (key, v, source) for key, v in values.items()}
    out = []
    for line in text.split("\n"):
        m = re.match(r"^  (\w+):\s*\{value:", line)
        if m and m.group(1) == "flash_eff":
            out.append(new["flash_eff"])
        elif not (m and m.group(1) in values):
            out.append(line)
    start = next(i for i, line in enumerate(out) if line == "params:")
    end = start + 1
    while end < len(out) and out[end].startswith("  "):
        end += 1
    out[end:end] = [new["flash_half_keys"], new["flash_half_head_dim"]]
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    args = sys.argv[1:]
    write = "--write" in args
    if write:
        args.remove("--write")
    max_rms = None
    if "--check" in args:
        k = args.index("--check")
        max_rms = float(args[k + 1])
        del args[k:k + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    profile, data = args
    text = open(profile).read()
    peak = profile_value(text, "peak_flops", profile)
    half_flops = profile_value(text, "gemm_half_flops", profile)
    rows = load_rows(data)
    err, eff, hk, hd = fit(rows, peak, half_flops)
    rms = 100 * math.sqrt(err / len(rows))
    worst = 0.0
    print("causal head_dim seq  measured  fitted  error (TFLOPs/s, forward + backward)")
    for r in rows:
        t = predicted_time(r, eff, hk, hd, peak, half_flops)
        speed = (1 + BWD_FACTOR) * r["fwd"] / t / TERA
        e = 100 * (speed / r["tflops"] - 1)
        worst = max(worst, abs(e))
        print("%6s %8d %5d  %8.0f  %6.1f  %+5.1f %%" % (r["row"]["causal"], r["head_dim"], int(r["row"]["seq"]),
                                                        r["tflops"], speed, e))
    print("fit on %d rows: flash_eff %.4f, flash_half_keys %.1f, flash_half_head_dim %.2f; RMS %.1f %%, max %.1f %%"
          % (len(rows), eff, hk, hd, rms, worst))
    if write:
        source = ("fitted by 'tools/fit_flash_eff.py %s %s' to %d published kernel measurements (%s: FlashAttention-2 "
                  "forward + backward on A100 80GB SXM4, causal and not, head dim 64 and 128, sequence 512 to 16k); "
                  "RMS error %.1f %%, max %.1f %%" % (profile, data, len(rows), data, rms, worst))
        write_profile(profile, text, {"flash_eff": eff, "flash_half_keys": hk, "flash_half_head_dim": hd}, source)
        print("wrote", profile)
    if max_rms is not None and rms > max_rms:
        print("FAIL: RMS %.1f %% above %.1f %%" % (rms, max_rms))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
