#!/usr/bin/env python3
"""How much of a training step oneDNN's own primitives take, per mode: the bound on any gain
from lpdt's own code.

`lpdt bench --precision` times whole steps; its `--profile` attributes them to operators, but an
operator such as `lpdt::int8_conv2d` holds lpdt's work (requantization, zero-point corrections)
around oneDNN's kernel. oneDNN reports each primitive's execution time itself when
ONEDNN_VERBOSE=1 is set. A step runs the same primitives every time, so two short runs of each
mode alone (SHORT and LONG steps) give its number of executions per step. Then one run of all the
modes, their steps alternating, LONG timed steps: its last executions are the timed steps', each
step the modes' executions in --modes order (the warm-up's start-up work, such as the integer
backend's timing of candidate implementations, comes before them). Per mode, the median over
steps of oneDNN's time is set against the median step time of the same run; the rest of a step
is lpdt's own work (quantizers, normalisers, copies) plus the framework's, and the cost of
ONEDNN_VERBOSE's printing: a last run without it gives the plain step times, for comparison.

    python3 scripts/onednn_step_share.py --lpdt build/lpdt --modes fp32,int8-integer \\
        --threads 2 -- --channels 1 --size 32

prints, per mode, the step time, oneDNN's time per step by primitive kind and the rest, and the
bound: the step time of fp32 over a mode's oneDNN time, the speedup that mode would have against
fp32 if everything but oneDNN's primitives took no time. `--json PATH` writes the same numbers.
Where a step runs its passes on several worker threads (`--nodes 8`: `run.pass_workers`),
oneDNN's times are summed over the threads, and set against the threads' time (workers x step).

Needs only Python 3 and an lpdt binary built with oneDNN (Debian's LibTorch has it).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    sys.exit(f"onednn_step_share: {message}")


def run(command, env=None):
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        fail(f"failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
    return done.stdout + done.stderr


def onednn_executions(output):
    """[(kind, propagation, implementation, shape, ms)] of the ONEDNN_VERBOSE exec lines, in
    order. oneDNN 2.x prints `onednn_verbose,exec,cpu,KIND,IMPL,PROP,FORMATS,ATTRS,AUX,SHAPE,MS`
    (older versions `dnnl_verbose,...`)."""
    executions = []
    for line in output.splitlines():
        fields = line.split(",")
        if len(fields) < 11 or not fields[0].endswith("_verbose") or fields[1] != "exec":
            continue
        try:
            ms = float(fields[-1])
        except ValueError:
            continue
        executions.append((fields[3], fields[5], fields[4], fields[-2], ms))
    return executions


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Arguments after -- go to every `lpdt bench --precision` run.")
    parser.add_argument("--lpdt", required=True, help="the lpdt binary, e.g. build/lpdt")
    parser.add_argument("--modes", default="fp32,int8-integer",
                        help="comma-separated bench modes (the first is the reference; "
                             "default fp32,int8-integer)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes (default 1)")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2)")
    parser.add_argument("--warmup", type=int, default=2, help="warm-up steps (default 2)")
    parser.add_argument("--short", type=int, default=4, help="timed steps of the short run")
    parser.add_argument("--long", type=int, default=24, help="timed steps of the long run")
    parser.add_argument("--json", help="also write the results to this file")
    args, rest = parser.parse_known_args()
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not os.path.isfile(args.lpdt) or not os.access(args.lpdt, os.X_OK):
        fail(f"--lpdt {args.lpdt}: not an executable file (give an lpdt binary, e.g. build/lpdt)")
    if not 1 <= args.short < args.long:
        fail(f"--short {args.short} --long {args.long}: need 1 <= short < long")
    if args.nodes < 1 or args.threads < 1 or args.warmup < 0:
        fail("--nodes and --threads must be >= 1, --warmup >= 0")
    modes = [m for m in args.modes.split(",") if m]
    if not modes:
        fail("--modes: give at least one mode, e.g. fp32,int8-integer")

    common = ["--nodes", str(args.nodes), "--threads", str(args.threads), "--warmup",
              str(args.warmup), *rest]
    verbose_env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")

    def bench(bench_modes, steps, json_path=None):
        command = [args.lpdt, "bench", "--precision", "--modes", ",".join(bench_modes),
                   "--steps", str(steps), *common]
        if json_path:
            command += ["--json", json_path]
        return onednn_executions(run(command, env=verbose_env))

    # Primitive executions per step of each mode: a step runs the same primitives every time,
    # so two runs of one mode differ by (long - short) steps' worth.
    per_step = {}
    for mode in modes:
        extra = len(bench([mode], args.long)) - len(bench([mode], args.short))
        if extra <= 0 or extra % (args.long - args.short) != 0:
            fail(f"mode {mode}: {extra} more oneDNN executions in {args.long - args.short} more "
                 "steps, not a whole number per step. Passes on several worker threads make "
                 "their primitives per thread, at a step that varies: give -- --pass-workers 1. "
                 "Otherwise: is this lpdt built against a LibTorch with oneDNN?")
        per_step[mode] = extra // (args.long - args.short)

    # One run of all the modes, steps alternating: its last `long` steps are the timed ones, each
    # the modes' executions in --modes order, after the warm-up's start-up work.
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "bench.json")
        executions = bench(modes, args.long, path)
        with open(path) as f:
            rows = json.load(f)["rows"]
    step_lines = sum(per_step.values())
    timed = executions[len(executions) - args.long * step_lines:]
    onednn_steps = {mode: [] for mode in modes}
    onednn_kinds = {mode: collections.defaultdict(float) for mode in modes}
    for step in range(args.long):
        offset = step * step_lines
        for mode in modes:
            lines = timed[offset:offset + per_step[mode]]
            offset += per_step[mode]
            onednn_steps[mode].append(sum(line[4] for line in lines))
            for line in lines:
                onednn_kinds[mode][f"{line[0]} {line[1]}".strip()] += line[4] / args.long
    onednn = {mode: dict(onednn_kinds[mode]) for mode in modes}

    step_ms = {row["mode"]: row["step_ms"] for row in rows if row["nodes"] == args.nodes}
    # With passes side by side on worker threads, oneDNN's times are summed over the workers:
    # they are set against the workers' time, workers x the step.
    workers = {row["mode"]: max(1, row.get("pass_workers", 1)) for row in rows
               if row["nodes"] == args.nodes}
    # The same run without ONEDNN_VERBOSE: what the printing costs a step.
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "bench.json")
        run([args.lpdt, "bench", "--precision", "--modes", ",".join(modes), "--steps",
             str(args.long), *common, "--json", path])
        with open(path) as f:
            plain_ms = {row["mode"]: row["step_ms"] for row in json.load(f)["rows"]
                        if row["nodes"] == args.nodes}
    missing = [m for m in modes if m not in step_ms or m not in plain_ms]
    if missing:
        fail(f"the bench reported no step time for {', '.join(missing)}")

    reference = modes[0]
    results = []
    print(f"oneDNN's share of a step: {args.nodes} node(s), {args.threads} thread(s), medians of "
          f"{args.long} steps of one run, the modes alternating; oneDNN's primitives by kind: "
          "means")
    for mode in modes:
        total = median(onednn_steps[mode])
        step = step_ms[mode] * workers[mode]  # thread time of the step
        bound = step_ms[reference] * workers[mode] / total if total > 0 else float("inf")
        threads = f" on {workers[mode]} pass workers (thread time)" if workers[mode] > 1 else ""
        print(f"{mode}: step {step:.1f} ms{threads} ({plain_ms[mode]:.1f} without "
              f"ONEDNN_VERBOSE, another run), oneDNN {total:.1f} ms "
              f"({100 * total / step:.0f}%), the rest {step - total:.1f} ms; {reference} step / "
              f"oneDNN time = {bound:.2f}x")
        for kind, ms in sorted(onednn[mode].items(), key=lambda item: -item[1]):
            print(f"    {ms:8.2f} ms  {kind}")
        results.append({"mode": mode, "step_ms": step_ms[mode], "plain_step_ms": plain_ms[mode],
                        "pass_workers": workers[mode],
                        "thread_ms": step, "onednn_ms": total,
                        "onednn_ms_per_step": onednn_steps[mode],
                        "onednn_ms_by_kind": onednn[mode], "rest_ms": step - total,
                        "bound_vs_reference": bound})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nodes": args.nodes, "threads": args.threads, "short": args.short,
                       "long": args.long, "reference": reference, "bench_args": rest,
                       "modes": results}, f, indent=2)


if __name__ == "__main__":
    main()
