# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# What sandboxes that are gone may have left on the host (issue 15: "1,000
# sequential create/exec/delete cycles leave nothing behind (processes,
# mounts, cgroups, uids, files)"; "a crashed server leaves nothing that
# `moat gc` cannot clean"). Used by tests/integration/lifecycle.sh,
# sessions.sh and bench/cycles.sh.
#
# leaks_check MARK IDS_FILE [WAIT]: prints one line per thing left behind by the
# sandboxes whose run ids are in IDS_FILE (one a line) and whose processes
# carry MARK in their command line, and sets LEAKS to their number:
#   process  a process whose command line holds MARK (not this shell's)
#   mount    a line of the host's /proc/self/mountinfo naming MARK or an id
#   cgroup   a directory .../moat/<id> in any hierarchy under /sys/fs/cgroup
#   live     the live record <state>/live/<id> (moat ps / moat gc's)
#   tmp      an entry of $TMPDIR, /tmp, /dev/shm or /run/moat naming an id
#   session  an entry of the sessions directory naming an id or MARK (a
#            session's name file)
# Each kind can be seen: a held sandbox is found (the positive control in
# the tests). With WAIT (seconds) the check is repeated until nothing is
# found or WAIT has passed: a supervisor that answered `moat rm` may still be
# exiting. Run records (<runs>/<id>/events.jsonl) are kept by design
# (moat log, moat gc --retention): leaks_records counts them.

# The state directories as the library computes them (state.c, audit.c).
_leaks_live_dir() {
	if [ "$(id -u)" -eq 0 ]; then
		echo /run/moat/live
	elif [ -n "${XDG_STATE_HOME:-}" ]; then
		echo "$XDG_STATE_HOME/moat/live"
	else
		echo "$HOME/.local/state/moat/live"
	fi
}
_leaks_runs_dir() {
	if [ "$(id -u)" -eq 0 ]; then
		echo /var/lib/moat/runs
	elif [ -n "${XDG_STATE_HOME:-}" ]; then
		echo "$XDG_STATE_HOME/moat/runs"
	else
		echo "$HOME/.local/state/moat/runs"
	fi
}
_leaks_sessions_dir() {
	if [ "$(id -u)" -eq 0 ]; then
		echo /run/moat/sessions
	elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
		echo "$XDG_RUNTIME_DIR/moat/sessions"
	elif [ -n "${XDG_STATE_HOME:-}" ]; then
		echo "$XDG_STATE_HOME/moat/sessions"
	else
		echo "$HOME/.local/state/moat/sessions"
	fi
}

leaks_check() {
	local i tries=$((${3:-0} * 10))
	for ((i = 0; ; i++)); do
		_leaks_once "$1" "$2" >"${TMPDIR:-/tmp}/leaks-last.$$"
		[ "$LEAKS" -eq 0 ] || [ "$i" -ge "$tries" ] && break
		sleep 0.1
	done
	cat "${TMPDIR:-/tmp}/leaks-last.$$"
	rm -f "${TMPDIR:-/tmp}/leaks-last.$$"
}

_leaks_once() {
	local mark=$1 ids found p live sdir d
	LEAKS=0
	found=$(mktemp "${TMPDIR:-/tmp}/leaks.XXXXXX")
	# only well-formed ids: an empty line would match everything
	ids=$(mktemp "${TMPDIR:-/tmp}/leaks-ids.XXXXXX")
	grep -E '^[0-9a-f]{16,64}$' "$2" >"$ids" || echo 'no-such-id-ever' >"$ids"
	# processes (pgrep never lists itself; this shell's command line has no MARK)
	for p in $(pgrep -f -- "$mark" || true); do
		[ "$p" = "$$" ] && continue
		echo "process $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 200)" >>"$found"
	done
	grep -F -e "$mark" -f "$ids" /proc/self/mountinfo 2>/dev/null | sed 's/^/mount /' >>"$found" || true
	find /sys/fs/cgroup -maxdepth 8 -type d -path '*/moat/*' 2>/dev/null |
		grep -F -f "$ids" | sed 's/^/cgroup /' >>"$found" || true
	live=$(_leaks_live_dir)
	if [ -d "$live" ]; then
		# shellcheck disable=SC2010 # names are hex ids
		ls -a "$live" 2>/dev/null | grep -F -f "$ids" | sed "s|^|live $live/|" >>"$found" || true
	fi
	for d in "${TMPDIR:-/tmp}" /tmp /dev/shm /run/moat; do
		[ -d "$d" ] || continue
		# shellcheck disable=SC2010
		ls -a "$d" 2>/dev/null | grep -F -f "$ids" | sed "s|^|tmp $d/|" >>"$found" || true
	done
	sdir=$(_leaks_sessions_dir)
	if [ -d "$sdir" ]; then
		# shellcheck disable=SC2010
		ls -a "$sdir" 2>/dev/null | grep -F -e "$mark" -f "$ids" | sed "s|^|session $sdir/|" >>"$found" || true
	fi
	sort -u "$found"
	# shellcheck disable=SC2034 # read by the caller
	LEAKS=$(sort -u "$found" | grep -c . || true)
	rm -f "$found" "$ids"
}

# leaks_records IDS_FILE: "N records, K KiB" of the run records kept.
leaks_records() {
	local runs n=0 kb=0 id
	runs=$(_leaks_runs_dir)
	while read -r id; do
		if [ -z "$id" ] || [ ! -d "$runs/$id" ]; then continue; fi
		n=$((n + 1))
		kb=$((kb + $(du -sk "$runs/$id" | cut -f1)))
	done <"$1"
	echo "$n records, $kb KiB"
}
