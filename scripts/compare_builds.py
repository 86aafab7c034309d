#!/usr/bin/env python3
"""Two builds of lpdt timed in alternation: the project's method for a before/after claim.

The machines lpdt is measured on are shared and noisy: one run of a build before a change and one
after it can differ by more than the change (docs/benchmarks.md quotes fp32 steps of 146-219 ms
from one build within minutes). So a claim compares the builds in alternating rounds, each round
running both, and reads two things per round:
- the after/before ratio of the step times, from runs a minute apart;
- each build's ratio to fp32 measured inside its own run (`vs fp32`), which the machine's load
  moves much less, when fp32 is among the modes.

This script runs `BUILD bench --precision ARGS --json FILE` for both builds, ROUNDS times, the
order swapped every round (before-after, after-before, ...) so that a drift in the machine's load
does not favour one build, and prints every round and a summary per (nodes, mode).

    python3 scripts/compare_builds.py --before /tmp/lpdt-before --after build/lpdt --rounds 3 \\
        -- --modes fp32 int8-simulated --nodes 1 --steps 12 --warmup 2 --channels 1 --size 32 \\
        --threads 1

With `--profile K` among the bench arguments, `--operators NAME ...` also prints those
operators' self time per step in each run (e.g. `--operators lpdt::evonorm_s0_forward
lpdt::onednn_conv2d_forward`), to compare one kernel's share of the step across builds.

Needs only Python 3 and the two lpdt binaries. `--json PATH` also writes every run's results.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile


def fail(message):
    sys.exit(f"compare_builds: {message}")


def check_binary(role, path):
    if not os.path.isfile(path):
        fail(f"--{role} {path}: no such file (give the path of an lpdt binary, e.g. build/lpdt)")
    if not os.access(path, os.X_OK):
        fail(f"--{role} {path}: not executable")


def run_bench(role, binary, bench_args, json_path):
    """One `bench --precision` run; returns its JSON results."""
    command = [binary, "bench", "--precision", *bench_args, "--json", json_path]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-12:])
        fail(f"the {role} build failed (exit {done.returncode}): {' '.join(command)}\n{tail}")
    try:
        with open(json_path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as error:
        fail(f"the {role} build wrote no readable results to {json_path}: {error}")


def rows_by_key(results):
    """{(nodes, mode): row} of one run's rows."""
    return {(row["nodes"], row["mode"]): row for row in results["rows"]}


def operator_self_ms(row, name, role):
    """An operator's self time per step in a row's profile."""
    if row is None or "profile" not in row:
        fail(f"the {role} build's results have no operator profile (is --profile K given?)")
    for operator in row["profile"]["operators"]:
        if operator["name"] == name:
            return operator["self_ms_per_step"]
    names = ", ".join(o["name"] for o in row["profile"]["operators"][:8])
    fail(f"--operators {name}: not among the {role} build's profiled operators "
         f"(the first are: {names}; --profile K lists the top K)")


