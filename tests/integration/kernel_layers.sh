#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The seccomp and Landlock layers inside a real `moat run`: common tools still
# work, each layer blocks its share, and each still holds with the other one
# switched off (test-only switch of the test build moat-testing,
# MOAT_TEST_LAYERS=1; the shipped moat has none: shipped.sh).
# shellcheck source=../lib/tap.sh
source "${MOAT_TEST_DIR:-$(dirname "$0")/..}/lib/tap.sh"

# A fresh workspace below the test's directory (which mktemp made 0700).
ws() {
	chmod 755 "$PWD"
	rm -rf ws
	mkdir -m 777 ws # root mode maps the sandbox to an unprivileged uid
	printf '%s/ws' "$PWD"
}

run_in() { # run_in WS ARGS... -- CMD...
	local w=$1
	shift
	"$MOAT" run --quiet --workspace "$w:rw" "$@"
}

# A python probe that prints one "name=errno" per attempt (0 = success).
probe_py='
import ctypes, errno, fcntl, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return 0 if r >= 0 else ctypes.get_errno()
out = []
out.append("tiocsti=%d" % sc(16, -1, 0x5412, 1))
out.append("tiocsti_hi=%d" % sc(16, -1, (1 << 32) | 0x5412, 1))
out.append("io_uring=%d" % sc(425, 1, 1))
out.append("clone3=%d" % sc(435, 1, 88))
out.append("mount=%d" % sc(165, 1, 1, 1, 0, 0))
out.append("bpf=%d" % sc(321, 5, 1, 128))
out.append("keyctl=%d" % sc(250, -1, 0, 0, 0, 0))
out.append("ptrace=%d" % sc(101, 16, 1, 0, 0))
out.append("personality=%d" % sc(135, 0x40000))
out.append("packet=%d" % sc(41, 17, 3, 0))
out.append("open_by_handle=%d" % sc(304, -1, 1, 0))
out.append("unshare=%d" % sc(272, 0x10000000))
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
out.append("tcp=%d" % s.connect_ex(("127.0.0.1", 9)))
try:
    open("/proc/self/comm", "w").write("x")
    out.append("comm=0")
except OSError as e:
    out.append("comm=%d" % e.errno)
print(" ".join(out))
'

probe() { # probe WS [moat args...]
	[ "$(uname -m)" = x86_64 ] || skip "the probe uses x86_64 syscall numbers"
	local w=$1
	shift
	run_in "$w" "$@" -- python3 -c "$probe_py"
}

t_python() {
	local w
	w=$(ws)
	assert_eq 42 "$(run_in "$w" -- python3 -c 'print(6 * 7)')"
}

t_gcc() {
	command -v gcc >/dev/null || skip "gcc is not installed"
	local w
	w=$(ws)
	printf '#include <stdio.h>\nint main(void) { puts("compiled ok"); return 0; }\n' >"$w/hello.c"
	assert_eq "compiled ok" "$(run_in "$w" -- sh -c 'gcc -O1 -o hello hello.c && ./hello')"
}

