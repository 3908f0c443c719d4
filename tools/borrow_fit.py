#!/usr/bin/env python3
"""Copy the fitted cost-model parameters of one GPU profile into another.

H200 and B200 have no fit of their own (docs/validation.md): their efficiency
and overhead numbers are the h100-sxm fit's.  This rewrites every parameter
line of DST that is not a datasheet number (peak_flops, hbm_bw, nvlink_bw,
pcie_bw) with SRC's value and a source saying it is borrowed; everything else
in DST (its header, datasheet lines, host_link block) stays as it is.

usage: tools/borrow_fit.py profiles/gpus/h100-sxm.yaml profiles/gpus/b200.yaml
"""
import os
import re
import sys

DATASHEET = {"peak_flops", "hbm_bw", "nvlink_bw", "pcie_bw"}
PARAM = re.compile(r'^  ([a-z0-9_]+): \{value: ([^,]+), source: ".*"\}$')


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
            out[m.group(1)] = (m.group(2), source.startswith("not measured"))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    src, dst = sys.argv[1:]
    src_name = os.path.splitext(os.path.basename(src))[0]
    dst_name = os.path.splitext(os.path.basename(dst))[0]
    values = params(src)
    lines, in_params, done = [], False, set()
    for line in open(dst):
        line = line.rstrip("\n")
        if line == "params:":
            in_params = True
        elif in_params and not line.startswith("  "):
            in_params = False
        m = PARAM.match(line) if in_params else None
        if m and m.group(1) not in DATASHEET:
            key = m.group(1)
            if key not in values:
                sys.exit("%s: no parameter %s" % (src, key))
            value, unmeasured_there = values[key]
            also = ", where no fit row exercises it either: calibrate's fixed starting value" if unmeasured_there else ""
            line = '  %s: {value: %s, source: "not measured on %s: assumed equal to the %s fit (profiles/gpus/%s.yaml%s)"}' % (
                key, value, dst_name, src_name, src_name, also)
            done.add(key)
        lines.append(line)
    missing = set(values) - DATASHEET - done
    if missing:
        sys.exit("%s: lacks %s" % (dst, ", ".join(sorted(missing))))
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
