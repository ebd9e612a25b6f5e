#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The vm isolation level (issue 17, docs/ISOLATION.md): the command runs in a
# QEMU guest with its own (Debian) kernel and moat's init as its PID 1, with
# the same workspace review; --net none gives the guest no network device;
# keys the level cannot honour fail closed naming them; nothing of QEMU
# survives a SIGKILL of moat. This machine has no usable KVM, so the guest
# runs under TCG (vm_accel any): three boots per user, 15-30 s each on a
# quiet machine (up to a minute at load 12).
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

QEMU=/usr/bin/qemu-system-x86_64
need_vm() {
	[ -x "$QEMU" ] || skip "qemu-system-x86 not installed (scripts/deps.sh installs it)"
	ls /boot/vmlinuz-* >/dev/null 2>&1 || skip "no guest kernel (linux-image-amd64)"
}
vm() { "$MOAT" run --quiet --isolation vm --vm-accel any "$@"; }
# run_of LOG: the run id in an audit log.
run_of() { sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }

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
	assert_contains "$out" '"records":{"exec":"unavailable' "and says exec records are unavailable"
}

t_refused() {
	local out rc=0
	# a key the level cannot honour: --net allow, before anything starts
	out=$("$MOAT" run --isolation vm --vm-accel any --allow-host example.test:443 -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--net allow is refused at the vm level"
	assert_contains "$out" "network.mode allow" "naming the key"
	# control: the same key is honoured at the process level
	"$MOAT" run --quiet --allow-host example.test:443 -- true || fail "the process level refused it"
	# vm_accel kvm (the default) where KVM cannot run an ordinary guest
	if [ ! -e /sys/module/kvm_intel ] && [ ! -e /sys/module/kvm_amd ]; then
		rc=0
		out=$("$MOAT" run --isolation vm -- true 2>&1) || rc=$?
		assert_eq 125 "$rc" "vm_accel kvm without a usable KVM fails closed"
		assert_contains "$out" "accelerator step failed" "naming the step"
	fi
	out=$("$MOAT" policy show --isolation vm --allow-host example.test:443)
	assert_contains "$out" "level        vm" "moat policy show prints the level"
	assert_contains "$out" "refused (IN USE: the run fails)" "and what it refuses"
}

t_sigkill() {
	need_vm
	local log="$T_OUT/kill.json" id pid
	"$MOAT" run --quiet --isolation vm --vm-accel any --log "$log" -- sleep 300 &
	pid=$!
	id=
	for _ in $(seq 600); do
		id=$(run_of "$log")
		[ -n "$id" ] && pgrep -f "qemu-system.*moat-vm-$id" >/dev/null && break
		sleep 0.1
	done
	pgrep -f "qemu-system.*moat-vm-$id" >/dev/null ||
		fail "positive control: the run's QEMU was not seen running"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		pgrep -f "qemu-system.*moat-vm-$id" >/dev/null || break
		sleep 0.1
	done
	[ -z "$(pgrep -f "qemu-system.*moat-vm-$id" || true)" ] || fail "QEMU survived moat's SIGKILL"
	# the crashed run's tree (moat could not remove it)
	rm -rf "${TMPDIR:-/tmp}/moat-vm-$id-"*
}

run_test "vm: exit status, stdio, guest kernel, no network device, overlay review of a planted hook" t_guest
t_session() {
	need_vm
	local name="vm-t-$$" out rc=0 id
	id=$("$MOAT" create --isolation vm --vm-accel any --name "$name" 2>/dev/null) ||
		fail "moat create --isolation vm failed"
	pgrep -f "qemu-system.*moat-vm-$id" >/dev/null ||
		fail "positive control: the session's QEMU was not seen running"
	out=$("$MOAT" exec "$name" -- /bin/sh -c 'echo e1; exit 5') || rc=$?
	assert_eq 5 "$rc" "moat exec: the exit status"
	assert_eq e1 "$out" "and stdout"
	out=$(echo piped | "$MOAT" exec "$name" -- cat)
	assert_eq piped "$out" "moat exec: stdin"
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

run_test "vm: keys it cannot honour fail closed naming them; vm_accel kvm without KVM" t_refused
run_test "vm: moat exec into a vm session (exit status, stdin, death by signal)" t_session
run_test "vm: no QEMU left after SIGKILL of moat" t_sigkill
t_done
