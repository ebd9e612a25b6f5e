#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The isolation core of `moat run` (issue: core). Run as root and as an
# unprivileged user by tests/run-all.sh.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

mrun() { "$MOAT" run --quiet "$@"; }

t_hidden_paths() {
	local out
	out=$(mrun -- /bin/sh -c 'for p in /root /run /srv /media /mnt /var/lib /var/run /etc/shadow /etc/gshadow /etc/ssh /etc/sudoers /sys /boot /home/moat-test /work /tmp/.X11-unix /run/docker.sock; do [ -e "$p" ] && echo "PRESENT $p"; done; echo END')
	assert_eq "END" "$out" "paths present in the sandbox"
	# positive control: the same test on the host sees at least /root and /etc/shadow
	[ -e /etc/shadow ] && [ -e /root ] || fail "control: host lacks /etc/shadow or /root"
}

t_host_files_invisible() {
	local secret="$T_OUT/secret-$$"
	echo "CANARY-$$" >"$secret"
	local rc=0
	mrun -- /bin/cat "$secret" >/dev/null 2>&1 || rc=$?
	assert_eq 1 "$rc" "cat of a host file outside the given paths"
	cat "$secret" | grep -q "CANARY-$$" || fail "control: host cannot read its own file"
}

t_system_readonly() {
	local out
	out=$(mrun -- /bin/sh -c 'for p in /usr/moat-x /etc/moat-x /bin/moat-x /moat-x /dev/moat-x /proc/sys/kernel/hostname; do if (echo x > "$p") 2>/dev/null; then echo "WROTE $p"; fi; done; echo END')
	assert_eq "END" "$out"
	out=$(mrun -- /bin/sh -c 'touch /usr/x 2>&1 || true')
	assert_contains "$out" "Read-only file system"
}

# /etc and /dev are directories of the read-only root tmpfs (issue 14), not
# mounts of their own: whatever holds them must be read-only, nosuid and
# nodev; /dev has exactly moat's entries (the device nodes work, each a bind
# of its own); /etc has only generated files and the allowlist.
t_etc_dev_properties() {
	local out
	# the options of the mount a path lives on (longest mount point that
	# is a prefix), from mountinfo: "MNT OPTS"
	# shellcheck disable=SC2016 # expanded inside the sandbox
	local mnt_of='mnt_of() { awk -v p="$1" '\''{ m = $5; if ((p == m || index(p, m == "/" ? "/" : m "/") == 1) && length(m) >= length(best)) { best = m; opts = $6 } } END { print best, opts }'\'' /proc/self/mountinfo; }'
	out=$(mrun -- /bin/sh -c "$mnt_of"'; for p in /etc /etc/passwd /etc/ld.so.cache /dev /dev/stdin /tmp; do echo "$p $(mnt_of $p)"; done')
	local p line opts
	for p in /etc /etc/passwd /etc/ld.so.cache /dev /dev/stdin; do
		line=$(grep "^$p " <<<"$out") || fail "no mount found for $p: $out"
		opts=$(awk '{ print $3 }' <<<"$line")
		case ",$opts," in *,ro,*) ;; *) fail "$p is on a mount that is not read-only: $line" ;; esac
		case ",$opts," in *,nosuid,*) ;; *) fail "$p is on a mount without nosuid: $line" ;; esac
		case ",$opts," in *,nodev,*) ;; *) fail "$p is on a mount without nodev: $line" ;; esac
	done
	# positive control: the same check sees /tmp as writable
	line=$(grep "^/tmp " <<<"$out")
	case ",$(awk '{ print $3 }' <<<"$line")," in *,rw,*) ;; *) fail "control: /tmp not rw: $line" ;; esac
	# /dev: exactly these entries; the nodes are character devices that work
	out=$(mrun -- /bin/sh -c 'ls -A /dev | tr "\n" " "; for d in null zero full random urandom; do [ -c /dev/$d ] || echo "NOT-CHAR $d"; done; echo x > /dev/null && head -c 4 /dev/zero | wc -c; head -c 8 /dev/urandom | wc -c; (echo x > /dev/full) 2>/dev/null || echo FULL')
	assert_eq "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero 4
