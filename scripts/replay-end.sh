#!/usr/bin/env bash
# Measures `G` in `retrytop replay`: from the key to the recording's end
# frame whole on screen, the seek index ready (docs/performance.md,
# "Frame render"). Prints one line per round, seconds, then the median:
#   replay-end-on-screen <seconds>
# Usage: scripts/replay-end.sh RETRYTOP_BINARY DUMP [ROUNDS]  (ROUNDS 15:
# about two minutes, plus indexing the dump once; needs tmux)
#
# The replay runs in a tmux pane of 200x60 with its own cache directory
# (the index is built once, in the background, as a first replay does).
# The end frame, once settled, is the reference; each round goes to the
# start (g), waits for it to settle, presses G and polls the pane every
# 10 ms until it equals the reference, reading the clock from bash: a
# poll starts no process but tmux's capture (bc and date in the loop
# took CPU from the replay on a 2-core machine). What it measures
# includes tmux taking the key (about 30 ms here) and the polling; a
# round that does not reach the reference within 5 s prints "-".
set -u
bin=${1:?usage: replay-end.sh RETRYTOP_BINARY DUMP [ROUNDS]}
dump=${2:?usage: replay-end.sh RETRYTOP_BINARY DUMP [ROUNDS]}
rounds=${3:-15}
. "$(dirname "$0")/lib.sh"

screen() { tmux capture-pane -p -t "$session"; }

# settle waits until the pane has not changed for a second (at most 60 s).
settle() {
	local a b i
	a=$(screen)
	for ((i = 0; i < 60; i++)); do
		sleep 1
		b=$(screen)
		[ "$a" = "$b" ] && return 0
		a=$b
	done
	return 1
}

tmux new -d -s "$session" -x 200 -y 60 "exec env XDG_CACHE_HOME=$work TERM=xterm-256color LANG=C.UTF-8 $bin replay $dump --paused"
# Indexed: the header's badge gone (at most 10 minutes).
for ((i = 0; i < 600; i++)); do
	sleep 1
	screen | head -1 | grep -q indexing || break
done
tmux send-keys -t "$session" G
settle || { echo "replay-end-on-screen - (the end frame did not settle)"; exit 0; }
want=$(screen)
times=()
for ((r = 0; r < rounds; r++)); do
	tmux send-keys -t "$session" g
	settle || continue
	t0=${EPOCHREALTIME/./}
	tmux send-keys -t "$session" G
	got=-
	while :; do
		if [ "$(screen)" = "$want" ]; then
			t=${EPOCHREALTIME/./}
			got=$(printf '%d.%06d' $(((t - t0) / 1000000)) $(((t - t0) % 1000000)))
			break
		fi
		((${EPOCHREALTIME/./} - t0 > 5000000)) && break
		sleep 0.01
	done
	echo "round $r $got"
	[ "$got" != - ] && times+=("$got")
done
if [ ${#times[@]} -eq 0 ]; then
	echo "replay-end-on-screen -"
else
	printf '%s\n' "${times[@]}" | sort -g | awk '{v[NR] = $1} END {printf "replay-end-on-screen %.3f\n", v[int((NR + 1) / 2)]}'
fi
