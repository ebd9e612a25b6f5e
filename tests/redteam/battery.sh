#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck disable=SC2317 # test functions are called indirectly by run_test
#
# Red-team battery (issue 8, ../shared/redteam/CATALOGUE.md sections 1-2, 5).
# For every probe of tests/redteam/probes/:
#   1. positive control, WITHOUT moat: the probe runs as the unprivileged user
#      moat-test and/or as root of a throw-away `unshare -Urmnpi` namespace
#      (never as host root), and must report FAIL for the attempts whose path
#      is open on this machine;
#   2. the same probe with the same arguments inside `moat run`, which must
#      report BLOCKED or CONTAINED for each of those attempts and FAIL for none.
# An attempt the host itself closes (a sysctl, a missing kernel feature, no
# privilege) is listed as a note; a probe none of whose attempts could be
# shown open outside is a SKIP with the control's own words as reason.
# Host oracles (tty, listeners, canary process, canary secrets, fixture hashes,
# mount table) judge what a probe cannot see from inside.
#
# Env: MOAT (moat binary), MOAT_PROBES (built probes), RT_REPORT (optional file:
# one "attempt<TAB>control<TAB>inside<TAB>detail" line per attempt is appended).
# shellcheck source=../lib/tap.sh
. "${MOAT_TEST_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/lib/tap.sh"

: "${MOAT_PROBES:?MOAT_PROBES must name the directory of built probes}"
P=$MOAT_PROBES
RT_USER=${RT_USER:-moat-test}
RT_REPORT=${RT_REPORT:-}
export P RT_USER RT_REPORT

# Run a command as the unprivileged test user (never host root).
rt_unpriv() {
	if is_root; then
		id "$RT_USER" >/dev/null 2>&1 || fail "no user $RT_USER for the positive control"
		(cd / && runuser -u "$RT_USER" -- env -u HOME HOME=/nonexistent "$@")
	else
		(cd / && "$@")
	fi
}

# Run a command as root of a throw-away user+mount+net+pid+ipc namespace,
# entered from the unprivileged user.
rt_userns() {
	rt_unpriv unshare -Urmnpi --fork --mount-proc "$@"
}

# Background processes a test starts are killed when the test's subshell
# exits, on every path (a failed assertion included): `trap rt_bg_cleanup EXIT`
# in the test, then rt_bg PID... for each. RT_BG_TAG, if set, also kills the
# pids listed in that file whose command line names the test's own fixture
# (RT_BG_MATCH), e.g. processes of a sandbox run without moat by vacuity.sh.
RT_BG=()
rt_bg() { RT_BG+=("$@"); }
rt_bg_cleanup() {
	local p
	if [ ${#RT_BG[@]} -gt 0 ]; then kill "${RT_BG[@]}" 2>/dev/null || true; fi
	if [ -n "${RT_BG_TAG:-}" ] && [ -f "$RT_BG_TAG" ]; then
		while read -r p; do
			case $p in '' | *[!0-9]*) continue ;; esac
			if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$RT_BG_MATCH"; then
				kill "$p" 2>/dev/null || true
			fi
		done <"$RT_BG_TAG"
	fi
}

# rt_count_wait FILE MIN: a listener counts an accept a moment after the
# client's connect() returned; wait up to 3 s for the count to reach MIN.
rt_count_wait() {
	for _ in $(seq 30); do
		[ "$(cat "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.1
	done
}

# The sandbox under test: the probes directory read-only at /probes; with
# RT_UID0=1 the command is the sandbox's own root (--uid 0 --gid 0).
rt_moat() {
	local -a id=()
	if [ -n "${RT_UID0:-}" ]; then id=(--uid 0 --gid 0); fi
	"$MOAT" run --ro "$P:/probes" "${id[@]}" "$@"
}

# Stable attempt names for the report: per-run fixture paths, ports and
# random socket names in the attempt field are replaced by placeholders.
rt_normalise() {
	awk -v p="$P" '$1 == "RESULT" {
		gsub(p, "<probes>", $2)
		gsub(/\/tmp\/rt[0-9]+[a-z]*\.[A-Za-z0-9]+/, "<fixture>", $2)
		gsub(/-[0-9]+-[0-9]+$/, "", $2)
		sub(/tcp6?:[0-9]+$/, "tcp:<port>", $2)
	} { print }' "$1" >"$1.norm" && mv "$1.norm" "$1"
}

# rt_judge NAME CONTROL_FILE INSIDE_FILE: compares the RESULT lines.
rt_judge() {
	local name=$1 ctl=$2 in=$3 verdict
	rt_normalise "$ctl"
	rt_normalise "$in"
	echo "# control ($name):"
	grep -E '^(RESULT|INFO)' "$ctl" | sed 's/^/#   /' || true
	echo "# inside moat ($name):"
	grep -E '^RESULT' "$in" | sed 's/^/#   /' || true
	if [ -n "$RT_REPORT" ]; then
		awk '$1 == "RESULT" { if (FILENAME == ARGV[1]) c[$2] = $3; else {
			d = ""; for (i = 4; i <= NF; i++) d = d (i > 4 ? " " : "") $i;
			printf "%s\t%s\t%s\t%s\n", $2, ($2 in c) ? c[$2] : "-", $3, d; seen[$2] = 1 } }
			END { for (k in c) if (!(k in seen)) printf "%s\t%s\t%s\t%s\n", k, c[k], "MISSING", "-" }' \
			"$ctl" "$in" >>"$RT_REPORT"
	fi
	verdict=$(awk '
		$1 == "RESULT" && FILENAME == ARGV[1] { c[$2] = $3; next }
		$1 == "RESULT" { s[$2] = $3 }
		END {
			open = 0; bad = ""
			for (k in s) if (s[k] == "FAIL" || s[k] == "INCONCLUSIVE") bad = bad " " k "=" s[k]
			for (k in c) if (c[k] == "FAIL") {
				open++
				if (!(k in s)) bad = bad " " k "=MISSING"
				else if (s[k] != "BLOCKED" && s[k] != "CONTAINED" && s[k] != "FAIL") bad = bad " " k "=" s[k]
			}
			if (bad != "") print "BAD" bad
			else if (open == 0) print "VACUOUS"
			else print "OK " open
		}' "$ctl" "$in")
	case $verdict in
	OK*) return 0 ;;
	VACUOUS)
		grep -q '^RESULT' "$ctl" || fail "the control produced no result: $(tail -n 5 "$ctl")"
		skip "control shows no open path on this machine: $(awk '$1 == "RESULT" { printf "%s %s; ", $2, $4 }' "$ctl")"
		;;
	*) fail "escape or unproven attempt inside moat:${verdict#BAD}" ;;
	esac
}