8
FULL" "$out"
	# /etc: nothing but what moat writes and the allowlist (src/policy/plan.c)
	local allowed=" passwd group hosts hostname resolv.conf nsswitch.conf alternatives ld.so.cache ld.so.conf ld.so.conf.d localtime timezone ssl ca-certificates ca-certificates.conf protocols services host.conf gai.conf os-release debian_version lsb-release mime.types magic magic.mime inputrc bash.bashrc profile profile.d python3 python3.11 perl locale.alias mtab fonts mailcap xattr.conf login.defs manpath.config papersize "
	out=$(mrun -- /bin/ls -A /etc)
	local n extra=""
	for n in $out; do
		case "$allowed" in *" $n "*) ;; *) extra+=" $n" ;; esac
	done
	[ -z "$extra" ] || fail "/etc has files moat does not put there:$extra"
	assert_contains " $(tr '\n' ' ' <<<"$out")" " passwd "
	# positive control: the host's /etc has names outside the list
	extra=""
	for n in /etc/*; do
		case "$allowed" in *" ${n#/etc/} "*) ;; *) extra+=" ${n#/etc/}" ;; esac
	done
	[ -n "$extra" ] || fail "control: the host's /etc has nothing outside the list"
	# the generated files are moat's, not the host's
	assert_eq "moat" "$(mrun -- /bin/cat /etc/hostname)"
}

t_tmp_and_home_writable() {
	local out
	out=$(mrun -- /bin/sh -c 'echo a > /tmp/x && echo b > "$HOME/y" && cat /tmp/x "$HOME/y" && echo "$HOME" && pwd')
	assert_eq "a
b
/home/agent
/home/agent" "$out"
}

t_workspace_writes_land() {
	local ws="$T_OUT/ws"
	mkdir -p "$ws"
	echo original >"$ws/in.txt"
	local out
	out=$(mrun --workspace "$ws" -- /bin/sh -c 'pwd; cat in.txt; echo written > out.txt; mkdir -p sub && echo deep > sub/f')
	assert_eq "$ws
original" "$out"
	assert_eq written "$(cat "$ws/out.txt")"
	assert_eq deep "$(cat "$ws/sub/f")"
	# the sandbox's files belong to the workspace's owner on the host
	assert_eq "$(stat -c %u "$ws")" "$(stat -c %u "$ws/out.txt")" "owner of a file written in the workspace"
}

t_workspace_readonly_mode() {
	local ws="$T_OUT/wsro"
	mkdir -p "$ws"
	local rc=0
	mrun --workspace "$ws:ro" -- /bin/sh -c 'echo x > f' 2>/dev/null || rc=$?
	assert_ne0 "$rc"
	[ ! -e "$ws/f" ] || fail "a read-only workspace was written"
}

assert_ne0() { [ "$1" -ne 0 ] || fail "expected a non-zero exit status"; }

t_input_readonly() {
	local in="$T_OUT/in"
	mkdir -p "$in"
	echo data >"$in/d.csv"
	local out
	out=$(mrun --input "$in" -- /bin/sh -c 'cat /data/d.csv; echo x > /data/new 2>&1 || echo DENIED; rm /data/d.csv 2>/dev/null || echo NORM')
	assert_eq "data
DENIED
NORM" "$(echo "$out" | sed 's/.*Read-only.*/DENIED/')"
	[ -f "$in/d.csv" ] && [ ! -e "$in/new" ] || fail "the input directory changed"
}

