# Shared by the measuring scripts (idle-cpu.sh, rss-fleet.sh); sourced,
# not run. It makes $work (a temporary directory) and $session (a tmux
# session name carrying the script's PID), and on exit stops only the
# processes whose PIDs the script added to pids, kills only its own tmux
# session and removes $work.
work=$(mktemp -d)
session="$(basename "$0" .sh)-$$"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	tmux kill-session -t "$session" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# free_base prints a port P such that P..P+3 are free on 127.0.0.1.
free_base() {
	local p i used
	for ((p = 20000 + RANDOM % 20000; ; p += 7)); do
		used=
		for i in 0 1 2 3; do
			if (exec 3<>"/dev/tcp/127.0.0.1/$((p + i))") 2>/dev/null; then used=1; break; fi
		done
		[ -z "$used" ] && { echo "$p"; return; }
	done
}
