#!/usr/bin/env bash
# Multi-process runs (mpirun) against the in-process simulator: the same seed and configuration
# give the same training state value for value (parameters, buffers, Choco copies, error
# feedback, push-sum weights, momentum, the byte ledger, every epoch's accuracies), with 4 ranks,
# with 3 ranks of uneven blocks and with 1; a run resumed under mpirun continues exactly as an
# uninterrupted one; injected faults (lost, delayed messages) are the simulator's too, and a
# killed rank is survived; more ranks than nodes is a clear error; a diverged run stops on every
# rank; a configuration error of one rank alone, and a rank that cannot start for want of its
# --resume folder or its data, are reported by rank 0; a rank killed while its
# message to rank 0 is on the way is survived, and that run resumed under mpirun equals it
# resumed in-process, the dead nodes' rows included.
# Usage: mpi_test.sh path/to/lpdt path/to/checkpoint_equal
set -u
lpdt="$1"
equal="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
mpirun=(mpirun --allow-run-as-root --oversubscribe -x OMPI_MCA_rmaps_base_oversubscribe=1)

# shellcheck source=../lib/check.sh
source "$(dirname "$0")/../lib/check.sh"

# One node per forward/backward pass in every run: a rank holds fewer nodes than the simulator,
# and a grouped convolution over another number of nodes may sum in another order (AVX2-only CPUs:
# oneDNN picks other kernels; docs/mpi.md), so the passes must match for bit-identical results.
tiny=(--set data.dataset=synthetic --set data.synthetic_samples_per_class=24
      --set data.synthetic_size=28 --set model.arch=lenet5 --set graph.nodes=8
      --set data.batch_size=8 --set run.log_every=0 --set run.threads=1
      --set run.max_steps_per_epoch=5 --set data.test_subset=64 --set run.epochs=2
      --set run.nodes_per_pass=1)

# logged LOG COMMAND...: runs the command with its output kept in LOG (and printed), so that a
# later failed comparison can show what the run reported.
logged() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1
  local code=$?
  cat "$log"
  return "$code"
}
# train NAME LAUNCH... -- ARGS...: a run into $work/NAME (LAUNCH empty: the simulator), its output
# kept in $work/NAME.log.
train() {
  local name="$1"
  shift
  local launch=()
  while [ "$1" != "--" ]; do launch+=("$1"); shift; done
  shift
  check "$name" logged "$work/$name.log" "${launch[@]}" "$lpdt" train --out "$work/$name" \
    --set run.name="$name" "${tiny[@]}" "$@"
}
ckpt() { echo "$work/$1/$1-"*/checkpoint.lpdt; }

# Choco, top-10% with int8 messages; a multistep schedule, whose rates do not depend on
# run.epochs, so that a 1-epoch run continued to 2 epochs is the 2-epoch run.
choco=(--set algo.name=choco --set algo.compressor=topk --set algo.keep_fraction=0.1
       --set algo.message_values=int8 --set algo.consensus_step=0.5
       --set optim.schedule=multistep)
train choco_sim -- "${choco[@]}"
train choco_np4 "${mpirun[@]}" -np 4 -- "${choco[@]}"
train choco_np1 "${mpirun[@]}" -np 1 -- "${choco[@]}"
check "choco: 4 ranks = simulator" "$equal" "$(ckpt choco_np4)" "$(ckpt choco_sim)"
check "choco: 1 rank = simulator" "$equal" "$(ckpt choco_np1)" "$(ckpt choco_sim)"
# The averaged model rank 0 writes from the gathered rows is the simulator's, byte for byte.
check "choco: 4 ranks' model.safetensors = simulator's" cmp \
  "$work"/choco_np4/choco_np4-*/model.safetensors "$work"/choco_sim/choco_sim-*/model.safetensors
