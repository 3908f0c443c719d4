#!/usr/bin/env python3
"""accuracy_table.py: the held-out accuracy table of docs/accuracy.md and the README.

Runs the three `pipegrid validate ... --format csv` commands of docs/accuracy.md
(every row simulated as `run` simulates it) and prints, per GPU type and file,
the held-out rows and their MAPE with the simulator and with the surrogate,
then the overall held-out MAPE.   Usage: tools/accuracy_table.py [BIN] [-j N]
"""
import csv
import io
import subprocess
import sys

D = "data/validation"
RUNS = [
    ("A100", [f"{D}/vtrain/ground_truth_single.csv", f"{D}/vtrain/ground_truth_multi_pp1.csv",
              f"{D}/megatron/korthikanti.csv", f"{D}/megatron/korthikanti_table4_layer.csv"], "a100-80g"),
    ("H100", [f"{D}/modern/nemo_perf_summary_2407.csv", f"{D}/modern/mbridge_perf_summary.csv"], "h100-sxm"),
    ("B200", [f"{D}/modern/mbridge_perf_summary.csv"], "b200"),
]


def main():
    args = sys.argv[1:]
    jobs = []
    if "-j" in args:
        k = args.index("-j")
        jobs = ["-j", args[k + 1]]
        del args[k:k + 2]
    binary = args[0] if args else "src/pipegrid"
    print("| GPU | file | held-out rows | MAPE (simulator) | MAPE (surrogate) |")
    print("|---|---|---|---|---|")
    total_n, total_err = 0, 0.0
    for gpu, files, gpu_type in RUNS:
        out = subprocess.run([binary, "validate", *files, "--gpu", gpu_type, "--fit-fraction", "0.4",
                              "--format", "csv", *jobs], capture_output=True, text=True, check=True).stdout
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["part"] == "holdout"]
        for stem in dict.fromkeys(r["file"] for r in rows):
            mine = [r for r in rows if r["file"] == stem]
            sim = sum(abs(float(r["error"])) for r in mine) / len(mine)
            sur = sum(abs(float(r["surrogate_ms"]) / float(r["measured_ms"]) - 1) for r in mine) / len(mine)
            print(f"| {gpu} | {stem} | {len(mine)} | {100 * sim:.2f} % | {100 * sur:.2f} % |")
            total_n += len(mine)
            total_err += sim * len(mine)
    print(f"\nOverall: {100 * total_err / total_n:.2f} % over {total_n} held-out rows (simulator).")


if __name__ == "__main__":
    main()
