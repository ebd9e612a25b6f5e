#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# moat as an OCI runtime (issue 16, docs/OCI.md): the runtime command line as
# the engines call it, against a bundle whose rootfs is busybox-static (no
# image is pulled): create/start/state/kill/delete, exec, the console socket,
# the pid file and exit semantics under a subreaper (as conmon), config
# fields moat cannot honour fail create naming them, the spec's seccomp
# profile on top of moat's; then podman with moat as its runtime (a private
# containers.conf and storage under the test's directory, an image made by
# `podman import`). Run as root and as the unprivileged user.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

HELPER="$MOAT_TEST_DIR/integration/oci_helper.py"
# the runtime under the name engines use (moat run as moat-oci)
RT="$T_OUT/bin/moat-oci"
mkdir -p "$T_OUT/bin"
ln -s "$MOAT" "$RT"
ROOT="$T_OUT/state"
export XDG_RUNTIME_DIR="$T_OUT/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"
oci() { timeout 30 "$RT" --root "$ROOT" "$@"; }

BUSYBOX=$(command -v busybox || true)
# a rootfs of busybox-static: /bin with every applet
make_rootfs() {
	local r=$1
	mkdir -p "$r/bin" "$r/etc" "$r/tmp"
	cp "$BUSYBOX" "$r/bin/busybox"
	"$BUSYBOX" --list | while read -r a; do
		[ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
	done
}
need_busybox() {
	[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
		skip "busybox-static is not installed"
}

# bundle DIR ARGS_JSON [EXTRA_JQ]: a config.json; EXTRA_JQ edits it
bundle() {
	local b=$1 args=$2 extra=${3:-.}
	mkdir -p "$b"
	[ -d "$T_OUT/rootfs" ] || make_rootfs "$T_OUT/rootfs"
	jq -n --arg root "$T_OUT/rootfs" --argjson args "$args" '{
		ociVersion: "1.0.2",
		process: {terminal: false, user: {uid: 1000, gid: 1000}, args: $args,
			env: ["PATH=/bin", "TERM=xterm"], cwd: "/", noNewPrivileges: true,
			capabilities: {bounding: ["CAP_CHOWN", "CAP_KILL"], effective: ["CAP_KILL"]},
			rlimits: [{type: "RLIMIT_NOFILE", hard: 1024, soft: 1024}]},
		root: {path: $root, readonly: true},
		hostname: "box",
		mounts: [{destination: "/proc", type: "proc", source: "proc"},
			{destination: "/dev", type: "tmpfs", source: "tmpfs", options: ["nosuid"]},
			{destination: "/run", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}],
		linux: {namespaces: [{type: "pid"}, {type: "mount"}, {type: "network"},
			{type: "ipc"}, {type: "uts"}],
			maskedPaths: ["/proc/kcore", "/sys/firmware"],
			readonlyPaths: ["/proc/sys"]},
		annotations: {"org.example": "x"}
	} | '"$extra" >"$b/config.json"
}

t_lifecycle() {
	need_busybox
	bundle b '["sh", "-c", "echo out; echo err >&2; hostname; id -u; exit 3"]'
	local out
	# create, then start, under a subreaper: the pid in --pid-file exits with
	# the container's status
	START="$RT --root $ROOT start c1" timeout 60 python3 "$HELPER" reap "$T_OUT/pid" -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file "$T_OUT/pid" c1 >log 2>&1 || true
	assert_eq "exited 3" "$(cat pid.status)" "the pid file's process exits as the container's did"
	out=$(cat log)
	assert_contains "$out" "out" "stdout"
	assert_contains "$out" "err" "stderr"
	assert_contains "$out" "box" "hostname"
	assert_contains "$out" "1000" "the user"
	assert_eq stopped "$(oci state c1 | jq -r .status)" "state after the end"
	assert_eq b "$(oci state c1 | jq -r '.bundle | split("/") | last')" "state: bundle"
	assert_eq x "$(oci state c1 | jq -r '.annotations["org.example"]')" "state: annotations"
	oci delete c1
	[ ! -e "$ROOT/c1" ] || fail "delete left the state directory"
	if oci state c1 2>err; then fail "state of a deleted container"; fi
	assert_contains "$(cat err)" "does not exist"
}

# process.user 0:0 (most images): the container's own root, mapped to the
# sandbox's unprivileged host uid, no capability, securebits locked (a
# busybox rootfs, no probe: /proc/self/status only), /root its home
t_uid0_bundle() {
	need_busybox
	local script args
	# shellcheck disable=SC2016 # expanded in the container
	script='id -u; id -g; echo "$HOME"
		grep -E "^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status | tr -s "\t " " "
		awk "{print \$2}" /proc/self/uid_map
		touch /tmp/x && stat -c %u /tmp/x
		(echo > /bin/sh) 2>/dev/null || echo RO'
	args=$(jq -cn --arg s "$script" '["sh", "-c", $s]')
	bundle b0 "$args" '.process.user = {uid: 0, gid: 0}'
	START="$RT --root $ROOT start u0" timeout 60 python3 "$HELPER" reap "$T_OUT/pid0" -- \
		"$RT" --root "$ROOT" create --bundle b0 --pid-file "$T_OUT/pid0" u0 >log0 2>&1 || true
	assert_eq "exited 0" "$(cat pid0.status)" "the uid-0 container's exit: $(cat log0)"
	local out host
	out=$(cat log0)
	host=$(sed -n 9p <<<"$out")
	assert_eq "0
0
/root
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1
$host
0
RO" "$out" "the uid-0 container"
	[ -n "$host" ] && [ "$host" != 0 ] || fail "uid 0 maps to host uid '$host'"
	if is_root; then
		[ "$host" -ge 1000000000 ] || fail "root mode: host uid $host is not from moat's range"
	else
		assert_eq "$(id -u)" "$host" "unprivileged: uid 0 maps to the caller"
	fi
	oci delete u0
}

# root.path: the container sees the bundle's whole root (its top names
# beyond moat's own layout), read-only; a symlink there is made again and
# read inside the container, never followed out of the tree on the host
t_whole_root() {
	need_busybox
	local r="$T_OUT/wroot" out
	rm -rf "$r"
	make_rootfs "$r"
	printf '#!/bin/sh\necho top ran\n' >"$r/runtimetest"
	chmod 755 "$r/runtimetest"
	mkdir "$r/srv"
	echo data >"$r/srv/f"
	ln -s srv "$r/link"
	echo secret >"$T_OUT/outside"
	ln -s "$T_OUT/outside" "$r/esc"
	# positive control: the escape symlink does reach the file on the host
	assert_eq secret "$(cat "$r/esc")" "control: the symlink leads out of the tree on the host"
	bundle wb '["sh", "-c", "/runtimetest; cat /srv/f /link/f; cat /esc || echo esc-missing; touch /srv/x 2>&1 || true; touch /runtimetest 2>&1 || true"]' \
		".root.path = \"$r\""
	oci create --bundle wb w1 </dev/null >out 2>&1 || { cat out; fail "create"; }
	oci start w1
	for _ in $(seq 100); do [ "$(oci state w1 | jq -r .status)" = stopped ] && break; sleep 0.1; done
	out=$(cat out)
	oci delete w1
	assert_contains "$out" "top ran" "a file at the top of root.path runs"
	assert_contains "$out" "data" "a directory at the top of root.path"
	assert_eq 2 "$(grep -c '^data$' out)" "a top symlink made again, read inside the container"
	assert_contains "$out" "esc-missing" "a symlink out of the tree leads nowhere inside"
	assert_not_contains "$out" "secret" "nothing outside root.path is read"
	assert_contains "$out" "/srv/x: Read-only file system" "the bundle's directories are read-only"
	assert_contains "$out" "/runtimetest: Read-only file system" "its files too"
	[ ! -e "$r/srv/x" ] || fail "a write reached the bundle"
	# a top name moat could not show as it is: refused by name (the control
	# above is the same root without it)
	touch "$r/bad name"
	bundle wb2 '["true"]' ".root.path = \"$r\""
	if oci create --bundle wb2 w2 </dev/null 2>err; then
		oci delete --force w2
		fail "a top name with a space was accepted"
	fi
	assert_contains "$(cat err)" "root.path" "the message names root.path"
	[ ! -e "$ROOT/w2" ] || fail "a refused create left state"
	# the bound: 64 names at the top beyond moat's own (64 pass, 65 fail)
	rm "$r/bad name"
	local i n
	n=$(find "$r" -mindepth 1 -maxdepth 1 ! -name bin ! -name etc ! -name tmp | wc -l)
	for i in $(seq $((64 - n))); do mkdir "$r/d$i"; done
	oci create --bundle wb2 w3 </dev/null >/dev/null 2>err || { cat err; fail "64 names refused"; }
	oci delete --force w3
	mkdir "$r/d65"
	if oci create --bundle wb2 w4 </dev/null 2>err; then
		oci delete --force w4
		fail "65 names at the top were accepted"
	fi
	assert_contains "$(cat err)" "more than 64 names" "the message gives the bound"
}

# tree_sum DIR: every name, mode, owner, size and content of DIR, hashed
tree_sum() {
	(cd "$1" && find . -printf '%p %m %U:%G %s %y %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat) | md5sum
}

# root.readonly false (issue 16, docs/OCI.md): the bundle's trees are
# overlays, writes land in a tmpfs of the container's (run.moat.root-size),
# the bundle is never written, nothing is left on the host after delete;
# no new name at /, and the size bound gives ENOSPC inside
t_writable_root() {
	need_busybox
	local r="$T_OUT/rwroot" out before mark
	rm -rf "$r"
	make_rootfs "$r"
	mkdir -p "$r/usr/sub" "$r/srv"
	echo data >"$r/srv/f"
	before=$(tree_sum "$r")
	mark="moat-rw-$$-$RANDOM"
	# the marker is written to files only (never printed, and in two halves
	# in process.args, which the audit stream records): a file left on the
	# host with it is found below
	bundle rwb '["sh", "-c", "m=$1$2; echo $m >/usr/x && echo usr-ok; echo $m >/srv/x && echo srv-ok; echo $m >>/srv/f && grep -q data /srv/f && echo append-ok; echo $m >/usr/sub/y && echo sub-ok; echo $m >/bin/z && echo bin-ok; mkdir /newdir 2>&1; echo $m >/newfile 2>&1; dd if=/dev/zero of=/srv/big bs=1M count=3 2>&1", "sh", "moat-rw-", "'"${mark#moat-rw-}"'"]' \
		".root.path = \"$r\" | .root.readonly = false | .annotations[\"run.moat.root-size\"] = \"2M\""
	touch "$T_OUT/rw.stamp"
	oci create --bundle rwb rw1 </dev/null >out 2>&1 || { cat out; fail "create"; }
	oci start rw1
	for _ in $(seq 100); do [ "$(oci state rw1 | jq -r .status)" = stopped ] && break; sleep 0.1; done
	out=$(cat out)
	oci delete rw1
	for w in usr srv append sub bin; do
		assert_contains "$out" "$w-ok" "a write to the root ($w)"
	done
	assert_contains "$out" "'/newdir': Read-only file system" "no new directory at /"
	assert_contains "$out" "create /newfile: Read-only file system" "no new file at /"
	assert_not_contains "$out" "$mark" "(the marker is never printed)"
	assert_contains "$out" "No space left on device" "more than run.moat.root-size: ENOSPC inside"
	assert_eq "$before" "$(tree_sum "$r")" "the bundle is unchanged"
	[ ! -e "$ROOT/rw1" ] || fail "delete left the state directory"
	# nothing the container wrote is on the host: no file made since the
	# start holds the marker (the state directory, /tmp, the test's)
	# (positive control: a file of the test's own with the marker is found)
	local left
	echo "$mark" >"$T_OUT/ctl.mark"
	left=$(find /tmp "$T_OUT" "$ROOT" -xdev -type f -newer "$T_OUT/rw.stamp" -size -4M \
		-print0 2>/dev/null | xargs -0 -r grep -l "$mark" 2>/dev/null | sort -u || true)
	assert_eq "$T_OUT/ctl.mark" "$left" "no file with the container's writes left on the host"
	rm "$T_OUT/ctl.mark"
	# the plan shows the overlays and their tmpfs
	"$MOAT" policy show --bundle rwb >plan 2>&1 || { cat plan; fail "policy show --bundle"; }
	assert_contains "$(cat plan)" "upper    /.moat-root size=2.0 MiB" "the plan's upper step"
	assert_contains "$(cat plan)" "overlay  /srv <- $r/srv" "the plan's overlay of /srv"
	# run.moat.root-readonly=true keeps its meaning: a read-only root
	bundle rwb2 '["sh", "-c", "echo x >/srv/x 2>&1; true"]' \
		".root.path = \"$r\" | .root.readonly = false | .annotations[\"run.moat.root-readonly\"] = \"true\""
	oci create --bundle rwb2 rw2 </dev/null >out 2>&1 || { cat out; fail "create (root-readonly)"; }
	oci start rw2
	for _ in $(seq 100); do [ "$(oci state rw2 | jq -r .status)" = stopped ] && break; sleep 0.1; done
	assert_contains "$(cat out)" "/srv/x: Read-only file system" "run.moat.root-readonly=true: read-only"
	oci delete rw2
	assert_eq "$before" "$(tree_sum "$r")" "the bundle is unchanged (root-readonly)"
	# positive control: a change to the bundle changes its sum
	echo x >>"$r/srv/f"
	[ "$before" != "$(tree_sum "$r")" ] || fail "control: tree_sum misses a change"
}

# a process that exists and is not a zombie
alive() { [ -r "/proc/$1/stat" ] && ! awk '{exit $3 == "Z" ? 0 : 1}' "/proc/$1/stat" 2>/dev/null; }

t_states_kill() {
	need_busybox
	bundle b '["sleep", "100"]'
	oci create --bundle b --pid-file pid c2 </dev/null >/dev/null 2>&1
	local pid
	pid=$(cat pid)
	assert_eq created "$(oci state c2 | jq -r .status)" "after create"
	assert_eq "$pid" "$(oci state c2 | jq -r .pid)" "state's pid is the pid file's"
	# nothing of the container's runs before start
	if oci exec --process /dev/null c2 2>err; then fail "exec before start"; fi
	oci start c2
	assert_eq running "$(oci state c2 | jq -r .status)" "after start"
	if oci start c2 2>/dev/null; then fail "a second start"; fi
	oci ps --format json c2 >ps.json
	assert_eq "$pid" "$(jq '.[0]' ps.json)" "ps lists the supervisor first"
	[ "$(jq length ps.json)" -ge 3 ] || fail "ps lists the container's processes: $(cat ps.json)"
	if oci delete c2 2>err; then fail "delete of a running container without --force"; fi
	assert_contains "$(cat err)" "running"
	oci kill c2 TERM
	for _ in $(seq 50); do
		[ "$(oci state c2 | jq -r .status)" = stopped ] && break
		sleep 0.1
	done
	assert_eq stopped "$(oci state c2 | jq -r .status)" "after kill TERM"
	# gone (or a zombie: no subreaper here reaps it)
	for _ in $(seq 50); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then fail "the supervisor outlived the container"; fi
	if oci kill c2 KILL 2>err; then fail "kill of a stopped container"; fi
	# the words containerd's shim takes as "already stopped" (as runc's)
	assert_contains "$(cat err)" "container not running" "kill of a stopped container"
	oci delete c2
	# created, then delete --force / kill --all
	oci create --bundle b c3 </dev/null >/dev/null 2>&1
	oci delete --force c3
	[ ! -e "$ROOT/c3" ] || fail "delete --force left the state"
	oci create --bundle b --pid-file pid c4 </dev/null >/dev/null 2>&1
	oci start c4
	oci kill --all c4 KILL
	for _ in $(seq 50); do
		[ "$(oci state c4 | jq -r .status)" = stopped ] && break
		sleep 0.1
	done
	assert_eq stopped "$(oci state c4 | jq -r .status)" "after kill --all KILL"
	oci delete c4
}

# CPU time (user + system ticks) of a pid
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# freezer.state of the v1 freezer group pid is in ("" without one)
freezer_state() {
	local p
	p=$(sed -n 's/^[0-9]*:freezer:\(.*\)/\1/p' "/proc/$1/cgroup")
	[ -n "$p" ] && [ "$p" != / ] && cat "/sys/fs/cgroup/freezer$p/freezer.state"
}
# cgroup directories of a run left in any hierarchy
cg_left() { find /sys/fs/cgroup -mindepth 2 -maxdepth 4 -type d -name "$1" 2>/dev/null; }

# a process that spins in the container: it stops while paused (CPU time
# does not advance, freezer.state FROZEN), goes on when resumed
spins() {
	local pid=$1 a b
	a=$(cpu_ticks "$pid")
	sleep 0.5
	b=$(cpu_ticks "$pid")
	[ "$b" -gt "$a" ]
}
t_pause() {
	need_busybox
	bundle b '["sh", "-c", "while :; do :; done"]'
	oci create --bundle b --pid-file pid p1 </dev/null >/dev/null 2>&1
	oci start p1
	local spin
	spin=$(oci ps --format json p1 | jq '.[-1]')
	# the control: while running, the counter advances (else the test
	# below could not see a freeze)
	spins "$spin" || fail "the spinning process does not advance while running"
	if ! is_root; then
		# unprivileged on v1: no cgroup of moat's, no freezer
		if oci pause p1 2>err; then fail "pause without a freezer succeeded"; fi
		assert_contains "$(cat err)" "no freezer"
		assert_eq running "$(oci state p1 | jq -r .status)" "a refused pause"
		spins "$spin" || fail "a refused pause stopped the process"
		oci delete --force p1
		return 0
	fi
	local run
	run=$(sed -n 's/^[0-9]*:freezer:.*\/\([^/]*\)$/\1/p' "/proc/$spin/cgroup")
	[ -n "$run" ] || fail "as root the container has no freezer group: $(cat "/proc/$spin/cgroup")"
	oci pause p1
	assert_eq paused "$(oci state p1 | jq -r .status)" "after pause"
	assert_eq FROZEN "$(freezer_state "$spin")" "freezer.state"
	sleep 0.1
	if spins "$spin"; then fail "a paused process still runs"; fi
	# as runc: no exec into a paused container
	if oci exec --process /dev/null p1 2>err; then fail "exec into a paused container"; fi
	if oci delete p1 2>err; then fail "delete of a paused container without --force"; fi
	oci resume p1
	assert_eq running "$(oci state p1 | jq -r .status)" "after resume"
	spins "$spin" || fail "the process does not go on after resume"
	# kill KILL of a paused container ends it (as runc, SIGKILL thaws)
	oci pause p1
	oci kill p1 KILL
	for _ in $(seq 50); do
		[ "$(oci state p1 | jq -r .status)" = stopped ] && break
		sleep 0.1
	done
	assert_eq stopped "$(oci state p1 | jq -r .status)" "a paused container after kill KILL"
	oci delete p1
	if alive "$spin"; then fail "the paused process survived kill"; fi
	[ -z "$(cg_left "$run")" ] || fail "cgroups left: $(cg_left "$run")"
	# delete --force of a paused container: nothing left
	oci create --bundle b --pid-file pid p2 </dev/null >/dev/null 2>&1
	oci start p2
	spin=$(oci ps --format json p2 | jq '.[-1]')
	run=$(sed -n 's/^[0-9]*:freezer:.*\/\([^/]*\)$/\1/p' "/proc/$spin/cgroup")
	oci pause p2
	oci delete --force p2
	for _ in $(seq 50); do
		alive "$spin" || break
		sleep 0.1
	done
	if alive "$spin"; then fail "the paused process survived delete --force"; fi
	[ -z "$(cg_left "$run")" ] || fail "cgroups left: $(cg_left "$run")"
	[ ! -e "$ROOT/p2" ] || fail "delete --force left the state"
}

t_signal_status() {
	need_busybox
	bundle b '["sh", "-c", "kill -KILL $$"]'
	START="$RT --root $ROOT start c5" timeout 60 python3 "$HELPER" reap "$T_OUT/pid" -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file "$T_OUT/pid" c5 >log 2>&1 || true
	assert_eq "signaled 9" "$(cat pid.status)" "killed by a signal: the supervisor too"
	oci delete c5
}

t_exec() {
	need_busybox
	bundle b '["sh", "-c", "echo main >/tmp/shared; sleep 100"]'
	oci create --bundle b c6 </dev/null >/dev/null 2>&1
	oci start c6
	jq -n '{user: {uid: 1000, gid: 1000}, args: ["sh", "-c", "cat /tmp/shared; exit 5"],
		env: ["PATH=/bin"], cwd: "/tmp", terminal: false}' >proc.json
	jq '.args = ["test", "-f", "/tmp/shared"]' proc.json >wait.json
	for _ in $(seq 50); do
		oci exec --process wait.json c6 >/dev/null 2>&1 && break
		sleep 0.1
	done
	# foreground: the exit status and the output
	local rc=0
	oci exec --process proc.json c6 >out 2>&1 || rc=$?
	assert_eq 5 "$rc" "exec's exit status"
	assert_eq main "$(cat out)" "exec sees the container's files"
	# --detach --pid-file under a subreaper (as conmon's exec)
	timeout 60 python3 "$HELPER" reap "$T_OUT/epid" -- "$RT" --root "$ROOT" exec \
		--process proc.json --detach --pid-file "$T_OUT/epid" c6 >log 2>&1 || true
	assert_eq "exited 5" "$(cat epid.status)" "the exec pid file's process exits as the exec did"
	# another user than the container's is refused, naming the field
	jq '.user.uid = 1001' proc.json >p2.json
	if oci exec --process p2.json c6 2>err; then fail "exec as another user"; fi
	assert_contains "$(cat err)" "process.user"
	oci delete --force c6
}

t_console() {
	need_busybox
	bundle b '["sh", "-c", "tty; echo on-tty"]' '.process.terminal = true'
	python3 "$HELPER" console "$T_OUT/con.sock" "$T_OUT/con.out" &
	local cpid=$!
	for _ in $(seq 50); do [ -S "$T_OUT/con.sock" ] && break; sleep 0.1; done
	oci create --bundle b --console-socket "$T_OUT/con.sock" c7 </dev/null
	oci start c7
	for _ in $(seq 100); do kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
	kill $cpid 2>/dev/null || true
	assert_contains "$(cat con.out)" "/dev/pts/" "the process is on a terminal"
	assert_contains "$(cat con.out)" "on-tty"
	oci delete --force c7
	# terminal without a console socket is refused
	if oci create --bundle b c8 </dev/null 2>err; then fail "terminal without console socket"; fi
	assert_contains "$(cat err)" "console-socket"
}

# refused FIELD JQ: create fails naming FIELD, and leaves nothing behind
refused() {
	local want=$1 edit=$2 id
	id="r$RANDOM"
	rm -rf rb
	bundle rb '["sh", "-c", "echo ran"]' "$edit"
	if oci create --bundle rb "$id" </dev/null >out 2>err; then
		oci delete --force "$id" || true
		fail "create accepted $edit"
	fi
	assert_contains "$(cat err)" "$want" "the message for $edit"
	[ ! -e "$ROOT/$id" ] || fail "a refused create left state"
}

t_refused_fields() {
	need_busybox
	# positive control: the unedited bundle is accepted
	bundle ok '["true"]'
	oci create --bundle ok ctl </dev/null >/dev/null 2>&1 || fail "control: the plain bundle"
	oci delete --force ctl
	refused process.user.uid '.process.user.uid = 65534'
	refused hooks '.hooks = {prestart: [{path: "/bin/true"}]}'
	refused 'linux.namespaces[0]' '.linux.namespaces[0].path = "/proc/1/ns/pid"'
	refused CAP_SYS_ADMIN '.process.capabilities.bounding += ["CAP_SYS_ADMIN"]'
	refused CAP_NET_ADMIN '.process.capabilities.ambient = ["CAP_NET_ADMIN"]'
	refused annotations.run.moat.root-size '.root.readonly = false | .annotations["run.moat.root-size"] = "512K"'
	refused annotations.run.moat.root-size '.annotations["run.moat.root-size"] = "2M"'
	refused annotations.run.moat.bogus '.annotations["run.moat.bogus"] = "1"'
	refused linux.sysctl '.linux.sysctl = {"net.ipv4.ip_forward": "1"}'
	refused 'mounts[3]' '.mounts += [{destination: "/x", type: "nfs", source: "h:/x"}]'
	refused noexec '.mounts += [{destination: "/x", type: "bind", source: "/tmp", options: ["rbind", "noexec"]}]'
	refused process.apparmorProfile '.process.apparmorProfile = "p"'
	refused linux.maskedPaths '.linux.maskedPaths += ["/proc/cpuinfo"]'
	refused 'process.rlimits[1]' '.process.rlimits += [{type: "RLIMIT_NOFILE", hard: 1, soft: 1}]'
	refused ociVersion '.ociVersion = "2.0.0"'
	refused unknownField '.unknownField = 1'
	refused linux.seccomp.listenerPath '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", listenerPath: "/x"}'
	# an annotation cannot weaken a layer: a policy it names may not either
	refused annotations.run.moat.policy '.annotations["run.moat.policy"] = "../etc/x"'
	# hostile input: not JSON, duplicate keys, NUL in a string, huge
	bundle rb '["true"]'
	printf '{"ociVersion":"1.0.2","ociVersion":"1.0.2"}' >rb/config.json
	if oci create --bundle rb dup </dev/null 2>err; then fail "duplicate keys"; fi
	assert_contains "$(cat err)" "config.json"
	head -c 5000000 /dev/zero | tr '\0' ' ' >rb/config.json
	if oci create --bundle rb big </dev/null 2>err; then fail "a 5 MB config"; fi
	assert_contains "$(cat err)" "at most"
}

# A linux.namespaces path moat does not join (ipc, uts: a pod's) or does not
# use (network without egress) must still be a namespace of its kind, as the
# spec asks; the control: the right kinds are accepted.
t_ns_path_types() {
	need_busybox
	local i
	bundle nsok '["true"]' '.linux.namespaces[3].path = "/proc/self/ns/ipc" | .linux.namespaces[4].path = "/proc/self/ns/uts" | .linux.namespaces[2].path = "/proc/self/ns/net"'
	oci create --bundle nsok nsok </dev/null >/dev/null 2>err || fail "control: namespace paths of the right kinds: $(cat err)"
	oci delete --force nsok
	for i in "3 /proc/self/ns/mnt" "4 /proc/self/ns/pid" "2 /proc/self/ns/cgroup" "3 /etc/hostname" "4 /nonexistent"; do
		set -- $i
		bundle "nsbad$1" '["true"]' ".linux.namespaces[$1].path = \"$2\""
		if oci create --bundle "nsbad$1" nsbad </dev/null 2>err; then
			oci delete --force nsbad
			fail "linux.namespaces[$1] = $2 accepted"
		fi
		assert_contains "$(cat err)" "linux.namespaces[$1]" "$2 as namespace $1"
		[ ! -e "$ROOT/nsbad" ] || fail "a refused create left state"
	done
}

t_seccomp_limits() {
	need_busybox
	# the spec's profile refuses mkdir: refused inside, on top of moat's own
	bundle b '["sh", "-c", "mkdir /tmp/d && echo made"]' \
		'.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["mkdir", "mkdirat"], action: "SCMP_ACT_ERRNO"}]}'
	START="$RT --root $ROOT start s1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid s1 >log 2>&1 || true
	assert_not_contains "$(cat log)" "made" "mkdir under the spec's profile"
	oci delete s1
	# control: without the profile mkdir works
	bundle b '["sh", "-c", "mkdir /tmp/d && echo made"]'
	START="$RT --root $ROOT start s2" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid s2 >log 2>&1 || true
	assert_contains "$(cat log)" "made" "control: mkdir without the profile"
	oci delete s2
	# a profile refusing clone3 (as the engines' defaults do, for glibc's
	# fallback to clone): moat's baseline refuses it already; the container
	# still forks
	bundle b '["sh", "-c", "true & wait; echo forked"]' \
		'.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["clone3"], action: "SCMP_ACT_ERRNO", errnoRet: 38}]}'
	START="$RT --root $ROOT start s4" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid s4 >log 2>&1 || true
	assert_contains "$(cat log)" "forked" "a profile that refuses clone3"
	oci delete s4
	# a profile denying close_range (an allowlist older than it, as
	# runtime-tools' generator writes): the init closes descriptors one by
	# one instead; the container runs and its fds above 2 are closed
	bundle b '["sh", "-c", "ls /proc/self/fd | tr \"\\n\" \" \"; echo ran"]' \
		'.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["close_range"], action: "SCMP_ACT_ERRNO"}]}'
	START="$RT --root $ROOT start s5" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid s5 >log 2>&1 || true
	assert_eq "exited 0" "$(cat pid.status)" "a profile that denies close_range: $(cat log)"
	assert_contains "$(cat log)" "0 1 2 3 ran" "only stdio (and ls's own directory) open"
	oci delete s5
	# linux.resources.pids: enforced
	bundle b '["sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done; wait; echo done"]' \
		'.linux.resources = {pids: {limit: 16}}'
	START="$RT --root $ROOT start s3" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid s3 >log 2>&1 || true
	if [ "$(cat pid.status)" = "runtime-failed 125" ]; then
		# unprivileged on a host without a delegated cgroup: fails closed
		is_root && fail "create failed as root: $(cat log)"
		assert_contains "$(cat log)" "cannot be enforced" "the limit's refusal"
		[ ! -e "$ROOT/s3" ] || fail "a refused create left state"
	else
		assert_contains "$(cat log)" "fork" "the pids limit refused a fork"
		oci delete s3
	fi
}

# linux.cgroupsPath: the container's cgroup where the engine asks, below
# /moat/ at each hierarchy's root (or below the runtime's own cgroup); the
# levels moat made are removed with the container; what moat may not make
# fails create naming the field (podman's default placement: t_podman)
t_cgroups_path() {
	need_busybox
	local cgp=/moat/oci-$$
	bundle b '["sleep", "100"]' ".linux.cgroupsPath = \"$cgp/c1\""
	if ! is_root; then
		# unprivileged, the hierarchies' roots are not ours: fails closed
		if oci create --bundle b u1 </dev/null 2>err; then
			oci delete --force u1
			fail "an unprivileged create under $cgp was accepted"
		fi
		assert_contains "$(cat err)" "linux.cgroupsPath $cgp/c1" "the refusal names the field"
		[ ! -e "$ROOT/u1" ] || fail "a refused create left state"
		return 0
	fi
	oci create --bundle b g1 </dev/null >/dev/null
	oci start g1
	local pid
	pid=$(oci state g1 | jq -r .pid)
	# every process of the container (below the supervisor) is there
	grep -q . "/sys/fs/cgroup/pids$cgp/c1/cgroup.procs" ||
		fail "nothing in $cgp/c1: $(cat /proc/"$pid"/cgroup)"
	assert_contains "$(oci ps --format json g1 | jq -r '.[]' | tail -1 | xargs -I{} cat /proc/{}/cgroup)" \
		"pids:$cgp/c1" "the container's last process, seen from the host"
	oci delete --force g1
	[ ! -e "/sys/fs/cgroup/pids$cgp" ] || fail "the levels moat made were left: $(ls /sys/fs/cgroup/pids$cgp)"
	# refused by name: .. and systemd's form
	bundle b '["true"]' '.linux.cgroupsPath = "/moat/../x"'
	if oci create --bundle b g2 </dev/null 2>err; then fail "a path with .."; fi
	assert_contains "$(cat err)" "linux.cgroupsPath"
	bundle b '["true"]' '.linux.cgroupsPath = "system.slice:moat:x"'
	if oci create --bundle b g3 </dev/null 2>err; then fail "systemd's form"; fi
	assert_contains "$(cat err)" "linux.cgroupsPath: system.slice:moat:x"
	# --cgroup-manager disabled: moat's own cgroup, the field not honoured
	bundle b '["true"]' ".linux.cgroupsPath = \"$cgp/c2\""
	"$RT" --root "$ROOT" --cgroup-manager disabled create --bundle b g4 </dev/null >/dev/null
	[ ! -e "/sys/fs/cgroup/pids$cgp/c2" ] || fail "--cgroup-manager disabled made $cgp/c2"
	oci delete --force g4
}

# process.oomScoreAdj (a kubelet sets it by QoS class): a value above the
# runtime's own is the container's; a lower one (CAP_SYS_RESOURCE, a container
# less killable than its engine) fails create naming the field
t_oom_score_adj() {
	need_busybox
	local cur want
	cur=$(cat /proc/self/oom_score_adj)
	want=$((cur < 900 ? cur + 100 : 1000))
	[ "$want" -gt "$cur" ] || skip "oom_score_adj is already 1000"
	bundle b '["cat", "/proc/self/oom_score_adj"]' ".process.oomScoreAdj = $want"
	START="$RT --root $ROOT start o1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid o1 >log 2>&1 || true
	assert_eq "$want" "$(tr -d '\r' <log)" "the container's oom_score_adj is the spec's"
	oci delete o1
	# control: without the field the container has the runtime's value (the
	# probe above tells the two apart)
	bundle b '["cat", "/proc/self/oom_score_adj"]'
	START="$RT --root $ROOT start o2" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid o2 >log 2>&1 || true
	assert_eq "$cur" "$(tr -d '\r' <log)" "control: no oomScoreAdj, the runtime's value"
	oci delete o2
	# a negative value below the runtime's own: refused
	refused process.oomScoreAdj ".process.oomScoreAdj = $((cur < 0 ? cur - 1 : -1))"
	assert_contains "$(cat err)" "below the runtime's own"
	refused process.oomScoreAdj '.process.oomScoreAdj = 1001'
}

# run.moat.allow-hosts: moat's egress proxy in the container's network; a
# loopback mirror (127.0.0.3, mapped by run.moat.resolve) is the one allowed
# destination, another name is denied and recorded in the audit stream
t_allow_hosts() {
	need_busybox
	mkdir -p www
	echo "pkg-$$" >www/pkg.txt
	python3 -u -m http.server 0 --bind 127.0.0.3 --directory www >srv.log 2>&1 &
	local srv=$! port=
	# ended however the test ends (a failed assertion exits the subshell,
	# after this function's locals are gone: the pid is expanded now)
	# shellcheck disable=SC2064
	trap "kill $srv 2>/dev/null || true" EXIT
	for _ in $(seq 50); do
		port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' srv.log | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || skip "cannot start a local http.server"
	local cmd="wget -q -O - http://mirror.test:$port/pkg.txt; wget -q -O - http://other.test:$port/pkg.txt || echo denied-other"
	# the name's mapping is the administrator's (a policy file, named by
	# an annotation); the annotation allows the name and names the log
	export XDG_CONFIG_HOME="$T_OUT/config"
	mkdir -p "$XDG_CONFIG_HOME/moat/oci"
	echo '{"version": 1, "network": {"resolve": {"mirror.test": "127.0.0.3"}}}' \
		>"$XDG_CONFIG_HOME/moat/oci/mirror.json"
	bundle b "$(jq -nc --arg c "$cmd" '["sh", "-c", $c]')" \
		'.annotations += {"run.moat.allow-hosts": "mirror.test:'"$port"'",
			"run.moat.policy": "mirror", "run.moat.log": "n1.jsonl"}'
	START="$RT --root $ROOT start n1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid n1 >log 2>&1 || true
	assert_contains "$(cat log)" "pkg-$$" "the allowed name through moat's proxy"
	assert_contains "$(cat log)" "denied-other" "another name"
	local audit="$ROOT/.logs/n1.jsonl"
	assert_contains "$(cat "$audit")" '"host":"other.test"' "the denial in the audit stream"
	assert_contains "$(cat "$audit")" '"action":"deny"'
	oci delete n1
	# an annotation cannot map a name, nor pick a secret or a log path
	refused annotations.run.moat.resolve '.annotations["run.moat.resolve"] = "mirror.test=127.0.0.3"'
	refused annotations.run.moat.secrets '.annotations["run.moat.secrets"] = "HOME@evil.test"'
	refused annotations.run.moat.log '.annotations["run.moat.log"] = "/etc/ld.so.preload"' 
	# control: without the annotation the container has no network at all
	bundle b "$(jq -nc --arg c "wget -q -O - http://127.0.0.3:$port/pkg.txt || echo no-net" '["sh", "-c", $c]')"
	START="$RT --root $ROOT start n2" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid n2 >log 2>&1 || true
	assert_contains "$(cat log)" "no-net"
	assert_not_contains "$(cat log)" "pkg-$$"
	oci delete n2
	# positive control: the mirror answers on the host
	assert_eq "pkg-$$" "$("$BUSYBOX" wget -q -O - "http://127.0.0.3:$port/pkg.txt")" "control: the host"
	kill "$srv" 2>/dev/null || true
}

