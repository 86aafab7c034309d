#!/usr/bin/env bash
# `lpdt report` in a real browser: a tiny real run, its report rendered by headless Chromium to a
# PNG and to a DOM dump. Checks that the browser exits 0, the PNG is a real image of some size,
# no page or XML error is logged, and the rendered DOM has the expected number of <svg> elements.
# Without chromium: SKIPPED (exit 0), except under CI (env CI set), where it is a failure.
# Usage: report_browser_test.sh path/to/lpdt [folder to keep the report and screenshot in]
set -u
lpdt="$1"
work=$(mktemp -d)
keep="${2:-}"
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}

browser=""
for candidate in chromium chromium-browser; do
  if command -v "$candidate" >/dev/null 2>&1; then
    browser="$candidate"
    break
  fi
done
if [ -z "$browser" ]; then
  if [ -n "${CI:-}" ]; then
    fail "chromium not installed (apt-get install chromium; scripts/setup.sh installs it)"
  fi
  echo "SKIPPED: chromium not installed (apt-get install chromium)"
  exit 0
fi

"$lpdt" train --out "$work/runs" --set data.dataset=synthetic --set model.arch=mlp \
  --set run.epochs=2 --set data.synthetic_samples_per_class=32 --set data.synthetic_size=12 \
  --set graph.nodes=4 --set run.log_every=0 >"$work/train.log" 2>&1 ||
  { cat "$work/train.log"; fail "lpdt train"; }
run_dir=$(ls -d "$work"/runs/*/ | head -1)
run_dir="${run_dir%/}"
out=$("$lpdt" report "$run_dir" 2>&1) || { echo "$out"; fail "lpdt report exited non-zero"; }
grep -q "report: $run_dir/report.html" <<<"$out" || fail "lpdt report did not print the path: $out"
page="$run_dir/report.html"
[ -s "$page" ] || fail "no $page"

# The page's own SVGs: accuracy, bytes (bars and per epoch), consensus, classes. topology.json,
# cost.json and layers.csv are optional: more SVGs when the run folder has them.
expected=5
[ -f "$run_dir/layers.csv" ] && expected=$((expected + 2))
[ -f "$run_dir/topology.json" ] && expected=$((expected + 1))
[ -f "$run_dir/cost.json" ] && expected=$((expected + 2))
in_file=$(grep -o "<svg " "$page" | wc -l)
[ "$in_file" = "$expected" ] || fail "$page has $in_file <svg> elements, expected $expected"

# Chromium's own noise (dbus, GPU, sandbox, fonts) is ignored; page and XML errors are not.
page_errors() {
  grep -iE "Uncaught|error on line|XML Parsing Error|This page contains the following errors|SyntaxError|Failed to load resource" "$1"
}
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile")
png="$work/report.png"
timeout 60 "$browser" "${flags[@]}" --screenshot="$png" --window-size=1280,4000 \
  "file://$page" >"$work/shot.out" 2>"$work/shot.err"
code=$?
[ "$code" = 0 ] || { tail -20 "$work/shot.err"; fail "$browser --screenshot exited $code"; }
[ -f "$png" ] || fail "no screenshot $png"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
  fail "$png is not a PNG"
size=$(stat -c %s "$png")
[ "$size" -gt 20000 ] || fail "$png is only $size bytes: a blank page?"
if page_errors "$work/shot.err"; then fail "page errors while rendering $page"; fi

timeout 60 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$work/dom.html" 2>"$work/dom.err"
code=$?
[ "$code" = 0 ] || { tail -20 "$work/dom.err"; fail "$browser --dump-dom exited $code"; }
if page_errors "$work/dom.err"; then fail "page errors while loading $page"; fi
if grep -q "parsererror" "$work/dom.html"; then fail "the browser could not parse $page"; fi
in_dom=$(grep -o "<svg " "$work/dom.html" | wc -l)
[ "$in_dom" = "$expected" ] || fail "rendered DOM has $in_dom <svg> elements, expected $expected"
grep -q "Test accuracy per epoch" "$work/dom.html" || fail "rendered DOM lacks the accuracy plot"

if [ -n "$keep" ]; then
  mkdir -p "$keep" && cp "$page" "$png" "$keep/"
fi
echo "report in browser: ok ($browser, $in_dom SVGs, screenshot $size bytes)"
