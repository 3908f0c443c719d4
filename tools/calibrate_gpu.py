#!/usr/bin/env python3
"""calibrate_gpu.py: measure the GPU at hand for pipegrid's cost model.

Measures, with PyTorch on the current CUDA device:
  * a GPT transformer layer's F, B (input gradient only) and W (weight gradient
    only) times and the bytes F keeps for the backward, over a grid of shapes;
  * GEMM time against size -> gemm_eff, gemm_half_flops (t = (f + half) / (peak * eff),
    a least-squares line of t against f);
  * batched attention GEMMs (the legacy core) -> attn_eff; causal flash attention
    (PyTorch's scaled_dot_product_attention, forward + backward) -> flash_eff;
    a large device copy -> mem_eff;
  * back-to-back tiny kernels -> kernel_launch (host cost per launch);
  * PCIe host<->device bandwidth with pinned memory (D2H and H2D).
and writes
  OUT/gpus/<type>.yaml               the GPU type's parameters (profiles/gpus schema), every
                                     measured number with its source (device, date), the
                                     datasheet ones copied from profiles/gpus/<type>.yaml
  OUT/<type>-gpt-measured.yaml       a pipegrid profile (profiles/README.md schema) of the
                                     first grid shape, per layer
  OUT/measurements.csv               every raw measurement

Usage:  python3 tools/calibrate_gpu.py --type h100-sxm --out OUT [--quick]
Parameters of the distributed stack (coll_latency, coll_bw_eff, op_overhead, iter_overhead)
need several GPUs and a training framework: they are kept from the existing file and fitted
by `pipegrid calibrate` on measured iteration times.
"""
import argparse
import csv
import datetime
import math
import os
import re
import sys

import torch
import torch.nn.functional as F

BYTES_HALF = 2
WARMUP = 3


