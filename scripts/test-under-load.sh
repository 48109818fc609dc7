#!/usr/bin/env bash
# Runs the README's test command (scripts/test -race) beside a CPU hog on
# every core, RUNS times (default 3), and says how many passed: the tests
# must pass on a busy machine (docs/testing.md). Only the hog processes it
# started are stopped. Usage: scripts/test-under-load.sh [RUNS] [go test args...]
set -u
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
hogs=()
stop_hogs() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done; hogs=(); }
trap stop_hogs EXIT
cores=$(nproc)
passed=0
for ((r = 1; r <= runs; r++)); do
	for ((c = 0; c < cores; c++)); do
		# A busy loop in the shell itself: nothing to install.
		bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	log=$(mktemp)
	start=$(date +%s)
	if scripts/test -race -count=1 "$@" >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "run $r: pass ($(($(date +%s) - start)) s)"
	else
		echo "run $r: FAIL ($(($(date +%s) - start)) s); failures (whole log kept in $log):"
		grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -40
		log="" # kept: a failure on a busy machine is read, not rerun
	fi
	[ -n "$log" ] && rm -f "$log"
	stop_hogs
done
echo "$passed passed, $((runs - passed)) failed"
[ "$passed" -eq "$runs" ]