# Each rank measures the accuracies of its own nodes, rank 0 the averaged model's: every epoch's
# accuracies, per node and over the nodes, are the simulator's.
same_accuracies() {
  cmp <(cut -d, -f1,2,5 "$work"/"$1"/*/metrics.csv) <(cut -d, -f1,2,5 "$work"/"$2"/*/metrics.csv) &&
    cmp <(cut -d, -f1-8 "$work"/"$1"/*/epochs.csv) <(cut -d, -f1-8 "$work"/"$2"/*/epochs.csv)
}
check "choco: 4 ranks' accuracies = simulator" same_accuracies choco_np4 choco_sim
check "choco: payloads between ranks" grep -q '"bytes_sent": [1-9]' "$work"/choco_np4/*/summary.json

# A rank holding one node where the simulator groups it with others in one pass: its
# convolutions sum in another order, and the run says so when it starts (docs/mpi.md).
train lone_np3 "${mpirun[@]}" -np 3 -- --set graph.nodes=4 --set run.nodes_per_pass=0 \
  --set run.epochs=1
check "a rank's lone node: noted" grep -q "note: nodes 2, 3: computed in a pass of one node" \
  "$work/lone_np3.log"
check "one node per pass everywhere: no such note" bash -c \
  "! grep -q 'computed in a pass of one node' '$work/choco_np4.log'"

# --print-config and --help under mpirun: printed once (by rank 0), not once per rank.
check "--print-config once under 3 ranks" bash -c \
  "[ \"\$(${mpirun[*]} -np 3 '$lpdt' train --print-config | grep -c '^\[run\]')\" = 1 ]"
check "--help once under 3 ranks" bash -c \
  "[ \"\$(${mpirun[*]} -np 3 '$lpdt' train --help | grep -c '^Usage')\" = 1 ]"

# DeepSqueeze with 8-bit training (int8 model), random-k, quasi-global momentum, 3 ranks
# (blocks of 3, 3 and 2 nodes).
squeeze=(--set algo.name=deep-squeeze --set algo.compressor=randomk --set algo.keep_fraction=0.2
         --set algo.qgm=true --set model.precision=int8 --set algo.consensus_step=0.3)
train squeeze_sim -- "${squeeze[@]}"
train squeeze_np3 "${mpirun[@]}" -np 3 -- "${squeeze[@]}"
check "deepsqueeze: 3 ranks = simulator" "$equal" "$(ckpt squeeze_np3)" "$(ckpt squeeze_sim)"
check "deepsqueeze: 3 ranks' accuracies = simulator" same_accuracies squeeze_np3 squeeze_sim

# D-PSGD on a time-varying graph (a one-peer exponential graph), 2 ranks.
dpsgd=(--set algo.name=dpsgd --set graph.topology=one-peer-exponential)
train dpsgd_sim -- "${dpsgd[@]}"
train dpsgd_np2 "${mpirun[@]}" -np 2 -- "${dpsgd[@]}"
check "dpsgd: 2 ranks = simulator" "$equal" "$(ckpt dpsgd_np2)" "$(ckpt dpsgd_sim)"

# Resume under mpirun: 1 epoch, then continued to 2, equals the uninterrupted 2-epoch run.
train resume_np4 "${mpirun[@]}" -np 4 -- "${choco[@]}" --set run.epochs=1
cp -r "$work/resume_np4" "$work/resume_epoch1"
check "resume under mpirun" "${mpirun[@]}" -np 4 "$lpdt" train \
  --resume "$(dirname "$(ckpt resume_np4)")" --set run.epochs=2
check "resumed 4-rank run = simulator" "$equal" "$(ckpt resume_np4)" "$(ckpt choco_sim)"
# Ranks resuming copies of the run folder at different epochs: a configuration error naming both
# before any training (not a payload of the wrong round in the middle of it).
out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" train --resume "$(dirname "$(ckpt resume_np4)")" \
  --set run.epochs=3 : -np 1 "$lpdt" train \
  --resume "$(dirname "$work"/resume_epoch1/*/checkpoint.lpdt)" --set run.epochs=3 2>&1)
code=$?
if [ "$code" = 2 ] && grep -q "the ranks resume different checkpoints: rank 0's is of epoch 2 ([0-9]* rounds done), rank 1's of epoch 1 ([0-9]* rounds done)" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: ranks resuming different checkpoints -> exit $code:"
  echo "$out" | tail -10
