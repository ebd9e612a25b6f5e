#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 16: `podman run --rm --network=none IMG /bin/true` with moat as the
# runtime against the same with runc, in one interleaved run, as root and as
# the unprivileged user (rootless podman). The image is busybox-static,
# imported (nothing pulled); podman's configuration and storage are the
# stage's (vfs). Target: moat <= 1.0x runc.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
	bench_note oci "podman or runc is not installed (scripts/deps.sh)"
	exit 0
fi
BUSYBOX=$(command -v busybox || true)
if [ -z "$BUSYBOX" ]; then
	bench_note oci "busybox-static is not installed"
	exit 0
fi
ln -sf moat "$BENCH_STAGE/bin/moat-oci"

# podman_env DIR: containers.conf (runtimes moat and runc), storage.conf and
# the image; prints the env words that select them
podman_env() {
	local P=$1 r
	mkdir -p "$P/xdg" "$P/home" "$P/rootfs/bin" "$P/rootfs/etc" "$P/rootfs/tmp"
	chmod 0700 "$P/xdg"
	cat >"$P/containers.conf" <<EOF
[containers]
# this machine: hard nofile 20000, no CAP_SYS_RESOURCE (runc applies nproc too)
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$P/events.log"
runtime_supports_json = ["moat"]
runtime_supports_nocgroup = ["moat"]
[engine.runtimes]
moat = ["$BENCH_STAGE/bin/moat-oci"]
runc = ["$(command -v runc)"]
EOF
	cat >"$P/storage.conf" <<EOF
[storage]
driver = "vfs"
graphroot = "$P/storage"
runroot = "$P/run"
EOF
	: >"$P/registries.conf"
	r=$P/rootfs
	cp "$BUSYBOX" "$r/bin/busybox"
	"$BUSYBOX" --list | while read -r a; do
		[ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
	done
	tar -C "$r" --owner=0 --group=0 --numeric-owner -cf "$P/bb.tar" .
	chown -R "$BENCH_USER:" "$P"
	PENV=(env CONTAINERS_CONF="$P/containers.conf" CONTAINERS_STORAGE_CONF="$P/storage.conf"
		CONTAINERS_REGISTRIES_CONF="$P/registries.conf" XDG_RUNTIME_DIR="$P/xdg"
		XDG_CONFIG_HOME="$P/config" HOME="$P/home")
	bench_as_user "${PENV[@]}" podman import -q "$P/bb.tar" localhost/moat-bench:1 >/dev/null
}

# Rootless podman leaves its pause process (and conmon's late cleanup):
# end the ones of this stage's XDG_RUNTIME_DIR, by pid.
podman_end() {
	local P=$1 pid i
	for i in $(seq 30); do
		local found=0
		for pid in $(pgrep -u "$BENCH_USER" '^(podman|conmon)' 2>/dev/null || true); do
			{ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "XDG_RUNTIME_DIR=$P/xdg" ||
				continue
			kill -KILL "$pid" 2>/dev/null || true
			found=1
		done
		[ "$found" = 0 ] && [ "$i" -gt 5 ] && return 0
		sleep 0.1
	done
}

# The runtime alone, as root: create + start + delete --force of a prepared
# bundle (`runc spec` with uid 1000 and a read-only root, /bin/true of
# busybox-static), moat against runc, interleaved; then the memory (PSS)
# of moat's own processes per running container, 10 containers.
BENCH_USER=root
B=$(bench_workdir oci-bundle)
mkdir -p "$B/rootfs/bin" "$B/rootfs/etc" "$B/rootfs/tmp" "$B/st"
cp "$BUSYBOX" "$B/rootfs/bin/busybox"
ln -sf busybox "$B/rootfs/bin/true"
ln -sf busybox "$B/rootfs/bin/sleep"
(cd "$B" && runc spec)
jq --arg r "$B/rootfs" '.process.user = {uid: 1000, gid: 1000} | .root = {path: $r, readonly: true} |
	.process.args = ["/bin/true"] | .process.terminal = false' "$B/config.json" >"$B/c.json"
mv "$B/c.json" "$B/config.json"
# cycle RUNTIME: one container's create, start, delete (the id per round)
cat >"$B/cycle" <<'EOF2'
#!/bin/sh
set -e
rt=$1 root=$2 b=$3 id=c$$
"$rt" --root "$root" create --bundle "$b" "$id" </dev/null >/dev/null
"$rt" --root "$root" start "$id"
"$rt" --root "$root" delete --force "$id"
EOF2
chmod +x "$B/cycle"
bench_case "runtime runc" "$B/cycle" "$(command -v runc)" "$B/st-runc" "$B"
bench_case "runtime moat" "$B/cycle" "$BENCH_STAGE/bin/moat-oci" "$B/st" "$B"
bench_run oci "$(bench_runs 20)" 120
bench_ratio oci "create+start+delete: moat / runc" "runtime moat" "runtime runc" "<=" 1.0
# memory: 10 running containers (sleep); moat's own processes are every
# process `ps` lists for a container but the container's own (the
# supervisor and moat-init); PSS shares the pages they have in common
jq '.process.args = ["/bin/sleep", "600"]' "$B/config.json" >"$B/sleep.json"
mkdir -p "$B/s"
cp "$B/sleep.json" "$B/s/config.json"
pss=0
for i in $(seq 10); do
	"$BENCH_STAGE/bin/moat-oci" --root "$B/st" create --bundle "$B/s" "m$i" </dev/null >/dev/null 2>&1
	"$BENCH_STAGE/bin/moat-oci" --root "$B/st" start "m$i"
done
sleep 1
for i in $(seq 10); do
	for p in $("$BENCH_STAGE/bin/moat-oci" --root "$B/st" ps --format json "m$i" | jq -r '.[]'); do
		[ "$(readlink "/proc/$p/exe")" = "$B/rootfs/bin/busybox" ] && continue
		k=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
		pss=$((pss + ${k:-0}))
	done
done
for i in $(seq 10); do
	"$BENCH_STAGE/bin/moat-oci" --root "$B/st" delete --force "m$i" || true
done
bench_target oci "PSS of moat's processes per running container (10)" \
	"$(awk -v k="$pss" 'BEGIN { printf "%.2f", k / 10 / 1024 }')" "<=" 1.0 MiB

RUN=(run --rm --pull=never --read-only --network=none)
IMG=(localhost/moat-bench:1 /bin/true)
runs=$(bench_runs 20)
[ "${BENCH_OCI_PODMAN:-1}" = 1 ] || exit 0
for BENCH_USER in $(bench_users); do
	P=$(bench_workdir "oci-$BENCH_USER")
	podman_env "$P"
	# rootless without /etc/subuid ranges only uid 0 is mapped, so runc
	# runs the process as that uid (the user outside); moat maps its uid
	# 1000 onto the same one
	ruser=(--user 1000:1000)
	[ "$BENCH_USER" = root ] || ruser=(--user 0:0)
	# as root, podman's default cgroupfs parent (/libpod_parent) is outside
	# where moat may create a cgroup when moat itself does not sit at the
	# hierarchies' roots (docs/OCI.md, "podman"): both runtimes get the
	# same parent below /moat/
	cgp=()
	[ "$BENCH_USER" = root ] && cgp=(--cgroup-parent /moat/bench-podman)
	bench_case "podman runc" "${PENV[@]}" podman --runtime runc "${RUN[@]}" ${cgp[@]+"${cgp[@]}"} "${ruser[@]}" "${IMG[@]}"
	bench_case "podman moat" "${PENV[@]}" podman --runtime moat "${RUN[@]}" ${cgp[@]+"${cgp[@]}"} --user 1000:1000 "${IMG[@]}"
	bench_run oci "$runs" 240
	bench_ratio oci "podman run: moat / runc" "podman moat" "podman runc" "<=" 1.0
	podman_end "$P"
	echo
done
