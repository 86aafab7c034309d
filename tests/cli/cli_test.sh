#!/usr/bin/env bash
# The CLI end to end: exit codes (0 ok, 2 usage/config error, 1 runtime error), messages that
# name the problem, topo exports, and a tiny training run.
# Usage: cli_test.sh path/to/lpdt [1|0: whether CMake found oneDNN for it; default 1]
set -u
lpdt="$1"
onednn_built="${2:-1}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect CODE PATTERN -- command...: exit code CODE and PATTERN somewhere in stdout+stderr.
expect() {
  local code="$1" pattern="$2"
  shift 3
  local out
  out=$("$@" 2>&1)
  local got=$?
  if [ "$got" = "$code" ] && grep -q -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $* -> exit $got (expected $code), output:"
    echo "$out" | head -20
    echo "(expected to find: $pattern)"
  fi
}

expect 2 "required" -- "$lpdt"
# An output file that cannot be written is a usage error (2) before any work, for every command.
expect 2 "topo \-\-json $work/missing/t.json: its folder" -- "$lpdt" topo --json "$work/missing/t.json"
expect 2 "topo \-\-dot $work: it is a folder" -- "$lpdt" topo --dot "$work"
# topo refuses what train refuses, also where 2 nodes pair a directed ring's edges up.
expect 2 "topo \-\-mixing metropolis needs an undirected topology .* directed-ring is a directed kind" \
  -- "$lpdt" topo -t directed-ring -m metropolis -n 2
expect 2 "cost \-\-json $work/missing/c.json: its folder" -- "$lpdt" cost --json "$work/missing/c.json"
expect 2 "report \-\-out $work/missing/r.html: its folder" -- "$lpdt" report "$work" \
  --out "$work/missing/r.html"
expect 2 "unknown subcommand 'trian' (expected one of train, topo" -- "$lpdt" trian
expect 2 "data.dir is empty: data.dataset = \"mnist\" reads its files from a folder" -- \
  "$lpdt" train --set data.dataset=mnist --set run.out_dir="$work/no_dir_runs"
expect 2 "data.vocab is empty: data.dataset = \"ag-news\" needs a WordPiece vocab.txt" -- \
  "$lpdt" train --set data.dataset=ag-news --set model.arch=transformer --set data.dir="$work" \
  --set run.out_dir="$work/no_dir_runs"
expect 2 "run.out_dir is empty: expected the folder" -- "$lpdt" train --set run.out_dir= --print-config
# --print-config and a new run's config.toml name where each value was set.
expect 0 "^nodes = 2  # --set graph.nodes=2$" -- "$lpdt" train --set graph.nodes=2 --print-config
expect 2 "unknown key 'graph.topolgy'" -- "$lpdt" train --set graph.topolgy=torus
# A string that is not UTF-8 cannot be written into config.toml: said, naming the key and byte.
expect 2 "'run.name' = .* is not valid UTF-8 (byte 4: .xFF)" -- "$lpdt" train \
  --set run.name=$'bad\xffname' --print-config
# -o/--out names the folder exactly as given: a backslash stays a backslash.
expect 0 "done" -- "$lpdt" train --out "$work/back\\new" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
  --set model.norm=none --set graph.nodes=2 --set run.epochs=1 --set run.max_steps_per_epoch=1
expect 0 "config.toml" -- ls "$work/back\\new"/quickstart-*
expect 2 "optim.lr" -- "$lpdt" train --set optim.lr=-1
expect 2 "directed-ring" -- "$lpdt" train --set graph.topology=hypercube
printf '[optim]\nlr = "fast"\n' >"$work/bad.toml"
# A file the user may not read is said to be one (as root: run as nobody, where that can run lpdt).
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && "${nobody[@]}" "$lpdt" --version \
  >/dev/null 2>&1; then
  unreadable=$(mktemp /tmp/lpdt_unreadable.XXXXXX)
  printf '[optim]\nlr = 0.1\n' >"$unreadable"
  chmod 000 "$unreadable"
  expect 2 "config file '$unreadable' cannot be read: Permission denied" -- "${nobody[@]}" \
    "$lpdt" train -c "$unreadable" --print-config
  rm -f "$unreadable"
fi
expect 2 "bad.toml:2" -- "$lpdt" train --config "$work/bad.toml"
expect 2 "torus" -- "$lpdt" topo --topology torus --nodes 10
expect 1 "no-such-dir" -- "$lpdt" train --set data.dir="$work/no-such-dir" --out "$work/runs"
expect 2 "run.device = 'cuda'" -- "$lpdt" train --set run.device=cuda
expect 2 "run.cuda_graph" -- "$lpdt" train --set run.cuda_graph=sometimes
expect 2 "device" -- "$lpdt" bench --device tpu
# The CUDA profiler's range brackets CUDA work of the throughput comparison only.
expect 2 "add --device cuda" -- "$lpdt" bench --cuda-profiler-range engine --nodes 2 --depth 8 \
  --channels 1 --size 8 --batch 4 --steps 1 --warmup 0
expect 2 "cuda-profiler-range" -- "$lpdt" bench --cuda-profiler-range sometimes
expect 2 "excludes" -- "$lpdt" bench --cuda-profiler-range engine --precision
# The engine bench takes every model precision; a wrong one names the accepted values.
expect 0 "resnet" -- "$lpdt" bench --nodes 2 --model-precision bf16 --depth 8 --channels 1 --size 8 \
  --batch 4 --steps 1 --warmup 0
expect 2 "expected fp32, bf16 or int8" -- "$lpdt" bench --model-precision fp16
# The operator profile: a table per mode after its row; it needs --precision. Rows for every
# operator (more than a step calls), so that what is found does not depend on their timings: on a
# busy machine a one-step profile of this tiny model can rank the convolutions below the top few.
# (A build with oneDNN calls its primitives directly, core/onednn_float_conv.h; one without goes
# through LibTorch's convolution.)
expect 0 "lpdt::onednn_conv2d_input_grad\|aten::convolution_backward" -- "$lpdt" bench --precision --modes fp32 --nodes 1 \
  --depth 8 --channels 1 --size 8 --batch 4 --steps 1 --warmup 0 --threads 1 --profile 500
