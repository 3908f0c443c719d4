#!/usr/bin/env python3
"""Copy the fitted cost-model parameters of one GPU profile into another.

H200 and B200 have no fit of their own (docs/validation.md): their efficiency
and overhead numbers are the h100-sxm fit's.  This rewrites every parameter
line of DST that is not a datasheet number (peak_flops, hbm_bw, nvlink_bw,
pcie_bw) with SRC's value and a source saying it is borrowed; everything else
in DST (its header, datasheet lines, host_link block) stays as it is.

What is borrowed is a fraction of peak or a time, as the fit measured it.
Every parameter is one already, except gemm_half_flops: a GEMM costs
(flops + gemm_half_flops) / (peak x efficiency), so its fixed part is the
time gemm_half_flops / peak (launch, prologue and tail of the kernel), and a
GPU with twice the peak pays the same time for twice the FLOPs.  It is
borrowed as that time: scaled by DST's peak over SRC's.

usage: tools/borrow_fit.py profiles/gpus/h100-sxm.yaml profiles/gpus/b200.yaml
"""
import os
import re
import sys

DATASHEET = {"peak_flops", "hbm_bw", "nvlink_bw", "pcie_bw"}
# parameters in FLOPs that stand for a time at the GPU type's peak (above)
AT_PEAK = {"gemm_half_flops"}
UNIT = {"f": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12, "Pf": 1e15}
PARAM = re.compile(r'^  ([a-z0-9_]+): \{value: ([^,]+), source: ".*"\}$')
QUEUE = re.compile(r'^kernel_queue: \{host_waits: ([a-z]+), source: ".*"\}$')


def params(path):
    out = {}
    in_params = False
    for line in open(path):
        line = line.rstrip("\n")
        if line == "params:":
            in_params = True
            continue
        if in_params and not line.startswith("  "):
            in_params = False
        m = PARAM.match(line) if in_params else None
        if m:
            source = re.search(r'source: "(.*)"\}$', line).group(1)
            out[m.group(1)] = (m.group(2), source)
    return out


def flops(text):
    """A peak_flops value as the profiles write it: 9.894e+14, 989.4Tf."""
    m = re.match(r"^([0-9.eE+-]+)([kMGTP]?f)?$", text.strip())
    if not m:
        sys.exit("peak_flops %r: not a number of FLOP/s" % text)
    return float(m.group(1)) * UNIT[m.group(2) or "f"]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, dst = sys.argv[1:]
    src_name = os.path.splitext(os.path.basename(src))[0]
    dst_name = os.path.splitext(os.path.basename(dst))[0]
    values = params(src)
    dst_values = params(dst)
    queue = [m.group(1) for m in map(QUEUE.match, open(src).read().splitlines()) if m]
    if len(queue) != 1:
        sys.exit("%s: no kernel_queue line {host_waits: ..., source: ...}" % src)
    lines, in_params, done = [], False, set()
    for line in open(dst):
        line = line.rstrip("\n")
        if QUEUE.match(line):
            continue   # written again at the end, from SRC
        if line == "params:":
            in_params = True
        elif in_params and not line.startswith("  "):
            in_params = False
        m = PARAM.match(line) if in_params else None
        if m and m.group(1) not in DATASHEET:
            key = m.group(1)
            if key not in values:
                sys.exit("%s: no parameter %s" % (src, key))
            value, source_there = values[key]
            also = ""
            if "equal to the fitted" in source_there:   # calibrate's tie of the attention kernel no row ran
                also = ", where no fit row exercises it either: the fitted rate of the other attention kernel"
            elif source_there.startswith("not measured"):
                also = ", where no fit row exercises it either: calibrate's fixed starting value"
            if key in AT_PEAK:
                ratio = flops(dst_values["peak_flops"][0]) / flops(values["peak_flops"][0])
                value = "%.9g" % (float(value) * ratio)
                line = ('  %s: {value: %s, source: "not measured on %s: the same time per GEMM as the %s fit '
                        '(profiles/gpus/%s.yaml%s), its FLOPs x %.6g, the ratio of the peaks"}') % (
                    key, value, dst_name, src_name, src_name, also, ratio)
            else:
                line = '  %s: {value: %s, source: "not measured on %s: assumed equal to the %s fit (profiles/gpus/%s.yaml%s)"}' % (
                    key, value, dst_name, src_name, src_name, also)
            done.add(key)
        lines.append(line)
    missing = set(values) - DATASHEET - done
    if missing:
        sys.exit("%s: lacks %s" % (dst, ", ".join(sorted(missing))))
    lines.append('kernel_queue: {host_waits: %s, source: "not measured on %s: as the %s fit it borrows '
                 '(profiles/gpus/%s.yaml: the same training stack)"}' % (queue[0], dst_name, src_name, src_name))
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
