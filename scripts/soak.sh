#!/usr/bin/env bash
# The long soak: 24 hours of 10 targets at 1 s in virtual time
# through the store and frame path watch runs, with series churn; the live
# heap at each 20-minute checkpoint must stay within 5 % of the first.
#   scripts/soak.sh [duration]     (default 24h; about 2 minutes without -race)
set -euo pipefail
cd "$(dirname "$0")/.."
RETRYTOP_SOAK=${1:-24h} go test -count=1 -timeout 2h -v -run '^TestSoakStoreAndFrames$' ./analysis/