expect 2 "add --precision" -- "$lpdt" bench --profile 5
# Passes side by side: a list of worker counts alternates steps in --precision (a row each, the
# count as resolved: at most one per pass), one value elsewhere.
expect 0 "  4     1        2  fp32" -- "$lpdt" bench --precision --modes fp32 --nodes 4 \
  --nodes-per-pass 1 --depth 8 --channels 1 --size 8 --batch 2 --steps 1 --warmup 1 --threads 2 \
  --pass-workers 1,2
expect 2 "expected one value" -- "$lpdt" bench --nodes 2 --pass-workers 1,2
expect 2 "pass-workers" -- "$lpdt" bench --precision --pass-workers 2000
# One benchmark per call, and a benchmark's options only with it: neither is silently skipped.
expect 2 "\-\-precision excludes \-\-wire" -- "$lpdt" bench --precision --wire
expect 2 "\-\-scaling excludes \-\-conv-forms" -- "$lpdt" bench --scaling --conv-forms
expect 2 "no convolution of mlp has a shape the backward-data form handles" -- "$lpdt" bench \
  --conv-forms --arch mlp --channels 1 --size 8 --json "$work/conv-forms-mlp.json"
expect 2 "No such file" -- ls "$work/conv-forms-mlp.json"
expect 0 "int8-simulated" -- "$lpdt" bench --precision --modes int8-simulated \
  --arch lenet5 --channels 1 --size 28 --nodes 1 --steps 1 --warmup 0 --batch 2 \
  --json "$work/no-fp32.json"
expect 0 '"speedup_vs_fp32": null' -- cat "$work/no-fp32.json"
expect 2 "\-\-modes requires \-\-precision" -- "$lpdt" bench --modes fp32
# Weight gradients in bfloat16: a bench mode of each int8 backend, and a configuration key.
expect 0 "int8-simulated-bf16wgrad" -- "$lpdt" bench --precision --modes int8-simulated-bf16wgrad \
  --arch lenet5 --channels 1 --size 28 --nodes 1 --steps 1 --warmup 0 --batch 2
expect 2 "'fp32-bf16wgrad' is not a mode" -- "$lpdt" bench --precision --modes fp32-bf16wgrad
expect 0 "^weight_grad = \"bf16\"  # \-\-set quant.weight_grad=bf16$" -- "$lpdt" train \
  --set quant.weight_grad=bf16 --print-config
expect 2 "quant.weight_grad" -- "$lpdt" train --set quant.weight_grad=fp16 --print-config
# A bad mode or compressor is refused before anything is measured (no table row first).
first_line() { "$@" 2>&1 | head -n 1; return "${PIPESTATUS[0]}"; }
expect 2 "^lpdt: configuration error: bench \-\-modes: 'foo' is not a mode" -- first_line \
  "$lpdt" bench --precision --modes fp32,foo
expect 2 "^lpdt: configuration error: bench \-\-wire: compressor 'topk:2' keeps a fraction" -- \
  first_line "$lpdt" bench --wire --compressors none,topk:2
expect 2 "compressor 'gzip' is not a compressor" -- "$lpdt" bench --wire --compressors gzip
# So is a model that does not fit the input size (no header line first).
expect 2 "^lpdt: configuration error: model.arch = 'lenet5' needs inputs of at least 12x12" -- \
  first_line "$lpdt" bench --precision --modes fp32 --arch lenet5 --size 4
# Only a ResNet's header names a depth, and only a model with a normalisation its norm.
expect 0 "^lpdt bench \-\-precision: lenet5, 1x12x12 inputs" -- "$lpdt" bench --precision \
  --modes fp32 --arch lenet5 --channels 1 --size 12 --nodes 1 --steps 1 --warmup 0 --batch 2
expect 2 "\-\-compressors requires \-\-wire" -- "$lpdt" bench --precision --compressors none
# The two forms of the same convolutions: a row per shape, and the pass's total.
expect 0 "one forward pass of these layers" -- "$lpdt" bench --conv-forms --depth 8 --channels 1 \
  --size 8 --batch 2 --steps 1 --warmup 0 --threads 1
expect 0 "integer backend's float sums for the same layers" -- "$lpdt" bench --conv-forms \
  --depth 8 --channels 1 --size 8 --batch 2 --steps 1 --warmup 0 --threads 1
# LibTorch's convolutions against the direct primitives: a row per one-group shape (strided ones
# too), and the step's total; none of the results differ by more than float rounding.
out=$("$lpdt" bench --conv-forms --depth 8 --channels 1 --size 8 --batch 2 --steps 1 --warmup 0 \
  --threads 1 --json "$work/conv-forms.json" 2>&1)
if [ "$onednn_built" = 0 ]; then
  # A build without oneDNN (the CUDA build's configuration) says so and times none.
  if grep -q "primitives called directly: not timed, this build has no oneDNN" <<<"$out" &&
    python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["direct_primitives_rows"] == []' \
      "$work/conv-forms.json"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: bench --conv-forms without oneDNN: $out"
  fi
elif grep -q "one training step's convolutions: LibTorch .* the layer's forms" <<<"$out" &&
   grep -q "with Winograd where it was faster" <<<"$out" &&
   python3 - "$work/conv-forms.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["direct_primitives_rows"]
assert {r["stride"] for r in rows} == {1, 2}, rows
assert all(r["max_relative_difference"] < 1e-5 and r["direct_ms"] > 0 for r in rows), rows
# The stem (one input channel: the data) is timed without an input gradient, as a step runs it.
assert [r["input_gradient"] for r in rows if r["in_channels"] == 1] == [False], rows
assert all(r["input_gradient"] for r in rows if r["in_channels"] != 1), rows
# ... and left to LibTorch by the layer; every other shape takes the direct primitives.
assert all(r["layer_takes_direct"] == (r["in_channels"] != 1) for r in rows), rows
# Winograd: timed for 3x3 stride-1 shapes of more than one input channel where oneDNN has it
# (AVX-512), never for others; within its rounding of the direct results.
for r in rows:
    if r["kernel"] != 3 or r["stride"] != 1 or r["in_channels"] == 1:
        assert r["winograd_ms"] is None, r
    elif r["winograd_ms"] is not None:
        assert r["winograd_ms"] > 0 and r["winograd_max_relative_difference"] < 2e-5, r