fi

# Injected faults (docs/faults.md): lost and delayed messages are decided alike in every
# process, so 4 ranks still equal the simulator, messages in flight included, also across a
# resume.
faulty=("${choco[@]}" --set graph.topology=exponential --set faults.drop_probability=0.2
        --set faults.delay_probability=0.2 --set faults.delay_rounds=2)
train faulty_sim -- "${faulty[@]}"
train faulty_np4 "${mpirun[@]}" -np 4 -- "${faulty[@]}"
check "faults: 4 ranks = simulator" "$equal" "$(ckpt faulty_np4)" "$(ckpt faulty_sim)"
check "faults: counted" grep -q '"messages_lost": [1-9]' "$work"/faulty_np4/*/summary.json
train faulty_resume "${mpirun[@]}" -np 4 -- "${faulty[@]}" --set run.epochs=1
check "faults: resume under mpirun" "${mpirun[@]}" -np 4 "$lpdt" train \
  --resume "$(dirname "$(ckpt faulty_resume)")" --set run.epochs=2
check "faults: resumed = simulator" "$equal" "$(ckpt faulty_resume)" "$(ckpt faulty_sim)"

# A rank killed at step 7 (nodes 6 and 7): the others find it dead by deadline, drop its edges,
# renormalise and finish; mpirun --enable-recovery lets them. The survivors' accuracies equal
# the simulator's, where the same nodes die at the same step. The deadline is long because a
# live rank that misses it (stalled, not waiting: waiting ranks give signs of life, docs/faults.md)
# is taken for dead: 4 ranks on 2 loaded cores missed 3 s, and once 6 s; each run waits it out
# once for the killed rank.
kill=(--set algo.name=deep-squeeze --set algo.compressor=topk --set algo.keep_fraction=0.1
      --set algo.consensus_step=0.3 --set graph.topology=exponential
      --set faults.kill_nodes=[6,7] --set faults.kill_step=7 --set run.receive_timeout_s=20)
train kill_sim -- "${kill[@]}"
train kill_np4 "${mpirun[@]}" --enable-recovery -np 4 -- "${kill[@]}"
check "kill: dead nodes reported" grep -q '"node": 7' "$work"/kill_np4/*/summary.json
# The whole state equals the simulator's, the dead nodes' rows included (zeros in both): no term of
# a dead node reaches a survivor (docs/faults.md). Only the bytes differ, the dead rank's being
# those it last reported (below).
check "kill: 4 ranks' state = simulator's" "$equal" --tensors "$(ckpt kill_np4)" "$(ckpt kill_sim)"
check "kill: survivors' accuracies = simulator" cmp \
  <(cut -d, -f1,2,5 "$work"/kill_np4/*/metrics.csv) <(cut -d, -f1,2,5 "$work"/kill_sim/*/metrics.csv)
check "kill: dead nodes left out of the last epoch" bash -c \
  "! grep -q '^2,6,' $work/kill_np4/*/metrics.csv && grep -q '^2,5,' $work/kill_np4/*/metrics.csv"
# The dead rank's bytes in summary.json are those of its last report (the end of epoch 1, before
# it died at step 7), which are the simulator's epoch-1 bytes of nodes 6 and 7, not 0.
check "kill: dead nodes' bytes as last reported" cmp \
  <(awk '/"bytes_sent_per_node": \[/{f=1;next} f&&/\]/{f=0} f{gsub(/[ ,]/,"");print}' \
      "$work"/kill_np4/*/summary.json | sed -n '7,8p') \
  <(awk -F, '$1==1&&($2==6||$2==7){print $6}' "$work"/kill_sim/*/metrics.csv)