t_ro_rw_tmpfs_hide() {
	local a="$T_OUT/a" b="$T_OUT/b"
	mkdir -p "$a" "$b"
	echo A >"$a/f"
	echo secret >"$b/hidden"
	local out
	out=$(mrun --ro "$a:/opt/a" --rw "$b:/opt/b" --tmpfs /scratch:1M --hide /opt/b/hidden -- /bin/sh -c '
		cat /opt/a/f; (echo x > /opt/a/g) 2>/dev/null || echo RO
		echo w > /opt/b/new && echo RW
		cat /opt/b/hidden; echo "[$(cat /opt/b/hidden)]"
		dd if=/dev/zero of=/scratch/big bs=1k count=2048 2>/dev/null || echo FULL')
	assert_eq "A
RO
RW
[]
FULL" "$out"
	assert_eq w "$(cat "$b/new")"
	assert_eq secret "$(cat "$b/hidden")" "hidden file on the host"
}

t_env_clean() {
	local out
	out=$(RT_CANARY_ENV="canary-$$" AWS_SECRET_ACCESS_KEY=leak mrun --env KEEP=yes --env FROMHOST -- /usr/bin/env 2>&1 || true)
	assert_contains "$out" "--env FROMHOST: not set in moat's environment"
	out=$(RT_CANARY_ENV="canary-$$" AWS_SECRET_ACCESS_KEY=leak FROMHOST=copied mrun --env KEEP=yes --env FROMHOST -- /usr/bin/env | sort | cut -d= -f1 | tr '\n' ' ')
	# --net none: npm and pip told not to retry (tools.sh)
	assert_eq "FROMHOST HOME KEEP LANG LOGNAME MOAT_SANDBOX PATH PIP_RETRIES TERM USER npm_config_fetch_retries " "$out"
	out=$(RT_CANARY_ENV="canary-$$" mrun -- /bin/sh -c 'cat /proc/1/environ /proc/1/cmdline 2>/dev/null; grep -rs "canary-" /proc/1/ 2>/dev/null | head -1; echo END')
	assert_not_contains "$out" "canary-$$"
}

t_only_std_fds() {
	local out
	out=$(exec 7</dev/null 8>"$T_OUT/leak"; mrun -- /bin/sh -c '/bin/sleep 5 & p=$!; until [ "$(readlink /proc/$p/exe)" = /usr/bin/sleep ]; do :; done; ls /proc/$p/fd > /tmp/fds; kill $p; tr "\n" " " < /tmp/fds')
	assert_eq "0 1 2 " "$out"
}

t_pid1_is_init_and_reaps() {
	local out
	out=$(mrun -- /bin/sh -c 'tr "\0" "\n" < /proc/1/cmdline | head -1; echo "me=$$"; sh -c "sleep 0.2 & exit 0"; sleep 1; grep -l "^State:.Z" /proc/[0-9]*/status 2>/dev/null | wc -l')
	assert_eq "moat-init
me=2
0" "$out"
}

t_identity() {
	local out
	out=$(mrun -- /bin/sh -c 'id -u; id -g; id -un; hostname; cut -d" " -f1 /proc/self/uid_map | tr -d " "')
	assert_eq "1000
1000
agent
moat" "$(echo "$out" | head -4)"
	local host_uid
	host_uid=$(mrun -- /bin/sh -c 'cat /proc/self/uid_map' | awk '{print $2}')
	[ "$host_uid" != 0 ] || fail "sandbox uid maps to host root"
	if is_root; then
		[ "$host_uid" -ge 1000000000 ] || fail "root mode: host uid $host_uid is not from moat's range"
	else
		assert_eq "$(id -u)" "$host_uid" "unprivileged: maps to the caller"
	fi
	out=$(mrun -- /bin/sh -c 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)" /proc/self/status | tr -s "\t " " "')
	assert_eq "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1" "$out"
	out=$(mrun -- /bin/cat /proc/self/setgroups)
	assert_eq deny "$out"
}

t_concurrent_root_uids_distinct() {
	is_root || skip_unless_user
	local a b
	mrun -- /bin/sh -c 'awk "{print \$2}" /proc/self/uid_map > /tmp/u; sleep 1; cat /tmp/u' >"$T_OUT/u1" &
	local p1=$!
	mrun -- /bin/sh -c 'awk "{print \$2}" /proc/self/uid_map > /tmp/u; sleep 1; cat /tmp/u' >"$T_OUT/u2" &
	local p2=$!
	wait $p1 $p2
	a=$(cat "$T_OUT/u1")
	b=$(cat "$T_OUT/u2")
	if is_root; then
		[ -n "$a" ] && [ "$a" != "$b" ] || fail "two concurrent sandboxes share host uid $a"
	fi
}
skip_unless_user() { :; }

t_exit_codes() {
	local rc=0
	mrun -- /bin/sh -c 'exit 3' || rc=$?
	assert_eq 3 $rc "exit status"
	rc=0
	mrun -- /bin/sh -c 'kill -TERM $$' || rc=$?
	assert_eq 143 $rc "killed by SIGTERM"
	rc=0
	mrun -- /bin/sh -c 'kill -KILL $$' || rc=$?
	assert_eq 137 $rc "killed by SIGKILL"
	rc=0
	mrun -- /nonexistent/command 2>"$T_OUT/err" || rc=$?
	assert_eq 127 $rc "command not found"
	assert_contains "$(cat "$T_OUT/err")" "/nonexistent/command"
	rc=0
	mrun -- /etc/hostname 2>/dev/null || rc=$?
	assert_eq 126 $rc "not executable"
}

t_status_json() {
	local rc=0
	"$MOAT" run --quiet --json-status "$T_OUT/st.json" -- /bin/sh -c 'exit 5' || rc=$?
	assert_eq 5 $rc
	python3 - "$T_OUT/st.json" <<'EOF' || fail "status record"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["reason"] == "exited" and s["exit_code"] == 5 and s["status"] == 5, s
assert s["wall_s"] > 0 and len(s["run"]) == 16, s
EOF
}

t_sigkill_leaves_nothing() {
	local marker="moat-orphan-$$-$RANDOM"
	"$MOAT" run --quiet -- /bin/sh -c "sh -c 'sleep 300; :' $marker & setsid sh -c 'sleep 301; :' $marker & sh -c 'sleep 302; :' $marker" &
	local mpid=$!

	for _ in $(seq 50); do
		pgrep -f "$marker" >/dev/null && break
		sleep 0.1
	done
	pgrep -f "$marker" >/dev/null || fail "the sandbox never started"
	kill -KILL $mpid
	wait $mpid 2>/dev/null || true
	for _ in $(seq 50); do
		pgrep -f "$marker" >/dev/null || break
		sleep 0.1
	done
	if pgrep -f "$marker" >/dev/null; then
		fail "sandbox processes survived SIGKILL of moat: $(pgrep -af "$marker")"
	fi
}

t_signal_forwarding() {
	"$MOAT" run --quiet -- /bin/sh -c 'trap "echo got-int; exit 7" INT; echo ready; while :; do sleep 0.1; done' >"$T_OUT/sig" &
	local mpid=$!

	for _ in $(seq 50); do
		grep -q ready "$T_OUT/sig" 2>/dev/null && break
		sleep 0.1
	done
	kill -INT $mpid
	local rc=0
	wait $mpid || rc=$?
	assert_eq 7 $rc "exit status after SIGINT"
	assert_contains "$(cat "$T_OUT/sig")" "got-int"
}

t_bad_policy_exit2() {
	printf '{\n  "version": 1,\n  "limits": { "memroy": "1G" }\n}\n' >"$T_OUT/p.json"
	local rc=0 err
	err=$("$MOAT" run --policy "$T_OUT/p.json" -- /bin/true 2>&1) || rc=$?
	assert_eq 2 $rc
	assert_contains "$err" "p.json:3:15: limits.memroy: unknown key"
	printf '{ "version": 1, "filesystem": { "workspace": 5 } }' >"$T_OUT/p2.json"
	rc=0
	err=$("$MOAT" policy check "$T_OUT/p2.json" 2>&1) || rc=$?
	assert_eq 2 $rc
	assert_contains "$err" "p2.json:1:46: filesystem.workspace: expected an object, got an integer"
	printf '{ "version": 1, ' >"$T_OUT/p3.json"
	rc=0
	err=$("$MOAT" policy check "$T_OUT/p3.json" 2>&1) || rc=$?
	assert_eq 2 $rc
	assert_contains "$err" "p3.json:1:"
	rc=0
	err=$("$MOAT" run --memory lots -- /bin/true 2>&1) || rc=$?
	assert_eq 2 $rc
	assert_contains "$err" "--memory lots"
	rc=0
	"$MOAT" run --no-such-flag -- /bin/true 2>/dev/null || rc=$?
	assert_eq 2 $rc
}

t_policy_file_works() {
	local ws="$T_OUT/pws"
	mkdir -p "$ws"
	cat >"$T_OUT/good.json" <<EOF
{
  "version": 1,
  "filesystem": { "workspace": { "path": "$ws", "mode": "rw" } },
  "process": { "hostname": "box", "env": { "GREETING": "hi" } }
}
EOF
	"$MOAT" policy check "$T_OUT/good.json" >/dev/null
	local out
	out=$("$MOAT" run --quiet --policy "$T_OUT/good.json" --hostname flagwins -- /bin/sh -c 'hostname; echo $GREETING; pwd')
	assert_eq "flagwins
hi
$ws" "$out"
	out=$("$MOAT" policy show --policy "$T_OUT/good.json")
	assert_contains "$out" '"hostname": "box"'
	assert_contains "$out" "bind     $ws <- $ws rw"
}

t_impossible_setup_125() {
	local rc=0 err
	# a source refused for safety (a symlink moat does not follow) is a
	# set-up failure; a source that does not exist is a usage error (exit 2,
	# issue 18: tests/integration/cli.sh)
	ln -s /usr "$T_OUT/moat-link"
	err=$(mrun --ro "$T_OUT/moat-link:/opt/x" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 $rc
	assert_contains "$err" "mount step failed"
	assert_contains "$err" "$T_OUT/moat-link"
	assert_contains "$err" "is a symlink"
	rc=0
	err=$(mrun --workspace /nonexistent/ws -- /bin/true 2>&1) || rc=$?
	assert_eq 2 $rc
	assert_contains "$err" "/nonexistent/ws: No such file or directory"
}

t_symlink_in_workspace_not_followed() {
	local ws="$T_OUT/wsl"
	mkdir -p "$ws"
	echo outside >"$T_OUT/outside-file"
	ln -s "$T_OUT" "$ws/escape"
	local rc=0 err
	err=$(mrun --workspace "$ws" --ro "$ws/escape/outside-file:/opt/o" -- /bin/cat /opt/o 2>&1) || rc=$?
	assert_eq 125 $rc "a bind source through a symlink in the workspace"
	assert_contains "$err" "$ws/escape is a symlink"
	# control: without the symlink the same file can be bound
	local out
	out=$(mrun --ro "$T_OUT/outside-file:/opt/o" -- /bin/cat /opt/o)
	assert_eq outside "$out"
}

t_proc_masks() {
	local out
	out=$(mrun -- /bin/sh -c 'for f in /proc/kcore /proc/keys /proc/timer_list; do [ -s "$f" ] && echo "READABLE $f"; done; (echo 1 > /proc/sys/kernel/sysrq) 2>/dev/null && echo WROTE; echo END')
	assert_eq END "$out"
}

t_pty() {
	command -v python3 >/dev/null || fail "python3 is required"
	local out
	out=$(python3 - "$MOAT" <<'EOF'
import os, pty, sys, select
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "run", "--quiet", "--", "/bin/sh", "-c", "tty; test -t 0 && echo stdin-is-tty; stty size"])
buf = b""
while True:
    try:
        r, _, _ = select.select([fd], [], [], 10)
        if not r:
            break
        d = os.read(fd, 1024)
        if not d:
            break
        buf += d
    except OSError:
        break
_, st = os.waitpid(pid, 0)
print(buf.decode(errors="replace").replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(st))
EOF
)
	assert_contains "$out" "/dev/pts/0"
	assert_contains "$out" "stdin-is-tty"
	assert_contains "$out" "exit 0"
	# --no-tty refuses to hand over a terminal
	out=$(python3 - "$MOAT" <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "run", "--no-tty", "--", "/bin/true"])
