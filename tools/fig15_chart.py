#!/usr/bin/env python3
"""fig15_chart.py: PipeOffload's Figure 15 (10.5B) next to pipegrid's runs, as a table and an SVG bar chart.

Runs `pipegrid run --format json` for every bar of data/validation/pipeoffload/fig15_10.5b.csv with the
flags of tests/offload_fig15.sh (the figure's layout, recompute=lgd on every schedule, the presets for
PO-H / PO-F), prints a Markdown table (the figure's activation memory and MFU, pipegrid's, pipegrid's peak)
and writes an SVG with two panels, activation memory and MFU, a pair of bars per (schedule, sequence):
the figure's (grey) and pipegrid's (blue); an out-of-memory cell is marked OOM (pipegrid's when its peak
exceeds the A100's 80 GiB).

Usage: tools/fig15_chart.py [BIN] [--svg OUT.svg]     (default BIN src/pipegrid, OUT docs/fig15_10.5b.svg)
"""
import csv
import json
import subprocess
import sys

CSV = "data/validation/pipeoffload/fig15_10.5b.csv"
MODEL = "profiles/models/pipeoffload-10.5b.json"
GIB = 2 ** 30
A100_BYTES = 80 * GIB
COMMON = ["pp=8", "microbatches=64", "network=cluster", "cluster.gpu=a100-80g", "cluster.host_link=measured",
          "memory.capacity=1TiB", "stage.first_layers=0", "stage.last_layers=0", "recompute=lgd"]
SCHEDULES = {
    "1F1B": ["schedule=1f1b", "stage.first_layers=4", "stage.last_layers=4"],
    "1F1B-I": ["schedule=interleaved", "chunks=5"],
    "GIS": ["schedule=gis", "chunks=5"],
    "GIS-H": ["schedule=gis-h", "chunks=5"],
    "PO-H": ["schedule=gis-h", "chunks=5", "offload.preset=po-h"],
    "PO-F": ["schedule=gis-h", "chunks=5", "offload.preset=po-f"],
}
# chart geometry (px)
BAR_W, PAIR_GAP, GROUP_GAP = 9, 2, 16
PANEL_H, TOP, LEFT, BOTTOM = 170, 40, 52, 70
FIG_COLOR, PG_COLOR = "#9e9e9e", "#1f77b4"


def run(binary, sched, seq):
    args = [binary, "run", "--format", "json"]
    for kv in ["workload=hf:" + MODEL, "gpt.seq=%s" % seq] + COMMON + SCHEDULES[sched]:
        args += ["--set", kv]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    act = max(r["peak_breakdown"]["activation_bytes"] for r in j["ranks"]) / GIB
    return act, 100 * j["mfu"], j["max_peak_memory_bytes"]


def load_bars():
    with open(CSV) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return rows


def svg_panel(out, y0, title, unit, cells, key_fig, key_pg, vmax):
    out.append('<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>' % (LEFT, y0 - 12, title))
    base = y0 + PANEL_H
    for tick in range(0, int(vmax) + 1, max(1, int(vmax) // 5)):
        y = base - PANEL_H * tick / vmax
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (LEFT, LEFT + width(cells), y, y))
        out.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%d</text>' % (LEFT - 4, y + 3, tick))
    out.append('<text x="12" y="%d" font-size="10" transform="rotate(-90 12 %d)">%s</text>' %
               (y0 + PANEL_H // 2, y0 + PANEL_H // 2, unit))
    x = LEFT + GROUP_GAP // 2
    for c in cells:
        for value, color in ((c[key_fig], FIG_COLOR), (c[key_pg], PG_COLOR)):
            if value is None:
                out.append('<text x="%.1f" y="%d" font-size="8" text-anchor="middle" '
                           'transform="rotate(-90 %.1f %d)">OOM</text>' % (x + BAR_W / 2, base - 4, x + BAR_W / 2 + 3,
                                                                           base - 4))
            else:
                h = PANEL_H * min(value, vmax) / vmax
                out.append('<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%.1f</title></rect>' %
                           (x, base - h, BAR_W, h, color, value))
            x += BAR_W + PAIR_GAP
        x += GROUP_GAP
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#000"/>' % (LEFT, LEFT + width(cells), base, base))


def width(cells):
    return len(cells) * (2 * (BAR_W + PAIR_GAP) + GROUP_GAP)


def main():
    args = sys.argv[1:]
    svg_path = "docs/fig15_10.5b.svg"
    if "--svg" in args:
        k = args.index("--svg")
        svg_path = args[k + 1]
        del args[k:k + 2]
    binary = args[0] if args else "src/pipegrid"
    cells = []
    print("| schedule | sequence | activation memory: figure | pipegrid | MFU: figure | pipegrid | pipegrid's peak |")
    print("|---|---|---|---|---|---|---|")
    for r in load_bars():
        act, mfu, peak = run(binary, r["schedule"], r["seq"])
        pg_oom = peak > A100_BYTES
        fig_oom = r["activation_gb"] == "OOM"
        c = {"label": "%s %dK" % (r["schedule"], int(r["seq"]) // 1024),
             "fig_act": None if fig_oom else float(r["activation_gb"]),
             "pg_act": None if pg_oom else act,
             "fig_mfu": None if fig_oom else float(r["mfu_pct"]),
             "pg_mfu": None if pg_oom else mfu}
        cells.append(c)
        print("| %s | %s | %s | %.1f GiB | %s | %.1f %% | %.1f GiB%s |" % (
            r["schedule"], r["seq"], "OOM" if fig_oom else r["activation_gb"] + " GB", act,
            "-" if fig_oom else r["mfu_pct"] + " %", mfu, peak / GIB, ": OOM" if pg_oom else ""))
    total_w = LEFT + width(cells) + 20
    total_h = TOP + 2 * (PANEL_H + 40) + BOTTOM
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' %
           (total_w, total_h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="14" font-weight="bold">PipeOffload Figure 15, 10.5B on 8 A100s: '
           'the figure (grey) against pipegrid run (blue)</text>' % LEFT]
    acts = [v for c in cells for v in (c["fig_act"], c["pg_act"]) if v is not None]
    svg_panel(out, TOP + 20, "activation memory (GB / GiB, largest rank)", "GiB", cells, "fig_act", "pg_act",
              10 * (int(max(acts)) // 10 + 1))
    svg_panel(out, TOP + PANEL_H + 80, "MFU", "%", cells, "fig_mfu", "pg_mfu", 100)
    x = LEFT + GROUP_GAP // 2
    base = TOP + PANEL_H + 80 + PANEL_H
    for c in cells:
        cx = x + BAR_W + PAIR_GAP / 2
        out.append('<text x="%.1f" y="%d" font-size="9" text-anchor="end" transform="rotate(-60 %.1f %d)">%s</text>'
                   % (cx, base + 12, cx, base + 12, c["label"]))
        x += 2 * (BAR_W + PAIR_GAP) + GROUP_GAP
    out.append("</svg>")
    with open(svg_path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\nwrote", svg_path)


if __name__ == "__main__":
    main()
