#!/usr/bin/env bash
# Runs BenchmarkFleetRefresh200 (promapi/fleet_bench_test.go): 200
# replicas behind a real Prometheus, refreshed as `watch --prometheus` does,
# COUNT times (default 3), and prints each metric's range (min-max) per
# sub-benchmark, as docs/performance.md ("Fleets through Prometheus")
# reports them. Needs prometheus on PATH. About 6 minutes per count.
# Usage: scripts/prometheus-fleet.sh [OUTPUT_FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp)}
RETRYTOP_REQUIRE_PEERS=1 go test ./promapi -run '^$' -bench FleetRefresh200 -benchmem \
	-benchtime "${BENCHTIME:-20x}" -count "${COUNT:-3}" -timeout 90m | tee "$out"
echo
echo "ranges over the runs ($out):"
awk '$1 ~ /^BenchmarkFleetRefresh200\// {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkFleetRefresh200\//, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i < NF; i += 2) {
		k = name SUBSEP $(i + 1); v = $i + 0
		if (!(k in lo) || v < lo[k]) lo[k] = v
		if (!(k in hi) || v > hi[k]) hi[k] = v
		if (!((name, "units") in list) || index(list[name, "units"], " " $(i + 1) " ") == 0)
			list[name, "units"] = list[name, "units"] " " $(i + 1) " "
	}
}
END {
	for (j = 1; j <= n; j++) {
		name = order[j]; printf "%s\n", name
		m = split(list[name, "units"], us, " ")
		for (u = 1; u <= m; u++) {
			k = name SUBSEP us[u]
			if (lo[k] == hi[k]) printf "  %-16s %g\n", us[u], lo[k]
			else printf "  %-16s %g-%g\n", us[u], lo[k], hi[k]
		}
	}
}' "$out"
