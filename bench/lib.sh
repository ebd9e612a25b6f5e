#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared helpers of the benchmark scripts (sourced, not run).
#
# Every comparison is one interleaved run of bench/timer (rounds ABC, BCA, CAB,
# ...), so that the machine's drift (±30 % between minutes on these machines)
# hits every command alike; only ratios from one run are compared.
#
#   bench_setup                     build the timer and sysload, stage binaries
#   bench_case NAME CMD [ARG...]    add a command to the next run
#   bench_run SUITE RUNS [SECONDS]  probe each case once, time the ones that
#                                   work, interleaved, as $BENCH_USER
#   bench_ratio SUITE WHAT A B OP TARGET   ratio of medians A/B against a target
#   bench_note SUITE TEXT           a line for the report (missing peers, ...)
#
# Results go to $BENCH_OUT/*.tsv; bench/run-all.sh turns them into the table,
# docs/BENCHMARKS.md and the chart.

# As root, every benchmark runs in a mount namespace of its own (private
# propagation): the tmpfs work directories it mounts (bench_tmpfs_workdir,
# stdio.sh) are never mounts of the machine's, and vanish with the script even
# if it is killed.
if [ "$(id -u)" -eq 0 ] && [ -z "${BENCH_MOUNT_NS:-}" ]; then
	export BENCH_MOUNT_NS=1
	exec unshare --mount --propagation private -- "$BASH" "$(readlink -f "/proc/$$/fd/255" 2>/dev/null || echo "$0")" "$@"
fi

BENCH_TOP=${BENCH_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
O=${O:-build}
BENCH_OUT=${BENCH_OUT:-$BENCH_TOP/$O/bench}
BENCH_USER=${BENCH_USER:-root}
# BENCH_SCALE multiplies every repetition count (0.2 for a quick look).
BENCH_SCALE=${BENCH_SCALE:-1}
BENCH_UNPRIV=moat-test

# A minimal bubblewrap: moat's namespaces (user, pid, ipc, uts, net, cgroup),
# read-only /usr, private /tmp, fresh /proc and /dev, uid 1000, killed with
# its parent. It does less than moat (no seccomp, no /etc but ld.so.cache,
# no /proc masks, no Landlock, no records): bench_bwrap_same below is the
# command of moat's isolation, the one the start-up targets compare with.
# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_BWRAP=(bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-net
	--unshare-cgroup-try --uid 1000 --gid 1000 --hostname moat
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
	--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache
	--tmpfs /tmp --proc /proc --dev /dev --die-with-parent --new-session --clearenv)

