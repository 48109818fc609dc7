#!/usr/bin/env bash
# Prints the figures of docs/performance.md, one line each:
#   <figure> <ratio> <goal>
# ratio is retrytop's cost divided by its anchor's, both measured in the
# same process and the same interleaved rounds (median of ROUNDS, default
# 5), so lower is better and a busy machine loads both sides alike. Figures
# whose anchor is a fixed goal rather than a peer (bytes per sample) print
# the value itself and the goal, in the unit the figure's name says. A
# figure this script does not measure prints "-" and where it is measured.
#
# Usage: scripts/bench-ratios.sh [-v] [-s] [-i] [BENCH_REGEXP]   (about 2 minutes)
#        scripts/bench-ratios.sh [-v] -c [BODY...]             (about 15 minutes)
#   -v            also print the raw `go test -bench` output
#   BENCH_REGEXP  the benchmarks to run (default: all of bench/)
#   -s            also the replay seek and analyze-window figures, in
#                 seconds against their goals: dump's
#                 BenchmarkReplaySeek (without the seek index),
#                 BenchmarkReplaySeekIndexed (with it; also as a ratio to
#                 decoding the lookback's frames) and BenchmarkAnalyzeWindow
#                 on its 1-hour, 10 x 2,000-series dump, analyze of the
#                 whole hour and of the same generator's two hours
#                 (RSS over the hour's), and G in replay to its end on
#                 screen (scripts/replay-end.sh, 15 rounds; tmux) (about
#                 15 more minutes)
#   -i            also the idle CPU of `watch` and `record` on 10 targets
#                 at 1 s against Prometheus scraping the same targets:
#                 scripts/idle-cpu.sh on a fresh build (about 8 more
#                 minutes; needs tmux, bc and prometheus, else "-"), and
#                 the range of the load average at the end of each
#                 measured minute (idle-cpu/load-average)
#   -r            also the memory figures: watch's and record's RSS
#                 against Prometheus scraping the same fleet
#                 (scripts/rss-fleet.sh, 100 targets x 2,016 series at 1 s
#                 for 2 minutes, each; needs tmux and prometheus, else
#                 "-"; watch's CPU after the first minute too, against
#                 Prometheus' and without a goal), record's RSS after the
#                 first minute and at the end,
#                 watch's live heap per scraped series at 1,000 scrapes of
#                 10 targets (ui TestWatchHeapProfile) and the series cap
#                 at the default --memory-limit (about 7 more minutes)
#   -c            the parse figures as instruction counts under valgrind's
#                 callgrind instead of time: repeatable on a busy machine,
#                 where time is not. Each contender runs alone
#                 (BenchmarkEach) at two iteration counts; the difference
#                 divided by the difference of the counts is its
#                 instructions per op, set-up excluded. GC is off
#                 (GOGC=off), one P, no async preemption (callgrind
#                 cannot follow Go's preemption signals) and no RDTSCP
#                 (valgrind 3.19 does not know the instruction Go's
#                 clock uses where the CPU has it). BODY: envoy2k,
#                 envoy100k, gosvc2k (default all three).
#
# The anchors live in bench/, a module of its own (bench/go.mod), so the
# product's go.mod carries none of them; its first run downloads them
# through the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")/../bench"
verbose=0 seek=0 idle=0 rss=0
while :; do
	case "${1:-}" in
	-v) verbose=1 ;;
	-s) seek=1 ;;
	-i) idle=1 ;;
	-r) rss=1 ;;
	*) break ;;
	esac
	shift