# rt_probe NAME CONTEXTS [ARGS...]: CONTEXTS is "user", "userns" or "user,userns".
# The controls' outputs are merged: an attempt open in any context counts.
rt_probe() {
	local name=$1 ctxs=$2 ctx
	shift 2
	: >ctl.out
	for ctx in ${ctxs//,/ }; do
		case $ctx in
		user) rt_unpriv "$P/$name" --control "$@" >ctl.one 2>&1 || true ;;
		userns) rt_userns "$P/$name" --control "$@" >ctl.one 2>&1 || true ;;
		esac
		# Keep the strongest class per attempt: FAIL beats everything.
		awk '$1 == "RESULT"' ctl.one >>ctl.out
	done
	awk '$1 == "RESULT" { if (!($2 in c) || $3 == "FAIL") { c[$2] = $3; l[$2] = $0 } }
		END { for (k in l) print l[k] }' ctl.out | sort >ctl.merged
	rt_moat -- "/probes/$name" "$@" >in.out 2>&1 || true
	rt_judge "$name" ctl.merged in.out
}

# ---------------------------------------------------------------- kernel (sec 1)

t_env() {
	rt_moat -- /bin/true || fail "moat run -- /bin/true does not work: exit $?"
}

t_rt001_tiocsti() {
	# Control: the probe on a terminal of the oracle's, as the unprivileged user.
	rt_unpriv "$P/rt_ttyhost" "$P/rt001_tiocsti" --control --inject >ctl.one 2>&1 || true
	awk '$1 == "RESULT" && $2 != "RT-004/host-tty-modes"' ctl.one | sort >ctl.merged
	grep -q '^RESULT RT-001/host-tty-input FAIL' ctl.merged ||
		fail "the tty oracle saw no injection in the control: $(cat ctl.one)"
	"$P/rt_ttyhost" "$MOAT" run --ro "$P:/probes" -- /probes/rt001_tiocsti --inject 2>&1 |
		grep -v '^RESULT RT-004/host-tty-modes' >in.out || true
	rt_judge rt001_tiocsti ctl.merged in.out
}

t_rt004_tty() {
	rt_unpriv "$P/rt_ttyhost" "$P/rt004_tty" --control >ctl.one 2>&1 || true
	awk '$1 == "RESULT" && $2 != "RT-001/host-tty-input"' ctl.one | sort >ctl.merged
	"$P/rt_ttyhost" "$MOAT" run --ro "$P:/probes" -- /probes/rt004_tty 2>&1 |
		grep -v '^RESULT RT-001/host-tty-input' >in.out || true
	rt_judge rt004_tty ctl.merged in.out
}

t_rt005_userns() { rt_probe rt005_userns user,userns; }
t_rt007_ns() { rt_probe rt007_ns user,userns; }

t_rt008_mount() {
	# --setup-ro only acts with --control inside the throw-away namespace.
	rt_probe rt008_mount user,userns --remount-target /usr --setup-ro
}

t_rt009_chroot() { rt_probe rt009_chroot user,userns; }
t_rt010_caps() { rt_probe rt010_caps user,userns; }
t_rt011_netlink() { rt_probe rt011_netlink userns; }
t_rt012_sockfam() { rt_probe rt012_sockfam user,userns; }
t_rt013_keyring() { rt_probe rt013_keyring user; }
t_rt014_bpf() { rt_probe rt014_bpf user,userns; }
t_rt015_iouring() { rt_probe rt015_iouring user; }
t_rt016_kernel() { rt_probe rt016_kernel user,userns; }
t_rt017_handle() { rt_probe rt017_handle user,userns; }
t_rt019_personality() { rt_probe rt019_personality user; }
t_rt020_ptrace() { rt_probe rt020_ptrace user; }
t_rt021_seccomp() { rt_probe rt021_seccomp user; }
t_rt_arch() { rt_probe rt_arch user; }

t_rt022_setuid() {
	rt_probe rt022_setuid user
}

# The same probes with the command as uid 0 of the sandbox (moat run --uid 0,
# an OCI container's root). The userns control is uid 0 without securebits
# and with a bounding set: its exec regains every capability. The inside run
# must really be uid 0 (the probe's securebits line names the uid).
t_rt010_caps_uid0() {
	RT_UID0=1 rt_probe rt010_caps user,userns
	grep -q '^RESULT RT-010/securebits [A-Z]* uid 0,' in.out ||
		fail "the sandboxed probe did not run as uid 0: $(grep securebits in.out)"
}

t_rt022_setuid_uid0() {
	RT_UID0=1 rt_probe rt022_setuid user
	RT_UID0=1 rt_moat -- /bin/sh -c 'id -u' >uid.out 2>/dev/null || true
	[ "$(head -n 1 uid.out)" = 0 ] || fail "the sandbox did not run as uid 0: $(cat uid.out)"
}

# Root only (registered only then): a real setuid-root copy of the probe must
# not elevate inside. The unprivileged run cannot make the fixture.
t_rt022_setuid_exec() {
	local d
	d=$(mktemp -d /tmp/rt022.XXXXXX)
	chmod 711 "$d" # traversable, not listable: the setuid file lives seconds
	cp "$P/rt022_setuid" "$d/suid"
	chown root:root "$d/suid"
	chmod 4755 "$d/suid"
	rt_unpriv "$d/suid" --control --report-euid >ctl.merged 2>&1 || true
	rt_moat --ro "$d:/suid" -- /suid/suid --report-euid >in.out 2>&1 || true
	rm -rf "$d"
	rt_judge rt022_setuid_exec ctl.merged in.out
}

t_rt023_procleak() {
	rt_probe rt023_procleak user --leak "$P"
}

t_rt024_procwrite() {
	# The real knobs are writable only by host root, which no control may be:
	# the control points the same probe at writable stand-ins to show that it
	# detects a writable knob; inside, the real paths are tried.
	local mock f
	mock=$(mktemp -d /tmp/rt024.XXXXXX)
	for f in proc/sysrq-trigger proc/sys/kernel/core_pattern sys/kernel/uevent_helper \
		proc/sys/vm/drop_caches proc/sys/kernel/sysrq proc/sys/kernel/modprobe; do
		mkdir -p "$mock/$(dirname "$f")"
		: >"$mock/$f"
	done
	chmod -R a+rwX "$mock"
	rt_unpriv "$P/rt024_procwrite" --control --root "$mock" >ctl.merged 2>&1 || true
	echo "# control: the probe against writable stand-ins in $mock (the real knobs need host root)"
	rm -rf "$mock"
	rt_moat -- /probes/rt024_procwrite >in.out 2>&1 || true
	rt_judge rt024_procwrite ctl.merged in.out
}

t_rt025_dev() { rt_probe rt025_dev user,userns; }

t_rt026_signal() {
	local dir cpid
	dir=$(mktemp -d /tmp/rt026.XXXXXX)
	chmod 777 "$dir"
	trap rt_bg_cleanup EXIT
	start_canary() {
		rt_unpriv sh -c "echo \$\$ >$dir/pid; exec sleep 300" &
		for _ in $(seq 50); do [ -s "$dir/pid" ] && break; sleep 0.1; done
		cpid=$(cat "$dir/pid")
		rt_bg "$cpid"
		rm -f "$dir/pid"
	}
	start_canary
	rt_unpriv "$P/rt026_signal" --control --pid "$cpid" >ctl.merged 2>&1 || true
	sleep 0.2
	if kill -0 "$cpid" 2>/dev/null; then
		kill "$cpid" 2>/dev/null || true
		fail "the control could not signal the canary: $(cat ctl.merged)"
	fi
	start_canary
	rt_moat -- /probes/rt026_signal --pid "$cpid" --kill-all >in.out 2>&1 || true
	sleep 0.2
	if kill -0 "$cpid" 2>/dev/null; then
		echo "RESULT RT-026/host-canary BLOCKED the host canary survived" >>in.out
		kill "$cpid" 2>/dev/null || true
	else
		echo "RESULT RT-026/host-canary FAIL the host canary $cpid was killed" >>in.out
	fi
	echo "RESULT RT-026/host-canary FAIL the control killed the host canary" >>ctl.merged
	rm -rf "$dir"
	rt_judge rt026_signal ctl.merged in.out
}

