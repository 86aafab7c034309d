#!/usr/bin/env python3
"""Summarises an Nsight Compute CSV of kernel durations: time per kernel name, and the launches in
order (docs/benchmarks.md, GPU: where an 8-bit step's time goes).

    ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv --page raw --log-file step.csv \
        lpdt bench --device cuda ... --cuda-profiler-range engine
    scripts/ncu_kernel_summary.py step.csv [--steps N] [--rows R] [--sequence FILE]

--steps: how many steps the profiled range held (the per-step figures divide by it).
"""
import argparse
import csv
import signal
import sys
from collections import defaultdict

UNIT_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
              "second": 1e6, "s": 1e6}


def short_name(name, width=110):
    # Template arguments make names long; the head and the kernel's own name are what tell.
    return name if len(name) <= width else name[: width - 3] + "..."


def read_launches(path):
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages start with ==
    rows = list(csv.reader(lines))
    if not rows:
        sys.exit(f"{path}: no CSV rows (was ncu run with --csv --page raw, and did the profiled "
                 "range hold kernels?)")
    header = rows[0]
    for column in ("Kernel Name", "gpu__time_duration.sum"):
        if column not in header:
            sys.exit(f"{path}: no column '{column}' in the header {header[:12]}...; expected "
                     "ncu --csv --page raw --metrics gpu__time_duration.sum")
    name_at = header.index("Kernel Name")
    time_at = header.index("gpu__time_duration.sum")
    grid_at = header.index("Grid Size") if "Grid Size" in header else None
    block_at = header.index("Block Size") if "Block Size" in header else None
    body = rows[1:]
    scale = 1e-3  # ns unless a units row says otherwise
    if body and body[0][time_at] in UNIT_TO_US:
        scale = UNIT_TO_US[body[0][time_at]]
        body = body[1:]
    launches = []
    for row in body:
        value = row[time_at].replace(",", "")
        if not value:
            continue
        launches.append({
            "name": row[name_at],
            "us": float(value) * scale,
            "grid": row[grid_at] if grid_at is not None else "",
            "block": row[block_at] if block_at is not None else "",
        })
    return launches


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv_file")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--sequence", help="also write every launch in order to this file")
    args = parser.parse_args()
    if args.steps < 1:
        sys.exit("--steps must be at least 1")
    launches = read_launches(args.csv_file)
    total = sum(l["us"] for l in launches)
    by_name = defaultdict(lambda: [0, 0.0])
    for l in launches:
        by_name[l["name"]][0] += 1
        by_name[l["name"]][1] += l["us"]
    print(f"{len(launches) / args.steps:.0f} kernels per step, {total / args.steps / 1000:.3f} ms "
          "of kernel time per step (serialised, as ncu runs them)")
    print(f"{'us/step':>10} {'share':>6} {'calls/step':>10} {'us/call':>8}  kernel")
    ranked = sorted(by_name.items(), key=lambda item: -item[1][1])
    for name, (calls, us) in ranked[: args.rows]:
        print(f"{us / args.steps:10.1f} {100 * us / total:5.1f}% {calls / args.steps:10.1f} "
              f"{us / calls:8.2f}  {short_name(name)}")
    small = [l for l in launches if l["us"] < 5.0]
    print(f"launches under 5 us: {len(small) / args.steps:.0f} per step, "
          f"{sum(l['us'] for l in small) / args.steps / 1000:.3f} ms per step")
    if args.sequence:
        with open(args.sequence, "w") as out:
            for i, l in enumerate(launches):
                out.write(f"{i:6d} {l['us']:9.2f} {l['grid']:>16} {l['block']:>14}  "
                          f"{short_name(l['name'], 160)}\n")


if __name__ == "__main__":
    main()