buf = b""
while True:
    try:
        d = os.read(fd, 1024)
    except OSError:
        break
    if not d:
        break
    buf += d
_, st = os.waitpid(pid, 0)
print(buf.decode(errors="replace"), "exit", os.waitstatus_to_exitcode(st))
EOF
)
	assert_contains "$out" "never receives the host's terminal"
	assert_contains "$out" "exit 125"
}

t_no_host_terminal_without_tty() {
	# stdin not a terminal: the command gets exactly moat's pipes
	local out
	out=$(echo piped | mrun -- /bin/sh -c 'cat; test -t 0 || echo not-a-tty; cat /proc/self/stat | cut -d" " -f6,7')
	assert_contains "$out" "piped"
	assert_contains "$out" "not-a-tty"
	# its own session (field 6 = session id is itself, tty_nr = 0)
	assert_contains "$out" " 0"
}

# Capability-changing calls, by a python ctypes script (no probe binary):
# clearing the securebits, capset(CAP_SYS_ADMIN) (after it: capset keeps
# only CAP_SYS_ADMIN, the control's CAP_SETPCAP too), setuid to another uid,
# setgroups; each prints "NAME ok" or "NAME ERRNO".
# shellcheck disable=SC2016
CAPS_PY='import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def r(name, rc):
    print(name, "ok" if rc == 0 else errno.errorcode[ctypes.get_errno()])
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
d = (ctypes.c_uint32 * 6)()
d[0] = d[1] = 1 << 21
r("securebits", libc.prctl(28, 0, 0, 0, 0))
r("capset", libc.capset(hdr, d))
r("setuid", libc.setuid(4242))
r("setgroups", libc.setgroups(0, None))'

