#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The vm isolation level (issue 17, docs/ISOLATION.md): the command runs in a
# QEMU guest with its own (Debian) kernel and moat's init as its PID 1, with
# the same workspace review; --net none gives the guest no network device;
# --net allow gives it one link to moat's proxy (the same audit events as the
# process level, a credential injected outside the guest); keys the level
# cannot honour fail closed naming them; nothing of QEMU survives a SIGKILL
# of moat. This machine has no usable KVM, so the guest runs under TCG
# (vm_accel any): seven boots per user, 10-30 s each on a quiet machine (up
# to a minute at load 12). Network traffic goes only to servers on loopback
# (127.0.0.2, 127.0.0.3) and the test's own namespaces.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=tests/lib/tlsapi.sh
. "$(dirname "$0")/../lib/tlsapi.sh"

QEMU=/usr/bin/qemu-system-x86_64
need_vm() {
	[ -x "$QEMU" ] || skip "qemu-system-x86 not installed (scripts/deps.sh installs it)"
	ls /boot/vmlinuz-* >/dev/null 2>&1 || skip "no guest kernel (linux-image-amd64)"
}
vm() { "$MOAT" run --quiet --isolation vm --vm-accel any "$@"; }
# run_of LOG: the run id in an audit log.
run_of() { sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }

PY=/usr/bin/python3
SRV_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-vm-srv.XXXXXX")
chmod 755 "$SRV_DIR"
SRV_PIDS=()
cleanup() {
	local p
	for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$SRV_DIR" "$T_OUT"
}
trap cleanup EXIT

# start_servers: a plain HTTP mirror on 127.0.0.3 ($MIRROR_PORT) and an
# HTTPS upstream api.test on 127.0.0.2 ($API_PORT, a test CA in
# $SRV_DIR/ca.pem) that records each request's Authorization in
# $SRV_DIR/seen (as isolation.sh's gVisor credential test).
start_servers() {
	[ -x "$PY" ] || skip "python3 not installed"
	command -v openssl >/dev/null || skip "openssl not installed"
	command -v curl >/dev/null || skip "curl not installed"
	local d=$SRV_DIR
	# Each test runs in a subshell, which does not run the script's EXIT
	# trap: the servers this test starts end with the test.
	trap 'for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
	echo "vm-bytes-$$" >"$d/pkg.txt"
	"$PY" -u -m http.server 0 --bind 127.0.0.3 --directory "$d" >"$d/mirror.log" 2>&1 &
	SRV_PIDS+=($!)
	tls_api_start "$d" "$d/api.log"
	SRV_PIDS+=("$TLS_API_PID")
	MIRROR_PORT='' API_PORT=''
	for _ in $(seq 100); do
		MIRROR_PORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$d/mirror.log" | head -1)
		API_PORT=$(cat "$d/port" 2>/dev/null || true)
		[ -n "$MIRROR_PORT" ] && [ -n "$API_PORT" ] && return 0
		sleep 0.1
	done
	fail "the test's servers did not start: $(cat "$d/mirror.log" "$d/api.log")"
}

# net_events LOG: the net and dns events of a log, without what differs
# between two runs (times, ids, the stub's synthetic addresses).
net_events() {
	jq -c 'select(.type == "net" or .type == "dns")
		| [.type, .proto, .host, .addr, .port, .name, .qtype, .action, .reason]' "$1" | sort -u
}

# Non-loopback interfaces in /proc/net/dev (the probe for --net none).
IFACES='tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | grep -vx lo | wc -l'