PY
then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAILED: bench --conv-forms direct primitives rows: $out"
fi
# The int16 pair-product kernel's column: timed where the CPU's integer backend takes it (AVX2),
# said to be not run elsewhere.
expect 0 "int16 pair products for the same layers\|not run: this CPU's integer backend" -- \
  "$lpdt" bench --conv-forms --depth 8 --channels 1 --size 8 --batch 2 --steps 1 --warmup 0 \
  --threads 1
# Counts and sizes are checked before anything runs, naming the option.
expect 2 "\-\-channels" -- "$lpdt" bench --channels 0
expect 2 "\-\-channels: got 99999: expected an integer from 1 to 256" -- "$lpdt" bench \
  --channels 99999
expect 2 "\-\-size" -- "$lpdt" bench --arch mlp --size 0
expect 2 "\-\-threads" -- "$lpdt" bench --threads -2
expect 2 "bench \-\-nodes: 8 is given twice" -- "$lpdt" bench --nodes 1,8,8
expect 2 "\-\-nodes: got 5000: expected an integer from 1 to 4096" -- "$lpdt" bench --scaling --nodes 1,2,5000
expect 2 "\-\-size: got 2147483648: expected an integer from 1 to 4096" -- "$lpdt" bench --size 2147483648
expect 2 "bench \-\-modes: fp32 is given twice" -- "$lpdt" bench --precision --modes fp32,int8-integer,fp32
expect 2 "bench \-\-values: int8 is given twice" -- "$lpdt" bench --wire --values int8,int8
expect 2 "bench \-\-pass-workers: 2 is given twice" -- "$lpdt" bench --precision --pass-workers 2,2
expect 2 "\-\-steps: got 99999999999: expected an integer from 1 to 1000000" -- "$lpdt" bench \
  --steps 99999999999
expect 2 "\-\-profile: got 99999999999999999999: expected an integer from 0 to 100000" -- \
  "$lpdt" bench --precision --profile 99999999999999999999
expect 2 "\-\-nodes-per-pass" -- "$lpdt" bench --nodes-per-pass -1
expect 2 "\-\-nodes" -- "$lpdt" bench --nodes 8,0
# An empty entry of a list is a typo, not a shorter list (CLI11 alone would drop it).
expect 2 "\-\-nodes: '1,,8' has an empty entry" -- "$lpdt" bench --nodes 1,,8
expect 2 "\-\-modes: 'fp32,' has an empty entry" -- "$lpdt" bench --precision --modes fp32,
expect 2 "\-\-compressors: ',none' has an empty entry" -- "$lpdt" bench --wire --compressors ,none
expect 2 "\-\-pass-workers: got 2000" -- "$lpdt" bench --pass-workers 1,2000
expect 2 "\-\-warmup" -- "$lpdt" bench --precision --warmup -1
# A size no machine has: a clear out-of-memory message, not LibTorch's trace.
expect 1 "out of memory" -- "$lpdt" bench --arch mlp --size 4096 --channels 256 --batch 64 \
  --steps 1 --warmup 0 --threads 1 --nodes 1
# Graphs beyond the dense mixing matrix's limit, and runaway gossip rounds, are refused.
expect 2 "expected 1 to 4096 nodes" -- "$lpdt" topo --nodes 20000
expect 2 "\-\-seed: got -1: expected an integer from 0 to" -- "$lpdt" topo --seed -1
expect 2 "\-\-set excludes \-\-table10" -- "$lpdt" cost --table10 --set model.arch=foo
expect 2 "\-\-json excludes \-\-table10" -- "$lpdt" cost --table10 --json "$work/t10.json"
expect 2 "\-\-measure excludes \-\-table10" -- "$lpdt" cost --table10 --measure
expect 2 "eval.gossip_rounds" -- "$lpdt" train --set eval.gossip_rounds=2000000000
# Rates beyond float32 and MPI deadlines beyond any bound are refused by range, naming the key.
expect 2 "optim.lr = 1e+39 is larger than float32's largest number" -- "$lpdt" train \
  --set optim.lr=1e39
expect 2 "key 'run.receive_timeout_s' = 4e9 is out of range" -- "$lpdt" train \
  --set run.receive_timeout_s=4e9
# A folder given as a file is named as such.
expect 1 "vocabulary: $work is a folder" -- "$lpdt" train \
  -c "$(dirname "$0")/../../configs/text_transformer_quickstart.toml" --set data.vocab="$work" \
  --set run.out_dir="$work/runs_vocab"
# A run name is one folder name inside run.out_dir.
expect 2 "run.name contains '/'" -- "$lpdt" train --set run.name=../escape
expect 2 "run.name is empty" -- "$lpdt" train --set run.name=
# Test images of another shape than the training images are refused, naming both shapes.
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
idx_split() {  # idx_split PREFIX COUNT SIDE
  { printf '\x00\x00\x08\x03'; be32 "$2"; be32 "$3"; be32 "$3"; head -c $(($2 * $3 * $3)) /dev/zero; } \
    >"$work/idx/$1-images-idx3-ubyte"
  { printf '\x00\x00\x08\x01'; be32 "$2"; head -c "$2" /dev/zero; } >"$work/idx/$1-labels-idx1-ubyte"
}
mkdir -p "$work/idx"
idx_split train 20 28
idx_split t10k 4 14
expect 1 "the test images are 1x14x14" -- "$lpdt" train --set data.dataset=mnist \
  --set data.dir="$work/idx" --set run.out_dir="$work/runs" --set run.epochs=1
# A resume on data files that changed since the checkpoint is refused, naming what changed.
idx_split t10k 4 28
changing=(--set data.dataset=mnist --set data.dir="$work/idx" --set data.partition=iid
  --set model.arch=mlp --set model.norm=none --set graph.nodes=2 --set data.batch_size=5
  --set data.augment=false --set run.log_every=0 --set run.epochs=1)
expect 0 "done: average-model accuracy" -- "$lpdt" train --out "$work/changing" "${changing[@]}"
idx_split train 24 28
expect 1 "train.samples 20 in checkpoint.lpdt, 24 now" -- "$lpdt" train \
  --resume "$(ls -d "$work"/changing/quickstart-*)" --set run.epochs=2