t_rt027_sockets() {
	local dir name port pids=() n k
	dir=$(mktemp -d /tmp/rt027.XXXXXX)
	chmod 755 "$dir"
	name="rt-canary-$$-$RANDOM"
	port=$((20000 + RANDOM % 20000))
	trap rt_bg_cleanup EXIT
	listen() {
		"$P/rt_listen" "$dir/count.$1" "$1" "$2" >"$dir/ready.$1" 2>&1 &
		pids+=($!)
		rt_bg $!
	}
	listen abstract "$name"
	listen unix "$dir/rt-canary.sock"
	# A random port may be taken: try a few.
	for _ in 1 2 3 4 5; do
		listen tcp "$port"
		for _ in $(seq 30); do
			grep -q READY "$dir/ready.tcp" 2>/dev/null && break
			kill -0 "${pids[-1]}" 2>/dev/null || break
			sleep 0.1
		done
		grep -q READY "$dir/ready.tcp" && break
		kill "${pids[-1]}" 2>/dev/null || true
		unset 'pids[-1]'
		port=$((20000 + RANDOM % 20000))
	done
	for k in abstract unix tcp; do
		for _ in $(seq 50); do grep -q READY "$dir/ready.$k" 2>/dev/null && break; sleep 0.1; done
		grep -q READY "$dir/ready.$k" || fail "listener $k did not start: $(cat "$dir/ready.$k")"
	done
	args=(--abstract "$name" --path "$dir/rt-canary.sock" --tcp "$port")
	rt_unpriv "$P/rt027_sockets" --control "${args[@]}" >ctl.merged 2>&1 || true
	for k in abstract unix tcp; do
		rt_count_wait "$dir/count.$k" 1
		n=$(cat "$dir/count.$k")
		# An oracle that saw nothing makes any refusal inside meaningless.
		[ "$n" -ge 1 ] || { kill "${pids[@]}"; fail "oracle $k not reached by the control (INCONCLUSIVE)"; }
		echo "$n" >"$dir/before.$k"
	done
	rt_moat -- /probes/rt027_sockets "${args[@]}" >in.out 2>&1 || true
	sleep 0.5 # an accept still in the listener's backlog must be counted
	for k in abstract unix tcp; do
		if [ "$(cat "$dir/count.$k")" = "$(cat "$dir/before.$k")" ]; then
			echo "RESULT RT-027/oracle-$k BLOCKED no accept on the host listener" >>in.out
		else
			echo "RESULT RT-027/oracle-$k FAIL the host $k listener accepted a connection" >>in.out
		fi
		echo "RESULT RT-027/oracle-$k FAIL control reached the listener" >>ctl.merged
	done
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$dir"
	rt_judge rt027_sockets ctl.merged in.out
}

# With --net host the abstract socket namespace is the host's: only Landlock's
# abstract-socket scope (ABI >= 6) keeps the sandbox off host listeners.
t_rt027_nethost() {
	local dir name lpid n abi
	abi=$("$P/rt_env" | awk '$2 == "landlock-abi" { print $3 }')
	case $abi in
	'' | none*) skip "kernel has no Landlock ($abi): nothing scopes abstract sockets under --net host" ;;
	[0-5]) skip "Landlock ABI $abi < 6 has no abstract-socket scope" ;;
	esac
	dir=$(mktemp -d /tmp/rt027h.XXXXXX)
	chmod 755 "$dir"
	name="rt-canary-host-$$-$RANDOM"
	trap rt_bg_cleanup EXIT
	"$P/rt_listen" "$dir/count" abstract "$name" >"$dir/ready" 2>&1 &
	lpid=$!
	rt_bg "$lpid"
	for _ in $(seq 50); do grep -q READY "$dir/ready" 2>/dev/null && break; sleep 0.1; done
	rt_unpriv "$P/rt027_sockets" --control --abstract "$name" 2>&1 | grep "^RESULT RT-027/" >ctl.merged || true
	rt_count_wait "$dir/count" 1
	n=$(cat "$dir/count")
	[ "$n" -ge 1 ] || { kill "$lpid"; fail "oracle not reached by the control (INCONCLUSIVE)"; }
	rt_moat --net host -- /probes/rt027_sockets --abstract "$name" 2>&1 | grep -v "^RESULT RT-028/" >in.out || true
	sleep 0.5
	if [ "$(cat "$dir/count")" = "$n" ]; then
		echo "RESULT RT-027/oracle-abstract-nethost BLOCKED no accept" >>in.out
	else
		echo "RESULT RT-027/oracle-abstract-nethost FAIL the host listener accepted" >>in.out
	fi
	echo "RESULT RT-027/oracle-abstract-nethost FAIL control reached the listener" >>ctl.merged
	kill "$lpid" 2>/dev/null || true
	wait "$lpid" 2>/dev/null || true
	rm -rf "$dir"
	rt_judge rt027_nethost ctl.merged in.out
}