# bench_bwrap_same: sets BENCH_BWRAP_SAME and BENCH_BWRAP_SAME_END (the
# command is "${BENCH_BWRAP_SAME[@]}" [MOUNTS...] "${BENCH_BWRAP_SAME_END[@]}"
# CMD), bubblewrap set up for the
# isolation of `moat run` with the default policy, as far as bubblewrap's
# options go (bench/FINDINGS.md, issue 14, session 11). Its first word is
# "<10:FILE" (bench/timer opens moat's seccomp program as descriptor 10 for
# each run). Beyond BENCH_BWRAP: moat's seccomp program without a listener
# (bench/seccomp_bpf), the system directories and their symlinks as moat makes
# them, moat's /etc names (from `moat policy show`) with the generated files'
# content taken from a moat run (the small files copied into one staged
# directory, bound read-only; moat's directories bound from the host), /proc
# with moat's read-only and masked files, /dev/shm, /var/tmp, a tmpfs home,
# the root read-only, every capability dropped. Not matched (bubblewrap has no
# option): Landlock, the cgroup and rlimits, exec and denial records.
bench_bwrap_same() {
	local etc=$BENCH_STAGE/bwrap-etc bpf=$BENCH_STAGE/moat-seccomp.bpf d n t
	"$BENCH_STAGE/bin/seccomp_bpf" "$bpf" || return 1
	chmod 644 "$bpf"
	rm -rf "$etc"
	mkdir -p "$etc"
	# shellcheck disable=SC2034 # used by the scripts that source this file
	BENCH_BWRAP_SAME=("<10:$bpf" bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts
		--unshare-net --unshare-cgroup-try --uid 1000 --gid 1000 --hostname moat)
	# system directories: moat's list (policy/plan.c), a symlink where the
	# host has one
	for d in /usr /bin /sbin /lib /lib32 /lib64 /libx32; do
		if [ -L "$d" ]; then
			BENCH_BWRAP_SAME+=(--symlink "$(readlink "$d")" "$d")
		elif [ -d "$d" ]; then
			BENCH_BWRAP_SAME+=(--ro-bind "$d" "$d")
		fi
	done
	# /etc: the names of moat's plan; generated files as a moat run shows them
	local -a binds=()
	while read -r t n; do
		case $t in
		file)
			bench_as_user "$MOAT" run -- /bin/cat "$n" >"$etc/${n#/etc/}" 2>/dev/null ||
				return 1
			;;
		bind)
			if [ -L "$n" ]; then
				cp -P "$n" "$etc/"
			elif [ -f "$n" ]; then
				cp "$n" "$etc/"
			elif [ -d "$n" ]; then
				mkdir "$etc/${n#/etc/}"
				binds+=(--ro-bind "$n" "$n")
			fi
			;;
		esac
	done < <("$MOAT" policy show 2>/dev/null | awk '$2 == "file" && $3 ~ /^\/etc\// { print "file", $3 }
		$2 == "bind" && $3 ~ /^\/etc\// { print "bind", $3 }')
	chmod -R a+rX "$etc"
	BENCH_BWRAP_SAME+=(--ro-bind "$etc" /etc "${binds[@]}")
	# /proc: moat's read-only names and masks (sandbox/sandbox.c, do_proc).
	# bubblewrap 0.8's own cover of sys, sysrq-trigger, irq and bus fails
	# quietly in a user namespace (as root irq and bus only, as moat-test
	# none: seen in mountinfo), so each is bound read-only from the host's
	# /proc (same content: sysctls answer for the reader's namespaces).
	BENCH_BWRAP_SAME+=(--proc /proc)
	for n in sys sysrq-trigger irq bus fs asound; do
		[ -e "/proc/$n" ] && BENCH_BWRAP_SAME+=(--ro-bind "/proc/$n" "/proc/$n")
	done
	for n in kcore keys timer_list sched_debug kallsyms kpagecount kpageflags sysvipc acpi \
		latency_stats timer_stats scsi; do
		if [ -d "/proc/$n" ]; then
			BENCH_BWRAP_SAME+=(--perms 0555 --tmpfs "/proc/$n" --remount-ro "/proc/$n")
		elif [ -e "/proc/$n" ]; then
			BENCH_BWRAP_SAME+=(--ro-bind /dev/null "/proc/$n")
		fi
	done
	BENCH_BWRAP_SAME+=(--dev /dev --perms 1777 --tmpfs /dev/shm
		--perms 1777 --tmpfs /tmp --dir /var --symlink /tmp /var/tmp
		--dir /home --perms 0700 --tmpfs /home/agent)
	# the end: after any mount a caller adds (a workspace), before the command
	# shellcheck disable=SC2034 # used by the scripts that source this file
	BENCH_BWRAP_SAME_END=(--remount-ro /dev --remount-ro / --seccomp 10 --cap-drop ALL
		--die-with-parent --new-session --clearenv)
}

