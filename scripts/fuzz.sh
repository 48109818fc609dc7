#!/usr/bin/env bash
# Runs every fuzz target of the module for a while each (default 60s):
#   scripts/fuzz.sh [fuzztime] [minimizetime]
# Minimisation is capped (-fuzzminimizetime, default 10s): FuzzReader and
# FuzzImportOpenMetrics once spent 60 s minimising one input. A crash
# leaves its input under the package's testdata/fuzz/<Target>/ and stops
# the script with the package's exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-60s}
minimize=${2:-10s}
grep -rl --include='*_test.go' '^func Fuzz' . | grep -v '^./bench/' | sort | while read -r file; do
  pkg=./$(dirname "${file#./}")
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
    echo "== $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg"
  done
done
