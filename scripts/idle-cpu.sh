#!/usr/bin/env bash
# Measures the idle CPU of `retrytop watch` on 10 targets at 1 s next to
# `retrytop record` and Prometheus on the same targets (docs/performance.md,
# "Idle CPU of the dashboard"). Needs tmux, bc, and prometheus for the last
# rows. Usage: scripts/idle-cpu.sh [RETRYTOP_BINARY]  (about 8 minutes)
set -u
bin=${1:-retrytop}
work=$(mktemp -d)
trap 'pkill -f "listen-base 19100"; tmux kill-session -t idlecpu 2>/dev/null; rm -rf "$work"' EXIT
("$bin" demo --headless --duration 30m --listen-base 19100 >"$work/demo.out" 2>&1 &)
sleep 10
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
measure() { # label pid
	local a b
	a=$(ticks "$2"); sleep 60; b=$(ticks "$2")
	printf '%-28s %s%% of a core\n' "$1" "$(echo "scale=2; ($b-$a)/60" | bc)"
}
big=; small=
for i in 0 1 2 3 4 5 6 7 8 9; do
	big="$big t$i=http://127.0.0.1:$((19100 + i % 4))/metrics"
	small="$small p$i=http://127.0.0.1:19103/metrics"
done
for kind in big small; do
	args=${!kind}
	tmux kill-session -t idlecpu 2>/dev/null
	tmux new -d -s idlecpu -x 160 -y 48 "exec $bin watch $args"
	sleep 8
	measure "watch $kind" "$(tmux display -p -t idlecpu '#{pane_pid}')"
	tmux send-keys -t idlecpu q
	sleep 2
	("$bin" record $args -o "$work/$kind.rtd" --duration 75s -q >/dev/null 2>&1 &)
	sleep 8
	measure "record $kind" "$(pgrep -f "record .* -o $work/$kind.rtd")"
	sleep 10
done
command -v prometheus >/dev/null || exit 0
for kind in big small; do
	{
		printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n'
		for i in 0 1 2 3 4 5 6 7 8 9; do
			port=19103
			[ "$kind" = big ] && port=$((19100 + i % 4))
			printf "  - job_name: j%d\n    params: {x: ['%d']}\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" "$i" "$i" "$port"
		done
	} >"$work/prometheus.yml"
	(prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data-$kind" --web.listen-address=127.0.0.1:19990 >"$work/prom.log" 2>&1 &)
	sleep 20
	pid=$(pgrep -f "$work/prometheus.yml")
	measure "prometheus $kind" "$pid"
	kill "$pid"
	sleep 3
done