done
if [ "${1:-}" = "-c" ]; then
	shift
	command -v valgrind >/dev/null || { echo "bench-ratios: -c needs valgrind" >&2; exit 1; }
	bin=$(mktemp)
	trap 'rm -f "$bin"' EXIT
	go test -c -o "$bin" .
	# ir BENCH N: instructions callgrind counted for N iterations.
	ir() {
		set -- "$1" "${2//+/\\+}" "$3" # a contender's + is literal
		GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 GOGC=off valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			"$bin" -test.run='^$' -test.bench="^BenchmarkEach\$/^body=$1\$/^$2\$" -test.benchtime="$3x" 2>&1 |
			awk '/Collected :/ {print $4}'
	}
	per() { # per BODY CONTENDER: instructions per op
		local n1=2 n2=6
		[ "$1" = envoy100k ] && n1=1 n2=2
		local a b
		a=$(ir "$1" "$2" $n1)
		b=$(ir "$1" "$2" $n2)
		echo $(((b - a) / (n2 - n1)))
	}
	for body in ${@:-envoy2k envoy100k gosvc2k}; do
		vm=$(per "$body" vm)
		pp=$(per "$body" promparse)
		rel=$(per "$body" rt-relevant)
		all=$(per "$body" rt-all+store)
		rels=$(per "$body" rt-relevant+store)
		[ "$verbose" = 1 ] && echo "$body instructions/op: vm $vm promparse $pp rt-relevant $rel rt-all+store $all rt-relevant+store $rels" >&2
		awk -v b="$body" -v vm="$vm" -v pp="$pp" -v rel="$rel" -v all="$all" -v rels="$rels" 'BEGIN {
			printf "parse-relevant/vm/%s/instructions %.3g 1\n", b, rel / vm
			printf "parse+store-all/vm/%s/instructions %.3g 2\n", b, all / vm
			printf "parse+store-relevant/vm/%s/instructions %.3g 1.2\n", b, rels / vm
			printf "parse+store-all/promparse/%s/instructions %.3g -\n", b, all / pp
		}'
	done
	exit 0
fi
pattern=${1:-'Parse|Record|StoreMemory|DumpSize'}
out=$(mktemp)
rt=$(mktemp)
trap 'rm -f "$out" "$rt" "$rt".*' EXIT # "$rt".*: the hour's dump, the heap profile
go test -run '^$' -bench "$pattern" -benchtime 1x -timeout 30m . >"$out"
case "$pattern" in
*DumpSize*)
	# The demo's dump size: sim's baseline scenario recorded for 10
	# minutes of virtual time (dump TestDemoVirtualBytesPerSample,
	# about a minute of CPU), beside zstd -19 --long over its bodies. A
	# recording in real time is noisier and larger (docs/performance.md,
	# "Record and the dump codec"): RETRYTOP_DEMO_RECORD=10m go test ./dump
	# -run DemoBytesPerSample -v takes 10 minutes.
	(cd .. && RETRYTOP_DEMO_VIRTUAL=10m go test ./dump -count=1 -run '^TestDemoVirtualBytesPerSample$' -v -timeout 10m) |
		awk '/figure dump-bytes-per-sample/ {for (i = 1; i < NF; i++) if ($i == "dump-bytes-per-sample" || $i == "ratio-dump/zstd") print "demo/" $i, $(i+1)}' >>"$out"
	;;
esac
if [ "$idle" = 1 ]; then
	# idle-cpu.sh prints "<process> <kind> <percent>% of a core"; it
	# starts and stops its own processes, on free ports.
	(cd .. && go build -o "$rt" ./cmd/retrytop)
	../scripts/idle-cpu.sh "$rt" | awk '$3 ~ /%$/ {v = $3; sub(/%$/, "", v); print "idle/" $1 "/" $2, v
		if ($7 == "(load") { l = $8; sub(/\)$/, "", l); print "idle/load/" $1 "/" $2, l } }' >>"$out"
fi
if [ "$rss" = 1 ]; then
	# rss-fleet.sh prints "rss/<mode>-prometheus <ratio> <goal>" first,
	# and with MODE=record "record at <s> s <MB> MB" and "record peak <MB>".
	(cd .. && go build -o "$rt" ./cmd/retrytop)
	# and "cpu <mode> ...: <ratio>; after the first minute <ratio>".
	../scripts/rss-fleet.sh "$rt" | awk '/^rss\/watch-prometheus/ {print "rss/ratio " $2}
		/^cpu watch/ {print "rss/watch-cpu " $NF}' >>"$out" || true
	MODE=record ../scripts/rss-fleet.sh "$rt" | awk '/^rss\/record-prometheus/ {print "rss/record-ratio " $2}
		/^record +at/ {print "rss/record-minute " $5} /^record +peak/ {print "rss/record-peak " $3}' >>"$out" || true
	(cd .. && RETRYTOP_WATCH_PROFILE="$rt.heap" RETRYTOP_WATCH_SCRAPES=1000 go test ./ui -count=1 -run '^TestWatchHeapProfile$' -v -timeout 10m) |
		awk '/figure watch-heap-per-series/ {for (i = 1; i < NF; i++) if ($i == "watch-heap-per-series") print "rss/watch-heap " $(i+1)}' >>"$out" || true
	RETRYTOP_SERIES_CAP=1 go test . -count=1 -run '^TestSeriesCapFigure$' -v -timeout 10m |
		awk '/figure series-cap-512MiB/ {for (i = 1; i < NF; i++) if ($i == "series-cap-512MiB") print "rss/series-cap " $(i+1)}' >>"$out" || true