# A run diverging in its first epoch says what its folder keeps: no checkpoint, no metrics.
expect 1 "keeps what was written before: configuration and diverged.json" -- "$lpdt" train \
  --out "$work/diverging" --set data.dataset=synthetic --set model.arch=mlp --set model.norm=none \
  --set run.max_steps_per_epoch=3 --set run.epochs=2 --set optim.lr=1e30
# An 8-bit model quantizes NaN weights to finite codes, so its loss can stay finite after its
# parameters have not: the epoch's end checks the parameters too. Its advice names the 8-bit
# normaliser's own way to diverge.
expect 1 "training diverged in epoch 2: the parameters of nodes 0, 1 are not finite.*quant.range_evonorm = \"std\" divides" -- \
  "$lpdt" train --out "$work/diverging8" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=16 --set data.synthetic_size=16 --set graph.nodes=2 \
  --set run.max_steps_per_epoch=2 --set run.epochs=3 --set run.threads=1 --set data.test_subset=32 \
  --set data.batch_size=8 --set run.log_every=0 --set model.arch=resnet \
  --set model.precision=int8 --set quant.backend=integer --set optim.lr=1e5
# Choco over a time-varying graph warns that its bytes are a deployment's lower bound.
expect 0 "warning: algo.name = choco over the time-varying topology 'one-peer-exponential'" -- \
  "$lpdt" train --out "$work/time-varying" --set data.dataset=synthetic --set model.arch=mlp \
  --set model.norm=none --set run.max_steps_per_epoch=2 --set run.epochs=1 --set run.log_every=0 \
  --set graph.topology=one-peer-exponential --set algo.name=choco
expect 0 "choco over the time-varying topology" -- cat "$work"/time-varying/quickstart-*/summary.json
# A batch larger than any node's data trains (the loader cycles) but says so, in the summary too.
expect 0 "warning: data.batch_size = 64 is larger than the largest node's share" -- \
  "$lpdt" train --out "$work/big_batch" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
  --set model.norm=none --set graph.nodes=2 --set run.epochs=1 --set data.batch_size=64 \
  --set run.log_every=0 --set run.max_steps_per_epoch=1 --set 'faults.kill_nodes=[1]' \
  --set faults.kill_step=99 --set faults.delay_probability=0.5 --set faults.delay_rounds=3 \
  --set faults.drop_probability=0.99
expect 0 "larger than the largest node" -- cat "$work"/big_batch/quickstart-*/summary.json
expect 0 "^batch_size = 64  # --set data.batch_size=64$" -- \
  cat "$work"/big_batch/quickstart-*/config.toml
# The dirichlet partition's least share per node is a key: the error names it, and setting it
# lets 4 nodes split 40 samples.
dirichlet_small=(--set data.dataset=synthetic --set data.synthetic_samples_per_class=4
  --set data.synthetic_size=8 --set model.arch=mlp --set model.norm=none --set graph.nodes=4
  --set data.partition=dirichlet --set data.dirichlet_alpha=1000 --set run.epochs=1
  --set run.log_every=0 --set run.max_steps_per_epoch=1 --set data.augment=false)
expect 2 "lower data.dirichlet_min_samples or graph.nodes" -- \
  "$lpdt" train --out "$work/dirichlet" "${dirichlet_small[@]}"
expect 0 "done: average-model accuracy" -- "$lpdt" train --out "$work/dirichlet" "${dirichlet_small[@]}" \
  --set data.dirichlet_min_samples=1
expect 2 "crop padding 9 exceeds the images' side 8" -- "$lpdt" train --out "$work/dirichlet" \
  "${dirichlet_small[@]}" --set data.dirichlet_min_samples=1 --set data.augment=true \
  --set data.crop_padding=9
# A test subset larger than the test set is an error, not silently the whole test set.
expect 2 "data.test_subset = 100000 is more than the [0-9]* samples of the test set of dataset 'synthetic'" -- \
  "$lpdt" train --out "$work/dirichlet" "${dirichlet_small[@]}" \
  --set data.dirichlet_min_samples=1 --set data.test_subset=100000
# So is a node kill planned after the run's last step, and a delay no message outlives.
expect 0 "faults.kill_step = 99 is not a round of this run (rounds 0 to 0: one per training" -- \
  cat "$work"/big_batch/quickstart-*/summary.json
expect 0 "faults.delay_rounds = 3 is not less than the run's 1 gossip rounds" -- \
  cat "$work"/big_batch/quickstart-*/summary.json
"$lpdt" train --out "$work/ref_warmup" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
  --set model.norm=none --set graph.nodes=2 --set run.epochs=1 --set run.log_every=0 \
  --set run.max_steps_per_epoch=1 --set optim.warmup=official >"$work/ref_warmup.log" 2>&1
# interrupted NAME SIGNAL ARGS...: a long run into $work/NAME (output in $work/NAME.log) sent
# SIGNAL once its first epoch is done; prints its exit status. A background job of a script
# starts with SIGINT ignored, as it should stay (tested below): env gives it the default.
interrupted() {
  local name="$1" signal="$2"
  shift 2
  env --default-signal=INT "$lpdt" train --out "$work/$name" --set data.dataset=synthetic \
    --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
    --set model.norm=none --set graph.nodes=2 --set run.epochs=100000 --set run.log_every=0 \
    "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do grep -q "^epoch 1/" "$work/$name.log" && break; sleep 0.1; done
  kill "-$signal" "$pid"
  wait "$pid"
  echo "$?"
}
# Ctrl-C ends a run as SIGINT would (exit 130), saying what the folder keeps and how to resume.
expect 0 "130" -- interrupted interrupted INT
expect 0 "lpdt: interrupted; $work/interrupted/quickstart-.* keeps the last checkpoint.*--resume" \
  -- cat "$work/interrupted.log"
# Before any checkpoint (none at all here), the note offers no --resume that would fail.
expect 0 "143" -- interrupted interrupted0 TERM --set run.checkpoint_every=0
expect 0 "interrupted before the run's first checkpoint (none: run.checkpoint_every = 0), so there is nothing to resume; .* lpdt train --config $work/interrupted0/quickstart-.*/config.toml" \
  -- cat "$work/interrupted0.log"