# RT-040: two sandboxes of the same user at once. B listens on an abstract
# socket (in its own netns) and on a pathname socket in its /tmp, and leaves a
# canary file in its /tmp; A must reach none of them. (TCP listening inside is
# refused by Landlock under --net none, so B has no TCP listener.)
t_rt040_cross() {
	local dir name tok bpid n
	dir=$(mktemp -d /tmp/rt040.XXXXXX)
	chmod 777 "$dir"
	name="rt040-$$-$RANDOM"
	tok="RT040CANARY$RANDOM$$"
	# Control: the same listeners and canary outside, in one host namespace.
	trap rt_bg_cleanup EXIT
	rt_unpriv sh -c "echo $tok >$dir/canary; echo \$\$ >$dir/lpid; exec $P/rt_listen $dir/c.abs abstract $name" \
		>/dev/null 2>&1 &
	bpid=$!
	for _ in $(seq 50); do [ -s "$dir/c.abs" ] && [ -s "$dir/lpid" ] && break; sleep 0.1; done
	rt_bg "$(cat "$dir/lpid")"
	rt_unpriv "$P/rt027_sockets" --control --abstract "$name" >ctl.one 2>&1 || true
	rt_unpriv "$P/rt074_creds" --control --token "$tok" --file "$dir/canary" >>ctl.one 2>&1 || true
	kill "$(cat "$dir/lpid")" 2>/dev/null || true
	wait "$bpid" 2>/dev/null || true
	grep -E '^RESULT (RT-027/abstract|RT-075/host-file)' ctl.one |
		sed 's#RT-075/host-file:[^ ]*#RT-040/b-tmp-canary#; s#RT-027/abstract:[^ ]*#RT-040/b-abstract#' >ctl.merged
	rt_count_wait "$dir/c.abs" 1
	[ "$(cat "$dir/c.abs" 2>/dev/null || echo 0)" -ge 1 ] || fail "control did not reach its listener"
	rm -f "$dir"/c.* "$dir/canary"
	# Sandbox B.
	RT_BG_TAG=$dir/b.pids RT_BG_MATCH=$dir
	"$MOAT" run --rw "$dir:/out" --ro "$P:/probes" -- /bin/sh -c \
		"echo \$\$ >/out/b.pids; echo $tok >/tmp/$tok; /probes/rt_listen /out/c.unix unix /tmp/$name.sock >/dev/null & echo \$! >>/out/b.pids; exec /probes/rt_listen /out/c.abs abstract $name" \
		>/dev/null 2>&1 &
	bpid=$!
	rt_bg "$bpid"
	for _ in $(seq 100); do [ -s "$dir/c.abs" ] && [ -s "$dir/c.unix" ] && break; sleep 0.1; done
	[ -s "$dir/c.abs" ] && [ -s "$dir/c.unix" ] || { kill "$bpid"; fail "sandbox B did not start its listeners"; }
	# Sandbox A.
	rt_moat -- /probes/rt027_sockets --abstract "$name" --path "/tmp/$name.sock" >in.one 2>&1 || true
	rt_moat -- /probes/rt074_creds --token "$tok" --file "/tmp/$tok" >>in.one 2>&1 || true
	sleep 0.5
	grep -E '^RESULT (RT-027/abstract|RT-028/path:/tmp/rt040|RT-075/host-file)' in.one |
		sed 's#RT-075/host-file:[^ ]*#RT-040/b-tmp-canary#; s#RT-027/abstract:[^ ]*#RT-040/b-abstract#; s#RT-028/path:[^ ]*#RT-040/b-tmp-socket#' >in.out
	for n in abs unix; do
		if [ "$(cat "$dir/c.$n")" = 0 ]; then
			echo "RESULT RT-040/b-oracle-$n BLOCKED sandbox B saw no connection" >>in.out
		else
			echo "RESULT RT-040/b-oracle-$n FAIL sandbox B accepted a connection from A" >>in.out
		fi
	done
	rt_bg_cleanup
	wait "$bpid" 2>/dev/null || true
	# Only where B was no sandbox (vacuity.sh) does its canary land on the host.
	if grep -qs "^$tok\$" "/tmp/$tok"; then rm -f "/tmp/$tok"; fi
	rm -f "/tmp/$name.sock"
	rm -rf "$dir"
	rt_judge rt040_cross ctl.merged in.out
}

t_rt029_core() {
	rt_probe rt029_core user
	if find "$T_OUT" /tmp -maxdepth 1 -name 'core*' -newer "$T_OUT/log" 2>/dev/null | grep -q .; then
		fail "a core file appeared on the host"
	fi
}

# ---------------------------------------------------------- filesystem (sec 2)

t_rt030_fds() {
	# fd 3 open in the caller: the control inherits it, moat must not pass it on.
	rt_unpriv "$P/rt030_fds" --control 3</etc >ctl.merged 2>&1 || true
	rt_moat -- /probes/rt030_fds 3</etc >in.out 2>&1 || true
	rt_judge rt030_fds ctl.merged in.out
}

t_rt031_exe() {
	local before after
	before=$(sha256sum <"$MOAT")
	rt_probe rt031_exe user
	after=$(sha256sum <"$MOAT")
	assert_eq "$before" "$after" "hash of the moat binary"
}