fi
if [ "$seek" = 1 ]; then
	# As retrytop replay runs: the dialects' filter and translation.
	# AnalyzeWindow: analyze FILE --from T --to T+30s on the same dump.
	# ReplaySeekIndexed: the same seek once the player's index is built
	# (not timed; its build time and size are printed), and each round's
	# seek over decoding (no parse) the lookback's frames at the same
	# playhead, the median.
	# The hour's dump is written once, for analyze FILE of the whole hour
	# after, its default text report (CPU user + sys and peak RSS, by GNU
	# time; --format json holds less).
	hour="$rt.hour.rtd"
	(cd .. && RETRYTOP_BENCH_DUMP="$hour" go test ./dump -run '^$' -bench 'ReplaySeek/(quick|full)/dialects|ReplaySeekIndexed|AnalyzeWindow' -benchtime 3x -benchmem -timeout 30m) |
		awk '/^BenchmarkReplaySeek\/quick/ {print "seek/quick " $3} /^BenchmarkReplaySeek\/full/ {print "seek/full " $3}
			/^BenchmarkReplaySeekIndexed\/seek/ {for (i = 3; i < NF; i++) {if ($(i+1) == "ns/op") print "seek/indexed " $i; if ($(i+1) == "cpu-ms/op") print "seek/indexed-cpu-ms " $i; if ($(i+1) == "index-s") print "seek/index-s " $i; if ($(i+1) == "index-MB") print "seek/index-MB " $i; if ($(i+1) == "index-file-MB") print "seek/index-file-MB " $i}}
			/^BenchmarkReplaySeekIndexed\/ratio-noindex/ {for (i = 3; i < NF; i++) if ($(i+1) == "seek/decode") print "seek/ratio-noindex " $i; next}
			/^BenchmarkReplaySeekIndexed\/ratio/ {for (i = 3; i < NF; i++) if ($(i+1) == "seek/decode") print "seek/ratio " $i}
			/^BenchmarkAnalyzeWindow/ {print "seek/window " $3; print "seek/window-bytes " $5}' >>"$out"
	[ -s "$hour" ] && echo "seek/hour-MB $(($(stat -c %s "$hour") / 1000000))" >>"$out"
	if [ -x /usr/bin/time ] && [ -s "$hour" ]; then
		(cd .. && go build -o "$rt" ./cmd/retrytop)
		/usr/bin/time -f 'whole %U %S %M' -o "$rt.time" "$rt" analyze "$hour" >/dev/null &&
			awk '/^whole/ {print "seek/whole-cpu " $2 + $3; print "seek/whole-rss " $4 / 1024}' "$rt.time" >>"$out"
		rm -f "$rt.time"
		# The same dump's generator for two hours: analyze's memory past
		# an hour (its bins widen instead of growing in number).
		(cd .. && RETRYTOP_BENCH_MINUTES=120 RETRYTOP_BENCH_DUMP="$rt.2h.rtd" go test ./dump -run '^$' -bench 'OpenIndex/index' -benchtime 1x -timeout 30m >/dev/null)
		[ -s "$rt.2h.rtd" ] && /usr/bin/time -f 'whole %U %S %M' -o "$rt.time" "$rt" analyze "$rt.2h.rtd" >/dev/null &&
			awk '/^whole/ {print "seek/2h-rss " $4 / 1024}' "$rt.time" >>"$out"
		rm -f "$rt.time" "$rt.2h.rtd"
	fi
	# G in retrytop replay, to the end frame on screen (tmux).
	if [ -s "$hour" ] && command -v tmux >/dev/null; then
		(cd .. && go build -o "$rt" ./cmd/retrytop)
		../scripts/replay-end.sh "$rt" "$hour" 15 | awk '/^replay-end-on-screen [0-9]/ {print "seek/end-screen " $2}' >>"$out"
	fi