# A closed terminal or SSH session (SIGHUP) gets the same note (exit 129).
expect 0 "129" -- interrupted interrupted_hup HUP
expect 0 "lpdt: interrupted; $work/interrupted_hup/quickstart-.* keeps the last checkpoint" \
  -- cat "$work/interrupted_hup.log"
# Started with SIGINT ignored (a background job of a script), a run keeps ignoring it.
( trap '' INT
  "$lpdt" train --out "$work/ignores_int" --set data.dataset=synthetic \
    --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
    --set model.norm=none --set graph.nodes=2 --set run.epochs=100000 --set run.log_every=0 \
    >"$work/ignores_int.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q "^epoch 1/" "$work/ignores_int.log" && break; sleep 0.1; done
  kill -INT "$pid"
  sleep 1
  kill -0 "$pid" && echo "still training after SIGINT" >"$work/ignores_int.status"
  kill -TERM "$pid"
  wait "$pid" )
expect 0 "still training after SIGINT" -- cat "$work/ignores_int.status"
# A resume at another thread count says that it need not be bit for bit the run that never
# stopped, and records it with the run's warnings.
"$lpdt" train --out "$work/threads_resume" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
  --set model.norm=none --set graph.nodes=2 --set run.epochs=1 --set run.max_steps_per_epoch=2 \
  --set run.threads=1 >/dev/null 2>&1
expect 0 "note: run.threads = 1 when the checkpoint was written, 2 now: .* need not be bit for bit" \
  -- "$lpdt" train --resume "$work"/threads_resume/quickstart-* --set run.epochs=2 \
  --set run.threads=2
expect 0 "run.threads = 1 when the checkpoint was written, 2 now" \
  -- cat "$work"/threads_resume/quickstart-*/summary.json
# Rows of a table that do not reach the disk (here a file size limit, as a full disk) stop the
# run, naming the file, instead of leaving cut tables behind an exit status of 0.
( trap '' XFSZ
  ulimit -f 32  # KiB: above config.toml (16 KiB), below layers.csv by epoch 80
  "$lpdt" train --out "$work/file_limit" --set data.dataset=synthetic \
    --set data.synthetic_samples_per_class=4 --set data.synthetic_size=2 --set model.arch=mlp \
    --set model.norm=none --set graph.nodes=2 --set run.epochs=400 --set run.log_every=0 \
    --set data.crop_padding=0 --set run.checkpoint_every=0 --set eval.per_node=false \
    >"$work/file_limit.log" 2>&1
  echo "exit $?" >>"$work/file_limit.log" )
expect 0 "cannot write '$work/file_limit/quickstart-[^/]*/layers.csv': File too large; the run stops here" \
  -- cat "$work/file_limit.log"
expect 0 "^exit 1$" -- cat "$work/file_limit.log"
# A one-epoch run with the official warm-up never trains at the full rate: said.
expect 0 "optim.warmup = official runs the first epoch at 0.1 x optim.lr, and run.epochs = 1" -- \
  cat "$work"/ref_warmup.log
# An out_dir that is a file is a configuration error (exit 2), as other bad keys are.
touch "$work/a-file"
expect 2 "run.out_dir = '$work/a-file': cannot create the folder" -- "$lpdt" train \
  --out "$work/a-file" --set data.dataset=synthetic --set run.epochs=1
# The reference protocol's gossip-only rounds are rounds of the run: a kill there is no warning,
# and the death is said before the accuracies it changes.
"$lpdt" train --out "$work/ref_kill" --set data.dataset=synthetic \
  --set data.synthetic_samples_per_class=4 --set data.synthetic_size=8 --set model.arch=mlp \
  --set model.norm=none --set graph.nodes=3 --set run.epochs=1 --set run.log_every=0 \
  --set run.max_steps_per_epoch=1 --set eval.protocol=reference --set eval.gossip_rounds=5 \
  --set 'faults.kill_nodes=[1]' --set faults.kill_step=3 >"$work/ref_kill.log" 2>&1
expect 0 "round 3: node 1 is dead" -- cat "$work/ref_kill.log"
expect 1 "" -- grep -q "never die" "$work/ref_kill.log"
expect 0 "^after 5 gossip-only rounds" -- bash -c "grep -A2 'node 1 is dead' '$work/ref_kill.log'"
expect 0 "at this probability 52.6% of messages reach that bound" -- \
  cat "$work"/big_batch/quickstart-*/summary.json
expect 2 "'faults.delay_rounds' = 1000001 is out of range" -- "$lpdt" train \
  --set faults.delay_rounds=1000001
expect 2 "expected an image model" -- "$lpdt" bench --arch transformer
expect 2 "\-\-norm: foo not in {evonorm" -- "$lpdt" bench --arch lenet5 --norm foo
# Numbers beyond an option's type are refused, not saturated; thread counts have a ceiling.
expect 2 "got 99999999999999999999: expected an integer >= 1" -- "$lpdt" topo \
  -n 99999999999999999999
expect 2 "got 18446744073709551616: expected an integer from 0 to 18446744073709551615" -- \
  "$lpdt" topo -t random -n 5 --seed 18446744073709551616
expect 2 "got -1: expected an integer from 0 to 100000" -- "$lpdt" bench --precision --profile -1
expect 2 "got 100000: expected an integer from 0 to 1024" -- "$lpdt" bench --threads 100000
expect 2 "'run.threads' = 100000 is out of range" -- "$lpdt" train --set run.threads=100000
expect 2 "its folder '$work/missing' does not exist" -- "$lpdt" bench --json "$work/missing/b.json"
expect 2 "bench --json $work: it is a folder" -- "$lpdt" bench --json "$work"
# Files that cannot be written are named with the reason.
touch "$work/plain"
expect 2 "'$work/plain' is a file, not a folder" -- "$lpdt" bench --json "$work/plain/b.json"
expect 2 "topo \-\-dot $work/plain/t.dot: '$work/plain' is a file, not a folder" -- \
  "$lpdt" topo --nodes 4 --dot "$work/plain/t.dot"
