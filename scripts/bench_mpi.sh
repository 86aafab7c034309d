#!/usr/bin/env bash
# MPI step time against the in-process simulator: the same experiment trained in one process and
# under `mpirun -np RANKS`, each the median of REPEATS runs, one after the other on this machine.
# Prints the training throughput of both, their ratio, the whole run's wall time of both (training,
# evaluations and checkpoints: data.test_subset sets the evaluations' share), and the MPI ranks'
# traffic and wait time (from each run's summary.json). Usage:
#   bash scripts/bench_mpi.sh [RANKS=4] [REPEATS=3] [--set key=value ...]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-4}"
repeats="${2:-3}"
shift $(($# >= 2 ? 2 : $#))
lpdt="${LPDT:-./build/lpdt}"  # another build: LPDT=path/to/lpdt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
# LeNet-5 on Fashion-MNIST (the quickstart's), 8 nodes, Choco top-10% int8 messages. The same
# cores for both: the simulator uses every core, each rank its share (at least one thread).
cores=$(nproc)
experiment=(--set run.epochs=1 --set run.max_steps_per_epoch=60 --set run.log_every=0
            --set run.checkpoint_every=0 --set data.test_subset=500
            --set algo.compressor=topk --set algo.keep_fraction=0.1 --set algo.message_values=int8
            "$@")
run_once() {  # run_once NAME THREADS LAUNCH... : "train-img/s wall-s" of one run
  local name="$1" threads="$2"
  shift 2
  "$@" "$lpdt" train --out "$work/$name" --set run.name="$name" --set run.threads="$threads" \
    "${experiment[@]}" >/dev/null
  python3 -c "import json,glob; f=json.load(open(glob.glob('$work/$name/*/summary.json')[0]))['final']; print(f['train_images_per_s'], f['wall_time_s'])"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
sim=() mpi=() sim_wall=() mpi_wall=()
for r in $(seq "$repeats"); do
  read -r speed wall < <(run_once "sim$r" "$cores")
  sim+=("$speed") sim_wall+=("$wall")
  read -r speed wall < <(run_once "mpi$r" $((cores / ranks > 0 ? cores / ranks : 1)) \
    "${mpirun[@]}" -np "$ranks")
  mpi+=("$speed") mpi_wall+=("$wall")
done
s=$(printf '%s\n' "${sim[@]}" | median)
m=$(printf '%s\n' "${mpi[@]}" | median)
sw=$(printf '%s\n' "${sim_wall[@]}" | median)
mw=$(printf '%s\n' "${mpi_wall[@]}" | median)
echo "machine: $(nproc) cores; $ranks ranks; runs: simulator ${sim[*]}, mpi ${mpi[*]} (train img/s)"
printf 'simulator %.0f img/s, mpirun -np %d %.0f img/s: MPI step time = %.2fx the simulator'"'"'s\n' \
  "$s" "$ranks" "$m" "$(python3 -c "print($s / $m)")"
echo "whole runs (training, evaluations, checkpoints): simulator ${sim_wall[*]} s, mpi ${mpi_wall[*]} s"
printf 'median wall time: simulator %.2f s, mpirun -np %d %.2f s: MPI = %.2fx the simulator'"'"'s\n' \
  "$sw" "$ranks" "$mw" "$(python3 -c "print($mw / $sw)")"
python3 - "$work" "$repeats" <<'PY'
import json, glob, sys
summary = json.load(open(glob.glob(f"{sys.argv[1]}/mpi{sys.argv[2]}/*/summary.json")[0]))
for r in summary["processes"]["per_rank"]:
    print(f"  rank {r['rank']}: nodes {r['first_node']}..{r['first_node'] + r['nodes'] - 1}, "
          f"sent {r['payloads_sent']} payloads / {r['bytes_sent'] / 1e6:.2f} MB, "
          f"received {r['payloads_received']} / {r['bytes_received'] / 1e6:.2f} MB, "
          f"waited {r['wait_s']:.2f} s")
PY