t_guest() {
	need_vm
	local ws="$T_OUT/ws" out rc=0 log="$T_OUT/log.json"
	mkdir -p "$ws"
	echo orig >"$ws/a.txt"
	# shellcheck disable=SC2016 # expanded inside
	out=$(echo from-stdin | vm --log "$log" --workspace "$ws" --apply never -- /bin/sh -c '
		echo out-$((6*7)); uname -r; cat; cat a.txt
		echo changed >a.txt; echo new >b.txt
		mkdir -p .git/hooks && echo evil >.git/hooks/pre-commit
		touch /usr/x 2>/dev/null || echo ro-usr
		echo ifaces=$('"$IFACES"')
		unshare -U true 2>/dev/null && echo userns-allowed || echo userns-denied
		exit 7') || rc=$?
	assert_eq 7 "$rc" "the command's exit status"
	assert_contains "$out" "out-42" "its stdout"
	assert_contains "$out" "from-stdin" "its stdin"
	assert_contains "$out" "orig" "it reads the workspace"
	assert_contains "$out" "ro-usr" "the system tree is read-only"
	# proof that it ran in the guest: the guest kernel is not the host's
	local guest_kernel
	guest_kernel=$(echo "$out" | sed -n 2p)
	[ "$(uname -r)" != "$guest_kernel" ] || fail "the guest kernel is the host's ($guest_kernel)"
	[ -e "/lib/modules/$guest_kernel/modules.dep" ] || fail "the guest kernel $guest_kernel is not a Debian kernel of /boot"
	# --net none: no interface but loopback in the guest; positive control:
	# the same probe finds the host's interfaces
	assert_contains "$out" "ifaces=0" "--net none: the guest has no network device"
	[ "$(sh -c "$IFACES")" -gt 0 ] || fail "positive control: the probe finds no interface on the host"
	# the guest init applies moat's seccomp filter too (unshare is denied);
	# positive control: the same probe creates a user namespace on the host
	assert_contains "$out" "userns-denied" "moat's seccomp filter holds in the guest"
	unshare -U true || fail "positive control: unshare -U fails on the host too"
	# the review: nothing reached the host, the planted hook is flagged
	assert_eq orig "$(cat "$ws/a.txt")" "the host file is unchanged (held back for review)"
	[ ! -e "$ws/b.txt" ] || fail "a new file reached the host without review"
	[ ! -e "$ws/.git" ] || fail "the planted hook reached the host"
	out=$("$MOAT" diff "$(run_of "$log")" 2>&1)
	assert_contains "$out" "b.txt" "moat diff shows the new file"
	assert_contains "$out" ".git/hooks/pre-commit" "and the planted hook"
	assert_contains "$out" "FLAGGED: git hook" "flagged"
	out=$(cat "$log")
	assert_contains "$out" '"isolation":"vm"' "the start event names the level"
	assert_contains "$out" '"records":{"exec":"recorded"' "and says exec records are recorded"
	# the guest's execs as the process level's exec events: the shell, and
	# uname found by its PATH search (the steps that did not resolve are not
	# records)
	assert_eq 1 "$(jq -c --arg ws "$ws" 'select(.type == "exec" and .path == "/bin/sh"
		and .argv[0] == "/bin/sh" and .cwd == $ws and .syscall == "execve")' "$log" | wc -l)" \
		"an exec event of the command"
	assert_eq '["uname","-r"]' "$(jq -c 'select(.type == "exec" and (.path | endswith("/uname"))) | .argv' "$log")" \
		"an exec event of a program it started, argv as given"
	assert_eq 0 "$(jq -c 'select(.type == "exec" and .path == "/usr/local/sbin/uname")' "$log" | wc -l)" \
		"no record of a PATH step that did not resolve"
	assert_eq 0 "$(jq -c 'select(.type == "alert" and .cause == "exec_records")' "$log" | wc -l)" \
		"no exec record was lost or refused"
}

# execs_of LOG: the exec events of the run of `sh -c 'true; /bin/true'` in
# LOG: the shell's own and those of its children.
execs_of() {
	local p
	p=$(jq -r 'select(.type == "exec" and .argv[2] == "true; /bin/true") | .pid' "$1")
	[ -n "$p" ] || return 0
	jq -c --argjson p "$p" 'select(.type == "exec" and (.pid == $p or .ppid == $p)) | [.path, .argv]' "$1"
}