expect 0 "spectral gap" -- "$lpdt" topo --topology torus --nodes 16 --dot "$work/t.dot" --json "$work/t.json"
expect 0 "digraph" -- cat "$work/t.dot"
expect 0 "mixing" -- cat "$work/t.json"
# The exports replace earlier exports, never another file; an empty name is not "no file".
expect 0 "wrote $work/t.json" -- "$lpdt" topo --nodes 4 --dot "$work/t.dot" --json "$work/t.json"
printf 'precious\n' >"$work/victim.txt"
expect 2 "victim.txt: the file exists and is not an earlier lpdt topology" -- "$lpdt" topo \
  --json "$work/victim.txt"
expect 2 "victim.txt: the file exists and is not an earlier lpdt topo \-\-dot graph" -- \
  "$lpdt" topo --dot "$work/victim.txt"
expect 0 "^precious$" -- cat "$work/victim.txt"
expect 2 "\-\-json: got an empty name" -- "$lpdt" topo --json ""
expect 2 "\-\-out: got an empty name" -- "$lpdt" train --out ""
expect 2 "\-\-resume: got an empty name" -- "$lpdt" train --resume ""
expect 2 "\-\-config: got an empty name" -- "$lpdt" train -c "" --print-config
expect 0 "\[optim\]" -- "$lpdt" train --print-config
expect 0 "done: average-model accuracy" -- "$lpdt" train --out "$work/runs" \
  --set data.dataset=synthetic --set data.synthetic_samples_per_class=32 --set data.synthetic_size=12 \
  --set model.arch=mlp --set model.norm=none --set graph.nodes=4 --set run.epochs=1 \
  --set data.batch_size=8 --set run.log_every=0
expect 0 "summary.json" -- ls "$work"/runs/quickstart-*/
# Resume: the finished 1-epoch run continues to 2 epochs in its own folder; a finished run, a
# changed experiment and a folder without a checkpoint are clear errors.
run_dir=$(ls -d "$work"/runs/quickstart-* | head -1)
expect 2 "set run.epochs higher" -- "$lpdt" train --resume "$run_dir"
cp "$run_dir/summary.json" "$work/summary-of-1-epoch.json"
expect 2 "graph.nodes = 4 in checkpoint.lpdt, 8 now" -- "$lpdt" train --resume "$run_dir" \
  --set run.epochs=2 --set graph.nodes=8
expect 0 "note: run.out_dir and run.name place a new run's folder" -- "$lpdt" train \
  --resume "$run_dir" --set run.epochs=2 --set run.name=renamed --out "$work/elsewhere"
expect 0 "^2," -- cat "$run_dir/epochs.csv"
# The resumed run's recorded configuration keeps its own name and folder.
expect 0 '^name = "quickstart"' -- cat "$run_dir/config.toml"
expect 0 '"name": "quickstart"' -- cat "$run_dir/summary.json"
# An extension killed after its checkpoint left the shorter run's summary behind (before
# checkpoints removed it): the run is not finished, and resuming finishes it.
cp -r "$run_dir" "$work/stale-summary"
cp "$work/summary-of-1-epoch.json" "$work/stale-summary/summary.json"
expect 0 "done: average-model accuracy" -- "$lpdt" train --resume "$work/stale-summary"
expect 0 '"epochs": 2' -- cat "$work/stale-summary/summary.json"
# layers.csv: a cut one is refused naming the epoch cut; a missing one is written again.
cp -r "$run_dir" "$work/cut-layers" && sed -i '3d' "$work/cut-layers/layers.csv"
expect 1 "layers.csv' holds [0-9]* rows of epoch 1, the run wrote" -- "$lpdt" train \
  --resume "$work/cut-layers" --set run.epochs=3
cp -r "$run_dir" "$work/no-layers" && rm "$work/no-layers/layers.csv"
expect 0 "layers.csv is missing; it is written again from epoch 3 on" -- "$lpdt" train \
  --resume "$work/no-layers" --set run.epochs=3
expect 0 "^3," -- cat "$work/no-layers/layers.csv"
# A run extended past its last checkpoint (run.checkpoint_every = 0) is finished all the same.
expect 0 "done: average-model accuracy" -- "$lpdt" train --resume "$run_dir" --set run.epochs=3 \
  --set run.checkpoint_every=0
# Its advice is the copy-the-folder one at once (it used to say "set run.epochs higher", which
# then met the refusal below).
expect 2 "its summary.json shows 3 epochs finished, but its last checkpoint is of epoch 2.*copy the folder" \
  -- "$lpdt" train --resume "$run_dir"
# ... and continuing it from that older checkpoint would replace the finished epoch's results:
# refused, and the recorded results stay as they were.
cp "$run_dir/epochs.csv" "$work/epochs.before"
expect 2 "resuming would train epoch 3 again and replace the results" -- "$lpdt" train \
  --resume "$run_dir" --set run.epochs=4
expect 0 "" -- cmp "$run_dir/epochs.csv" "$work/epochs.before"
expect 2 "is not a run folder: expected the config.toml and checkpoint.lpdt" -- "$lpdt" train \
  --resume "$work"
# -o and --set run.out_dir both placing a new run's folder: refused rather than one winning.
expect 2 "-o/--out '$work/o1' and --set run.out_dir=$work/o2 both name the folder" -- \
  "$lpdt" train -o "$work/o1" --set run.out_dir="$work/o2" --print-config
expect 2 "train --resume: '$work/no_such_run' does not exist" -- "$lpdt" train \
  --resume "$work/no_such_run"
expect 2 "config file '$work/no_such.toml' cannot be read: no such file" -- "$lpdt" train \
  -c "$work/no_such.toml"
mkdir -p "$work/no-checkpoint" && cp "$run_dir/config.toml" "$work/no-checkpoint/"
expect 1 "no checkpoint" -- "$lpdt" train --resume "$work/no-checkpoint" --set run.epochs=2
# Every benchmark builds the model with --norm (it changes the parameters) and records it; one
# that measures a single precision refuses --model-precision; --wire measures --nodes messages.
expect 0 "resnet8, norm none (77082 params/node)" -- "$lpdt" bench --scaling --arch resnet \
  --depth 8 --channels 1 --size 8 --nodes 1 --steps 1 --warmup 0 --batch 2 --norm none
expect 0 "norm none, 3x8x8 inputs" -- "$lpdt" bench --precision --modes fp32 --arch resnet \
  --depth 8 --channels 3 --size 8 --nodes 1 --steps 1 --warmup 0 --batch 2 --norm none
