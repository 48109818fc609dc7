#!/usr/bin/env bash
# Measures the idle CPU of `retrytop watch` on 10 targets at 1 s next to
# `retrytop record` and Prometheus on the same targets (docs/performance.md,
# "Watch idle CPU"). Needs tmux, bc, and prometheus for the last
# rows. Usage: scripts/idle-cpu.sh [RETRYTOP_BINARY]  (about 8 minutes)
#
# It takes free ports, names its tmux session after its own PID and, on
# exit, stops only the processes it started (by PID), so it can run beside
# anything else, a second copy of itself included.
set -u
bin=${1:-retrytop}
. "$(dirname "$0")/lib.sh"

free_port() { local p; p=$(free_base); echo "$p"; }

base=$(free_base)
"$bin" demo --headless --duration 30m --listen-base "$base" >"$work/demo.out" 2>&1 &
pids+=($!)
sleep 10
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() { # label pid
	local a b
	a=$(ticks "$2"); sleep 60; b=$(ticks "$2")
	# The machine may be shared: the 1-minute load average at the end of
	# the minute goes with the figure.
	printf '%-28s %s%% of a core (load %s)\n' "$1" "$(echo "scale=2; ($b-$a)/60" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
}
big=; small=
for i in 0 1 2 3 4 5 6 7 8 9; do
	big="$big t$i=http://127.0.0.1:$((base + i % 4))/metrics"
	small="$small p$i=http://127.0.0.1:$((base + 3))/metrics"
done
for kind in big small; do
	args=${!kind}
	tmux kill-session -t "$session" 2>/dev/null
	tmux new -d -s "$session" -x 160 -y 48 "exec $bin watch $args"
	sleep 8
	measure "watch $kind" "$(tmux display -p -t "$session" '#{pane_pid}')"
	tmux send-keys -t "$session" q
	sleep 2
	"$bin" record $args -o "$work/$kind.rtd" --duration 75s -q >/dev/null 2>&1 &
	rec=$!
	pids+=("$rec")
	sleep 8
	measure "record $kind" "$rec"
	wait "$rec" 2>/dev/null
done
command -v prometheus >/dev/null || exit 0
for kind in big small; do
	{
		printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n'
		for i in 0 1 2 3 4 5 6 7 8 9; do
			port=$((base + 3))
			[ "$kind" = big ] && port=$((base + i % 4))
			printf "  - job_name: j%d\n    params: {x: ['%d']}\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" "$i" "$i" "$port"
		done
	} >"$work/prometheus.yml"
	web=$(free_port)
	prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data-$kind" --web.listen-address="127.0.0.1:$web" >"$work/prom.log" 2>&1 &
	prom=$!
	pids+=("$prom")
	sleep 20
	if ! kill -0 "$prom" 2>/dev/null; then
		# Say why rather than print a figure of nothing (two copies of
		# this script may race for a port between free_port and bind).
		echo "prometheus $kind exited before its minute: $(tail -n 1 "$work/prom.log")" >&2
		continue
	fi
	measure "prometheus $kind" "$prom"
	kill "$prom"
	wait "$prom" 2>/dev/null
done