# An engine's network namespace (linux.namespaces network with a path, as
# podman's bridge or a pod's): a namespace of the test's own (unprivileged:
# in its own user namespace) with a web server on its loopback only. With
# allow-hosts the proxy dials from it and the container stays in moat's own
# namespace behind the capture rules; without, the container has lo only.
t_engine_netns() {
	need_busybox
	mkdir -p www
	echo "ns-$$" >www/pkg.txt
	local uns=() srv port='' ns
	is_root || uns=(-r)
	unshare "${uns[@]}" -n sh -c 'ip link set lo up &&
		exec python3 -u -m http.server 0 --bind 127.0.0.3 --directory www' >srv.log 2>&1 &
	srv=$!
	# shellcheck disable=SC2064 # this server, however the test ends
	trap "kill $srv 2>/dev/null || true" EXIT
	for _ in $(seq 50); do
		port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' srv.log | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || fail "the server in the test's namespace did not start: $(cat srv.log)"
	ns=/proc/$srv/ns/net
	# positive control: the server is not reachable from the host's namespace
	if "$BUSYBOX" wget -q -T 2 -O - "http://127.0.0.3:$port/pkg.txt" >/dev/null 2>&1; then
		fail "control: the engine's server answers on the host too"
	fi
	export XDG_CONFIG_HOME="$T_OUT/config"
	mkdir -p "$XDG_CONFIG_HOME/moat/oci"
	echo '{"version": 1, "network": {"resolve": {"mirror.test": "127.0.0.3"}}}' \
		>"$XDG_CONFIG_HOME/moat/oci/mirror.json"
	local cmd="wget -q -O - http://mirror.test:$port/pkg.txt; wget -q -O - http://other.test:$port/pkg.txt || echo denied-other; wget -q -O - http://127.0.0.3:$port/pkg.txt || echo direct-refused; readlink /proc/self/ns/net"
	bundle b "$(jq -nc --arg c "$cmd" '["sh", "-c", $c]')" \
		'.linux.namespaces[2].path = "'"$ns"'" |
		.annotations += {"run.moat.allow-hosts": "mirror.test:'"$port"'",
			"run.moat.policy": "mirror", "run.moat.log": "e1.jsonl"}'
	START="$RT --root $ROOT start e1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid e1 >log 2>&1 || true
	assert_contains "$(cat log)" "ns-$$" "the proxy dialled from the engine's namespace"
	assert_contains "$(cat log)" "denied-other" "another name"
	# the container's own TCP is captured (the transparent proxy refuses a
	# bare address that no allowed name resolves to), never routed out
	assert_contains "$(cat log)" "direct-refused" "a direct connection"
	assert_not_contains "$(cat log)" "$(readlink "$ns")" "the container is not in the engine's namespace"
	assert_contains "$(cat log)" "net:[" "the container's namespace"
	local audit="$ROOT/.logs/e1.jsonl"
	assert_contains "$(cat "$audit")" '"host":"other.test"' "the denial in the audit stream"
	assert_contains "$(jq -r 'select(.type == "config" and .field == "linux.namespaces[2]") | .note' "$audit")" \
		"dials from" "the config event"
	oci delete e1
	# without egress: moat's own namespace, lo only; the engine's unused
	cmd="wget -q -O - http://127.0.0.3:$port/pkg.txt || echo no-net"
	bundle b "$(jq -nc --arg c "$cmd" '["sh", "-c", $c]')" \
		'.linux.namespaces[2].path = "'"$ns"'" | .annotations += {"run.moat.log": "e2.jsonl"}'
	START="$RT --root $ROOT start e2" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid e2 >log 2>&1 || true
	assert_contains "$(cat log)" "no-net"
	assert_not_contains "$(cat log)" "ns-$$"
	assert_contains "$(jq -r 'select(.type == "config" and .field == "linux.namespaces[2]") | .note' \
		"$ROOT/.logs/e2.jsonl")" "not used" "the config event (no egress)"
	oci delete e2
	# a path that is not a network namespace fails create, naming it
	refused "not a namespace" '.linux.namespaces[2].path = "/etc/hostname" |
		.annotations += {"run.moat.allow-hosts": "x.test"}'
	refused "not a network namespace" '.linux.namespaces[2].path = "/proc/self/ns/pid" |
		.annotations += {"run.moat.allow-hosts": "x.test"}'
	kill "$srv" 2>/dev/null || true
}

