#!/usr/bin/env bash
# Measures the resident memory of `retrytop watch` against a Prometheus
# scraping the same fleet (docs/performance.md, "Watch RSS"): TARGETS
# (default 100) Envoy-shaped targets of 2,016 series each, served by
# bench's fleetgen with counters growing every scrape, scraped every
# second by both for DURATION seconds (default 120). Prints
#   rss/watch-prometheus <ratio of the peaks> <goal>
# and each process's peak and current RSS, and the CPU seconds each used
# (and their ratio, over the whole run and after the first minute). Needs
# tmux and prometheus.
# MODE=record measures `retrytop record` (to a file in the work
# directory) instead, and prints its RSS after the first minute too
# (rss/record-prometheus; the goal is flat after that minute, under
# 100 MB).
# Usage: scripts/rss-fleet.sh [RETRYTOP_BINARY]
#
# It takes free ports, names its tmux session after its own PID and, on
# exit, stops only the processes it started (by PID).
set -u
cd "$(dirname "$0")/.."
bin=${1:-}
targets=${TARGETS:-100}
duration=${DURATION:-120}
mode=${MODE:-watch}
case $mode in watch | record) ;; *) echo "rss-fleet: MODE is watch or record, not $mode" >&2; exit 2 ;; esac
. scripts/lib.sh
for p in tmux prometheus; do
	command -v "$p" >/dev/null || { echo "rss-fleet: $p not on PATH" >&2; exit 2; }
done
if [ -z "$bin" ]; then
	go build -o "$work/retrytop" ./cmd/retrytop || exit 1
	bin=$work/retrytop
fi
(cd bench && go build -o "$work/fleetgen" ./cmd/fleetgen) || exit 1

"$work/fleetgen" -series 2000 >"$work/gen.addr" 2>"$work/gen.err" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/gen.addr" ] && break; sleep 0.1; done
addr=$(head -1 "$work/gen.addr")
[ -n "$addr" ] || { echo "rss-fleet: fleetgen did not start: $(cat "$work/gen.err")" >&2; exit 1; }

port=$(free_base)
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: fleet\n    static_configs:\n'
	for ((i = 0; i < targets; i++)); do
		printf '      - targets: ["%s"]\n        labels: {__metrics_path__: "/metrics/%d", target: "t%d"}\n' "$addr" "$i" "$i"
	done
} >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$port" >"$work/prometheus.log" 2>&1 &
prom=$!
pids+=($prom)

args=
for ((i = 0; i < targets; i++)); do args="$args t$i=http://$addr/metrics/$i"; done
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# CPU seconds (user + system) of a process so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{sub(/^.*\) /, ""); printf "%.1f", ($12 + $13) / hz}' "/proc/$1/stat"; }
minute=$((duration < 60 ? duration : 60))
if [ "$mode" = record ]; then
	"$bin" record$args -o "$work/fleet.rtd" --duration "$((duration + 10))s" 2>"$work/record.err" &
	watch=$!
	pids+=($watch)
else
	# A memory limit far above what it holds: the series cap must not drop any.
	tmux new -d -s "$session" -x 200 -y 50 "exec $bin watch --memory-limit 64GiB$args"
	sleep 0.5
	watch=$(tmux display -p -t "$session" '#{pane_pid}')
fi
sleep "$minute"
w1=$(kb "$watch" VmRSS)
wc1=$(cpu "$watch"); pc1=$(cpu "$prom")
sleep "$((duration - minute))"
wc=$(cpu "$watch"); pc=$(cpu "$prom")
wp=$(kb "$watch" VmHWM); wn=$(kb "$watch" VmRSS)
pp=$(kb "$prom" VmHWM); pn=$(kb "$prom" VmRSS)
if [ -z "$wp" ] || [ -z "$pp" ]; then
	echo "rss-fleet: a process ended early; prometheus log:" >&2
	tail -5 "$work/prometheus.log" >&2
	exit 1
fi
echo "rss/$mode-prometheus $(awk -v a="$wp" -v b="$pp" 'BEGIN {printf "%.3f", a / b}') 1.0"
printf '%-10s peak %6d MB  now %6d MB\n' "$mode" $((wp / 1024)) $((wn / 1024))
if [ "$mode" = record ]; then
	printf 'record     at %d s %6d MB; %s\n' "$minute" $((w1 / 1024)) "$(tail -c 300 "$work/record.err" | tr '\r' '\n' | grep . | tail -1)"
fi
printf 'prometheus peak %6d MB  now %6d MB\n' $((pp / 1024)) $((pn / 1024))
printf 'cpu %s %s s, prometheus %s s: %s; after the first minute %s\n' "$mode" "$wc" "$pc" \
	"$(awk -v a="$wc" -v b="$pc" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "-"}')" \
	"$(awk -v a="$wc" -v b="$pc" -v a1="$wc1" -v b1="$pc1" 'BEGIN {if (b > b1) printf "%.3f", (a - a1) / (b - b1); else print "-"}')"
up=$(curl -s "http://127.0.0.1:$port/api/v1/query?query=count(up%3D%3D1)" | sed -n 's/.*"value":\[[^,]*,"\([0-9]*\)".*/\1/p')
printf '%d targets x 2,016 series for %d s (%s up in Prometheus); load %s\n' "$targets" "$duration" "${up:-?}" "$(cut -d' ' -f1 /proc/loadavg)"