# --net allow: the guest's one link ends in the holder's namespace, where
# the process level's listeners, DNS stub and capture rules are. Through the
# proxy (HTTP_PROXY) and captured (--noproxy: the stub's name, then the
# transparent listener) the allowed mirror answers; a direct connection to
# an address, another name and UDP are refused and recorded; the host's
# loopback is not reachable (127.0.0.3 in the guest is the guest's own); a
# --secret reaches the upstream without entering the guest. The same script
# at the process level gives the same net and dns events.
t_net_allow() {
	need_vm
	start_servers
	local real="real-token-$$-$RANDOM-s3cr3t" out log="$T_OUT/net-vm.json" plog="$T_OUT/net-proc.json"
	local m=$MIRROR_PORT a=$API_PORT
	# shellcheck disable=SC2016 # expanded inside
	local script='
		curl -sS -m30 http://mirror.test:'$m'/pkg.txt || echo proxy-failed
		curl -sS -m30 --noproxy "*" http://mirror.test:'$m'/pkg.txt || echo capture-failed
		curl -sS -m30 --noproxy "*" http://203.0.113.7:'$m'/pkg.txt >/dev/null 2>&1 || echo direct-refused
		curl -sS -m10 --noproxy "*" http://127.0.0.3:'$m'/pkg.txt >/dev/null 2>&1 || echo hostlo-unreachable
		curl -fsS -m30 http://other.test:'$m'/pkg.txt >/dev/null 2>&1 || echo other-refused
		echo x >/dev/udp/203.0.113.8/5353 2>/dev/null; sleep 1
		curl -sS -m30 --fail "https://api.test:'$a'/c" -H "Authorization: Bearer $GH_TOKEN"
		echo "ENV=$GH_TOKEN"; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
		tar cf - /etc /tmp "$HOME" 2>/dev/null; echo END'
	local args=(--allow-host "mirror.test:$m" --resolve mirror.test=127.0.0.3
		--allow-host "api.test:$a" --resolve api.test=127.0.0.2 --upstream-ca "$SRV_DIR/ca.pem"
		--secret GH_TOKEN@api.test)
	out=$(GH_TOKEN=$real vm --log "$log" "${args[@]}" -- /bin/bash -c "$script" 2>&1 | tr -d '\0') || true
	assert_eq "vm-bytes-$$
vm-bytes-$$
direct-refused
hostlo-unreachable
other-refused" "$(echo "$out" | head -5)" "proxy and capture reach the mirror; direct, host loopback and other are refused"
	assert_contains "$(cat "$SRV_DIR/seen" 2>/dev/null)" "/c	Bearer $real" "the upstream received the real credential"
	assert_contains "$out" "ENV=moat-ph-GH_TOKEN-" "the guest holds a placeholder"
	assert_contains "$out" "END" "the dump of its environment and files finished"
	assert_not_contains "$out" "$real" "the real value is nowhere inside the guest"
	assert_not_contains "$(cat "$log")" "$real" "nor in the audit log"
	# control: the value is in moat's own environment, so a leak would show
	GH_TOKEN=$real sh -c 'tr "\0" "\n" < /proc/$$/environ' | grep -q "$real" || fail "control: no value"
	# control: the mirror answers on the host's loopback, outside moat
	assert_eq "vm-bytes-$$" "$(curl -sS -m5 --noproxy '*' "http://127.0.0.3:$m/pkg.txt")" \
		"control: the host's loopback server answers outside moat"
	local l
	l=$(cat "$log")
	assert_contains "$l" '"proto":"http","host":"mirror.test"' "the proxied request is recorded"
	assert_contains "$l" '"proto":"transparent","host":"mirror.test"' "the captured one too"
	assert_contains "$l" '"raw":"203.0.113.7:'"$m"'","addr":"203.0.113.7"' "the direct connection is recorded"
	assert_contains "$l" '"proto":"udp","host":null,"raw":null,"addr":"203.0.113.8","port":5353' "the UDP datagram is recorded"
	assert_contains "$l" '"host":"other.test"' "the other name too"
	assert_contains "$l" '"records":{"exec":"recorded"' "the start event: exec records recorded"
	assert_contains "$l" '"net":"recorded"' "and net records recorded"
	# the same script at the process level: the same net and dns events
	GH_TOKEN=$real "$MOAT" run --quiet --log "$plog" "${args[@]}" -- /bin/bash -c "$script" >/dev/null 2>&1 || true
	[ -n "$(net_events "$plog")" ] || fail "control: the process level recorded no events"
	assert_eq "$(net_events "$plog")" "$(net_events "$log")" "the same net and dns events as the process level"
}