# The survivors send nothing to the dead nodes from their death on, under MPI as in the simulator.
survivor_bytes() {
  awk '/"bytes_sent_per_node": \[/{f=1;next} f&&/\]/{f=0} f{gsub(/[ ,]/,"");print}' \
    "$work"/$1/*/summary.json | sed -n '1,6p'
}
check "kill: survivors' bytes = simulator" cmp <(survivor_bytes kill_np4) <(survivor_bytes kill_sim)
check "kill: the dead rank's bytes are marked" bash -c "grep -A1 \
  '\"bytes_as_last_reported_by_ranks\": \\[' $work/kill_np4/*/summary.json | grep -qx ' *3'"

# A rank killed in the reference protocol's gossip-only rounds (faults.kill_step past the 10
# training rounds) dies there, as the simulator's nodes do: the same deaths, in the same round,
# and the same final figures of the survivors.
kill_ref=(--set algo.name=deep-squeeze --set graph.topology=exponential
          --set eval.protocol=reference --set eval.gossip_rounds=5
          --set faults.kill_nodes=[4,5,6,7] --set faults.kill_step=12 --set run.receive_timeout_s=10)
train kill_ref_sim -- "${kill_ref[@]}"
train kill_ref_np2 "${mpirun[@]}" --enable-recovery -np 2 -- "${kill_ref[@]}"
final_figures() {
  grep -E '"(mean_node_accuracy|average_model_accuracy|consensus_distance|seen_in_round)"' \
    "$work"/$1/*/summary.json
}
check "kill in gossip-only rounds: nodes died in round 12" \
  bash -c "grep -c '\"seen_in_round\": 12' $work/kill_ref_np2/*/summary.json | grep -qx 4"
check "kill in gossip-only rounds: final figures = simulator" cmp \
  <(final_figures kill_ref_np2) <(final_figures kill_ref_sim)

# Resumed after the death: a checkpoint written once the rank had died (step 7, in epoch 2)
# continued to a third epoch, under mpirun and in-process (from a copy). The killed rank dies
# again at its first step and its nodes stay dead: no rows of theirs in epoch 3, null final
# accuracies, their bytes still those of their last report; and both resumed runs agree.
train kill_part "${mpirun[@]}" --enable-recovery -np 4 -- "${kill[@]}"
cp -r "$work/kill_part" "$work/kill_part_copy"
cp -r "$work/kill_part" "$work/kill_part_np2"
check "kill: resumed under mpirun after the death" logged "$work/kill_resumed_mpi.log" \
  "${mpirun[@]}" --enable-recovery -np 4 \
  "$lpdt" train --resume "$(dirname "$(ckpt kill_part)")" --set run.epochs=3
check "kill: resumed in-process after the death" logged "$work/kill_resumed_sim.log" "$lpdt" train \
  --resume "$(dirname "$work"/kill_part_copy/kill_part-*/checkpoint.lpdt)" --set run.epochs=3
check "kill: dead nodes stay dead after resume" bash -c \
  "! grep -q '^3,[67],' $work/kill_part/*/metrics.csv && grep -q '^3,5,' $work/kill_part/*/metrics.csv"
check "kill: resumed final accuracies of the dead are null" bash -c "grep -A8 \
  '\"node_accuracy\": \\[' $work/kill_part/*/summary.json | sed -n '8,9p' | grep -c null | grep -qx 2"
check "kill: resumed dead nodes' bytes as last reported" cmp \
  <(awk '/"bytes_sent_per_node": \[/{f=1;next} f&&/\]/{f=0} f{gsub(/[ ,]/,"");print}' \
      "$work"/kill_part/*/summary.json | sed -n '7,8p') \
  <(awk -F, '$1==1&&($2==6||$2==7){print $6}' "$work"/kill_sim/*/metrics.csv)
# The deaths each resumed run recorded (node, round seen): only nodes 6 and 7 at step 7, as in
# the checkpoint. Checked first so that a live rank taken for dead (a step held up past the short
# receive deadline on a loaded machine) shows here, by node and round, before the metrics differ.
dead_nodes() {
  awk '/"dead_nodes": \[/{f=1} f{print} f&&/\]/{exit}' "$work"/$1/*/summary.json | tr -d ' \n'
}
deaths='"dead_nodes":[{"node":6,"seen_in_round":7},{"node":7,"seen_in_round":7}],'
check "kill: resumed under mpirun saw only the planned deaths" cmp <(dead_nodes kill_part) \
  <(echo -n "$deaths")
check "kill: resumed in-process saw only the planned deaths" cmp <(dead_nodes kill_part_copy) \
  <(echo -n "$deaths")
# With 2 ranks, where rank 1 hosts nodes 4 .. 7 of which only 6 and 7 died: no whole process
# to kill any more (it was refused as a kill list of part of a rank), and the same state as
# resumed in-process.
check "kill: resumed with 2 ranks after the death" logged "$work/kill_resumed_np2.log" \
  "${mpirun[@]}" -np 2 "$lpdt" train \
  --resume "$(dirname "$work"/kill_part_np2/kill_part-*/checkpoint.lpdt)" --set run.epochs=3
check "kill: resumed with 2 ranks = resumed in-process" "$equal" \
  "$work"/kill_part_np2/kill_part-*/checkpoint.lpdt "$work"/kill_part_copy/kill_part-*/checkpoint.lpdt
failed_before=$failed
check "kill: resumed under mpirun = resumed in-process" diff \
  <(cut -d, -f1,2,5 "$work"/kill_part/*/metrics.csv) \
  <(cut -d, -f1,2,5 "$work"/kill_part_copy/*/metrics.csv)
if [ "$failed" -gt "$failed_before" ]; then
  # Every row that differs is printed above (epoch, node, test accuracy); which nodes, with the
  # deaths and waits each run reported, tells a rank taken for dead from another cause.
  echo "kill runs' reports of deaths and waits:"
  for log in kill_part kill_resumed_mpi kill_resumed_sim; do
    grep 'killing this process\|did not answer\|as dead\|waited' "$work/$log.log" | sed "s/^/$log: /"
  done
fi

# A rank killed (from outside) during an evaluation: its message to rank 0 (its rows, or its
# nodes' accuracies) may then already be on the way, and rank 0, reading it from a dead process,
# waits out the deadline instead of forever; it finishes the run without that rank. Rank 2,
# whose message rank 0 takes after rank 1's, waits for it longer and lives on (it was ended
# with the dead rank when it waited one deadline too).
"${mpirun[@]}" --enable-recovery -np 3 "$lpdt" train --out "$work/killed" "${tiny[@]}" \
  --set run.epochs=6 --set run.max_steps_per_epoch=1 --set data.test_subset=0 \
  --set data.synthetic_samples_per_class=1000 --set run.receive_timeout_s=3 \
  --set graph.topology=exponential >"$work/killed.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "^epoch 1/6" "$work/killed.log" && break; sleep 0.1; done
sleep 1
for pid in $(pgrep -P "$job"); do
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx OMPI_COMM_WORLD_RANK=1; then kill -9 "$pid"; fi
done
for _ in $(seq 1200); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
  failed=$((failed + 1))
  echo "FAILED: rank 1 killed during an evaluation: rank 0 still waits after 120 s"
  pkill -9 -P "$job"
  kill "$job"
elif grep -q '"dead_nodes"' "$work"/killed/*/summary.json 2>/dev/null &&
  grep -q "treating rank 1 as dead\|rank 1 (nodes 3 .. 5) did not answer" "$work/killed.log" &&
  ! grep -q "rank 2: error" "$work/killed.log" &&
  [ "$(grep -o '"node": [0-9]*' "$work"/killed/*/summary.json | sort -u | tr -d '\n')" = \
    '"node": 3"node": 4"node": 5' ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: rank 1 killed during an evaluation:"
  tail -10 "$work/killed.log"
fi
wait "$job" 2>/dev/null

# That run, which lost rank 1 for real, resumed for two more epochs under mpirun with 2 ranks (its
# nodes 3 .. 5 dead from the checkpoint on, trained on rows nobody mixes) and in-process
# from a copy: the same state value for value, the dead nodes' rows zeros in both (docs/mpi.md).
if compgen -G "$work/killed/*/checkpoint.lpdt" >/dev/null &&
  grep -q '"dead_nodes"' "$work"/killed/*/summary.json 2>/dev/null; then
  cp -r "$work/killed" "$work/killed_copy"
  check "real death: resumed under mpirun" logged "$work/killed_resumed_mpi.log" \
    "${mpirun[@]}" -np 2 "$lpdt" train --resume "$(dirname "$work"/killed/*/checkpoint.lpdt)" \
    --set run.epochs=8
  check "real death: resumed in-process" logged "$work/killed_resumed_sim.log" "$lpdt" train \
    --resume "$(dirname "$work"/killed_copy/*/checkpoint.lpdt)" --set run.epochs=8
  check "real death: resumed under mpirun = in-process" "$equal" \
    "$work"/killed/*/checkpoint.lpdt "$work"/killed_copy/*/checkpoint.lpdt