t_cli() {
	"$RT" --version | grep -q 'moat-oci version' || fail "--version"
	"$MOAT" oci --version | grep -q 'spec:' || fail "moat oci --version"
	"$RT" features | jq -e '.linux.namespaces | index("pid")' >/dev/null || fail "features"
	if "$RT" --root "$ROOT" checkpoint x 2>err; then fail "checkpoint"; fi
	assert_contains "$(cat err)" "not supported"
	# podman's capability probe must say no
	if "$RT" checkpoint --help >/dev/null 2>&1; then fail "checkpoint --help succeeded"; fi
	if "$RT" --root "$ROOT" state '../x' 2>err; then fail "an id with a slash"; fi
	assert_contains "$(cat err)" "container id"
	# --log --log-format json: the error as a JSON line (containerd reads it)
	"$RT" --root "$ROOT" --log "$T_OUT/rt.log" --log-format json state nosuch 2>/dev/null || true
	jq -e 'select(.level == "error") | .msg' "$T_OUT/rt.log" | grep -q "does not exist" ||
		fail "the log line: $(cat "$T_OUT/rt.log")"
}

# ---- podman -------------------------------------------------------------------

podman_env() {
	local P=$T_OUT/podman
	mkdir -p "$P"
	cat >"$P/containers.conf" <<EOF
[containers]
# this machine's hard nofile limit is below podman's default ask
default_ulimits = ["nofile=1024:1024"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$P/events.log"
runtime = "moat"
runtime_supports_json = ["moat"]
runtime_supports_nocgroup = ["moat"]
[engine.runtimes]
moat = ["$RT"]
EOF
	cat >"$P/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$P/storage"
runroot = "$P/run"
EOF
	export CONTAINERS_CONF="$P/containers.conf" CONTAINERS_STORAGE_CONF="$P/storage.conf"
	export CONTAINERS_REGISTRIES_CONF="$P/registries.conf"
	: >"$P/registries.conf"
	if ! is_root; then
		export XDG_CONFIG_HOME="$P/config" HOME="$P/home"
		mkdir -p "$HOME" "$XDG_CONFIG_HOME"
	fi
	[ -f "$P/bb.tar" ] || {
		make_rootfs "$P/rootfs"
		# a red-team probe (static): seccomp inside the podman container
		cp "$MOAT_PROBES/rt005_userns" "$P/rootfs/bin/"
		tar -C "$P/rootfs" --owner=0 --group=0 --numeric-owner -cf "$P/bb.tar" .
	}
	timeout 120 podman import -q "$P/bb.tar" localhost/moat-bb:1 >/dev/null
}
pm() { timeout 60 podman "$@"; }

# Rootless podman keeps a "podman pause" process holding its user namespace
# after it exits, and conmon starts one more podman (its cleanup) after the
# container ended: end every podman or conmon process of ours that runs with
# this test's own XDG_RUNTIME_DIR (never another's), until none is left.
podman_end_pause() {
	local i pid e found
	for i in $(seq 50); do
		found=0
		for pid in $(pgrep -u "$(id -u)" '^(podman|conmon)'); do
			e=$({ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null) || continue
			grep -qxF "XDG_RUNTIME_DIR=$XDG_RUNTIME_DIR" <<<"$e" || continue
			kill -KILL "$pid" 2>/dev/null || true
			found=1
		done
		[ "$found" = 0 ] && [ "$i" -gt 10 ] && return 0
		sleep 0.1
	done
}
PRUN=(--pull=never --read-only --network=none --user 1000:1000)

# Rootless podman runs the runtime as uid 0 of its user namespace (uid 0
# there is this user's uid outside): moat takes its unprivileged path, state
# under XDG_RUNTIME_DIR, the container's user mapped onto that one uid.
t_podman_rootless() {
	local rc=0 out
	trap podman_end_pause EXIT
	out=$(pm run --rm "${PRUN[@]}" localhost/moat-bb:1 sh -c 'echo hi; cat /proc/self/uid_map
		grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status; exit 4' 2>&1) || rc=$?
	assert_eq 4 "$rc" "rootless podman run's exit status"
	assert_contains "$out" hi
	assert_contains "$out" "Seccomp:	2" "seccomp in the rootless container"
	assert_contains "$out" "NoNewPrivs:	1"
	assert_contains "$out" "CapEff:	0000000000000000" "no capability"
	# one id mapped: the container's user onto the runtime's uid 0 (the user)
	assert_eq 1 "$(grep -c '^ *1000 *0 *1$' <<<"$out")" "the container's uid map: $out"
	[ -d "$XDG_RUNTIME_DIR/moat-oci" ] || fail "the state is not under XDG_RUNTIME_DIR"
	# no --user: the image's root, mapped onto the runtime's uid 0 (the user)
	rc=0
	out=$(pm run --rm --pull=never --read-only --network=none localhost/moat-bb:1 sh -c 'id -u
		cat /proc/self/uid_map; grep -E "^Cap(Eff|Bnd):" /proc/self/status' 2>&1) || rc=$?
	assert_eq 0 "$rc" "rootless podman without --user: $out"
	assert_eq 0 "$(head -n 1 <<<"$out")" "rootless podman without --user: uid 0 inside"
	assert_eq 1 "$(grep -c '^ *0 *0 *1$' <<<"$out")" "rootless, no --user: the uid map: $out"
	assert_contains "$out" "CapEff:	0000000000000000" "rootless, no --user: no capability"
	assert_contains "$out" "CapBnd:	0000000000000000" "rootless, no --user: empty bounding set"
	# seccomp's denial inside, with its positive control outside (as this
	# same user, where a user namespace can be made)
	"$MOAT_PROBES/rt005_userns" >ctl.out 2>&1 || true
	assert_contains "$(cat ctl.out)" "RT-005/unshare-newuser FAIL" "control: outside"
	out=$(pm run --rm "${PRUN[@]}" localhost/moat-bb:1 /bin/rt005_userns 2>&1 || true)
	assert_contains "$out" "RT-005/unshare-newuser BLOCKED" "the probe inside"
	assert_not_contains "$out" " FAIL " "the probe inside"
	# egress: only through moat's proxy; a denied name in the audit stream
	rc=0
	out=$(pm run --rm "${PRUN[@]}" --annotation run.moat.allow-hosts=allowed.test \
		--annotation run.moat.log=pr.jsonl localhost/moat-bb:1 \
		sh -c 'wget -q -O - http://other.test/ || echo denied-other' 2>&1) || rc=$?
	assert_contains "$out" denied-other
	assert_contains "$(cat "$XDG_RUNTIME_DIR/moat-oci/.logs/pr.jsonl")" '"host":"other.test"' \
		"the denial in the rootless container's audit stream"
	# -d, exec, stop, rm
	pm run -d --name r1 "${PRUN[@]}" localhost/moat-bb:1 sleep 100 >/dev/null
	rc=0
	pm exec r1 sh -c 'exit 7' || rc=$?
	assert_eq 7 "$rc" "rootless podman exec's exit status"
	pm stop -t 2 r1 >/dev/null
	pm rm r1 >/dev/null
	# slirp4netns (podman's default rootless network): a namespace of the
	# engine's, the proxy's upstream; the container in moat's own
	if command -v slirp4netns >/dev/null; then
		rc=0
		out=$(pm run --rm --pull=never --read-only --user 1000:1000 \
			--annotation run.moat.allow-hosts=allowed.test --annotation run.moat.log=ps.jsonl \
			localhost/moat-bb:1 sh -c 'wget -q -O - http://other.test/ || echo denied-other' 2>&1) ||
			rc=$?
		assert_contains "$out" denied-other "slirp4netns"
		assert_contains "$(jq -r 'select(.type == "config") | .note' \
			"$XDG_RUNTIME_DIR/moat-oci/.logs/ps.jsonl")" "dials from" "slirp4netns: the upstream"
	elif [ "${MOAT_TEST_STRICT:-0}" = 1 ]; then
		fail "slirp4netns is not installed (scripts/deps.sh)"
	fi
	podman_end_pause
}

t_podman() {
	need_busybox
	command -v podman >/dev/null || skip "podman is not installed (scripts/deps.sh)"
	podman_env
	local rc=0 out
	if ! is_root; then
		t_podman_rootless
		return 0
	fi
	# linux.cgroupsPath: podman's cgroupfs default puts the container beside
	# conmon (/libpod_parent/libpod-ID, conmon in /libpod_parent/conmon):
	# neither below the runtime's own cgroup nor below /moat/, refused by name
	if pm run --rm "${PRUN[@]}" localhost/moat-bb:1 true 2>err; then
		fail "podman's default cgroup parent was accepted"
	fi
	assert_contains "$(cat err)" "linux.cgroupsPath /libpod_parent/" "the refusal names the field"
	# --cgroups=disabled (podman passes --cgroup-manager disabled): moat's own
	pm run --rm "${PRUN[@]}" --cgroups=disabled localhost/moat-bb:1 true ||
		fail "podman --cgroups=disabled"
	# below /moat/: honoured (the rest of the test runs there)
	local cgp=/moat/podman-$$
	PRUN+=(--cgroup-parent "$cgp")
	out=$(pm run --rm "${PRUN[@]}" localhost/moat-bb:1 sh -c 'echo hi; exit 4') || rc=$?
	assert_eq 4 "$rc" "podman run's exit status"
	assert_eq hi "$out" "podman run's output"
	# run -d, exec, logs, stop, rm
	pm run -d --name m1 "${PRUN[@]}" localhost/moat-bb:1 sh -c 'echo started; sleep 100' >/dev/null
	# the container's processes are in the engine's cgroup, which is their
	# cgroup namespace's root
	local cid
	cid=$(pm inspect -f '{{.Id}}' m1)
	grep -q . "/sys/fs/cgroup/pids/$cgp/libpod-$cid/cgroup.procs" ||
		fail "nothing in $cgp/libpod-$cid (pids): $(ls "/sys/fs/cgroup/pids/$cgp" 2>&1)"
	assert_contains "$(pm exec m1 cat /proc/self/cgroup)" "pids:/
" "the engine's cgroup is the container's root"
	rc=0
	out=$(pm exec m1 sh -c 'grep Seccomp: /proc/self/status; exit 7') || rc=$?
	assert_eq 7 "$rc" "podman exec's exit status"
	assert_contains "$out" "Seccomp:	2" "the exec is under seccomp"
	assert_contains "$(pm logs m1)" started "podman logs"
	pm stop -t 2 m1 >/dev/null
	pm rm m1 >/dev/null
	# run -t
	out=$(pm run --rm -t "${PRUN[@]}" localhost/moat-bb:1 tty | tr -d '\r')
	assert_contains "$out" "/dev/pts/" "podman run -t"
	# --pids-limit enforced
	out=$(pm run --rm "${PRUN[@]}" --pids-limit 16 localhost/moat-bb:1 sh -c \
		'i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done 2>&1; echo end' 2>&1 || true)
	assert_contains "$out" "fork" "--pids-limit"
	# --memory enforced: 200 MB in a shell variable under a 32 MB limit
	rc=0
	pm run --rm "${PRUN[@]}" --memory 32m localhost/moat-bb:1 sh -c \
		'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived ${#x}' >out 2>&1 || rc=$?
	assert_not_contains "$(cat out)" "survived" "--memory"
	[ "$rc" -ne 0 ] || fail "--memory: exit 0"
	# --network ns:PATH: podman hands moat a network namespace (one of the
	# test's own): the proxy's upstream, said in the audit stream
	unshare -n sleep 60 &
	local holder=$!
	# shellcheck disable=SC2064 # this holder, however the test ends
	trap "kill $holder 2>/dev/null || true" EXIT
	out=$(pm run --rm --pull=never --read-only --user 1000:1000 --network "ns:/proc/$holder/ns/net" \
		--cgroup-parent "$cgp" \
		--annotation run.moat.allow-hosts=allowed.test --annotation "run.moat.log=pn-$$.jsonl" \
		localhost/moat-bb:1 sh -c 'wget -q -O - http://other.test/ || echo denied-other' 2>&1 || true)
	assert_contains "$out" denied-other "podman --network ns:"
	# rootful podman gives no --root: moat's default state directory
	local plog=/run/moat-oci/.logs/pn-$$.jsonl
	assert_contains "$(jq -r 'select(.type == "config") | .note' "$plog")" "dials from" \
		"podman --network ns: the upstream"
	rm -f "$plog"
	kill "$holder" 2>/dev/null || true
	# no --user: the image's root, the container's own (uid 0 mapped to
	# moat's unprivileged host uid, no capability)
	out=$(pm run --rm --pull=never --read-only --network=none --cgroup-parent "$cgp" \
		localhost/moat-bb:1 sh -c 'id -u; grep -E "^Cap(Eff|Bnd):" /proc/self/status
		awk "{print \$1, \$2}" /proc/self/uid_map' 2>&1) || fail "podman run as root: $out"
	assert_eq 0 "$(head -n 1 <<<"$out")" "podman without --user: uid 0 inside"
	assert_contains "$out" "CapEff:	0000000000000000" "podman without --user: no capability"
	assert_contains "$out" "CapBnd:	0000000000000000" "podman without --user: empty bounding set"
	local h0
	h0=$(awk '$1 == 0 {print $2}' <<<"$out")
	[ -n "$h0" ] && [ "$h0" -ge 1000000000 ] || fail "podman without --user: uid 0 maps to host '$h0'"
	# a field moat cannot honour: podman reports moat's message
	if pm run --rm --pull=never --read-only --network=none --cgroup-parent "$cgp" \
		--user 65534 localhost/moat-bb:1 true 2>err; then
		fail "podman run as uid 65534 was accepted"
	fi
	assert_contains "$(cat err)" "process.user.uid"
	pm rmi -f localhost/moat-bb:1 >/dev/null 2>&1 || true
	# podman's conmon directories are its own; moat removed each container's
	[ -z "$(find /sys/fs/cgroup/*/"$cgp" -mindepth 1 -maxdepth 1 -type d -name 'libpod-*' 2>/dev/null)" ] ||
		fail "a container's cgroup was left: $(find /sys/fs/cgroup/*/"$cgp" -maxdepth 1 -type d)"
	find /sys/fs/cgroup/*/"$cgp" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

# podman without --read-only (root.readonly false): writes to the image's
# trees succeed and are lost with the container; the image is unchanged
t_podman_rw() {
	need_busybox
	command -v podman >/dev/null || skip "podman is not installed (scripts/deps.sh)"
	podman_env
	is_root || trap podman_end_pause EXIT
	local args=(--rm --pull=never --network=none --user 1000:1000) out
	is_root && args+=(--cgroups=disabled)
	out=$(pm run "${args[@]}" localhost/moat-bb:1 sh -c \
		'echo a >/bin/new && echo bin-ok; echo b >/etc/x 2>&1; mkdir /newdir 2>&1; true' 2>&1)
	assert_contains "$out" "bin-ok" "podman without --read-only: a write to /bin"
	assert_contains "$out" "'/newdir': Read-only file system" "no new name at /"
	assert_contains "$out" "/etc/x: Read-only file system" "moat's /etc stays read-only"
	out=$(pm run "${args[@]}" localhost/moat-bb:1 sh -c 'cat /bin/new 2>&1 || echo gone' 2>&1)
	assert_contains "$out" "gone" "the write was lost with the container"
	is_root || podman_end_pause
}

# ---- containerd ----------------------------------------------------------------

# A containerd of this test's own (its config, root, state and sockets under
# T_OUT; no CRI) with the runc shim pointed at moat (ctr --runc-binary). The
# shim's own paths are fixed (/run/containerd/s for its sockets, ctr's
# /run/containerd/fifo, the shim's runc root): containerd, ctr and the shims
# run in a private mount namespace whose /run/containerd is a tmpfs of the
# test's, so nothing of a machine's containerd is touched.
t_containerd() {
	need_busybox
	# containerd is a root daemon on this machine: nothing to drive as a user
	is_root || return 0
	command -v containerd >/dev/null && command -v ctr >/dev/null ||
		skip "containerd is not installed (scripts/deps.sh)"
	local D=$T_OUT/ctd
	mkdir -p "$D"
	cat >"$D/config.toml" <<EOF
version = 2
root = "$D/root"
state = "$D/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$D/c.sock"
[ttrpc]
  address = "$D/c.ttrpc"
[debug]
  address = "$D/debug.sock"
[metrics]
  address = ""
EOF
	# the namespace: held by a process of the test's own
	unshare -m --propagation private sleep 600 &
	local mns=$!
	# shellcheck disable=SC2064 # this holder, whatever happens
	trap "kill $mns 2>/dev/null || true" EXIT
	for _ in $(seq 50); do
		[ "$(readlink "/proc/$mns/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] && break
		sleep 0.05
	done
	in_ns() { nsenter -t "$mns" -m -- "$@"; }
	if [ -d /run/containerd ]; then
		in_ns mount -t tmpfs -o mode=0711 tmpfs /run/containerd
	else
		# no /run/containerd to cover: a tmpfs over /run, moat's own
		# /run/moat (its uid pool) bound back in
		mkdir -p "$D/hostrun" /run/moat
		in_ns sh -c 'mount --bind /run "$1" && mount -t tmpfs -o mode=0755 tmpfs /run &&
			mkdir -p /run/moat /run/containerd && mount --rbind "$1/moat" /run/moat' sh "$D/hostrun"
	fi
	# positive control: the namespace's /run/containerd is not the host's
	in_ns touch /run/containerd/.moat-test-$$
	[ ! -e "/run/containerd/.moat-test-$$" ] || fail "the private /run/containerd is the host's"
	# nsenter execs containerd: $! is its pid
	nsenter -t "$mns" -m -- containerd --config "$D/config.toml" >"$D/log" 2>&1 &
	local cpid=$!
	# shellcheck disable=SC2064 # this containerd and the holder, whatever happens
	trap "kill $cpid $mns 2>/dev/null || true" EXIT
	for _ in $(seq 100); do [ -S "$D/c.sock" ] && break; sleep 0.1; done
	[ -S "$D/c.sock" ] || fail "containerd did not start: $(tail -5 "$D/log")"
	# (nsenter -m starts in /: the working directory again)
	c() { timeout 60 nsenter -t "$mns" -m --wd="$PWD" -- ctr --address "$D/c.sock" "$@"; }
	# ctr --config takes the spec as it is (ctr has no --user: the bundle's)
	bundle b '["sh", "-c", "echo from-ctr; id -u; exit 6"]'
	local rc=0
	c run --rm --config b/config.json --runc-binary "$RT" k1 >out 2>&1 || rc=$?
	assert_eq 6 "$rc" "ctr run's exit status (the shim waits for the pid file's pid): $(cat out)"
	assert_contains "$(cat out)" "from-ctr"
	assert_contains "$(cat out)" "1000" "the user"
	# run -d, task exec, task ps, kill, delete
	bundle b '["sleep", "100"]'
	c run -d --config b/config.json --runc-binary "$RT" k2 >/dev/null
	rc=0
	c task exec --exec-id e1 k2 sh -c 'echo in-exec; exit 3' >out 2>&1 || rc=$?
	assert_eq 3 "$rc" "ctr task exec's exit status"
	assert_contains "$(cat out)" "in-exec"
	c task ps k2 >out 2>&1 || fail "ctr task ps: $(cat out)"
	c task kill -s KILL k2
	for _ in $(seq 50); do
		c task ls | grep -q 'k2.*STOPPED' && break
		sleep 0.1
	done
	assert_contains "$(c task ls)" "STOPPED" "after kill"
	c task delete k2
	c container delete k2
	# linux.cgroupsPath through the shim: the container's cgroup is there
	bundle b '["sleep", "100"]' ".linux.cgroupsPath = \"/moat/ctd-$$/k4\""
	c run -d --config b/config.json --runc-binary "$RT" k4 >/dev/null
	grep -q . "/sys/fs/cgroup/pids/moat/ctd-$$/k4/cgroup.procs" ||
		fail "nothing in /moat/ctd-$$/k4"
	c task kill -s KILL k4
	for _ in $(seq 50); do
		c task ls | grep -q 'k4.*STOPPED' && break
		sleep 0.1
	done
	c task delete k4
	c container delete k4
	[ ! -e "/sys/fs/cgroup/pids/moat/ctd-$$" ] || fail "ctr: the container's cgroup was left"
	# a refused field: the shim reports moat's message
	bundle b '["true"]' '.process.user.uid = 65534'
	if c run --rm --config b/config.json --runc-binary "$RT" k3 >out 2>&1; then
		fail "ctr run as uid 65534 was accepted"
	fi
	assert_contains "$(cat out)" "process.user.uid"
	c container delete k3 >/dev/null 2>&1 || true
	kill "$cpid"
	wait "$cpid" 2>/dev/null || true
	kill "$mns" 2>/dev/null || true
}

# limit LOG NAME: "soft hard" of /proc/self/limits' line NAME in LOG
limit() { grep "^$2 " "$1" | sed "s/^$2 *//" | awk '{print $1, $2}'; }

# process.rlimits: every type's soft and hard reach the container's process
# (/proc/self/limits inside); NPROC is lowered to moat's pids limit, CORE
# stays 0; a hard value above what moat may set, an unknown type and a type
# given twice fail create naming the field
t_rlimits() {
	need_busybox
	local nproc hn
	nproc=$(ulimit -Hu)
	[ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
	bundle b '["cat", "/proc/self/limits"]' '.process.rlimits = [
		{type: "RLIMIT_NOFILE", soft: 200, hard: 300},
		{type: "RLIMIT_STACK", soft: 4194304, hard: 6291456},
		{type: "RLIMIT_MSGQUEUE", soft: 4096, hard: 8192},
		{type: "RLIMIT_CPU", soft: 100, hard: 200},
		{type: "RLIMIT_SIGPENDING", soft: 50, hard: 60},
		{type: "RLIMIT_DATA", soft: 1073741824, hard: 2147483648},
		{type: "RLIMIT_AS", soft: 4294967296, hard: 8589934592},
		{type: "RLIMIT_NPROC", soft: 100000000, hard: 100000000},
		{type: "RLIMIT_CORE", soft: 1024, hard: 1024}]'
	START="$RT --root $ROOT start l1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" --log "$T_OUT/l1.log" create --bundle b --pid-file pid l1 \
		>log 2>&1 || true
	tr -d '\r' <log >limits
	assert_eq "200 300" "$(limit limits 'Max open files')" "NOFILE: soft and hard as given"
	assert_eq "4194304 6291456" "$(limit limits 'Max stack size')" "STACK"
	assert_eq "4096 8192" "$(limit limits 'Max msgqueue size')" "MSGQUEUE"
	assert_eq "100 200" "$(limit limits 'Max cpu time')" "CPU"
	assert_eq "50 60" "$(limit limits 'Max pending signals')" "SIGPENDING"
	assert_eq "1073741824 2147483648" "$(limit limits 'Max data size')" "DATA (set before exec)"
	assert_eq "4294967296 8589934592" "$(limit limits 'Max address space')" "AS (set before exec)"
	assert_eq "$nproc $nproc" "$(limit limits 'Max processes')" "NPROC: moat's pids limit, the lower"
	assert_eq "0 0" "$(limit limits 'Max core file size')" "CORE stays 0"
	assert_contains "$(cat l1.log)" "RLIMIT_CORE: moat sets 0" "a nonzero CORE is a note"
	oci delete l1
	# control: the bundle's plain rlimits (NOFILE 1024 only): the probe tells
	# the two apart
	bundle b '["cat", "/proc/self/limits"]'
	START="$RT --root $ROOT start l2" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid l2 >log 2>&1 || true
	tr -d '\r' <log >limits
	assert_eq "1024 1024" "$(limit limits 'Max open files')" "control: NOFILE 1024"
	[ "$(limit limits 'Max stack size')" != "4194304 6291456" ] || fail "control: STACK"
	oci delete l2
	hn=$(ulimit -Hn)
	refused 'process.rlimits[0]' ".process.rlimits = [{type: \"RLIMIT_NOFILE\", soft: 10, hard: $((hn + 1))}]"
	refused 'process.rlimits[1]' '.process.rlimits += [{type: "RLIMIT_MSGQUEUE", soft: 1, hard: '"$(($(ulimit -Hq) + 1))"'}]'
	assert_contains "$(cat err)" "above what moat may set"
	refused 'process.rlimits[1]' '.process.rlimits += [{type: "RLIMIT_BOGUS", soft: 1, hard: 1}]'
	refused 'process.rlimits[1]' '.process.rlimits += [{type: "RLIMIT_NOFILE", soft: 1, hard: 1}]'
	assert_contains "$(cat err)" "given twice"
	refused 'process.rlimits[0]' '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 20, hard: 10}]'
}

# exec --process: the container's rlimits (podman repeats them) are the
# exec'd process's; another value is refused naming the field
t_rlimits_exec() {
	need_busybox
	bundle b '["sleep", "100"]' '.process.rlimits = [{type: "RLIMIT_NOFILE", soft: 200, hard: 300},
		{type: "RLIMIT_STACK", soft: 4194304, hard: 6291456}]'
	oci create --bundle b l3 </dev/null >/dev/null 2>&1
	oci start l3
	jq -n '{user: {uid: 1000, gid: 1000}, args: ["cat", "/proc/self/limits"],
		env: ["PATH=/bin"], cwd: "/", terminal: false,
		rlimits: [{type: "RLIMIT_STACK", soft: 4194304, hard: 6291456},
			{type: "RLIMIT_NOFILE", soft: 200, hard: 300}]}' >proc.json
	oci exec --process proc.json l3 >limits 2>err || fail "exec with the container's rlimits: $(cat err)"
	assert_eq "200 300" "$(limit limits 'Max open files')" "exec: the container's NOFILE"
	assert_eq "4194304 6291456" "$(limit limits 'Max stack size')" "exec: the container's STACK"
	jq '.rlimits[1].soft = 100' proc.json >p2.json
	if oci exec --process p2.json l3 >out 2>err; then fail "exec with another NOFILE"; fi
	assert_contains "$(cat err)" "process.rlimits[1]"
	jq '.rlimits = [{type: "RLIMIT_CPU", soft: 1, hard: 1}]' proc.json >p3.json
	if oci exec --process p3.json l3 >out 2>err; then fail "exec with a CPU limit"; fi
	assert_contains "$(cat err)" "process.rlimits[0]"
	oci delete --force l3
}

# the memory cgroup's memory.oom_control of a live container ("" if none)
oom_control() {
	local p c
	for p in $(oci ps --format json "$1" | jq -r '.[]'); do
		c=$(sed -n 's/^[0-9]*:memory://p' "/proc/$p/cgroup" 2>/dev/null)
		case $c in */moat/*) echo "/sys/fs/cgroup/memory$c/memory.oom_control"; return ;; esac
	done
}

# linux.resources.memory.disableOOMKiller: as root on cgroup v1 the
# container's memory cgroup has oom_kill_disable: at its limit the process
# stalls (under_oom) instead of dying, and kill/delete still end it; the
# control without the field is OOM-killed. Where moat's cgroup layer is not
# used (the unprivileged user, --cgroup-manager disabled) or the memory
# controller is v2, create fails naming the field.
t_oom_killer_disabled() {
	need_busybox
	local grow='["sh", "-c", "echo start; a=x; while :; do a=\"$a$a\"; done"]'
	local lim='.linux.resources.memory.limit = 33554432'
	refused linux.resources.memory.disableOOMKiller \
		"$lim | .linux.resources.memory.disableOOMKiller = \"yes\""
	# --cgroup-manager disabled: no cgroup of moat's, refused
	bundle nb '["true"]' "$lim | .linux.resources.memory.disableOOMKiller = true"
	if timeout 30 "$RT" --root "$ROOT" --cgroup-manager disabled create --bundle nb n1 \
		</dev/null 2>err; then
		oci delete --force n1 || true
		fail "disableOOMKiller accepted without moat's cgroup layer"
	fi
	assert_contains "$(cat err)" "linux.resources.memory.disableOOMKiller"
	[ ! -e "$ROOT/n1" ] || fail "a refused create left state"
	if [ "$(id -u)" != 0 ] || ! grep -qE '^[0-9]+:memory:' /proc/self/cgroup; then
		# unprivileged, or memory on cgroup v2: refused by name, nothing left
		refused linux.resources.memory.disableOOMKiller \
			"$lim | .linux.resources.memory.disableOOMKiller = true"
		return 0
	fi
	# control: the same process without the field is killed at the limit
	bundle b "$grow" "$lim"
	START="$RT --root $ROOT start m1" timeout 60 python3 "$HELPER" reap pid -- \
		"$RT" --root "$ROOT" create --bundle b --pid-file pid m1 >log 2>&1 || true
	assert_eq "signaled 9" "$(cat pid.status)" "control: OOM-killed at the memory limit"
	oci delete m1
	bundle b "$grow" "$lim | .linux.resources.memory.disableOOMKiller = true"
	oci create --bundle b m2 </dev/null >log 2>&1
	oci start m2
	local f="" i
	for i in $(seq 100); do
		f=$(oom_control m2)
		[ -n "$f" ] && grep -q '^under_oom 1' "$f" && break
		sleep 0.1
	done
	[ -n "$f" ] || fail "no memory cgroup of the container"
	assert_contains "$(cat "$f")" "oom_kill_disable 1" "the cgroup's OOM killer is off"
	assert_contains "$(cat "$f")" "under_oom 1" "the process waits at the limit"
	sleep 1
	assert_eq running "$(oci state m2 | jq -r .status)" "not killed: it stalls"
	assert_contains "$(cat "$f")" "oom_kill 0" "nothing was OOM-killed"
	oci kill m2 KILL
	for i in $(seq 100); do
		[ "$(oci state m2 | jq -r .status)" = stopped ] && break
		sleep 0.1
	done
	assert_eq stopped "$(oci state m2 | jq -r .status)" "kill ends a stalled container"
	oci delete --force m2
	[ ! -e "$f" ] || fail "delete left the memory cgroup"
	# delete --force of a stalled one, without a kill first
	oci create --bundle b m3 </dev/null >log 2>&1
	oci start m3
	for i in $(seq 100); do
		f=$(oom_control m3)
		[ -n "$f" ] && grep -q '^under_oom 1' "$f" && break
		sleep 0.1
	done
	assert_contains "$(cat "$f")" "under_oom 1" "m3 waits at the limit"
	oci delete --force m3
	[ ! -e "$ROOT/m3" ] || fail "delete --force left state"
	[ ! -e "$f" ] || fail "delete --force left the memory cgroup"
}

run_test "create/start under a subreaper: pid file, exit status, output, state, delete" t_lifecycle
run_test "states created/running/stopped; start once; ps; kill; delete [--force]" t_states_kill
run_test "pause/resume: a spinning process stops (FROZEN) and goes on; kill/delete --force of a paused one (root); refused unprivileged" t_pause
run_test "a container killed by a signal: its supervisor is killed by it too" t_signal_status
run_test "process.user 0:0: the container's own root, unprivileged on the host, no capabilities" t_uid0_bundle
run_test "root.path: the bundle's whole root, read-only, symlinks kept inside" t_whole_root
run_test "root.readonly false: writes to the root in a bounded tmpfs, bundle unchanged, no new name at /" t_writable_root
run_test "exec --process (foreground and --detach --pid-file), same files, same user" t_exec
run_test "the console socket gets the container's terminal" t_console
run_test "config fields moat cannot honour fail create naming the field" t_refused_fields
run_test "namespace paths: of their kind, joined or not" t_ns_path_types
run_test "the spec's seccomp profile on top of moat's; pids limit" t_seccomp_limits
run_test "linux.cgroupsPath: the engine's placement below /moat/, else refused by name" t_cgroups_path
run_test "process.oomScoreAdj: raised is applied, lowered is refused" t_oom_score_adj
run_test "process.rlimits: every type's soft and hard, NPROC lowered, CORE 0, too high refused" t_rlimits
run_test "process.rlimits and exec --process: the container's, another refused" t_rlimits_exec
run_test "memory.disableOOMKiller: stalls at the limit, kill/delete end it (root, v1); else refused" t_oom_killer_disabled
run_test "run.moat.allow-hosts: moat's egress proxy, a denied name recorded" t_allow_hosts
run_test "an engine's network namespace: the proxy's upstream, the container in moat's own" t_engine_netns
run_test "--version, features, checkpoint refused (also --help), ids, --log json" t_cli
run_test "podman --runtime moat: run, exit codes, -d/exec/logs/stop/rm, -t, limits" t_podman
run_test "podman without --read-only: a writable root, lost with the container" t_podman_rw
run_test "containerd (ctr, runc shim with moat's binary): run, exit codes, exec, ps, kill, delete (root)" t_containerd
t_done