# --uid 0: the sandbox's own root. Named root at /root, mapped to the same
# unprivileged host uid as any sandbox user (never host root), no capability,
# securebits locked (the ctypes attempts fail), host-root files are nobody's,
# read-only stays read-only, and a file it makes is 0's inside and the
# sandbox's host uid's outside.
t_identity_uid0() {
	local out host_uid
	out=$(mrun --uid 0 --gid 0 -- /bin/sh -c 'id -u; id -g; id -un; echo "$HOME"; pwd; awk "{print \$1}" /proc/self/uid_map; stat -c %u /usr/bin/env')
	assert_eq "0
0
root
/root
/root
0
65534" "$out" "identity of --uid 0 (host root's files show as 65534)"
	host_uid=$(mrun --uid 0 --gid 0 -- /bin/cat /proc/self/uid_map | awk '{print $2}')
	[ -n "$host_uid" ] && [ "$host_uid" != 0 ] || fail "uid 0 maps to host uid '$host_uid'"
	if is_root; then
		[ "$host_uid" -ge 1000000000 ] || fail "root mode: host uid $host_uid is not from moat's range"
	else
		assert_eq "$(id -u)" "$host_uid" "unprivileged: uid 0 maps to the caller"
	fi
	out=$(mrun --uid 0 --gid 0 -- /bin/sh -c 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)" /proc/self/status | tr -s "\t " " "')
	assert_eq "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1" "$out"
	# positive control: uid 0 of a plain user namespace (as the unprivileged
	# user, never host root) can raise a capability and clear the securebits
	local ctl
	if is_root; then
		ctl=$(cd / && runuser -u moat-test -- unshare -Ur python3 -c "$CAPS_PY")
	else
		ctl=$(cd / && unshare -Ur python3 -c "$CAPS_PY")
	fi
	assert_contains "$ctl" "capset ok" "control: capset in unshare -Ur"
	assert_contains "$ctl" "securebits ok" "control: securebits in unshare -Ur"
	out=$(mrun --uid 0 --gid 0 -- python3 -c "$CAPS_PY")
	assert_eq "securebits EPERM
capset EPERM
setuid EINVAL
setgroups EPERM" "$out" "capability-changing calls as the sandbox's uid 0"
	# host files: a --ro bind and the system stay read-only for uid 0
	mkdir -p "$T_OUT/ro0"
	echo keep >"$T_OUT/ro0/f"
	out=$(mrun --uid 0 --gid 0 --ro "$T_OUT/ro0:/opt/ro" -- /bin/sh -c '
		(echo x > /opt/ro/f) 2>/dev/null || echo RO
		(touch /usr/moat-uid0-probe) 2>/dev/null || echo SYS
		(chmod 777 /usr/bin/env) 2>/dev/null || echo CHMOD')
	[ ! -e /usr/moat-uid0-probe ] || { rm -f /usr/moat-uid0-probe; fail "uid 0 created a file in the host's /usr"; }
	assert_eq "RO
SYS
CHMOD" "$out" "writes to host files as uid 0"
	assert_eq keep "$(cat "$T_OUT/ro0/f")" "the --ro file on the host"
	# a file made in /tmp: 0 inside, the sandbox's host uid outside (seen
	# through /proc/PID/root of the sandboxed shell while it runs)
	mkdir -p "$T_OUT/sig0"
	chmod 777 "$T_OUT/sig0"
	mrun --uid 0 --gid 0 --rw "$T_OUT/sig0:/opt/sig" -- /bin/sh -c \
		'touch /tmp/made; stat -c %u /tmp/made > /opt/sig/in; awk "{print \$2}" /proc/self/uid_map > /opt/sig/host; exec sleep 20' &
	local mpid=$! p outside=""
	for _ in $(seq 100); do [ -s "$T_OUT/sig0/host" ] && break; sleep 0.1; done
	assert_eq 0 "$(cat "$T_OUT/sig0/in")" "owner of /tmp/made inside"
	# the descendants of this moat run only
	for p in $(ps -eo pid=,ppid= | awk -v s="$mpid" '{ kid[$2] = kid[$2] " " $1 }
		END { q = s; while (q != "") { n = split(q, a, " "); q = ""
			for (i = 1; i <= n; i++) { print a[i]; q = q kid[a[i]] } } }'); do
		outside=$(stat -c %u "/proc/$p/root/tmp/made" 2>/dev/null) && [ -n "$outside" ] && break
	done
	kill "$mpid" 2>/dev/null || true
	wait "$mpid" 2>/dev/null || true
	assert_eq "$(cat "$T_OUT/sig0/host")" "$outside" "owner of /tmp/made outside (the sandbox's host uid)"
}

t_no_setid_files() {
	local ws="$T_OUT/wss"
	mkdir -p "$ws"
	# control: outside, the owner may set the set-uid bit on its own file
	touch "$ws/control"
	chmod u+s "$ws/control"
	[ -u "$ws/control" ] || fail "control: chmod u+s does not work here"
	local out
	out=$(mrun --workspace "$ws" -- /bin/sh -c 'touch f; chmod u+s f 2>&1; chmod g+s f 2>&1; python3 -c "import os; os.open(\"g\", os.O_CREAT|os.O_WRONLY, 0o6755)" 2>&1 | tail -1; echo END')
	assert_contains "$out" "Operation not permitted"
	assert_contains "$out" "PermissionError"
	[ ! -u "$ws/f" ] && [ ! -g "$ws/f" ] && [ ! -e "$ws/g" ] || fail "a set-id file was created in the workspace"
}

t_rootfs() {
	[ -x /bin/busybox ] || fail "busybox-static is required (scripts/deps.sh installs it)"
	local r="$T_OUT/rootfs"
	mkdir -p "$r/usr/bin" "$r/etc"
	ln -s usr/bin "$r/bin"
	cp /bin/busybox "$r/usr/bin/busybox"
	local a
	for a in sh ls cat id; do ln -s busybox "$r/usr/bin/$a"; done
	echo "ID=moat-test-rootfs" >"$r/etc/os-release"
	local out
	out=$(mrun --rootfs "$r" -- /bin/sh -c 'cat /etc/os-release; ls /usr/bin | tr "\n" " "; [ -e /usr/bin/python3 ] && echo HOST-VISIBLE; id -u')
	assert_eq "ID=moat-test-rootfs
busybox cat id ls sh 1000" "$out"
}

t_doctor() {
	local out
	out=$("$MOAT" doctor --json)
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["user_namespaces"] and d["landlock_abi"] >= 1 and d["seccomp_user_notif"], d' <<<"$out" || fail "doctor --json: $out"
	out=$("$MOAT" doctor)
	assert_contains "$out" "user namespaces"
	assert_contains "$out" "all required features are present"
}

run_test "hidden host paths are absent" t_hidden_paths
run_test "--rootfs DIR is the system instead of the host's" t_rootfs
run_test "moat doctor reports the kernel's features" t_doctor
run_test "no set-uid/set-gid file can be made (it would be the owner's on the host)" t_no_setid_files
run_test "host files outside the given paths cannot be read" t_host_files_invisible
run_test "/usr, /etc, /dev and / are read-only" t_system_readonly
run_test "/etc and /dev: read-only, nosuid, nodev; only moat's entries" t_etc_dev_properties
run_test "/tmp and \$HOME are private and writable" t_tmp_and_home_writable
run_test "workspace writes land on the host" t_workspace_writes_land
run_test "workspace :ro is read-only" t_workspace_readonly_mode
run_test "--input is read-only at /data" t_input_readonly
run_test "--ro, --rw, --tmpfs size, --hide" t_ro_rw_tmpfs_hide
run_test "environment is clean" t_env_clean
run_test "only fds 0-2 reach the command" t_only_std_fds
run_test "PID 1 is moat-init and reaps zombies" t_pid1_is_init_and_reaps
run_test "uid 1000 inside, unprivileged on the host, no capabilities" t_identity
run_test "--uid 0: the sandbox's own root, unprivileged on the host, no capabilities" t_identity_uid0
run_test "concurrent sandboxes get distinct host uids (root)" t_concurrent_root_uids_distinct
run_test "exit codes and signals propagate" t_exit_codes
run_test "--json-status record" t_status_json
run_test "SIGKILL of moat leaves no sandbox process" t_sigkill_leaves_nothing
run_test "SIGINT is forwarded to the command" t_signal_forwarding
run_test "a malformed policy gives line:column and exit 2" t_bad_policy_exit2
run_test "a policy file is applied and flags override it" t_policy_file_works
run_test "a refused setup step exits 125 naming the step, a missing path 2" t_impossible_setup_125
run_test "bind sources are not resolved through workspace symlinks" t_symlink_in_workspace_not_followed
run_test "/proc kernel files masked, /proc/sys read-only" t_proc_masks
run_test "a terminal is a pty from the sandbox's own devpts" t_pty
run_test "without a terminal: moat's own pipes, own session" t_no_host_terminal_without_tty
t_done