fi

# Ranks started with different settings (an MPMD launch): a configuration error naming the key
# and both values, exit code 2, before any training.
out=$(timeout 300 "${mpirun[@]}" -np 1 "$lpdt" train --out "$work/mpmd" "${tiny[@]}" \
  --set graph.nodes=4 : -np 1 "$lpdt" train --out "$work/mpmd" "${tiny[@]}" --set graph.nodes=4 \
  --set optim.lr=0.5 2>&1)
code=$?
if [ "$code" = 2 ] && grep -q "optim.lr = 0.1 on rank 0, 0.5 on rank 1" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: ranks with different optim.lr -> exit $code:"
  echo "$out" | tail -10
fi

# A configuration that fails on rank 1 only (its own --set): rank 0 reports rank 1's error, exit
# code 2, instead of nothing (rank 1 left silently) or a wait in MPI_Init (--enable-recovery).
for recovery in "" --enable-recovery; do
  out=$(timeout 120 "${mpirun[@]}" $recovery -np 1 "$lpdt" train --out "$work/badrank" \
    "${tiny[@]}" --set graph.nodes=4 : -np 1 "$lpdt" train --out "$work/badrank" "${tiny[@]}" \
    --set graph.nodes=4 --set optim.lr=-1 2>&1)
  code=$?
  if { [ -n "$recovery" ] || [ "$code" = 2 ]; } && [ "$code" != 124 ] &&
    grep -q "rank 0: configuration error: rank 1: --set optim.lr=-1: key 'optim.lr'" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: a configuration error on rank 1 only ${recovery} -> exit $code:"
    echo "$out" | tail -10
  fi