def timed(fn, iters):
    """Median seconds of fn() over iters runs, CUDA events around each."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return times[len(times) // 2]


class Layer:
    """A Megatron-style pre-LayerNorm GPT layer with explicit weights, so that
    the input gradient and the weight gradients can be asked for separately."""

    def __init__(self, h, heads, dtype, dev):
        def w(*shape):
            return (torch.randn(*shape, device=dev, dtype=dtype) * 0.02).requires_grad_()

        def z(n):
            return torch.zeros(n, device=dev, dtype=dtype, requires_grad=True)

        self.h, self.a = h, heads
        self.ln1_w, self.ln1_b = w(h).detach().fill_(1).requires_grad_(), z(h)
        self.qkv_w, self.qkv_b = w(3 * h, h), z(3 * h)
        self.proj_w, self.proj_b = w(h, h), z(h)
        self.ln2_w, self.ln2_b = w(h).detach().fill_(1).requires_grad_(), z(h)
        self.fc1_w, self.fc1_b = w(4 * h, h), z(4 * h)
        self.fc2_w, self.fc2_b = w(h, 4 * h), z(h)
        self.params = [self.ln1_w, self.ln1_b, self.qkv_w, self.qkv_b, self.proj_w, self.proj_b,
                       self.ln2_w, self.ln2_b, self.fc1_w, self.fc1_b, self.fc2_w, self.fc2_b]

    def forward(self, x):  # x: [s, b, h]
        s, b, h = x.shape
        y = F.layer_norm(x, (h,), self.ln1_w, self.ln1_b)
        qkv = F.linear(y, self.qkv_w, self.qkv_b).view(s, b, self.a, 3 * h // self.a)
        q, k, v = qkv.permute(1, 2, 0, 3).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.a)
        mask = torch.ones(s, s, device=x.device, dtype=torch.bool).triu(1)
        p = F.dropout(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1), 0.1)
        ctx = torch.matmul(p, v).permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + F.dropout(F.linear(ctx, self.proj_w, self.proj_b), 0.1)
        y = F.layer_norm(x, (h,), self.ln2_w, self.ln2_b)
        y = F.linear(F.gelu(F.linear(y, self.fc1_w, self.fc1_b)), self.fc2_w, self.fc2_b)
        return x + F.dropout(y, 0.1)


def measure_layer(h, heads, s, b, dtype, iters, rows):
    dev = torch.device("cuda")
    layer = Layer(h, heads, dtype, dev)
    x = torch.randn(s, b, h, device=dev, dtype=dtype, requires_grad=True)
    t_f = timed(lambda: layer.forward(x), iters)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    out = layer.forward(x)
    torch.cuda.synchronize()
    act_b = torch.cuda.memory_allocated() - base - out.numel() * out.element_size()
    grad = torch.randn_like(out)

    def b_only():
        o = layer.forward(x)
        torch.autograd.grad(o, [x], grad)

    def w_only():
        o = layer.forward(x)
        torch.autograd.grad(o, layer.params, grad)

    # B and W alone = (forward + that backward) - forward
    t_b = max(timed(b_only, iters) - t_f, 0.0)
    t_w = max(timed(w_only, iters) - t_f, 0.0)
    del out
    params = sum(p.numel() for p in layer.params)
    flops = s * b * h * (24 * h + 4 * s)
    rows.append(dict(kind="layer", hidden=h, heads=heads, seq=s, micro_batch=b, f_s=t_f, b_s=t_b, w_s=t_w,
                     act_b_bytes=act_b, params=params, fwd_flops=flops))
    return t_f, t_b, t_w, act_b, params, flops


def fit_line(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def measure_gemm(dtype, peak, iters, rows, attention=False):
    dev = torch.device("cuda")
    fl, ts = [], []
    for n in (256, 512, 1024, 2048, 4096, 8192):
        if attention:  # batched [64 heads] s x 128 @ 128 x s, as QK^T
            a = torch.randn(64, n, 128, device=dev, dtype=dtype)
            bm = torch.randn(64, 128, n, device=dev, dtype=dtype)
            f = 2.0 * 64 * n * n * 128
        else:
            a = torch.randn(n, n, device=dev, dtype=dtype)
            bm = torch.randn(n, n, device=dev, dtype=dtype)
            f = 2.0 * n * n * n
        t = timed(lambda: torch.matmul(a, bm), iters)
        fl.append(f)
        ts.append(t)
        rows.append(dict(kind="attn" if attention else "gemm", n=n, flops=f, seconds=t))
    slope, intercept = fit_line(fl, ts)
    eff = min(1.0, 1.0 / (slope * peak))
    half = max(0.0, intercept / slope)
    return eff, half


# Flash attention as the cost model counts it (src/model/costmodel.c): the
# causal half of QK^T and AV forward, 2.5x that backward (the scores
# recomputed, then dV, dP, dQ, dK).
CAUSAL_FRACTION = 0.5
FLASH_BWD_FLOPS_FACTOR = 2.5


def measure_flash(dtype, peak, iters, rows):
    dev = torch.device("cuda")
    best = 0.0
    for heads, s in ((32, 2048), (32, 4096), (64, 8192)):
        q, k, v = (torch.randn(1, heads, s, 128, device=dev, dtype=dtype, requires_grad=True) for _ in range(3))
        grad = torch.randn(1, heads, s, 128, device=dev, dtype=dtype)

        def fwd_bwd():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.backward(grad)

        t = timed(fwd_bwd, iters)
        qk_av = 2 * (2.0 * heads * s * s * 128)
        f = CAUSAL_FRACTION * qk_av * (1 + FLASH_BWD_FLOPS_FACTOR)
        rows.append(dict(kind="flash", n=s, flops=f, seconds=t))
        best = max(best, f / (t * peak))
    return min(1.0, best)


def measure_hbm(hbm_bw, iters, rows):
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src), iters)
    bw = 2 * src.numel() / t  # read + write
    rows.append(dict(kind="hbm_copy", bytes=2 * src.numel(), seconds=t))
    return min(1.0, bw / hbm_bw)


def measure_launch(iters, rows):
    x = torch.zeros(1, device="cuda")
    n = 2000

    def many():
        for _ in range(n):
            x.add_(1)

    t = timed(many, max(3, iters // 4)) / n
    rows.append(dict(kind="launch", kernels=n, seconds=t))
    return t


def measure_pcie(iters, rows):
    nbytes = 1 << 30
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    h2d = nbytes / timed(lambda: dev.copy_(host, non_blocking=True), iters)
    d2h = nbytes / timed(lambda: host.copy_(dev, non_blocking=True), iters)
    rows.append(dict(kind="pcie", h2d_bw=h2d, d2h_bw=d2h))
    return h2d, d2h


def read_params(path):
    """name -> (value text, source) of the params block of a profiles/gpus file (the simple flow
    style we write), and the lines of its host_link block (kept as they are)."""
    out, host_link, block = {}, [], None
    pat = re.compile(r'^\s+(\w+): \{value: ([^,]+), source: "(.*)"\}\s*$')
    with open(path) as f:
        for line in f:
            if line and not line[0].isspace() and not line.startswith("#"):
                block = line.split(":")[0].strip()
            if block == "host_link":
                host_link.append(line)
                continue
            m = pat.match(line) if block == "params" else None
            if m:
                out[m.group(1)] = (m.group(2), m.group(3))
    return out, host_link


def parse_number(text):
    units = {"Tf": 1e12, "TBps": 1e12, "GBps": 1e9, "ms": 1e-3, "us": 1e-6}
    for u, k in units.items():
        if text.endswith(u):
            return float(text[: -len(u)]) * k
    return float(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--type", required=True, help="GPU type: a100-80g, h100-sxm, h200, b200")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--quick", action="store_true", help="small grid, few iterations")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("calibrate_gpu.py: no CUDA device")
    dtype = torch.bfloat16
    iters = 5 if args.quick else 20
    base, host_link = read_params(os.path.join(args.repo, "profiles", "gpus", args.type + ".yaml"))
    peak, hbm = parse_number(base["peak_flops"][0]), parse_number(base["hbm_bw"][0])
    device = torch.cuda.get_device_name()
    date = datetime.date.today().isoformat()
    rows = []

    shapes = [(2048, 16, 1024, 1), (2048, 16, 1024, 4), (4096, 32, 2048, 1), (4096, 32, 1024, 2),
              (8192, 64, 2048, 1)]
    if args.quick:
        shapes = shapes[:2]
    layer_results = [measure_layer(h, a, s, b, dtype, iters, rows) for h, a, s, b in shapes]
    gemm_eff, gemm_half = measure_gemm(dtype, peak, iters, rows)
    attn_eff, _ = measure_gemm(dtype, peak, iters, rows, attention=True)
    flash_eff = measure_flash(dtype, peak, iters, rows)
    mem_eff = measure_hbm(hbm, iters, rows)
    launch = measure_launch(iters, rows)
    h2d, d2h = measure_pcie(iters, rows)

    os.makedirs(os.path.join(args.out, "gpus"), exist_ok=True)
    with open(os.path.join(args.out, "measurements.csv"), "w", newline="") as f:
        keys = sorted({k for r in rows for k in r})
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)

    src = f"measured by tools/calibrate_gpu.py on {device}, {date}"
    measured = {
        "gemm_eff": (f"{gemm_eff:.6g}", f"{src}: square bf16 GEMMs 256..8192, t = (f + half) / (peak * eff)"),
        "gemm_half_flops": (f"{gemm_half:.6g}", f"{src}: same fit"),
        "attn_eff": (f"{attn_eff:.6g}", f"{src}: batched QK^T-shaped GEMMs, head dim 128"),
        "flash_eff": (f"{flash_eff:.6g}", f"{src}: causal scaled_dot_product_attention forward + backward, "
                                          f"head dim 128, s 2048..8192, the model's FLOP count, the best"),
        "mem_eff": (f"{mem_eff:.6g}", f"{src}: 1 GiB device-to-device copy"),
        "kernel_launch": (f"{launch:.6g}", f"{src}: 2000 back-to-back one-element kernels (eager PyTorch)"),
        "pcie_bw": (f"{min(h2d, d2h):.6g}", f"{src}: pinned 1 GiB copies, H2D {h2d / 1e9:.1f} GB/s, "
                                           f"D2H {d2h / 1e9:.1f} GB/s (the smaller kept)"),
    }
    # every parameter of the existing file, in its order, flash_eff after attn_eff if the file predates it
    order = list(base)
    if "flash_eff" not in order:
        order.insert(order.index("attn_eff") + 1, "flash_eff")
    with open(os.path.join(args.out, "gpus", args.type + ".yaml"), "w") as f:
        f.write(f"# GPU type parameters of the pipegrid cost model, {args.type}: single-GPU numbers {src};\n")
        f.write("# the others kept from the previous file (fit them with pipegrid calibrate).\n")
        f.write(f"name: {args.type}\nparams:\n")
        for k in order:
            v, s = measured.get(k, base.get(k, base["attn_eff"]))
            f.write(f'  {k}: {{value: {v}, source: "{s}"}}\n')
        f.writelines(host_link)

    h, a, s, b = shapes[0]
    t_f, t_b, t_w, act_b, params, flops = layer_results[0]
    act_w = 32 * s * b * h  # not measurable in isolation: the ZB paper's M_W
    with open(os.path.join(args.out, f"{args.type}-gpt-measured.yaml"), "w") as f:
        f.write(f"# pipegrid profile: one GPT layer measured by tools/calibrate_gpu.py on {device}, {date};\n")
        f.write("# f/b/w and act_b measured; act_w = 32sbh (zero-bubble paper), boundary = 2sbh.\n")
        f.write(f"name: {args.type}-gpt-h{h}-s{s}-b{b}\nsource: \"{src}\"\ngpu: {args.type}\n")
        f.write(f"model: {{hidden: {h}, heads: {a}, seq: {s}, micro_batch_size: {b}, vocab: 51200}}\n")
        f.write("layers:\n")
        f.write(f"  - {{kind: transformer, count: 24, f: {t_f:.6g}, b: {t_b:.6g}, w: {t_w:.6g}, "
                f"act_b: {int(act_b)}, act_w: {int(min(act_w, act_b))}, boundary: {BYTES_HALF * s * b * h}, "
                f"params: {params}, flops: {flops}}}\n")
    print(f"wrote {args.out}: gemm_eff {gemm_eff:.3f} half {gemm_half:.3g} attn_eff {attn_eff:.3f} "
          f"flash_eff {flash_eff:.3f} "
          f"mem_eff {mem_eff:.3f} launch {launch * 1e6:.1f} us pcie H2D {h2d / 1e9:.1f} D2H {d2h / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