# bench_setup: compile the helpers and stage everything an unprivileged user
# must run into a world-readable directory ($BENCH_STAGE) that lives as long
# as the calling script (or run-all.sh, which exports it).
bench_setup() {
	mkdir -p "$BENCH_OUT"
	: "${BENCH_CC:=${CC:-cc}}"
	local src
	for src in timer sysload isocheck; do
		if [ ! -x "$BENCH_OUT/$src" ] || [ "$BENCH_TOP/bench/$src.c" -nt "$BENCH_OUT/$src" ]; then
			"$BENCH_CC" -O2 -Wall -Wextra -Werror -std=gnu17 -D_GNU_SOURCE \
				-o "$BENCH_OUT/$src" "$BENCH_TOP/bench/$src.c" || return 1
		fi
	done
	# moat's own seccomp code and the build's baked programs (always rebuilt:
	# the program must be the one of the moat under test)
	"$BENCH_CC" -O2 -Wall -Wextra -Werror -std=gnu17 -D_GNU_SOURCE -I"$BENCH_TOP/src" \
		-o "$BENCH_OUT/seccomp_bpf" "$BENCH_TOP/bench/seccomp_bpf.c" \
		"$BENCH_TOP/src/kernel/seccomp.c" "$BENCH_TOP/$O/gen/seccomp_baked.c" -lseccomp || return 1
	if [ -z "${BENCH_STAGE:-}" ] || [ ! -d "$BENCH_STAGE" ]; then
		BENCH_STAGE=$(mktemp -d /tmp/moat-bench.XXXXXX)
		export BENCH_STAGE
		BENCH_OWN_STAGE=1
		trap bench_cleanup EXIT
	fi
	chmod 755 "$BENCH_STAGE"
	mkdir -p "$BENCH_STAGE/bin"
	cp "$BENCH_TOP/$O/moat" "$BENCH_TOP/$O/moat-net.so" "$BENCH_TOP/$O/moat-nft.so" "$BENCH_OUT/timer" \
		"$BENCH_OUT/sysload" "$BENCH_OUT/isocheck" "$BENCH_OUT/seccomp_bpf" "$BENCH_STAGE/bin/"
	chmod -R a+rX "$BENCH_STAGE/bin"
	MOAT=$BENCH_STAGE/bin/moat
	TIMER=$BENCH_STAGE/bin/timer
	SYSLOAD=$BENCH_STAGE/bin/sysload
	ISOCHECK=$BENCH_STAGE/bin/isocheck
	export MOAT TIMER SYSLOAD ISOCHECK
	touch "$BENCH_OUT/results.tsv" "$BENCH_OUT/targets.tsv" "$BENCH_OUT/commands.tsv" \
		"$BENCH_OUT/notes.tsv"
}

bench_cleanup() {
	if [ "${BENCH_OWN_STAGE:-0}" = 1 ] && [ -n "${BENCH_STAGE:-}" ]; then
		local m
		for m in "$BENCH_STAGE"/work-*; do
			if mountpoint -q "$m" 2>/dev/null; then umount -l "$m" || true; fi
		done
		rm -rf "$BENCH_STAGE"
	fi
}

# bench_unpriv_ready: true when the unprivileged user exists (created if
# missing, as tests/run-all.sh does) and we are root, so runuser works.
bench_unpriv_ready() {
	[ "$(id -u)" -eq 0 ] || return 1
	if ! id "$BENCH_UNPRIV" >/dev/null 2>&1; then
		useradd --system --no-create-home --home-dir /nonexistent "$BENCH_UNPRIV" || return 1
	fi
}