done

# Ranks whose data.dir (which may differ between hosts) hold other files: a configuration error
# naming both ranks' folders, instead of nodes trained on data the run folder does not describe.
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
idx_dir() {  # idx_dir DIR LABEL: 8 training and 4 test images of 28x28 zeros, all labelled LABEL
  mkdir -p "$1"
  local split n
  for split in train:8 t10k:4; do
    n=${split#*:}
    { printf '\x00\x00\x08\x03'; be32 "$n"; be32 28; be32 28; head -c $((n * 784)) /dev/zero; } \
      >"$1/${split%:*}-images-idx3-ubyte"
    { printf '\x00\x00\x08\x01'; be32 "$n"; head -c "$n" /dev/zero | tr '\0' "\\$2"; } \
      >"$1/${split%:*}-labels-idx1-ubyte"
  done
}
idx_dir "$work/idx_a" 1
idx_dir "$work/idx_b" 2
idx=(--set data.dataset=mnist --set data.partition=iid --set data.augment=false --set data.test_subset=0)
out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" train --out "$work/otherdata" "${tiny[@]}" \
  "${idx[@]}" --set graph.nodes=2 --set data.dir="$work/idx_a" : -np 1 "$lpdt" train \
  --out "$work/otherdata" "${tiny[@]}" "${idx[@]}" --set graph.nodes=2 --set data.dir="$work/idx_b" 2>&1)
code=$?
if [ "$code" = 2 ] && grep -q "must train on the same data, but their training sets differ: rank 0 (data.dir = '$work/idx_a')" <<<"$out" &&
  grep -q "rank 1 (data.dir = '$work/idx_b')" <<<"$out" && [ ! -e "$work/otherdata" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: ranks with different data -> exit $code:"
  echo "$out" | tail -10
fi

# A rank that cannot start for a reason of its own host (a --resume folder missing there, a
# data.dir without the dataset's files): rank 0 reports that rank's error, naming it, with its
# exit code, and no rank waits for it until a deadline.
mkdir -p "$work/idx_empty"
startfail() {  # startfail NAME CODE PATTERN -- RANK1_ARGS...: rank 0 fine, rank 1 with RANK1_ARGS
  local name="$1" want="$2" pattern="$3"
  shift 4
  local started=$SECONDS
  out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" train --out "$work/$name" "${tiny[@]}" \
    "${idx[@]}" --set graph.nodes=2 --set data.dir="$work/idx_a" : -np 1 "$lpdt" train "$@" 2>&1)
  code=$?
  if [ "$code" = "$want" ] && grep -q -- "$pattern" <<<"$out" &&
    [ $((SECONDS - started)) -lt 60 ] && [ ! -e "$work/$name" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: rank 1 cannot start ($name) -> exit $code after $((SECONDS - started)) s:"
    echo "$out" | tail -10
  fi
}
startfail noresume 2 "rank 0: configuration error: rank 1: train --resume: '$work/no_such_run' does not exist" \
  -- --resume "$work/no_such_run"
startfail nodata 1 "rank 0: error: rank 1: .*$work/idx_empty" \
  -- --out "$work/nodata" "${tiny[@]}" "${idx[@]}" --set graph.nodes=2 --set data.dir="$work/idx_empty"

# A rank whose own copy of the run folder disagrees (a copy on its host already finished, or
# truncated): rank 0 reports that rank's error naming it, every rank stops at once with its exit
# code, and the run folder is left as it was. (A finished copy, a configuration error, made the
# other ranks wait out their receive deadline, 600 s by default.)
train damaged -- --set graph.nodes=2 --set run.epochs=1
damaged_run=$(dirname "$(ckpt damaged)")
cp -r "$damaged_run" "$work/finished_copy"
"$lpdt" train --resume "$work/finished_copy" --set run.epochs=2 >/dev/null
cp -r "$damaged_run" "$work/truncated_copy"
head -c 200 "$damaged_run/checkpoint.lpdt" >"$work/truncated_copy/checkpoint.lpdt"
cp "$damaged_run/metrics.csv" "$work/damaged_metrics.before"
for copy in finished_copy:2 truncated_copy:1; do
  started=$SECONDS
  out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" train --resume "$damaged_run" \
    --set run.epochs=2 : -np 1 "$lpdt" train --resume "$work/${copy%:*}" --set run.epochs=2 2>&1)
  code=$?
  if [ "$code" = "${copy#*:}" ] && grep -q "rank 0: .*error: rank 1: .*$work/${copy%:*}" <<<"$out" &&
    [ $((SECONDS - started)) -lt 60 ] &&
    cmp -s "$damaged_run/metrics.csv" "$work/damaged_metrics.before"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: rank 1 resumes its own ${copy%:*} -> exit $code after $((SECONDS - started)) s:"
    echo "$out" | tail -10
  fi
done

# One rank resumes and the other starts anew (a mixed MPMD launch), in both orders: a
# configuration error naming both, exit code 2, at once (it made the ranks wait on each other's
# messages, 3 deadlines, then stop with no word of the cause), and no run folder touched.
fresh=(train --out "$work/fresh_beside" --set run.name=damaged "${tiny[@]}" --set graph.nodes=2
       --set run.epochs=2)
resume=(train --resume "$damaged_run" --set run.epochs=2)
for order in resume_first fresh_first; do
  if [ "$order" = resume_first ]; then first=("${resume[@]}") second=("${fresh[@]}")
  else first=("${fresh[@]}") second=("${resume[@]}"); fi
  started=$SECONDS
  out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" "${first[@]}" : -np 1 "$lpdt" "${second[@]}" 2>&1)
  code=$?
  if [ "$code" = 2 ] && grep -q "the ranks of one job must start alike, but rank 0" <<<"$out" &&
    [ $((SECONDS - started)) -lt 60 ] && [ ! -e "$work/fresh_beside" ] &&
    cmp -s "$damaged_run/metrics.csv" "$work/damaged_metrics.before"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: one rank resumes, one starts anew ($order) -> exit $code after" \
      "$((SECONDS - started)) s:"
    echo "$out" | tail -10
  fi
done

# A process of the job that never starts MPI (it exits first): the others stop after 3 deadlines,
# at least 10 s, with a message, instead of waiting in MPI_Init forever (with or without
# --enable-recovery).
out=$(timeout 120 "${mpirun[@]}" --enable-recovery -np 1 "$lpdt" train --out "$work/noinit" \
  "${tiny[@]}" --set run.receive_timeout_s=1 : -np 1 true 2>&1)
code=$?
if [ "$code" != 124 ] && grep -q "rank 0: error: MPI_Init did not complete within 10 s" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: a process that never starts MPI -> exit $code:"
  echo "$out" | tail -10
fi

# Commands other than train under mpirun with several processes: refused (a sweep would train
# its runs once per process), with exit code 2 and nothing written.
printf 'out_dir = "%s"\n[set]\n"data.dataset" = "synthetic"\n"run.epochs" = 1\n[grid]\n"optim.lr" = [0.1, 0.05]\n' \
  "$work/sweep_out" >"$work/sweep.toml"
out=$(timeout 120 "${mpirun[@]}" -np 2 "$lpdt" sweep "$work/sweep.toml" 2>&1)
code=$?
if [ "$code" = 2 ] && [ ! -e "$work/sweep_out" ] &&
  grep -q "lpdt sweep was started by mpirun as one of 2 processes" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: lpdt sweep under mpirun -np 2 -> exit $code:"
  echo "$out" | tail -10
fi

# In an MPMD launch the refusing program need not be rank 0's: its first process says why.
out=$(timeout 120 "${mpirun[@]}" -np 1 "$lpdt" train --out "$work/mixed_topo" "${tiny[@]}" \
  --set graph.nodes=2 : -np 1 "$lpdt" topo 2>&1)
code=$?
if [ "$code" != 0 ] && [ "$code" != 124 ] &&
  grep -q "lpdt: rank 1: lpdt topo was started by mpirun as one of 2 processes" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: lpdt topo as rank 1 of an MPMD launch -> exit $code:"
  echo "$out" | tail -10
fi

# Their --help is not refused: it only prints, once (rank 0).
out=$(timeout 120 "${mpirun[@]}" -np 2 "$lpdt" topo --help 2>&1)
code=$?
if [ "$code" = 0 ] && [ "$(grep -c "Print a topology" <<<"$out")" = 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: lpdt topo --help under mpirun -np 2 -> exit $code:"
  echo "$out" | tail -10
fi

# More ranks than nodes: a configuration error naming the key, exit code 2.
out=$("${mpirun[@]}" -np 3 "$lpdt" train --out "$work/bad" "${tiny[@]}" --set graph.nodes=2 2>&1)
code=$?
if [ "$code" = 2 ] && grep -q "graph.nodes = 2 cannot be spread over 3 processes" <<<"$out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: 3 ranks for 2 nodes -> exit $code:"
  echo "$out" | tail -10
fi

# A diverged run (the loss stops being finite) stops on every rank at the end of the epoch, with
# an error naming the epoch and what to change, instead of training on NaN; rank 0 alone says it.
out=$(timeout 300 "${mpirun[@]}" -np 2 "$lpdt" train --out "$work/diverged" "${tiny[@]}" \
  --set optim.lr=1e30 2>&1)
code=$?
if [ "$code" != 0 ] && [ "$code" != 124 ] &&
  grep -q "training diverged in epoch 1: the training loss of nodes 0, 1, 2, 3" <<<"$out" &&
  grep -q "lower optim.lr (now 1e+30)" <<<"$out" &&
  [ "$(grep -c "training diverged" <<<"$out")" = 1 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: diverged run under mpirun -> exit $code:"
  echo "$out" | tail -10
fi

echo "mpi_test: $passed passed, $failed failed"
[ "$failed" = 0 ]