t_git() {
	command -v git >/dev/null || skip "git is not installed"
	local w
	w=$(ws)
	local out
	out=$(run_in "$w" -- sh -c 'git init -q repo && cd repo && echo hi >f && git add f &&
		git -c user.name=t -c user.email=t@example.com commit -qm first && git log --format=%s')
	assert_eq first "$out"
}

t_pipeline() {
	local w
	w=$(ws)
	assert_eq 1000 "$(run_in "$w" -- sh -c 'seq 1 1000 | sort -rn | head -n 1')"
}

t_make() {
	command -v make >/dev/null || skip "make is not installed"
	local w
	w=$(ws)
	printf 'all: a b\n\t@cat a b\na:\n\t@echo A >a\nb:\n\t@echo B >b\n' >"$w/Makefile"
	assert_eq "A B" "$(run_in "$w" -- make -s -j2 | tr '\n' ' ' | sed 's/ $//')"
}

# Both layers: every probe is blocked with the designed errno.
t_both_layers() {
	local w out
	w=$(ws)
	out=$(probe "$w")
	for want in tiocsti=1 tiocsti_hi=1 io_uring=38 clone3=38 mount=1 bpf=1 keyctl=1 ptrace=1 \
		personality=1 packet=1 open_by_handle=1 unshare=1 tcp=111 comm=13; do
		assert_contains "$out" "$want"
	done
}

# Landlock off: seccomp alone still blocks its share; /proc (read-only for
# Landlock, a writable mount) now takes the write: 0 instead of EACCES. (TCP
# to the sandbox's own loopback is ECONNREFUSED either way: Landlock handles
# no TCP right, --net none's loopback is the sandbox's own.)
t_seccomp_alone() {
	local w out
	w=$(ws)
	out=$(MOAT=$MOAT_TESTING_BIN MOAT_TEST_LAYERS=1 probe "$w" --test-disable-layer landlock)
	for want in tiocsti=1 tiocsti_hi=1 io_uring=38 clone3=38 mount=1 bpf=1 keyctl=1 ptrace=1 \
		personality=1 packet=1 open_by_handle=1 unshare=1 tcp=111 comm=0; do
		assert_contains "$out" "$want"
	done
}

# seccomp off: the try-syscall probes now reach the kernel (EBADF, EFAULT,
# success), which proves the errnos above came from seccomp; Landlock alone
# still denies the write to /proc.
t_landlock_alone() {
	local w out
	w=$(ws)
	out=$(MOAT=$MOAT_TESTING_BIN MOAT_TEST_LAYERS=1 probe "$w" --test-disable-layer seccomp)
	for want in tiocsti=9 tiocsti_hi=9 clone3=14 personality=0 comm=13; do
		assert_contains "$out" "$want"
	done
	# EFAULT, or EPERM on hosts with kernel.io_uring_disabled: not seccomp's ENOSYS
	assert_not_contains "$out" "io_uring=38"
}

# Even in the test build the switch is refused without the test gate.
t_switch_gated() {
	local w rc=0
	w=$(ws)
	env -u MOAT_TEST_LAYERS "$MOAT_TESTING_BIN" run --quiet --workspace "$w:rw" --test-disable-layer seccomp \
		-- true 2>/dev/null || rc=$?
	assert_eq 2 "$rc" "exit status"
}

# Denials are recorded in the status record.
t_denials_in_status() {
	local w
	w=$(ws)
	run_in "$w" --json-status "$PWD/status.json" -- python3 -c "$probe_py" >/dev/null
	assert_contains "$(cat status.json)" '"denied_syscalls"'
	grep -Eq '"denied_syscalls": *[1-9]' status.json || fail "no denial counted: $(cat status.json)"
	grep -Eq '"execs": *[1-9]' status.json || fail "no exec counted: $(cat status.json)"
}

# Every exec is counted once; PATH-search misses (execve of a path that does
# not exist) are not executions. sh, true, true, cat, ls = 5.
t_exec_count() {
	local w
	w=$(ws)
	run_in "$w" --json-status "$PWD/status.json" -- sh -c '/bin/true; /bin/true | cat; ls / >/dev/null'
	grep -Eq '"execs": *5[,}]' status.json || fail "want 5 execs: $(cat status.json)"
}

abstract_probe='
import socket
s = socket.socket(socket.AF_UNIX)
print("abstract=%d" % s.connect_ex("\0moat-kl-'"$$"'"))'

# With --net host the abstract unix namespace is the host's: Landlock's scope
# (ABI >= 6) is the wall; without Landlock the host socket is reachable.
t_abstract_scope() {
	local w out pid
	w=$(ws)
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind("\0moat-kl-'"$$"'"); s.listen(8)
sys.stdout.write("ready\n"); sys.stdout.flush(); time.sleep(30)' >listener.out &
	pid=$!
	for _ in $(seq 50); do [ -s listener.out ] && break; sleep 0.1; done
	out=$(run_in "$w" --net host -- python3 -c "$abstract_probe") || true
	local off
	off=$(MOAT=$MOAT_TESTING_BIN MOAT_TEST_LAYERS=1 run_in "$w" --net host --test-disable-layer landlock -- \
		python3 -c "$abstract_probe") || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[ -n "$out" ] || skip "--net host is not available here"
	assert_eq "abstract=1" "$out" "with Landlock (EPERM)"
	assert_eq "abstract=0" "$off" "without Landlock (control)"
}

# --allow-syscall re-allows a name; --deny-syscall adds one; bad names refused.
t_allow_deny_flags() {
	local w rc=0
	w=$(ws)
	assert_eq "0 0" "$(run_in "$w" --allow-syscall personality -- python3 -c 'import ctypes
l = ctypes.CDLL(None, use_errno=True); print(l.personality(0x40000), ctypes.get_errno())')"
	run_in "$w" --deny-syscall uname -- uname >/dev/null 2>&1 || rc=$?
	assert_eq 1 "$rc" "uname under --deny-syscall uname"
	rc=0
	run_in "$w" --allow-syscall no_such_call -- true 2>err || rc=$?
	assert_eq 2 "$rc" "unknown syscall name (a policy error)"
	assert_contains "$(cat err)" "no_such_call"
}

# RT-022's open/openat rule denies creating a set-id file, and only that: the
# kernel ignores the mode of an open that does not create, so a plain open
# whose mode register holds set-id bits (busybox sh's redirects leave garbage
# there) must work. Control: the same creating opens without moat's filter,
# in a throw-away user namespace of the unprivileged user, succeed.
openmode_py='
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
O_RDONLY, O_WRONLY, O_CREAT, O_TMPFILE = 0, 1, 0o100, 0o20200000
AT_FDCWD = -100
keep = []
def path(s):
    b = ctypes.create_string_buffer(s.encode())
    keep.append(b)
    return ctypes.addressof(b)
def sc(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    if r >= 0:
        os.close(r)
        return 0
    return ctypes.get_errno()
d = sys.argv[1]
out = [
  "open_plain=%d" % sc(2, path("/dev/null"), O_RDONLY, 0o4000),
  "openat_plain=%d" % sc(257, AT_FDCWD, path("/dev/null"), O_RDONLY, 0o6000),
  "open_creat_suid=%d" % sc(2, path(d + "/a"), O_WRONLY | O_CREAT, 0o4755),
  "openat_creat_sgid=%d" % sc(257, AT_FDCWD, path(d + "/b"), O_WRONLY | O_CREAT, 0o2755),
  "openat_tmpfile_suid=%d" % sc(257, AT_FDCWD, path(d), O_WRONLY | O_TMPFILE, 0o4755),
  "open_creat_plain=%d" % sc(2, path(d + "/c"), O_WRONLY | O_CREAT, 0o644),
]
print(" ".join(out))'

t_open_mode_only_when_creating() {
	[ "$(uname -m)" = x86_64 ] || skip "the probe uses x86_64 syscall numbers"
	local w out
	w=$(ws)
	out=$(run_in "$w" -- python3 -c "$openmode_py" "$w")
	assert_eq "open_plain=0 openat_plain=0 open_creat_suid=1 openat_creat_sgid=1 openat_tmpfile_suid=1 open_creat_plain=0" \
		"$out" "inside moat: plain opens with set-id bits in the mode work, creating set-id files is EPERM"
	# control: without moat's filter the creating opens succeed (the probe
	# can see a creation), as the unprivileged user in its own namespace
	local ctl
	ctl=$(mktemp -d /tmp/moat-openmode.XXXXXX)
	chmod 777 "$ctl"
	if is_root; then
		out=$(cd / && runuser -u moat-test -- unshare -Ur python3 -c "$openmode_py" "$ctl")
	else
		out=$(unshare -Ur python3 -c "$openmode_py" "$ctl")
	fi
	rm -rf "$ctl"
	assert_eq "open_plain=0 openat_plain=0 open_creat_suid=0 openat_creat_sgid=0 openat_tmpfile_suid=0 open_creat_plain=0" \
		"$out" "control: no filter, every open succeeds"
}

t_no_record_exec() {
	local w
	w=$(ws)
	run_in "$w" --no-record-exec --json-status "$PWD/status.json" -- sh -c 'true; /bin/true'
	grep -Eq '"execs": *0[,}]' status.json || fail "execs recorded: $(cat status.json)"
}

run_test "python3 runs" t_python
run_test "gcc compiles and runs a program" t_gcc
run_test "git init and commit" t_git
run_test "sh pipelines" t_pipeline
run_test "make -j2" t_make
run_test "both layers block the probes" t_both_layers
run_test "seccomp alone still blocks its share" t_seccomp_alone
run_test "Landlock alone still blocks its share" t_landlock_alone
run_test "test build: layer switches need MOAT_TEST_LAYERS=1" t_switch_gated
run_test "denials and execs are counted in the status" t_denials_in_status
run_test "each exec counted once, PATH misses not" t_exec_count
run_test "abstract unix sockets outside the domain (Landlock scope)" t_abstract_scope
run_test "--allow-syscall and --deny-syscall" t_allow_deny_flags
run_test "--no-record-exec records no execs" t_no_record_exec
run_test "open/openat: set-id modes denied only when creating (RT-022)" t_open_mode_only_when_creating
t_done