t_refused() {
	local out rc=0
	# a key the level cannot honour: --net host, before anything starts
	out=$("$MOAT" run --isolation vm --vm-accel any --net host -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--net host is refused at the vm level"
	assert_contains "$out" "network.mode host" "naming the key"
	# control: the same key is honoured at the process level
	"$MOAT" run --quiet --net host -- true || fail "the process level refused it"
	# vm_accel kvm (the default) where KVM cannot run an ordinary guest
	if [ ! -e /sys/module/kvm_intel ] && [ ! -e /sys/module/kvm_amd ]; then
		rc=0
		out=$("$MOAT" run --isolation vm -- true 2>&1) || rc=$?
		assert_eq 125 "$rc" "vm_accel kvm without a usable KVM fails closed"
		assert_contains "$out" "accelerator step failed" "naming the step"
	fi
	# vm_kernel: a kernel someone else could replace, a symlink, or one
	# without its modules is refused before anything starts; the copy
	# itself boots (t_sigkill)
	local k d=$T_OUT/kbad
	k=$(kcopy "$d")
	chmod 666 "$k"
	rc=0
	out=$("$MOAT" run --isolation vm --vm-accel any --vm-kernel "$k" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a kernel writable by others is refused"
	assert_contains "$out" "vm_kernel $k: owned by uid" "naming the key and why"
	chmod 644 "$k"
	chmod 777 "$d"
	rc=0
	out=$("$MOAT" run --isolation vm --vm-accel any --vm-kernel "$k" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a kernel in a directory writable by others is refused"
	assert_contains "$out" "writable by no one else" "and why"
	chmod 700 "$d"
	ln -s "$k" "$d/vmlinuz-link"
	rc=0
	out=$("$MOAT" run --isolation vm --vm-accel any --vm-kernel "$d/vmlinuz-link" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a symlink is refused"
	assert_contains "$out" "a symlink" "and why"
	cp "$k" "$d/vmlinuz-0.0.0-none"
	rc=0
	out=$("$MOAT" run --isolation vm --vm-accel any --vm-kernel "$d/vmlinuz-0.0.0-none" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a kernel without /lib/modules/VERSION is refused"
	assert_contains "$out" "/lib/modules/0.0.0-none/modules.dep" "and why"
	out=$("$MOAT" policy show --isolation vm --net host)
	assert_contains "$out" "level        vm" "moat policy show prints the level"
	assert_contains "$out" "refused (IN USE: the run fails)" "and what it refuses"
}

# kcopy DIR: a copy of the newest guest kernel, as DIR/vmlinuz-VERSION.
kcopy() {
	local k
	k=$(find /boot -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -1)
	mkdir -p "$1" && chmod 700 "$1"
	cp "$k" "$1/" && chmod 644 "$1/${k##*/}"
	echo "$1/${k##*/}"
}

# qemu_kernel ID: the file the run's QEMU holds as its kernel (fd 4).
qemu_kernel() {
	local q
	q=$(pgrep -f "qemu-system.*moat-vm-$1" | head -1)
	[ -n "$q" ] && readlink "/proc/$q/fd/4"
}

t_sigkill() {
	need_vm
	local log="$T_OUT/kill.json" id pid k
	# the policy's guest kernel (vm_kernel): a copy of /boot's
	k=$(kcopy "$T_OUT/kernel")
	"$MOAT" run --quiet --isolation vm --vm-accel any --vm-kernel "$k" --log "$log" -- sleep 300 &
	pid=$!
	id=
	for _ in $(seq 600); do
		id=$(run_of "$log")
		[ -n "$id" ] && pgrep -f "qemu-system.*moat-vm-$id" >/dev/null && break
		sleep 0.1
	done
	pgrep -f "qemu-system.*moat-vm-$id" >/dev/null ||
		fail "positive control: the run's QEMU was not seen running"
	ls -d /tmp/moat-vm-"$id"-* >/dev/null 2>&1 ||
		fail "positive control: the running run's tree was not found"
	assert_eq "$k" "$(qemu_kernel "$id")" "QEMU boots the kernel vm_kernel names"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		pgrep -f "qemu-system.*moat-vm-$id" >/dev/null || break
		sleep 0.1
	done
	[ -z "$(pgrep -f "qemu-system.*moat-vm-$id" || true)" ] || fail "QEMU survived moat's SIGKILL"
	# the crashed run's tree is named in its state record: moat gc removes
	# it (the initramfs cache, /tmp/moat-vm-UID or next to the state
	# directory, stays)
	"$MOAT" gc --quiet || fail "moat gc failed"
	local left
	left=$(ls -d /tmp/moat-vm-"$id"-* 2>/dev/null || true)
	[ -z "$left" ] || {
		rm -rf "$left"
		fail "the VM's tree was left after SIGKILL and moat gc: $left"
	}
}

# moat gc prunes the initramfs cache: a file unused for a week goes, a
# recent one (and the one the boots above used) stays, and a name that is
# not the cache's is never touched. No boot.
t_gc() {
	local d out hex
	if [ "$(id -u)" = 0 ]; then d=/run/moat/vm; else d=${XDG_STATE_HOME:-$HOME/.local/state}/moat/vm; fi
	mkdir -p "$d" && chmod 700 "$d"
	hex=$(printf '%08x' $$ $RANDOM $RANDOM $RANDOM | head -c 32)
	local old="$d/initramfs-${hex:0:31}0.cpio" new="$d/initramfs-${hex:0:31}1.cpio"
	local other="$d/not-initramfs-$$.cpio" used
	used=$(find "$d" -maxdepth 1 -name 'initramfs-*.cpio' -newermt '-1 hour' | head -1)
	echo old >"$old"
	echo new >"$new"
	echo other >"$other"
	touch -d '8 days ago' "$old" "$other"
	out=$("$MOAT" gc 2>&1)
	assert_contains "$out" "moat gc: vm:" "moat gc reports the initramfs cache"
	[ ! -e "$old" ] || fail "an initramfs unused for a week was kept"
	[ -e "$new" ] || fail "a recent initramfs was removed"
	[ -e "$other" ] || fail "a file that is not the cache's was removed"
	[ -z "$used" ] || [ -e "$used" ] || fail "the initramfs the boots above used was removed"
	rm -f "$new" "$other"
}

run_test "vm: exit status, stdio, guest kernel, no network device, overlay review of a planted hook" t_guest
t_session() {
	need_vm
	local name="vm-t-$$" out rc=0 id
	id=$("$MOAT" create --isolation vm --vm-accel any --name "$name" 2>/dev/null) ||
		fail "moat create --isolation vm failed"
	pgrep -f "qemu-system.*moat-vm-$id" >/dev/null ||
		fail "positive control: the session's QEMU was not seen running"
	# control for vm_kernel (t_sigkill): without it, the newest of /boot
	assert_eq "$(find /boot -maxdepth 1 -name 'vmlinuz-*' | sort -V | tail -1)" \
		"$(qemu_kernel "$id")" "without vm_kernel QEMU boots /boot's newest kernel"
	out=$("$MOAT" exec "$name" -- /bin/sh -c 'echo e1; exit 5') || rc=$?
	assert_eq 5 "$rc" "moat exec: the exit status"
	assert_eq e1 "$out" "and stdout"
	out=$(echo piped | "$MOAT" exec "$name" -- cat)
	assert_eq piped "$out" "moat exec: stdin"
	# exec records of an exec into the session: exactly the shell and
	# /bin/true (true is the shell's builtin), as at the process level
	"$MOAT" exec "$name" -- /bin/sh -c 'true; /bin/true' || fail "moat exec of sh -c failed"
	local want='["/bin/sh",["/bin/sh","-c","true; /bin/true"]]
["/bin/true",["/bin/true"]]'
	# (the records travel apart from the exit event: until both are there)
	for _ in $(seq 100); do
		timeout 30 "$MOAT" logs --json "$id" >"$T_OUT/session.json" || fail "moat logs failed"
		[ "$(execs_of "$T_OUT/session.json" | wc -l)" -ge 2 ] && break
		sleep 0.1
	done
	assert_eq "$want" "$(execs_of "$T_OUT/session.json")" "the session's log records the guest's two execs"
	"$MOAT" run --quiet --log "$T_OUT/session-proc.json" -- /bin/sh -c 'true; /bin/true' ||
		fail "control: the process level run failed"
	assert_eq "$want" "$(execs_of "$T_OUT/session-proc.json")" "control: the same two at the process level"
	rc=0
	# shellcheck disable=SC2016 # expanded inside
	"$MOAT" exec "$name" -- /bin/sh -c 'kill -9 $$' || rc=$?
	assert_eq 137 "$rc" "death by a signal is reported as such"
	"$MOAT" rm "$name" >/dev/null 2>&1 || fail "moat rm failed"
	for _ in $(seq 100); do
		pgrep -f "qemu-system.*moat-vm-$id" >/dev/null || break
		sleep 0.1
	done
	[ -z "$(pgrep -f "qemu-system.*moat-vm-$id" || true)" ] || fail "QEMU survived moat rm"
}

# moat selftest --isolation vm: a level that cannot run here fails closed
# naming why (vm_accel kvm without a usable KVM: no boot); with vm_accel any
# a probe of the level's battery is judged against its positive control
# (run outside moat, never as host root: "held" means the control found the
# attempts open and the guest blocked them), and a kernel-surface probe is
# listed as not applicable with the reason, never counted as held. Two boots:
# the level's preflight and the probe's inside run.
# moat serve at the vm level: the create's answer waits for the guest's
# init (backend_vm.c vm_poll, driven by the server's loop), everything else
# is answered meanwhile (serve_client.py vm_create: counted, not timed);
# the same for a reset, which at the vm level boots a fresh guest. Two boots.
t_serve() {
	need_vm
	command -v python3 >/dev/null || skip "python3 not installed"
	local sock=$PWD/api/serve.sock srv run
	mkdir -p api
	"$MOAT" serve --socket "$sock" --isolation vm --vm-accel any 2>srv.err &
	srv=$!
	# shellcheck disable=SC2064 # this server, whatever happens to the test
	trap "kill -KILL $srv 2>/dev/null || true" EXIT
	for _ in $(seq 1 300); do
		grep -q "listening on" srv.err 2>/dev/null && break
		kill -0 "$srv" 2>/dev/null || fail "the server ended: $(cat srv.err)"
		sleep 0.1
	done
	grep -q "listening on" srv.err || fail "the server did not start: $(cat srv.err)"
	python3 "$(dirname "$0")/serve_client.py" vm_create --socket "$sock" >out 2>err ||
		fail "$(grep -m1 FAIL out || tail -3 out) $(tail -5 err) $(tail -5 srv.err)"
	assert_contains "$(tail -1 out)" "all ok" "the vm level under moat serve"
	[ "$(awk '/^run /{print $2}' out | sort -u | wc -l)" = 2 ] || fail "no two run ids: $(cat out)"
	for run in $(awk '/^run /{print $2}' out); do
		for _ in $(seq 100); do
			pgrep -f "qemu-system.*moat-vm-$run" >/dev/null || break
			sleep 0.1
		done
		[ -z "$(pgrep -f "qemu-system.*moat-vm-$run" || true)" ] ||
			fail "QEMU of run $run survived the reset or the delete"
	done
	kill -TERM "$srv"
	local rc=0
	wait "$srv" || rc=$?
	assert_eq 0 "$rc" "the server ends cleanly on SIGTERM"
}

t_selftest() {
	need_vm
	local out rc=0
	if [ ! -e /sys/module/kvm_intel ] && [ ! -e /sys/module/kvm_amd ]; then
		out=$("$MOAT" selftest --isolation vm --only rt033_robind 2>&1) || rc=$?
		assert_eq 125 "$rc" "moat selftest --isolation vm without a usable KVM fails closed"
		assert_contains "$out" "isolation vm does not work here" "saying so"
		assert_contains "$out" "accelerator step failed" "and naming why"
	fi
	rc=0
	out=$("$MOAT" selftest --isolation vm --vm-accel any --only rt033_robind,rt005_userns 2>&1) || rc=$?
	assert_eq 0 "$rc" "moat selftest --isolation vm: nothing escaped, nothing inconclusive"
	assert_contains "$out" "[rt033_robind]: held" "the read-only bind probe held (its control showed it open)"
	assert_contains "$out" "RT-033/create                                FAIL         BLOCKED      held" \
		"an attempt open in the control, blocked in the guest"
	assert_contains "$out" "[rt005_userns]: skipped" "a kernel-surface probe is not applicable"
	assert_contains "$out" "not in the vm level's battery" "with the reason"
	assert_contains "$out" "2 probe(s): 1 held, 1 skipped, 0 inconclusive, 0 ESCAPED" "and not counted as held"
}

# moat doctor tells the truth about the vm level: "works" only with a KVM
# that runs a guest (probed), "available under TCG emulation only" when not;
# --boot vm proves it with a real boot (the one boot of this test), and with
# vm_accel kvm where KVM cannot run the guest it fails without booting.
t_doctor() {
	need_vm
	local out rc=0 kvm
	out=$("$MOAT" doctor --json) || true
	kvm=$(python3 -c 'import json,sys; v=json.load(sys.stdin)["isolation"]["vm"]
assert v["kernel"].startswith("/boot/vmlinuz-"), v
if v["kvm"]:
    assert v["works"] and v["accel"] == "kvm" and not v["tcg_only"], v
else:
    assert not v["works"] and v["tcg_only"] and v["accel"] == "tcg", v
    assert v["kvm_why"] and "requires vm_accel any" in v["why"], v
print("yes" if v["kvm"] else "no")' <<<"$out") || fail "doctor --json, the vm level: $out"
	out=$("$MOAT" doctor) || true
	if [ "$kvm" = no ]; then
		assert_contains "$out" "[TCG ] --isolation vm             available under TCG emulation only (slow: ~10 s to boot), requires vm_accel any" \
			"the text says TCG only, not works"
		assert_not_contains "$(grep -e '--isolation vm' <<<"$out")" "works here" "never works"
		if ! is_root; then
			# moat-test is not in group kvm: the probe says why
			if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
				assert_contains "$out" "cannot open /dev/kvm: Permission denied" "why not"
			fi
		fi
		# vm_accel kvm (the default): refused at the accelerator step, no boot
		rc=0
		out=$("$MOAT" doctor --boot vm 2>&1) || rc=$?
		assert_eq 1 "$rc" "doctor --boot vm without a usable KVM: $out"
		assert_contains "$out" "did not boot (exit 125" "the run's exit status"
		assert_contains "$out" "accelerator step failed" "and its message"
	else
		assert_contains "$out" "--isolation vm             works here (KVM)"
	fi
	rc=0
	out=$("$MOAT" doctor --boot vm --vm-accel any --json) || rc=$?
	assert_eq 0 "$rc" "doctor --boot vm --vm-accel any: $out"
	python3 -c 'import json,sys; b=json.load(sys.stdin)
assert b["level"] == "vm" and b["booted"] is True and b["exit"] == 0 and b["seconds"] > 0, b
assert b["accel"] == ("kvm" if sys.argv[1] == "yes" else "tcg"), b' "$kvm" <<<"$out" ||
		fail "doctor --boot vm --json: $out"
	# usage: --vm-accel belongs to --boot vm; a level doctor does not know
	rc=0
	"$MOAT" doctor --vm-accel any >/dev/null 2>&1 || rc=$?
	assert_eq 2 "$rc" "--vm-accel without --boot vm"
	rc=0
	"$MOAT" doctor --boot kata >/dev/null 2>&1 || rc=$?
	assert_eq 2 "$rc" "--boot with an unknown level"
}

run_test "vm: moat doctor says TCG only rather than works; --boot vm proves the level by booting it" t_doctor
run_test "vm: --net allow: proxy, capture, refusals recorded as at the process level, a credential kept outside" t_net_allow
run_test "vm: keys it cannot honour fail closed naming them; vm_accel kvm without KVM" t_refused
run_test "vm: moat exec into a vm session (exit status, stdin, death by signal)" t_session
run_test "vm: no QEMU and no tree left after SIGKILL of moat and moat gc" t_sigkill
run_test "vm: moat serve creates and resets a vm sandbox without holding its other requests" t_serve
run_test "vm: moat selftest --isolation vm: the battery's probes against their controls; fails closed without KVM" t_selftest
run_test "vm: moat gc prunes the initramfs cache (unused for a week)" t_gc
t_done
