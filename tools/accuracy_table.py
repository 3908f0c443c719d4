#!/usr/bin/env python3
"""accuracy_table.py: the held-out accuracy table of docs/accuracy.md and the README.

Runs one `pipegrid validate ... --format csv` command per GPU type of docs/accuracy.md
(every row simulated as `run` simulates it) and prints, per GPU type and file,
the held-out rows and their MAPE with the simulator and with the surrogate,
then per GPU type and overall.   Usage: tools/accuracy_table.py [BIN] [-j N] [--only TYPE,...]
The Blackwell types (b200, b300, gb200, gb300) use their shipped profiles (H100's parameters
borrowed where no fit is shipped: the profile's sources say which).
"""
import csv
import io
import subprocess
import sys
import time

D = "data/validation"
MB = f"{D}/modern/mbridge_perf_summary.csv"
RUNS = [
    ("A100", [f"{D}/vtrain/ground_truth_single.csv", f"{D}/vtrain/ground_truth_multi_pp1.csv",
              f"{D}/megatron/korthikanti.csv", f"{D}/megatron/korthikanti_table4_layer.csv",
              f"{D}/pipeoffload/fig15_10.5b.csv"], "a100-80g"),
    ("H100", [f"{D}/modern/nemo_perf_summary_2407.csv", MB], "h100-sxm"),
    ("B200", [MB], "b200"),
    ("B300", [MB], "b300"),
    ("GB200", [MB], "gb200"),
    ("GB300", [MB], "gb300"),
]


def pct(x):
    return "-" if x != x else f"{100 * x:.2f} %"


def mape(rows, key):
    """Mean of key over the rows where it is a number (the surrogate has none for the
    jobs it does not model: PipeOffload's schedules, offload and LGD)."""
    errs = [e for e in (key(r) for r in rows) if e is not None]
    return sum(errs) / len(errs) if errs else float("nan")


def sim_err(r):
    return abs(float(r["error"]))


def sur_err(r):
    return abs(float(r["surrogate_ms"]) / float(r["measured_ms"]) - 1) if r["surrogate_ms"] else None


def main():
    args = sys.argv[1:]
    jobs, only = [], None
    if "-j" in args:
        k = args.index("-j")
        jobs = ["-j", args[k + 1]]
        del args[k:k + 2]
    if "--only" in args:
        k = args.index("--only")
        only = set(args[k + 1].upper().split(","))
        del args[k:k + 2]
    binary = args[0] if args else "src/pipegrid"
    print("| GPU | file | held-out rows | MAPE (simulator) | MAPE (surrogate) |")
    print("|---|---|---|---|---|", flush=True)
    every, per_type = [], []
    for gpu, files, gpu_type in RUNS:
        if only and gpu not in only:
            continue
        t0 = time.time()
        out = subprocess.run([binary, "validate", *files, "--gpu", gpu_type, "--fit-fraction", "0.4",
                              "--format", "csv", *jobs], capture_output=True, text=True, check=True).stdout
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["part"] == "holdout"]
        for stem in dict.fromkeys(r["file"] for r in rows):
            mine = [r for r in rows if r["file"] == stem]
            print(f"| {gpu} | {stem} | {len(mine)} | {pct(mape(mine, sim_err))} | {pct(mape(mine, sur_err))} |",
                  flush=True)
        per_type.append((gpu, len(rows), mape(rows, sim_err), mape(rows, sur_err), time.time() - t0))
        every += rows
    print("\n| GPU | held-out rows | MAPE (simulator) | MAPE (surrogate) | wall time |")
    print("|---|---|---|---|---|")
    for gpu, n, sim, sur, wall_s in per_type:
        print(f"| {gpu} | {n} | {pct(sim)} | {pct(sur)} | {wall_s:.0f} s |")
    print(f"\nOverall: {pct(mape(every, sim_err))} (simulator), {pct(mape(every, sur_err))} (surrogate, "
          f"over the rows it models) over {len(every)} held-out rows.")


if __name__ == "__main__":
    main()