fi
[ "$verbose" = 1 ] && cat "$out" >&2
# metric NAME of sub-benchmark BODY: the number before the unit NAME.
awk '
/^seek\// || /^idle\// || /^demo\// || /^rss\// { m[$1] = $2 }
/^Benchmark/ {
	split($1, p, "/"); bench = p[1]; sub(/^Benchmark/, "", bench)
	body = p[2]; sub(/^body=/, "", body); sub(/-[0-9]+$/, "", body)
	for (i = 3; i < NF; i++) m[bench "/" body "/" $(i+1)] = $i
	bodies[bench "/" body] = 1
}
function line(fig, key, goal) {
	if (key in m) printf "%s %.3g %s\n", fig, m[key], goal
}
END {
	n = split("envoy2k envoy100k gosvc2k", bs, " ")
	for (i = 1; i <= n; i++) line("parse-relevant/vm/" bs[i], "Parse/" bs[i] "/ratio-rt-relevant", 1.0)
	for (i = 1; i <= n; i++) line("parse+store-all/vm/" bs[i], "Parse/" bs[i] "/ratio-rt-all+store", 2.0)
	for (i = 1; i <= n; i++) line("parse+store-relevant/vm/" bs[i], "Parse/" bs[i] "/ratio-rt-relevant+store", 1.2)
	for (i = 1; i <= n; i++) line("parse+store-all/promparse/" bs[i], "Parse/" bs[i] "/ratio-all+store/promparse", "-")
	for (i = 1; i <= n; i++) line("record-cpu/get-loop/" bs[i], "Record/" bs[i] "/ratio-record/get", 1.5)
	for (i = 1; i <= n; i++) line("scrape-without-dump-cpu/get-loop/" bs[i], "Record/" bs[i] "/ratio-scrape/get", "-")
	for (i = 1; i <= n; i++) line("record-cpu/scrape-without-dump/" bs[i], "Record/" bs[i] "/ratio-record/scrape", "-")
	line("record-cpu/get-loop/envoy2k-changing", "Record/envoy2k-changing/ratio-record/get", 1.5)
	line("record-cpu/scrape-without-dump/envoy2k-changing", "Record/envoy2k-changing/ratio-record/scrape", "-")
	for (i = 1; i <= n; i++) line("store-bytes-per-sample/" bs[i], "StoreMemory/" bs[i] "/B/sample", 8)
	for (i = 1; i <= n; i++) line("dump-bytes-per-sample/" bs[i], "DumpSize/" bs[i] "/B/sample", 0.6)
	for (i = 1; i <= n; i++) line("dump-size/zstd-19-long/" bs[i], "DumpSize/" bs[i] "/ratio-dump/zstd", 1.0)
	line("dump-bytes-per-sample/demo-virtual-time", "demo/dump-bytes-per-sample", 0.6)
	line("dump-size/zstd-19-long/demo-virtual-time", "demo/ratio-dump/zstd", 1.0)
	# A seek without the index until the rows of the window show: the first
	# screen of a replay.
	if ("seek/quick" in m) printf "replay-seek-rows/seconds %.3g 0.3\n", m["seek/quick"] / 1e9
	else print "replay-seek-rows/seconds - 0.3 (scripts/bench-ratios.sh -s)"
	if ("seek/full" in m) printf "replay-seek-full-lookback/seconds %.3g 0.2\n", m["seek/full"] / 1e9
	else print "replay-seek-full-lookback/seconds - 0.2 (scripts/bench-ratios.sh -s)"
	if ("seek/indexed" in m) {
		printf "replay-seek-indexed/seconds %.3g 0.2\n", m["seek/indexed"] / 1e9
		printf "replay-seek-indexed/cpu-seconds %.3g -\n", m["seek/indexed-cpu-ms"] / 1e3
		printf "replay-seek-indexed/decode-lookback %.3g 1\n", m["seek/ratio"]
		printf "replay-seek-noindex/decode-lookback %.3g -\n", m["seek/ratio-noindex"]
		printf "replay-seek-index-build/seconds %.3g -\nreplay-seek-index/MB %.3g -\nreplay-seek-index/file-MB %.3g -\n", m["seek/index-s"], m["seek/index-MB"], m["seek/index-file-MB"]
		# The goal is of the cache file: what a replay leaves on disk.
		if (m["seek/hour-MB"] > 0) printf "replay-seek-index/recording %.3g 0.1\n", m["seek/index-file-MB"] / m["seek/hour-MB"]
	}
	if ("seek/window" in m) printf "analyze-window-30s/seconds %.3g 5\nanalyze-window-30s/allocated-MB %.3g 200\n", m["seek/window"] / 1e9, m["seek/window-bytes"] / 1e6
	else print "analyze-window-30s/seconds - 5 (scripts/bench-ratios.sh -s)"
	split("big small", ks, " ")
	for (i = 1; i <= 2; i++) {
		k = ks[i]
		if (("idle/watch/" k in m) && ("idle/prometheus/" k in m) && m["idle/prometheus/" k] > 0) {
			printf "watch-idle-cpu/prometheus/%s %.3g 1.0\n", k, m["idle/watch/" k] / m["idle/prometheus/" k]
			printf "record-idle-cpu/prometheus/%s %.3g -\n", k, m["idle/record/" k] / m["idle/prometheus/" k]
		} else print "watch-idle-cpu/prometheus/" k " - 1.0 (scripts/bench-ratios.sh -i)"
	}
	# The load average at the end of each idle minute: the machine is
	# shared, and the idle figures are read beside it.
	lo = ""; hi = ""
	for (key in m) if (key ~ /^idle\/load\//) {
		if (lo == "" || m[key] + 0 < lo + 0) lo = m[key]
		if (hi == "" || m[key] + 0 > hi + 0) hi = m[key]
	}
	if (lo != "") printf "idle-cpu/load-average %s-%s -\n", lo, hi
	if ("rss/watch-cpu" in m) printf "watch-cpu-after-first-minute/prometheus/100x2k %s -\n", m["rss/watch-cpu"]
	if ("rss/ratio" in m) printf "watch-rss/prometheus/100x2k %.3g 1.0\n", m["rss/ratio"]
	else print "watch-rss/prometheus/100x2k - 1.0 (scripts/bench-ratios.sh -r)"
	if ("rss/watch-heap" in m) printf "watch-heap/bytes-per-scraped-series/10x2k-1000-scrapes %d 3024\n", m["rss/watch-heap"]
	else print "watch-heap/bytes-per-scraped-series/10x2k-1000-scrapes - 3024 (scripts/bench-ratios.sh -r)"
	if ("rss/series-cap" in m) printf "series-cap/512MiB-900-scrapes %d 150000\n", m["rss/series-cap"]
	else print "series-cap/512MiB-900-scrapes - 150000 (scripts/bench-ratios.sh -r)"
	if ("rss/record-peak" in m) {
		printf "record-rss/MB/100x2k-2min %d 100\n", m["rss/record-peak"]
		printf "record-rss/growth-after-first-minute %.3g 1.0\n", m["rss/record-peak"] / m["rss/record-minute"]
		printf "record-rss/prometheus/100x2k %.3g -\n", m["rss/record-ratio"]
	} else print "record-rss/MB/100x2k-2min - 100 (scripts/bench-ratios.sh -r)"
	if ("seek/whole-cpu" in m) printf "analyze-whole-hour/cpu-seconds %.3g 5\nanalyze-whole-hour/rss-MB %d 300\n", m["seek/whole-cpu"], m["seek/whole-rss"]
	else print "analyze-whole-hour/cpu-seconds - 5 (scripts/bench-ratios.sh -s; GNU time)"
	if ("seek/2h-rss" in m && m["seek/whole-rss"] > 0) printf "analyze-two-hours/rss-over-the-hour %.3g 1.0\n", m["seek/2h-rss"] / m["seek/whole-rss"]
	else print "analyze-two-hours/rss-over-the-hour - 1.0 (scripts/bench-ratios.sh -s; GNU time)"
	if ("seek/end-screen" in m) printf "replay-end-on-screen/seconds %.3g 0.2\n", m["seek/end-screen"]
	else print "replay-end-on-screen/seconds - 0.2 (scripts/bench-ratios.sh -s; tmux)"
	print "frame-200x60/ms - 0.3 (go test ./ui -bench .)"
}' "$out"