expect 2 "\-\-model-precision excludes \-\-scaling" -- "$lpdt" bench --scaling --model-precision int8
expect 0 "norm none, 77082 params in .* messages of 8 nodes" -- "$lpdt" bench --wire --arch resnet \
  --depth 8 --channels 1 --size 8 --steps 1 --compressors none --values fp32 --nodes 8 --norm none
expect 2 "give one value" -- "$lpdt" bench --wire --nodes 2,3
expect 2 "lpdt bench: \-\-size 32" -- "$lpdt" bench --arch vgg11 --size 16 --nodes 1 --steps 1
# --json replaces only an earlier result of the same command, never the file just read.
printf '[run]\nepochs = 1\n' >"$work/read-me.toml"
expect 2 "the file exists and is not an earlier lpdt cost result" -- "$lpdt" cost \
  -c "$work/read-me.toml" --json "$work/read-me.toml"
expect 2 "the file exists and is not an earlier lpdt bench result" -- "$lpdt" bench --wire \
  --json "$work/read-me.toml"
expect 0 "^epochs = 1$" -- cat "$work/read-me.toml"
# Wire formats: a row per value format; a bad compressor spec names the expected forms.
expect 0 "topk:0.01      int8" -- "$lpdt" bench --wire --arch lenet5 --channels 1 --size 28 \
  --steps 1 --compressors topk:0.01
expect 2 "topk:<keep fraction>" -- "$lpdt" bench --wire --compressors topk:many
expect 2 "'topk' needs its keep fraction, e.g. topk:0.01" -- "$lpdt" bench --wire \
  --compressors none,topk
expect 2 "algo.message_values" -- "$lpdt" train --set algo.name=dpsgd --set algo.message_values=int8
# Sweeps: a bad grid value names the run and the key before anything runs; a dry run lists the
# grid; the preset resolves.
printf '[grid]\n"data.skew" = [0.0, 3]\n' >"$work/sweep.toml"
expect 2 "data.skew-3_seed-1234 is not a valid experiment" -- "$lpdt" sweep "$work/sweep.toml"
printf 'seeds = [1, 2]\n[grid]\n"algo.name" = ["choco", "dpsgd"]\n' >"$work/sweep.toml"
expect 0 "4 to train, 0 to resume" -- "$lpdt" sweep "$work/sweep.toml" --dry-run
# --tables-only writes tables, which --dry-run promises not to do: one would be ignored.
expect 2 "\-\-dry-run excludes \-\-tables-only" -- "$lpdt" sweep "$work/sweep.toml" --dry-run \
  --tables-only
expect 0 "\[24/24\] data.skew-0.8_algo.name-choco_model.precision+algo.message+values-int8+int8_seed-1235" -- \
  "$lpdt" sweep "$(dirname "$0")/../../configs/sweeps/table3_fmnist.toml" --dry-run
# Shards: two processes run one sweep side by side, each its own points; together, every cell.
expect 0 "2 to train, 0 to resume, 0 already done, diverged or in use, 2 left to the other shards" -- \
  "$lpdt" sweep "$work/sweep.toml" --dry-run --shard 2/2
expect 2 "expected I/N" -- "$lpdt" sweep "$work/sweep.toml" --shard 3/2
cat >"$work/shards.toml" <<EOF
out_dir = "$work/shards"
seeds = [1, 2]
metrics = ["average_model_accuracy"]
[set]
"run.epochs" = 1
"run.log_every" = 0
"run.threads" = 1
"data.dataset" = "synthetic"
"data.synthetic_samples_per_class" = 16
"data.synthetic_size" = 8
"model.arch" = "mlp"
"model.norm" = "none"
"graph.nodes" = 4
[grid]
"algo.name" = ["deep-squeeze", "choco"]
"data.skew" = [0.0, 0.5]
[table]
rows = ["data.skew"]
columns = ["algo.name"]
EOF
"$lpdt" sweep "$work/shards.toml" --shard 1/2 >"$work/shard1.log" 2>&1 &
shard1=$!
"$lpdt" sweep "$work/shards.toml" --shard 2/2 >"$work/shard2.log" 2>&1
wait "$shard1"
expect 0 "4 trained, 0 resumed, 0 already done, diverged or in use, 4 left" -- cat "$work/shard1.log"
expect 0 "4 trained, 0 resumed, 0 already done, diverged or in use, 4 left" -- cat "$work/shard2.log"
expect 0 "0 trained, 0 resumed, 8 already done" -- "$lpdt" sweep "$work/shards.toml"
expect 0 "| 0.5 | [0-9.]* ± [0-9.]* (2) | [0-9.]* ± [0-9.]* (2) |" -- \
  cat "$work/shards/table-average_model_accuracy.md"
expect 0 "8 of the 8 runs have finished" -- "$lpdt" sweep "$work/shards.toml" --tables-only
# String grid values in the tables as the strings themselves: a '|' escaped in markdown, a quote
# unescaped (CSV quotes it its own way); the run of a value with a tab keeps it whole.
# The [set] keys of a tiny sweep: an MLP on 2 nodes of synthetic data.
tiny_sweep_set='"data.dataset" = "synthetic"
"data.synthetic_samples_per_class" = 4
"data.synthetic_size" = 8
"model.arch" = "mlp"
"model.norm" = "none"
"graph.nodes" = 2'
cat >"$work/labels.toml" <<EOF
out_dir = "$work/labels"
metrics = ["average_model_accuracy"]
[set]
"run.epochs" = 1
"run.log_every" = 0
"run.max_steps_per_epoch" = 1
$tiny_sweep_set
[grid]
"data.dir" = ["a|b", 'x"y', "t\\tz"]
EOF
"$lpdt" sweep "$work/labels.toml" >"$work/labels.log" 2>&1
expect 0 '^| a\\|b | x"y | t.z |$' -- cat "$work/labels/table-average_model_accuracy.md"
expect 0 '^"x""y",' -- cat "$work/labels/table-average_model_accuracy.csv"
expect 0 '^dir = "t\\tz"' -- cat "$work"/labels/runs/*t+tz*/config.toml
# Interrupted, a sweep's run says to run the sweep again (which resumes it), not the run alone.
cat >"$work/sweep_int.toml" <<EOF
out_dir = "$work/sweep_int"
[set]
"run.epochs" = 100000
"run.log_every" = 0
$tiny_sweep_set
[grid]
"algo.name" = ["choco"]
EOF
"$lpdt" sweep "$work/sweep_int.toml" >"$work/sweep_int.log" 2>&1 &
sweep_pid=$!
for _ in $(seq 300); do grep -q "epoch 1/" "$work/sweep_int.log" && break; sleep 0.1; done
kill -TERM "$sweep_pid"
wait "$sweep_pid"
expect 0 "keeps the last checkpoint (every run.checkpoint_every epochs): continue with lpdt sweep $work/sweep_int.toml$" \
  -- cat "$work/sweep_int.log"
