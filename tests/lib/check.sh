# Shared by the shell tests that run whole commands: `check NAME command...` runs the command,
# counts it in `passed` or `failed` (which the sourcing script sets to 0 and reports), and on a
# failure prints the name, the command and the last 20 lines of its output.
check() {  # check NAME command...: exit 0 expected
  local name="$1"
  shift
  local out
  if out=$("$@" 2>&1); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $name: $*"
    echo "$out" | tail -20
  fi
}