t_rt033_robind() {
	local fix before after
	fix=$(mktemp -d /tmp/rt033.XXXXXX)
	mkfix() {
		rm -rf "${fix:?}"/*
		mkdir -p "$fix/sub"
		echo canary >"$fix/f"
		echo g >"$fix/sub/g"
		echo h >"$fix/sub/h"
		chmod 777 "$fix" "$fix/sub"
		chmod 666 "$fix/f" "$fix/sub/g" "$fix/sub/h"
		if is_root; then chown -R "$RT_USER" "$fix"; fi
	}
	mkfix
	rt_unpriv "$P/rt033_robind" --control --dir "$fix" >ctl.merged 2>&1 || true
	mkfix
	before=$(cd "$fix" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
	rt_moat --ro "$fix:/rt-ro" -- /probes/rt033_robind --dir /rt-ro >in.out 2>&1 || true
	after=$(cd "$fix" && find . -printf '%p %m %s %T@\n' | sort | sha256sum)
	rm -rf "$fix"
	assert_eq "$before" "$after" "the read-only fixture (names, modes, sizes, mtimes)"
	rt_judge rt033_robind ctl.merged in.out
}

t_rt037_propagation() {
	local before after
	rt_unpriv unshare -Urm --propagation shared "$P/rt037_propagation" --control >ctl.merged 2>&1 || true
	awk '{ print $5 }' /proc/self/mountinfo | sort >mounts.before
	rt_moat -- /probes/rt037_propagation >in.out 2>&1 || true
	# Mount points added on the host by the run. Other test suites running at
	# the same time on this machine mount under their own /tmp/moat-bench.* or
	# /tmp/moat-check.* directories: those are not this run's (ours is $P's).
	awk '{ print $5 }' /proc/self/mountinfo | sort | comm -13 mounts.before - |
		awk -v own="${P%/*}" 'index($0, own) == 1 || $0 !~ "^/tmp/moat-(bench|check)\\."' >mounts.added
	if [ -s mounts.added ]; then
		echo "RESULT RT-037/host-mount-table FAIL new host mounts: $(tr '\n' ' ' <mounts.added)" >>in.out
	else
		echo "RESULT RT-037/host-mount-table BLOCKED no mount added on the host" >>in.out
	fi
	rt_judge rt037_propagation ctl.merged in.out
}

# ------------------------------------------------------------ resources (sec 4)

t_rt066_forkbomb() {
	# Bounded at 200 children, which the control outside reaches; inside,
	# --pids 32 must stop it first.
	local rc=0
	rt_unpriv "$P/rt066_forkbomb" --control --max 200 >ctl.merged 2>&1 || true
	rt_moat --pids 32 -- /probes/rt066_forkbomb --max 200 >in.out 2>&1 || rc=$?
	if [ "$rc" = 125 ] && grep -q 'cannot be enforced' in.out; then
		# No delegated cgroup here (e.g. unprivileged on cgroup v1): moat must
		# fail closed, and the rlimit fallback the user can name must hold.
		echo "RESULT RT-066/fail-closed BLOCKED moat refused to run without an enforceable --pids" >in.one
		rt_moat --pids 32 --allow-degraded cgroup -- /probes/rt066_forkbomb --max 200 >>in.one 2>&1 || true
		mv in.one in.out
	fi
	rt_judge rt066_forkbomb ctl.merged in.out
}

# RT-071: a command that ignores SIGTERM/SIGHUP/SIGINT must still end at
# --timeout (+ --kill-grace) with exit 124, and nothing of it may survive.
t_rt071_timeout() {
	local marker="RTMARKER71-$$-$RANDOM" pids rc=0 t0 t1
	# Control: outside, `timeout` (TERM only) does not end it.
	rt_unpriv timeout 1 bash -c "exec -a $marker-c $P/rt072_orphan --sleep --seconds 30" \
		>/dev/null 2>&1 &
	sleep 2.5
	pids=$(pgrep -f -- "^$marker-c" || true)
	if [ -n "$pids" ]; then
		echo "RESULT RT-071/outlives-deadline FAIL still running 1.5 s after SIGTERM" >ctl.merged
		# shellcheck disable=SC2086 # pids the test itself started
		kill -9 $pids 2>/dev/null || true
	else
		echo "RESULT RT-071/outlives-deadline BLOCKED ended at SIGTERM" >ctl.merged
	fi
	wait || true
	t0=$(date +%s%N)
	timeout 30 "$MOAT" run --timeout 1s --kill-grace 500ms --ro "$P:/probes" -- /bin/bash -c \
		"exec -a $marker-s /probes/rt072_orphan --sleep --seconds 30" >in.one 2>&1 || rc=$?
	t1=$(date +%s%N)
	sleep 0.3
	pids=$(pgrep -f -- "^$marker-s" || true)
	if [ -n "$pids" ]; then
		echo "RESULT RT-071/outlives-deadline FAIL pid(s) $pids alive after moat returned" >in.out
		# shellcheck disable=SC2086 # pids the test itself started
		kill -9 $pids 2>/dev/null || true
	elif [ "$rc" != 124 ]; then
		echo "RESULT RT-071/outlives-deadline FAIL moat exited $rc, not 124 (timeout)" >in.out
	else
		echo "RESULT RT-071/outlives-deadline BLOCKED killed at the deadline: exit 124 after $(((t1 - t0) / 1000000)) ms" >in.out
	fi
	rt_judge rt071_timeout ctl.merged in.out
}

t_rt072_orphan() {
	local marker="RTMARKER-$$-$RANDOM" pids rc=0
	# Control: the same daemonising probe outside survives its parent.
	rt_unpriv "$P/rt072_orphan" --control --marker "$marker-c" --seconds 60 >ctl.one 2>&1 || true
	sleep 0.3
	pids=$(pgrep -f -- "^$marker-c" || true)
	awk '$1 == "RESULT"' ctl.one >ctl.merged
	if [ -n "$pids" ]; then
		echo "RESULT RT-072/host-survivor FAIL pid(s) $pids outlived the probe" >>ctl.merged
		# shellcheck disable=SC2086 # a list of our own pids
		kill -9 $pids 2>/dev/null || true
	else
		echo "RESULT RT-072/host-survivor BLOCKED nothing survived the probe" >>ctl.merged
	fi
	timeout 30 "$MOAT" run --ro "$P:/probes" -- /probes/rt072_orphan --marker "$marker-s" \
		--seconds 60 >in.out 2>&1 || rc=$?
	[ "$rc" -ne 124 ] || echo "RESULT RT-072/supervisor-returns FAIL moat waited for the daemon" >>in.out
	sleep 0.3
	pids=$(pgrep -f -- "^$marker-s" || true)
	if [ -n "$pids" ]; then
		echo "RESULT RT-072/host-survivor FAIL pid(s) $pids outlived the sandbox" >>in.out
		# shellcheck disable=SC2086 # a list of pids the test itself started
		kill -9 $pids 2>/dev/null || true
	else
		echo "RESULT RT-072/host-survivor BLOCKED nothing outlived the sandbox" >>in.out
	fi
	rt_judge rt072_orphan ctl.merged in.out
}

t_rt073_cgroup() {
	# Like RT-024: the host's cgroup files are writable only by host root, so
	# the control shows the probe's detection on writable stand-ins.
	local mock f
	mock=$(mktemp -d /tmp/rt073.XXXXXX)
	for f in cgroup.procs memory.max pids.max unified/cgroup.procs memory/memory.limit_in_bytes \
		memory/cgroup.procs pids/pids.max memory/release_agent; do
		mkdir -p "$mock/sys/fs/cgroup/$(dirname "$f")"
		: >"$mock/sys/fs/cgroup/$f"
	done
	: >"$mock/sys/fs/cgroup.procs" # /sys/fs/cgroup/../cgroup.procs
	chmod -R a+rwX "$mock"
	rt_unpriv "$P/rt073_cgroup" --control --root "$mock" >ctl.merged 2>&1 || true
	echo "# control: the probe against writable stand-ins in $mock (the real files need host root)"
	rm -rf "$mock"
	rt_moat -- /probes/rt073_cgroup >in.out 2>&1 || true
	rt_judge rt073_cgroup ctl.merged in.out
}

# --------------------------------------------------------- credentials (sec 5)

t_rt074_creds() {
	local home tok out
	home=$(mktemp -d /tmp/rt074.XXXXXX)
	tok="RTCANARY$RANDOM$RANDOM$$"
	mkdir -p "$home/.ssh" "$home/.aws" "$home/.config/gh"
	echo "$tok-ssh" >"$home/.ssh/rt_canary"
	printf '[default]\naws_secret_access_key=%s-aws\n' "$tok" >"$home/.aws/credentials"
	printf 'github.com:\n  oauth_token: %s-gh\n' "$tok" >"$home/.config/gh/hosts.yml"
	printf 'machine example.com login x password %s-netrc\n' "$tok" >"$home/.netrc"
	echo "$tok-outside" >"$home/rt-outside.txt"
	chmod -R a+rX "$home"
	args=(--token "$tok" --file "$home/.ssh/rt_canary" --file "$home/.netrc")
	rt_unpriv env RT_CANARY_ENV="$tok-env" HOME="$home" "$P/rt074_creds" --control "${args[@]}" \
		>ctl.merged 2>&1 || true
	RT_CANARY_ENV="$tok-env" HOME="$home" rt_moat -- /probes/rt074_creds "${args[@]}" \
		>in.out 2>&1 || true
	rm -rf "$home"
	# The token is in the probe's own argv, so only the judged lines count;
	# but no suffixed secret may appear anywhere in moat's output.
	out=$(grep -v '^RESULT' in.out || true)
	assert_not_contains "$out" "$tok-" "moat output"
	rt_judge rt074_creds ctl.merged in.out
}

# ------------------------------------------ host-side tools and the terminal

# RT-035: traps planted for the host-side collection of /output and the
# workspace apply. Control: the probe plants the same traps in a directory
# outside, and a naive collector (cp -a, tar -h) falls for them.
rt035_fixture() {
	RT035=$(mktemp -d /tmp/rt035.XXXXXX)
	chmod 755 "$RT035"
	RT035_TOK="RT035CANARY$RANDOM$$"
	echo "$RT035_TOK" >"$RT035/canary"
	chmod 644 "$RT035/canary"
	mkdir -m 777 "$RT035/plant" "$RT035/naive"
	rt_unpriv "$P/rt035_traps" --control --dir "$RT035/plant" --target "$RT035/canary" >ctl.one 2>&1 || true
	# naive collector: cp -a keeps FIFOs, sockets and set-id bits
	timeout 10 cp -a "$RT035/plant/." "$RT035/naive/" 2>/dev/null || true
	rt035_judge_dir ctl "$RT035/naive" >ctl.merged
	RT035_SUM=$(sha256sum "$RT035/canary")
}

# rt035_judge_dir WHO DIR...: RESULT lines about what landed in DIRs.
rt035_judge_dir() {
	local who=$1 f top
	shift
	# a naive reader (the "read the output for the LLM" step): every
	# top-level name that is a regular file, following links
	# (not after an explicit `moat apply` of everything: the user approved
	# the flagged links there; moat itself still never copies a target)
	for top in "$@"; do
		[ "$who" = in-approved ] && continue
		for f in "$top"/*; do if [ -f "$f" ]; then timeout 2 cat "$f" 2>/dev/null || true; fi; done
	done >naive.read
	if grep -qsF "$RT035_TOK" naive.read || grep -rqsF "$RT035_TOK" "$@"; then
		echo "RESULT RT-035/collected-canary FAIL host canary content reachable through the collected files"
	else
		echo "RESULT RT-035/collected-canary BLOCKED no host canary content"
	fi
	f=$(find "$@" -mindepth 1 ! -type f ! -type d ! -type l 2>/dev/null | head -3 | tr '\n' ' ')
	if [ -n "$f" ]; then
		echo "RESULT RT-035/collected-special FAIL special files created: $f"
	else
		echo "RESULT RT-035/collected-special BLOCKED no FIFO, socket or device"
	fi
	f=$(find "$@" -mindepth 1 -perm /6000 2>/dev/null | head -3 | tr '\n' ' ')
	if [ -n "$f" ]; then
		echo "RESULT RT-035/collected-setid FAIL set-id bits kept: $f"
	else
		echo "RESULT RT-035/collected-setid BLOCKED no set-id bits"
	fi
	if [ "$who" = ctl ]; then return 0; fi
	if [ "$(sha256sum "$RT035/canary")" = "$RT035_SUM" ] && [ -z "$(find "$RT035" -maxdepth 1 -newer "$RT035/canary" ! -name out ! -name ws ! -name plant ! -name naive ! -name st.json ! -path "$RT035")" ]; then
		echo "RESULT RT-035/outside-untouched BLOCKED nothing outside changed"
	else
		echo "RESULT RT-035/outside-untouched FAIL something outside the collected directory changed"
	fi
}

t_rt035_output() {
	local n
	rt035_fixture
	rt_moat --output "$RT035/out" -- /probes/rt035_traps --dir /output --target "$RT035/canary" >in.out 2>&1 || true
	rt035_judge_dir in "$RT035/out" >>in.out
	# links, the FIFO and the socket must be reported as skipped
	n=$(grep -c '^RESULT RT-035/plant-\(link\|fifo\|socket\).* CONTAINED' in.out || true)
	if grep -q "/output: .* $n skipped" in.out && [ "$n" -gt 0 ]; then
		echo "RESULT RT-035/reported BLOCKED $n planted traps reported as skipped" >>in.out
	else
		echo "RESULT RT-035/reported FAIL $n planted traps, summary: $(grep '/output:' in.out)" >>in.out
	fi
	rm -rf "$RT035"
	rt_judge rt035_output ctl.merged in.out
}

t_rt035_workspace() {
	local id rc=0 diff
	rt035_fixture
	mkdir -m 777 "$RT035/ws"
	echo keep >"$RT035/ws/keep"
	chmod 666 "$RT035/ws/keep"
	(cd "$RT035/ws" && "$MOAT" run --ro "$P:/probes" --workspace "$RT035/ws" --json-status "$RT035/st.json" -- \
		/probes/rt035_traps --dir "$RT035/ws" --target "$RT035/canary") >in.out 2>&1 || rc=$?
	id=$(sed -n 's/.*"run": *"\([0-9a-f]*\)".*/\1/p' "$RT035/st.json")
	[ -n "$id" ] || fail "no run id (exit $rc): $(cat in.out)"
	# the safe apply: nothing but plain files, and no symlink, lands
	rt035_judge_dir in "$RT035/ws" | sed 's#RT-035/#RT-035/ws-safe-#' >>in.out
	if find "$RT035/ws" -type l | grep -q .; then
		echo "RESULT RT-035/ws-safe-symlink FAIL the safe apply created symlinks" >>in.out
	else
		echo "RESULT RT-035/ws-safe-symlink BLOCKED symlinks held back for review" >>in.out
	fi
	diff=$("$MOAT" diff "$id" 2>&1 || true)
	echo "$diff" | sed 's/^/# diff: /'
	if [ "$(grep -c 'REFUSED\|FLAGGED' <<<"$diff")" -ge 4 ]; then
		echo "RESULT RT-035/ws-reported BLOCKED traps flagged or refused in moat diff" >>in.out
	else
		echo "RESULT RT-035/ws-reported FAIL moat diff does not report the traps" >>in.out
	fi
	# an explicit apply of everything: refused kinds stay refused, links stay
	# links (never their target's content), set-id bits never land
	"$MOAT" apply "$id" >/dev/null 2>&1 || true
	rt035_judge_dir in-approved "$RT035/ws" | sed 's#RT-035/#RT-035/ws-apply-#' >>in.out
	if find "$RT035/ws" -type l -exec test -f {} \; -print | grep -q .; then
		echo "# note: the explicit apply created the flagged symlinks (approved by the user)"
	fi
	if is_root; then rm -rf "/var/lib/moat/runs/$id"; fi
	rm -rf "$RT035"
	sed 's#RT-035/#RT-035/ws-safe-#' ctl.merged >ctl.ws
	sed 's#RT-035/#RT-035/ws-apply-#' ctl.merged >>ctl.ws
	rt_judge rt035_workspace ctl.ws in.out
}

# RT-038: hostile file names and argv reach the audit log, the run summary,
# `moat log` and `moat diff`: never raw on the terminal, no forged event.
rt038_names='
mk() { : >"$1" 2>/dev/null; : >"/output/$1" 2>/dev/null; /bin/true "$1"; }
mk "$(printf "x\n{\"event\":\"net\",\"action\":\"allow\",\"forged\":1}")"
mk "$(printf "\033]0;pwned\007")"
mk "$(printf "\033[2J\033[31mred")"
mk "-rf"
mk "--checkpoint-action=exec=sh x.sh"
mk "$(printf "bad\377\376utf8")"
mk "$(printf "c1\302\233csi")"
ls >/dev/null
'

# Bytes that must never reach a terminal raw: ESC, BEL, C1 CSI, invalid UTF-8.
rt038_raw() {
	LC_ALL=C grep -c $'\x1b\|\x07\|\x9b\|\xff' "$1" || true
}

t_rt038_names() {
	local d id n
	d=$(mktemp -d /tmp/rt038.XXXXXX)
	chmod 777 "$d"
	mkdir -m 777 "$d/ws" "$d/plant"
	# Control: the same names outside, listed naively, reach the terminal raw.
	rt_unpriv sh -c "cd '$d/plant'; ${rt038_names//\/output\//./o-}" >/dev/null 2>&1 || true
	ls "$d/plant" >ctl.term 2>&1 || true
	n=$(rt038_raw ctl.term)
	if [ "$n" -gt 0 ]; then
		echo "RESULT RT-038/terminal FAIL a naive listing shows $n raw control line(s)" >ctl.merged
	else
		echo "RESULT RT-038/terminal BLOCKED a naive listing shows nothing raw" >ctl.merged
	fi
	echo "RESULT RT-038/log-forged FAIL a naive line log would take the injected newline" >>ctl.merged
	# Inside: a workspace, /output, and execs with the same argv.
	(cd "$d/ws" && "$MOAT" run --workspace "$d/ws" --output "$d/out" --json-status "$d/st.json" -- \
		/bin/sh -c "$rt038_names") >run.term 2>&1 || true
	id=$(sed -n 's/.*"run": *"\([0-9a-f]*\)".*/\1/p' "$d/st.json")
	[ -n "$id" ] || fail "no run id: $(cat run.term)"
	"$MOAT" log "$id" >log.term 2>&1 || true
	"$MOAT" diff "$id" >diff.term 2>&1 || true
	"$MOAT" apply "$id" >apply.term 2>&1 || true
	cat run.term log.term diff.term apply.term >all.term
	grep -c . log.term | sed 's/^/# moat log lines: /'
	n=$(rt038_raw all.term)
	if [ "$n" -gt 0 ]; then
		echo "RESULT RT-038/terminal FAIL $n line(s) with raw control bytes in moat's output" >in.out
		LC_ALL=C grep -n $'\x1b\|\x07\|\x9b\|\xff' all.term | cat -v | head -5 | sed 's/^/# /'
	else
		echo "RESULT RT-038/terminal BLOCKED summary, moat log, diff and apply escape every control byte" >in.out
	fi
	# the audit log: every line is one JSON object, none forged
	if python3 -c '
import json, sys
for l in open(sys.argv[1], "rb"):
    o = json.loads(l)
    if not isinstance(o, dict) or "forged" in o: sys.exit(1)
' "$(if is_root; then echo /var/lib/moat/runs; else echo "${XDG_STATE_HOME:-$HOME/.local/state}/moat/runs"; fi)/$id/events.jsonl"; then
		echo "RESULT RT-038/log-forged BLOCKED every audit line parses, no forged event" >>in.out
	else
		echo "RESULT RT-038/log-forged FAIL the audit log has a forged or broken line" >>in.out
	fi
	if ! grep -q '"type":"exec"\|"exec"' "$(if is_root; then echo /var/lib/moat/runs; else echo "${XDG_STATE_HOME:-$HOME/.local/state}/moat/runs"; fi)/$id/events.jsonl"; then
		echo "RESULT RT-038/log-exec INCONCLUSIVE no exec event recorded" >>in.out
	fi
	if is_root; then rm -rf "/var/lib/moat/runs/$id"; fi
	rm -rf "$d"
	rt_judge rt038_names ctl.merged in.out
}

# RT-069: output floods and a stalled or vanished reader of moat's output.
t_rt069_flood() {
	local d rc t0 t1 kb pid
	d=$(mktemp -d /tmp/rt069.XXXXXX)
	chmod 755 "$d"
	mkfifo "$d/fifo"
	# Control: without moat, a writer whose reader stalls never ends.
	# the reader: opens the FIFO and never reads it
	# shellcheck disable=SC2217
	sleep 6 <"$d/fifo" &
	pid=$!
	rt_bg "$pid"
	trap rt_bg_cleanup EXIT
	timeout -s KILL 3 sh -c 'head -c 1000000000 /dev/zero' >"$d/fifo" 2>/dev/null || rc=$?
	if [ "${rc:-0}" = 137 ]; then
		echo "RESULT RT-069/stalled-reader FAIL the writer blocked until killed from outside" >ctl.merged
	else
		echo "RESULT RT-069/stalled-reader BLOCKED the writer ended (exit ${rc:-0})" >ctl.merged
	fi
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	: >in.out
	for mode in --no-tty --tty; do
		# a stalled reader: the time limit still holds (+ grace + drain)
		# shellcheck disable=SC2217 # a reader that never reads
		sleep 15 <"$d/fifo" &
		pid=$!
		rt_bg "$pid"
		rc=0
		t0=$(date +%s%N)
		timeout -s KILL 20 "$MOAT" run --quiet "$mode" --timeout 2s --kill-grace 500ms -- \
			/bin/sh -c 'head -c 1000000000 /dev/zero' >"$d/fifo" 2>"$d/err" || rc=$?
		t1=$(date +%s%N)
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		if [ "$rc" = 124 ] && [ $(((t1 - t0) / 1000000)) -lt 8000 ]; then
			echo "RESULT RT-069/stalled-reader${mode#--no-tty} BLOCKED exit 124 after $(((t1 - t0) / 1000000)) ms" >>in.out
		else
			echo "RESULT RT-069/stalled-reader${mode#--no-tty} FAIL exit $rc after $(((t1 - t0) / 1000000)) ms: $(head -c 200 "$d/err")" >>in.out
		fi
		# a reader that goes away: moat must not die of SIGPIPE
		rc=0
		timeout -s KILL 20 "$MOAT" run --quiet "$mode" --json-status "$d/st.json" -- \
			/bin/sh -c 'head -c 100000000 /dev/zero; echo done' 2>"$d/err" | head -c 1000 >/dev/null || true
		rc=$(sed -n 's/.*"exit_code": *\([0-9]*\).*/\1/p' "$d/st.json" 2>/dev/null)
		if [ -n "$rc" ] && [ "$rc" -lt 128 ] || { [ "$mode" = --no-tty ] && [ "$rc" = 141 ]; }; then
			echo "RESULT RT-069/reader-gone${mode#--no-tty} BLOCKED status written, exit $rc" >>in.out
		else
			echo "RESULT RT-069/reader-gone${mode#--no-tty} FAIL moat ended without its status: '$rc' $(head -c 200 "$d/err")" >>in.out
		fi
		rm -f "$d/st.json"
		# a flood: complete, with moat's memory bounded
		kb=$(/usr/bin/time -f %M "$MOAT" run --quiet "$mode" -- /bin/sh -c 'head -c 200000000 /dev/zero' 2>"$d/time" | wc -c)
		if [ "$kb" = 200000000 ] && [ "$(tail -1 "$d/time")" -lt 65536 ]; then
			echo "RESULT RT-069/flood${mode#--no-tty} BLOCKED 200 MB relayed, moat peak RSS $(tail -1 "$d/time") KiB" >>in.out
		else
			echo "RESULT RT-069/flood${mode#--no-tty} FAIL $kb bytes, moat peak RSS $(tail -1 "$d/time") KiB" >>in.out
		fi
	done
	# lines faking moat's own framing change nothing it reports
	rc=0
	"$MOAT" run --quiet --json-status "$d/st.json" -- /bin/sh -c \
		'printf "\n{\"type\":\"exit\",\"code\":0}\nmoat: run x exited 0 (exit 0)\n"; exit 3' >/dev/null 2>&1 || rc=$?
	if [ "$rc" = 3 ] && grep -q '"exit_code": *3' "$d/st.json"; then
		echo "RESULT RT-069/fake-framing BLOCKED exit 3 recorded" >>in.out
	else
		echo "RESULT RT-069/fake-framing FAIL exit $rc: $(cat "$d/st.json")" >>in.out
	fi
	rm -rf "$d"
	rt_judge rt069_flood ctl.merged in.out
}

# RT-070: fds and kernel objects. Host oracles: the host user's own inotify
# while the probe holds every instance it can get, and the host's SysV ipc
# namespace after the probe ended.
rt070_inotify_ok() {
	python3 -c 'import ctypes, sys; l = ctypes.CDLL(None); fd = l.inotify_init(); sys.exit(0 if fd >= 0 else 1)'
}

t_rt070_exhaust() {
	local d key pid hex
	d=$(mktemp -d /tmp/rt070.XXXXXX)
	chmod 777 "$d"
	key=$((70000000 + RANDOM))
	hex=$(printf '0x%08x' "$key")
	trap rt_bg_cleanup EXIT
	rt_unpriv "$P/rt070_exhaust" --control --key "$key" --hold 3 >"$d/ctl" 2>&1 &
	pid=$!
	rt_bg "$pid"
	for _ in $(seq 100); do grep -q HOLDING "$d/ctl" && break; sleep 0.1; done
	if rt_unpriv python3 -c 'import ctypes, sys; l = ctypes.CDLL(None); sys.exit(0 if l.inotify_init() >= 0 else 1)'; then
		echo "RESULT RT-070/host-inotify BLOCKED the user's inotify still works" >ctl.one
	else
		echo "RESULT RT-070/host-inotify FAIL the probe exhausted the user's inotify instances" >ctl.one
	fi
	wait "$pid" || true
	grep '^RESULT' "$d/ctl" >>ctl.one
	if ipcs -m | grep -qi "$hex"; then
		echo "RESULT RT-070/host-sysv FAIL SysV shm $hex persists in the host's ipc namespace" >>ctl.one
	else
		echo "RESULT RT-070/host-sysv BLOCKED no SysV object left on the host" >>ctl.one
	fi
	rt_unpriv "$P/rt070_exhaust" --cleanup "$key" >/dev/null 2>&1 || true
	grep -v '^RESULT RT-070/\(shm\|msg\|mq\) ' ctl.one >ctl.merged
	key=$((key + 1))
	hex=$(printf '0x%08x' "$key")
	rt_moat -- /probes/rt070_exhaust --key "$key" --hold 3 >in.one 2>&1 &
	pid=$!
	rt_bg "$pid"
	for _ in $(seq 100); do grep -q HOLDING in.one && break; sleep 0.1; done
	if rt070_inotify_ok; then
		echo "RESULT RT-070/host-inotify BLOCKED moat's user still has inotify instances" >in.out
	else
		echo "RESULT RT-070/host-inotify FAIL the sandbox exhausted moat's user's inotify instances" >in.out
	fi
	wait "$pid" || true
	grep '^RESULT' in.one | grep -v '^RESULT RT-070/\(shm\|msg\|mq\) ' >>in.out
	if ipcs -m -q | grep -qi "$hex"; then
		echo "RESULT RT-070/host-sysv FAIL SysV objects of the sandbox on the host" >>in.out
		"$P/rt070_exhaust" --cleanup "$key" >/dev/null 2>&1 || true
	else
		echo "RESULT RT-070/host-sysv BLOCKED the sandbox's SysV objects died with its ipc namespace" >>in.out
	fi
	rm -rf "$d"
	rt_judge rt070_exhaust ctl.merged in.out
}

# Catalogue 0.3: every run records the host facts that decide which paths the
# host itself closes.
"$P/rt_env" | sed 's/^INFO /# host: /'
run_test "environment and sandbox sanity" t_env
run_test "RT-001/003 TIOCSTI and TIOCLINUX injection" t_rt001_tiocsti
run_test "RT-004 tty ioctls and the user's terminal" t_rt004_tty
run_test "RT-005 nested user namespace" t_rt005_userns
run_test "RT-007 other namespace operations" t_rt007_ns
run_test "RT-008 mount and the new mount API" t_rt008_mount
run_test "RT-009 chroot and pivot_root" t_rt009_chroot
run_test "RT-010 capability sets" t_rt010_caps
run_test "RT-011 netfilter and link configuration" t_rt011_netlink
run_test "RT-012 rare socket families" t_rt012_sockfam
run_test "RT-013 kernel keyring" t_rt013_keyring
run_test "RT-014 bpf, perf_event_open, userfaultfd" t_rt014_bpf
run_test "RT-015 io_uring" t_rt015_iouring
run_test "RT-016 modules, kexec, reboot, clock, acct" t_rt016_kernel
run_test "RT-017 open_by_handle_at" t_rt017_handle
run_test "RT-019 personality" t_rt019_personality
run_test "RT-020 ptrace and memory of init" t_rt020_ptrace
run_test "RT-021 seccomp and NoNewPrivs on every thread" t_rt021_seccomp
run_test "RT-022 setuid binaries" t_rt022_setuid
run_test "RT-010 capability sets as the sandbox's uid 0" t_rt010_caps_uid0
run_test "RT-022 setuid binaries as the sandbox's uid 0" t_rt022_setuid_uid0
if is_root; then run_test "RT-022 setuid-root exec" t_rt022_setuid_exec; fi
run_test "RT-023 /proc and /sys leaks" t_rt023_procleak
run_test "RT-024 /proc and /sys writes" t_rt024_procwrite
run_test "RT-025 device nodes" t_rt025_dev
run_test "RT-026 signals outside" t_rt026_signal
run_test "RT-027/028 host sockets and listeners" t_rt027_sockets
run_test "RT-027 abstract sockets under --net host (Landlock scope)" t_rt027_nethost
run_test "RT-029 core dumps" t_rt029_core
run_test "RT-030 leaked fds and cwd" t_rt030_fds
run_test "RT-031 /proc/<pid>/exe overwrite" t_rt031_exe
run_test "RT-033 read-only binds" t_rt033_robind
run_test "RT-035 traps in /output for the host-side collection" t_rt035_output
run_test "RT-035 traps in the workspace for the reviewed apply" t_rt035_workspace
run_test "RT-037 mount propagation" t_rt037_propagation
run_test "RT-038 hostile file names and argv in the log and on the terminal" t_rt038_names
run_test "RT-040 isolation between two sandboxes" t_rt040_cross
run_test "RT-066 fork bomb against --pids" t_rt066_forkbomb
run_test "RT-069 output floods, stalled and vanished readers" t_rt069_flood
run_test "RT-070 fds and kernel objects" t_rt070_exhaust
run_test "RT-071 outliving the time limit" t_rt071_timeout
run_test "RT-072 daemons outliving the sandbox" t_rt072_orphan
run_test "RT-073 cgroup escape and limits" t_rt073_cgroup
run_test "RT-074/075 canary secrets" t_rt074_creds
run_test "architecture matrix: int 0x80, x32" t_rt_arch
t_done