# bench_as_user CMD...: run CMD as $BENCH_USER. As root, CMD runs in a
# private mount namespace where /var/lib/moat (root's run records and logs)
# is a directory of the stage, on the same disk, so that thousands of benchmark
# runs leave no records on the host; the unprivileged user's HOME is a
# directory of the stage for the same reason (its logs go to
# ~/.local/state/moat). With BENCH_HIDE=PATH an empty read-only tmpfs covers
# PATH too (crun refuses this machine's hybrid cgroup layout otherwise).
bench_as_user() {
	local -a pre=()
	if [ "$(id -u)" -eq 0 ]; then
		mkdir -p "$BENCH_STAGE/var-lib-moat" /var/lib/moat
		chmod 0700 "$BENCH_STAGE/var-lib-moat"
		# shellcheck disable=SC2016 # expanded by the inner shell
		pre=(unshare -m --propagation private sh -c
			'if [ -n "$1" ]; then mount -t tmpfs -o ro none "$1" || exit 125; fi
			mount --bind "$2" /var/lib/moat || exit 125
			shift 2
			exec "$@"' sh "${BENCH_HIDE:-}" "$BENCH_STAGE/var-lib-moat")
	fi
	if [ "$BENCH_USER" = root ] || [ "$(id -un)" = "$BENCH_USER" ]; then
		"${pre[@]}" "$@"
	else
		local home=$BENCH_STAGE/home-$BENCH_USER
		mkdir -p "$home"
		chown "$BENCH_USER:" "$home"
		"${pre[@]}" runuser -u "$BENCH_USER" -- env HOME="$home" "$@"
	fi
}

# bench_workdir NAME: an empty directory owned by $BENCH_USER under the stage.
bench_workdir() {
	local d=$BENCH_STAGE/work-$BENCH_USER-$1
	if mountpoint -q "$d" 2>/dev/null; then umount -l "$d"; fi
	rm -rf "$d"
	mkdir -p "$d"
	chown "$BENCH_USER:" "$d" 2>/dev/null || true
	echo "$d"
}

# bench_tmpfs_workdir NAME: like bench_workdir, on a fresh tmpfs when we are
# root (the disk's writeback makes file loops on ext4 too noisy to compare).
bench_tmpfs_workdir() {
	local d
	d=$(bench_workdir "$1")
	if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o mode=755,size=512m bench "$d"; then
		chown "$BENCH_USER:" "$d"
	fi
	echo "$d"
}

# bench_runs N: N scaled by BENCH_SCALE, at least 3.
bench_runs() {
	awk -v n="$1" -v s="$BENCH_SCALE" 'BEGIN { r = int(n * s + 0.5); if (r < 3) r = 3; print r }'
}

_bench_names=()
_bench_cmds=()
_bench_lens=()

bench_case() {
	local name=$1
	shift
	_bench_names+=("$name")
	_bench_lens+=($#)
	_bench_cmds+=("$@")
}

_bench_reset() {
	_bench_names=()
	_bench_cmds=()
	_bench_lens=()
}

# _bench_fmt US: microseconds as milliseconds with sensible precision.
_bench_fmt() {
	awk -v u="$1" 'BEGIN { m = u / 1000; if (m < 10) printf "%.3f", m; else if (m < 1000) printf "%.1f", m; else printf "%.0f", m }'
}

_bench_quote() {
	local out="" a
	for a in "$@"; do
		out+="$(printf '%q' "$a") "
	done
	echo "${out% }"
}

# bench_run SUITE RUNS [SECONDS]: probe, time interleaved, record, print.
bench_run() {
	local suite=$1 runs=$2 budget=${3:-120}
	local -a targs=() live=()
	local i off=0 n name err line
	err=$(mktemp)
	printf '%s (as %s, %s rounds max, %ss budget)\n' "$suite" "$BENCH_USER" "$runs" "$budget"
	for i in "${!_bench_names[@]}"; do
		name=${_bench_names[$i]}
		n=${_bench_lens[$i]}
		local -a cmd=("${_bench_cmds[@]:$off:$n}")
		off=$((off + n))
		printf '%s\t%s\t%s\n' "$suite" "$name" "$(_bench_quote "${cmd[@]}")" >>"$BENCH_OUT/commands.tsv"
		# Probe: one run with its stderr kept, bounded in time (through
		# the timer when the command opens descriptors: "<N:PATH").
		local -a via=()
		[ "${cmd[0]:0:1}" = "<" ] && via=("$TIMER" -x)
		if ! bench_as_user timeout 120 "${via[@]}" "${cmd[@]}" </dev/null >/dev/null 2>"$err"; then
			line=$(grep -v '^$' "$err" | tail -1 | cut -c1-160)
			printf '  %-28s missing: %s\n' "$name" "${line:-exit status not 0}"
			printf '%s\t%s\t%s\tmissing\t%s\n' "$suite" "$BENCH_USER" "$name" \
				"${line:-exit status not 0}" >>"$BENCH_OUT/notes.tsv"
			continue
		fi
		live+=("$name")
		[ ${#targs[@]} -gt 0 ] && targs+=("::")
		targs+=("${cmd[@]}")
	done
	rm -f "$err"
	if [ ${#live[@]} -eq 0 ]; then
		_bench_reset
		return 0
	fi
	local out
	if ! out=$(bench_as_user "$TIMER" -n "$runs" -w 2 -T "$budget" "${targs[@]}"); then
		echo "  timer failed" >&2
		_bench_reset
		return 1
	fi
	printf '  %-28s %10s %10s %10s %6s %5s\n' case "median ms" "p90 ms" "cpu ms" runs fails
	local idx r f med p90 mn mean cpu ling
	while read -r idx r f med p90 mn mean cpu ling; do
		name=${live[$idx]}
		printf '  %-28s %10s %10s %10s %6s %5s\n' "$name" "$(_bench_fmt "$med")" \
			"$(_bench_fmt "$p90")" "$(_bench_fmt "$cpu")" "$r" "$f"
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$suite" "$BENCH_USER" "$name" "$med" \
			"$p90" "$r" "$f" "$cpu" "$mn" >>"$BENCH_OUT/results.tsv"
		: "$mean"
		if [ "${ling:-0}" -gt 0 ]; then
			bench_note "$suite" "$name: $ling of $r runs left processes running for more than 2 s"
		fi
	done <<<"$out"
	_bench_reset
}

# bench_value SUITE CASE [FIELD]: a recorded number for $BENCH_USER
# (FIELD 4 median, 5 p90, 8 cpu).
bench_value() {
	awk -F'\t' -v s="$1" -v u="$BENCH_USER" -v c="$2" -v f="${3:-4}" \
		'$1 == s && $2 == u && $3 == c { v = $f } END { if (v != "") print v }' \
		"$BENCH_OUT/results.tsv"
}

# bench_ratio SUITE WHAT A B OP TARGET: median(A)/median(B), PASS/MISS
# against "OP TARGET" (OP is <= or >=; "info" for a ratio without a
# target), recorded for the report.
bench_ratio() {
	local suite=$1 what=$2 a=$3 b=$4 op=$5 target=$6 va vb ca cb ratio verdict cratio=n/a
	va=$(bench_value "$suite" "$a")
	vb=$(bench_value "$suite" "$b")
	ca=$(bench_value "$suite" "$a" 8)
	cb=$(bench_value "$suite" "$b" 8)
	if [ -n "$ca" ] && [ -n "$cb" ]; then
		cratio=$(awk -v a="$ca" -v b="$cb" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')
	fi
	if [ -z "$va" ] || [ -z "$vb" ]; then
		ratio=n/a
		verdict="MISSING"
		[ -z "$va" ] && verdict+=" ($a)"
		[ -z "$vb" ] && verdict+=" ($b)"
	else
		ratio=$(awk -v a="$va" -v b="$vb" 'BEGIN { printf "%.3f", a / b }')
		if [ "$op" = info ]; then
			verdict=info
		elif awk -v r="$ratio" -v t="$target" -v op="$op" \
			'BEGIN { exit !((op == "<=" && r <= t) || (op == ">=" && r >= t)) }'; then
			verdict=PASS
		else
			verdict=MISS
		fi
	fi
	printf '  ratio %-44s %8s (cpu %s)  target %s %s  %s\n' "$what" "$ratio" "$cratio" "$op" \
		"$target" "$verdict"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$suite" "$BENCH_USER" "$what" "$ratio" "$op" \
		"$target" "$verdict" "$cratio" >>"$BENCH_OUT/targets.tsv"
}

# bench_target SUITE WHAT VALUE OP TARGET UNIT: an absolute number against a target.
bench_target() {
	local suite=$1 what=$2 v=$3 op=$4 target=$5 unit=$6 verdict
	if [ -z "$v" ]; then
		verdict=MISSING
		v=n/a
	elif awk -v r="$v" -v t="$target" -v op="$op" \
		'BEGIN { exit !((op == "<=" && r <= t) || (op == ">=" && r >= t)) }'; then
		verdict=PASS
	else
		verdict=MISS
	fi
	printf '  %-50s %8s %s  target %s %s  %s\n' "$what" "$v" "$unit" "$op" "$target" "$verdict"
	printf '%s\t%s\t%s\t%s %s\t%s\t%s %s\t%s\t-\n' "$suite" "$BENCH_USER" "$what" "$v" "$unit" \
		"$op" "$target" "$unit" "$verdict" >>"$BENCH_OUT/targets.tsv"
}

bench_note() {
	printf '  note: %s\n' "$2"
	printf '%s\t%s\t-\tnote\t%s\n' "$1" "$BENCH_USER" "$2" >>"$BENCH_OUT/notes.tsv"
}

# bench_users: the users a suite runs as: root, then moat-test when possible.
bench_users() {
	echo root
	if bench_unpriv_ready; then
		echo "$BENCH_UNPRIV"
	fi
}