def cpu_model():
    """The CPU's model name (Linux), else the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_ratio(value):
    return f"{value:.2f}x" if value else "-"  # None (or 0.0 from older builds): no fp32 row


def main():
    parser = argparse.ArgumentParser(
        description="Time two lpdt builds in alternating rounds of `lpdt bench --precision`.",
        epilog="Everything after `--` goes to `lpdt bench --precision` unchanged.")
    parser.add_argument("--before", required=True, help="the lpdt binary before the change")
    parser.add_argument("--after", required=True, help="the lpdt binary after the change")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running both builds")
    parser.add_argument("--json", help="also write every run's results and the summary here")
    parser.add_argument("--operators", nargs="+", default=[],
                        help="with --profile K in the bench arguments: operators whose self time "
                             "per step to print for each run")
    parser.add_argument("bench_args", nargs=argparse.REMAINDER,
                        help="-- then the arguments of `lpdt bench --precision`")
    args = parser.parse_args()
    if args.rounds < 1:
        fail(f"--rounds {args.rounds}: expected at least 1")
    bench_args = args.bench_args[1:] if args.bench_args[:1] == ["--"] else args.bench_args
    if "--json" in bench_args:
        fail("give --json to this script, not to lpdt bench (each run writes its own file)")
    if args.operators and "--profile" not in bench_args:
        fail("--operators reads the operator profile: add --profile K to the bench arguments")
    check_binary("before", args.before)
    check_binary("after", args.after)

    builds = {"before": args.before, "after": args.after}
    runs = []  # [{round, build, results}]
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(1, args.rounds + 1):
            order = ["before", "after"] if round_index % 2 == 1 else ["after", "before"]
            measured = {}
            for role in order:
                path = os.path.join(scratch, f"{role}-{round_index}.json")
                results = run_bench(role, builds[role], bench_args, path)
                measured[role] = rows_by_key(results)
                runs.append({"round": round_index, "build": role, "results": results})
            print(f"round {round_index} ({order[0]} first)")
            print(f"  {'nodes':>5}  {'mode':<15}  {'before ms':>9}  {'after ms':>9}  "
                  f"{'after speedup':>13}  {'vs fp32 before':>14}  {'vs fp32 after':>13}")
            for key in measured["before"]:
                if key not in measured["after"]:
                    continue
                b, a = measured["before"][key], measured["after"][key]
                print(f"  {key[0]:>5}  {key[1]:<15}  {b['step_ms']:>9.1f}  {a['step_ms']:>9.1f}  "
                      f"{format_ratio(b['step_ms'] / a['step_ms']):>13}  "
                      f"{format_ratio(b['speedup_vs_fp32']):>14}  "
                      f"{format_ratio(a['speedup_vs_fp32']):>13}")
            for key in measured["before"]:
                for name in args.operators:
                    times = [operator_self_ms(measured[role].get(key), name, role)
                             for role in ("before", "after")]
                    print(f"  {key[0]:>5}  {key[1]:<15}  {name}: {times[0]:.2f} ms before, "
                          f"{times[1]:.2f} ms after (self time per step)")
            sys.stdout.flush()

    # Per (nodes, mode): the after/before speedups and the within-run ratios to fp32 by round.
    summary = {}
    for run in runs:
        for key, row in rows_by_key(run["results"]).items():
            entry = summary.setdefault(key, {"before": [], "after": [],
                                             "vs_fp32_before": [], "vs_fp32_after": []})
            entry[run["build"]].append(row["step_ms"])
            entry["vs_fp32_" + run["build"]].append(row["speedup_vs_fp32"] or 0)
    print("summary: after speedup by round (before ms / after ms), median; "
          "vs fp32 in the same run, before -> after")
    summary_json = []
    for (nodes, mode), entry in summary.items():
        speedups = [b / a for b, a in zip(entry["before"], entry["after"])]
        if not speedups:
            continue
        line = " / ".join(f"{s:.2f}x" for s in speedups)
        within = ""
        if all(v > 0 for v in entry["vs_fp32_before"] + entry["vs_fp32_after"]) and mode != "fp32":
            within = ("; vs fp32 " + " / ".join(f"{v:.2f}" for v in entry["vs_fp32_before"]) +
                      " -> " + " / ".join(f"{v:.2f}" for v in entry["vs_fp32_after"]))
        print(f"  {nodes:>5}  {mode:<15}  {line}  (median {statistics.median(speedups):.2f}x)"
              f"{within}")
        summary_json.append({"nodes": nodes, "mode": mode, "before_ms": entry["before"],
                             "after_ms": entry["after"], "after_speedup": speedups,
                             "vs_fp32_before": entry["vs_fp32_before"],
                             "vs_fp32_after": entry["vs_fp32_after"]})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "cpu": cpu_model(), "cores": os.cpu_count(),
                       "before": args.before, "after": args.after, "rounds": args.rounds,
                       "bench_args": bench_args, "runs": runs, "summary": summary_json}, f,
                      indent=2)


if __name__ == "__main__":
    main()