# Tables of a sweep that has not run are said to be empty.
sed "s|$work/shards|$work/not-run|" "$work/shards.toml" >"$work/not-run.toml"
expect 0 "0 of the 8 runs have finished: every cell is '-'" -- "$lpdt" sweep \
  "$work/not-run.toml" --tables-only
# Every preset sweep file resolves (each grid point is a valid experiment).
for preset in "$(dirname "$0")"/../../configs/sweeps/*.toml; do
  expect 0 "sweep (dry run)" -- "$lpdt" sweep "$preset" --dry-run
done
# The cost model: Table 10 recomputed; a bad energy table names the file and the key.
expect 0 "ResNet-54  RBN" -- "$lpdt" cost --table10
expect 0 "inference energy (mJ)" -- "$lpdt" cost --set model.arch=resnet --set model.depth=8
# Settings the tables do not model are said, not ignored.
expect 0 "note: quant.bits = 4 and quant.grad_bits = 8 are not modelled" -- "$lpdt" cost \
  --set model.arch=resnet --set model.depth=8 --set quant.bits=4
printf 'fp32_add_pj = 0.9\nfp32_mult_pj = 3.7\nint8_add_pj = 0.03\n' >"$work/energy.toml"
expect 2 "energy.toml: key 'int8_mult_pj'" -- "$lpdt" cost --energy-table "$work/energy.toml"
# A bad value is shown with its line; keys under a section header are named as that section.
printf 'fp32_add_pj = -0.38
fp32_mult_pj = 3.7
int8_add_pj = 0.03
int8_mult_pj = 0.2
' \
  >"$work/energy.toml"
expect 2 "key 'fp32_add_pj' must be a number of picojoules per operation from 1e-9 to 1e6 (line 1: got -0.38)" -- "$lpdt" cost \
  --energy-table "$work/energy.toml"
printf '[energy]
fp32_add_pj = 0.9
' >"$work/energy.toml"
expect 2 "energy.toml:1: unknown section \[energy\]" -- "$lpdt" cost --energy-table \
  "$work/energy.toml"
# Reports: the run folder's page; a missing folder (usage error) and a folder that is neither a
# run nor a sweep are errors naming it.
expect 0 "report: $run_dir/report.html" -- "$lpdt" report "$run_dir"
expect 0 "Test accuracy per epoch" -- cat "$run_dir/report.html"
expect 2 "no-such-run" -- "$lpdt" report "$work/no-such-run"
expect 1 "no-checkpoint' is neither a run folder" -- "$lpdt" report "$work/no-checkpoint"
# A damaged epoch number (NaN, a fraction, beyond an int) is an error naming the file and line.
cp -r "$run_dir" "$work/bad-epoch" && sed -i '2s/^[0-9]*,/nan,/' "$work/bad-epoch/epochs.csv"
expect 1 "epochs.csv' line 2, column epoch: nan is not an epoch number" -- "$lpdt" report \
  "$work/bad-epoch"
sed -i '2s/^nan,/1.5,/' "$work/bad-epoch/epochs.csv"
expect 1 "column epoch: 1.5 is not an epoch number" -- "$lpdt" report "$work/bad-epoch"
# --out replaces an earlier page, never another file: a mistyped name leaves the run's
# summary.json as it was.
cp "$run_dir/summary.json" "$work/summary.before"
expect 2 "summary.json: the file exists and is not an HTML page" -- "$lpdt" report "$run_dir" \
  --out "$run_dir/summary.json"
expect 0 "" -- cmp "$run_dir/summary.json" "$work/summary.before"
# ... and a name that is not an .html file is refused whether or not it exists (the summary.json
# of a run still training, which has none yet).
cp -r "$run_dir" "$work/still-training" && rm "$work/still-training/summary.json"
expect 2 "still-training/summary.json: expected a file name ending in .html" -- "$lpdt" report \
  "$work/still-training" --out "$work/still-training/summary.json"
expect 1 "" -- test -e "$work/still-training/summary.json"
expect 0 "report: $work/again.html" -- "$lpdt" report "$run_dir" --out "$work/again.html"
expect 0 "report: $work/again.html" -- "$lpdt" report "$run_dir" --out "$work/again.html"
# ... and so does the default, DIR/report.html: a file of that name that is not a page stays.
cp -r "$run_dir" "$work/own-notes" && echo "my notes" >"$work/own-notes/report.html"
expect 2 "report (its default DIR/report.html).*not an HTML page" -- "$lpdt" report \
  "$work/own-notes"
expect 0 "my notes" -- cat "$work/own-notes/report.html"
# topo: an option of another topology is said to change nothing.
expect 0 "note: \-\-rows shapes the torus topology only; ring ignores it" -- "$lpdt" topo \
  --topology ring --nodes 4 --rows 2
# topo: the DOT and JSON exports must be two files.
expect 2 "topo \-\-dot and \-\-json both name" -- "$lpdt" topo --nodes 4 --dot "$work/same.out" \
  --json "$work/same.out"
# ... also by two names of one file: relative beside absolute, and ./ (weakly_canonical keeps a
# bare relative name relative).
lpdt_path=$(readlink -f "$lpdt")
expect 2 "topo \-\-dot and \-\-json both name" -- bash -c "cd '$work' && '$lpdt_path' topo \
  --nodes 4 --dot ./same2.out --json same2.out"
expect 2 "topo \-\-dot and \-\-json both name" -- bash -c "cd '$work' && '$lpdt_path' topo \
  --nodes 4 --dot same3.out --json '$work/same3.out'"

echo "cli: $passed passed, $failed failed"
[ "$failed" = 0 ]
