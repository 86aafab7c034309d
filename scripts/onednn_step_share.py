#!/usr/bin/env python3
"""How much of a training step oneDNN's own primitives take, per mode: the bound on any gain
from lpdt's own code.

`lpdt bench --precision` times whole steps; its `--profile` attributes them to operators, but an
operator such as `lpdt::int8_conv2d` holds lpdt's work (requantization, zero-point corrections)
around oneDNN's kernel. oneDNN reports each primitive's execution time itself when
ONEDNN_VERBOSE=1 is set. This script runs the bench of one mode twice under it, with SHORT and
LONG timed steps and the same warm-up, and takes the difference of the two runs' sums divided by
LONG - SHORT: what one more step costs in oneDNN, by primitive kind, without start-up work.
Primitives that run as often in both runs are left out (the integer backend times its candidate
implementations once per geometry when it first meets it: quant/int8_direct_conv.cpp). Then
one bench run of all the modes, steps alternating, gives the step times, and the rest of a step
is lpdt's own work (quantizers, normalisers, copies) plus the framework's.

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
    """{(kind, propagation, implementation, shape): (calls, total ms)} of ONEDNN_VERBOSE lines.

    oneDNN 2.x prints `onednn_verbose,exec,cpu,KIND,IMPL,PROP,FORMATS,ATTRS,AUX,SHAPE,MS` (the
    older `dnnl_verbose` prefix too)."""
    executions = collections.defaultdict(lambda: [0, 0.0])
    for line in output.splitlines():
        fields = line.split(",")
        if len(fields) < 11 or not fields[0].endswith("_verbose") or fields[1] != "exec":
            continue
        try:
            ms = float(fields[-1])
        except ValueError:
            continue
        key = (fields[3], fields[5], fields[4], fields[-2])
        executions[key][0] += 1
        executions[key][1] += ms
    return executions


def per_step_by_kind(short, long_, steps):
    """oneDNN ms per step by 'kind propagation', from the two runs' sums; keys whose call count
    did not grow with the steps ran only at start-up and are left out."""
    by_kind = collections.defaultdict(float)
    for key, (calls, ms) in long_.items():
        short_calls, short_ms = short.get(key, (0, 0.0))
        if calls == short_calls:
            continue
        by_kind[f"{key[0]} {key[1]}".strip()] += (ms - short_ms) / steps
    return dict(by_kind)


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
    onednn = {}
    for mode in modes:
        runs = [onednn_executions(run([args.lpdt, "bench", "--precision", "--modes", mode,
                                       "--steps", str(steps), *common], env=verbose_env))
                for steps in (args.short, args.long)]
        if not runs[1]:
            fail(f"mode {mode}: no oneDNN execution lines under ONEDNN_VERBOSE=1 (is this lpdt "
                 "built against a LibTorch with oneDNN?)")
        onednn[mode] = per_step_by_kind(runs[0], runs[1], args.long - args.short)

    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "bench.json")
        run([args.lpdt, "bench", "--precision", "--modes", ",".join(modes), "--steps",
             str(args.long), *common, "--json", path])
        with open(path) as f:
            rows = json.load(f)["rows"]
    step_ms = {row["mode"]: row["step_ms"] for row in rows if row["nodes"] == args.nodes}
    # With passes side by side on worker threads, oneDNN's times are summed over the workers:
    # they are set against the workers' time, workers x the step.
    workers = {row["mode"]: max(1, row.get("pass_workers", 1)) for row in rows
               if row["nodes"] == args.nodes}
    missing = [m for m in modes if m not in step_ms]
    if missing:
        fail(f"the bench reported no step time for {', '.join(missing)}")

    reference = modes[0]
    results = []
    print(f"oneDNN's share of a step: {args.nodes} node(s), {args.threads} thread(s), "
          f"oneDNN ms per step from runs of {args.short} and {args.long} steps")
    for mode in modes:
        total = sum(onednn[mode].values())
        step = step_ms[mode] * workers[mode]  # thread time of the step
        bound = step_ms[reference] * workers[mode] / total if total > 0 else float("inf")
        threads = f" on {workers[mode]} pass workers (thread time)" if workers[mode] > 1 else ""
        print(f"{mode}: step {step:.1f} ms{threads}, oneDNN {total:.1f} ms "
              f"({100 * total / step:.0f}%), the rest {step - total:.1f} ms; {reference} step / "
              f"oneDNN time = {bound:.2f}x")
        for kind, ms in sorted(onednn[mode].items(), key=lambda item: -item[1]):
            print(f"    {ms:8.2f} ms  {kind}")
        results.append({"mode": mode, "step_ms": step_ms[mode], "pass_workers": workers[mode],
                        "thread_ms": step, "onednn_ms": total,
                        "onednn_ms_by_kind": onednn[mode], "rest_ms": step - total,
                        "bound_vs_reference": bound})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nodes": args.nodes, "threads": args.threads, "short": args.short,
                       "long": args.long, "reference": reference, "bench_args": rest,
                       "modes": results}, f, indent=2)


if __name__ == "__main__":
    main()
