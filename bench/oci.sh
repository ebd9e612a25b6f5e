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

RUN=(run --rm --pull=never --read-only --network=none)
IMG=(localhost/moat-bench:1 /bin/true)
runs=$(bench_runs 20)
for BENCH_USER in $(bench_users); do
	P=$(bench_workdir "oci-$BENCH_USER")
	podman_env "$P"
	# rootless without /etc/subuid ranges only uid 0 is mapped, so runc
	# runs the process as that uid (the user outside); moat maps its uid
	# 1000 onto the same one
	ruser=(--user 1000:1000)
	[ "$BENCH_USER" = root ] || ruser=(--user 0:0)
	bench_case "podman runc" "${PENV[@]}" podman --runtime runc "${RUN[@]}" "${ruser[@]}" "${IMG[@]}"
	bench_case "podman moat" "${PENV[@]}" podman --runtime moat "${RUN[@]}" --user 1000:1000 "${IMG[@]}"
	bench_run oci "$runs" 240
	bench_ratio oci "podman run: moat / runc" "podman moat" "podman runc" "<=" 1.0
	podman_end "$P"
	echo
done
