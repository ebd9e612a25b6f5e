#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Kubernetes path without a kubelet (issue 16, docs/KUBERNETES.md):
# containerd 1.6's CRI plugin with a runtime handler `moat` (the runc shim,
# BinaryName = moat-oci), driven over the CRI v1 gRPC API by a small client of
# the test's own (cri_client.mjs, cri_api.proto; @grpc/grpc-js and
# @grpc/proto-loader from npm, pinned, in the test npm cache): RunPodSandbox
# with runtime_handler moat, CreateContainer, StartContainer, ExecSync,
# ContainerStatus, StopPodSandbox, RemovePodSandbox. Nothing is pulled: the
# image (also the pod's sandbox image) is a busybox-static rootfs the test
# writes as an OCI image layout and imports with `ctr -n k8s.io images
# import`. No CNI here: the pod has host networking (NamespaceOption NODE)
# and moat gives each container its own network namespace anyway. moat's
# layers are checked from inside (seccomp mode 2, NoNewPrivs 1 in
# /proc/self/status, via ExecSync), with the same pod under the handler
# `runc` as the positive control (no seccomp, no no_new_privs: the pod does
# not ask for them). containerd is a root daemon: the pod test runs as root;
# as the unprivileged user only the client's API subset is checked.
# containerd, ctr and the shims run in a private mount namespace with their
# own root, state, sockets and /run/containerd (as oci.sh): nothing of a
# machine's containerd is touched.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
GRPC_JS_VERSION=1.14.7
PROTO_LOADER_VERSION=0.8.1
IMG=localhost/moat-bb:1

RT="$T_OUT/bin/moat-oci"
mkdir -p "$T_OUT/bin"
ln -s "$MOAT" "$RT"

# The client's packages: root installs into the shared, world-readable test
# cache the unprivileged run reuses; a user alone installs into its own.
SHARED_CACHE=/var/cache/moat-test/npm
grpc_present() {
	[ -r "$1/node_modules/@grpc/grpc-js/package.json" ] &&
		grep -q "\"version\": \"$GRPC_JS_VERSION\"" "$1/node_modules/@grpc/grpc-js/package.json" &&
		[ -r "$1/node_modules/@grpc/proto-loader/package.json" ] &&
		grep -q "\"version\": \"$PROTO_LOADER_VERSION\"" "$1/node_modules/@grpc/proto-loader/package.json"
}
grpc_dir() {
	local dir
	if is_root; then
		dir=$SHARED_CACHE
	elif grpc_present "$SHARED_CACHE"; then
		echo "$SHARED_CACHE"
		return 0
	else
		dir=${XDG_CACHE_HOME:-$HOME/.cache}/moat-test/npm
	fi
	if ! grpc_present "$dir"; then
		command -v npm >/dev/null || return 1
		(
			umask 022
			mkdir -p "$dir"
			npm install --prefix "$dir" --cache "$dir/.npm-cache" --no-audit --no-fund \
				--loglevel=error --save-exact "@grpc/grpc-js@$GRPC_JS_VERSION" \
				"@grpc/proto-loader@$PROTO_LOADER_VERSION" >"$dir/install-grpc.log" 2>&1
		) || return 1
		if is_root; then chmod -R a+rX "$dir"; fi
	fi
	echo "$dir"
}
need_grpc() {
	command -v node >/dev/null || skip "node not installed (scripts/deps.sh installs nodejs)"
	GRPC=$(grpc_dir) || skip "cannot install @grpc/grpc-js and @grpc/proto-loader from the npm registry"
}

BUSYBOX=$(command -v busybox || true)
need_busybox() {
	[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
		skip "busybox-static is not installed"
}

# blob DIR FILE: FILE moved into the layout's blobs as its sha256; prints the digest
blob() {
	local sum
	sum=$(sha256sum "$2" | cut -d' ' -f1)
	mv "$2" "$1/blobs/sha256/$sum"
	echo "sha256:$sum"
}

# oci_image TAR: an OCI image layout (one layer: a busybox-static rootfs,
# user 1000:1000, `sleep 3600` as its command: also a sandbox image) in TAR
oci_image() {
	local L=$T_OUT/layout r=$T_OUT/rootfs ld cd md arch
	mkdir -p "$L/blobs/sha256" "$r/bin" "$r/etc" "$r/tmp"
	cp "$BUSYBOX" "$r/bin/busybox"
	"$BUSYBOX" --list | while read -r a; do
		[ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
	done
	tar -C "$r" --owner=0 --group=0 --numeric-owner -cf "$T_OUT/layer.tar" .
	ld=$(blob "$L" "$T_OUT/layer.tar")
	arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	jq -cn --arg arch "$arch" --arg diff "$ld" '{architecture: $arch, os: "linux",
		config: {User: "1000:1000", Env: ["PATH=/bin"], Cmd: ["sleep", "3600"]},
		rootfs: {type: "layers", diff_ids: [$diff]}}' >"$T_OUT/config.json"
	cd=$(blob "$L" "$T_OUT/config.json")
	jq -cn --arg cd "$cd" --argjson cs "$(stat -c %s "$L/blobs/sha256/${cd#sha256:}")" \
		--arg ld "$ld" --argjson ls "$(stat -c %s "$L/blobs/sha256/${ld#sha256:}")" '{
		schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
		config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
		layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $ld, size: $ls}]}' \
		>"$T_OUT/manifest.json"
	md=$(blob "$L" "$T_OUT/manifest.json")
	jq -cn --arg md "$md" --argjson ms "$(stat -c %s "$L/blobs/sha256/${md#sha256:}")" \
		--arg name "$IMG" '{schemaVersion: 2, manifests: [{
		mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
		annotations: {"io.containerd.image.name": $name, "org.opencontainers.image.ref.name": "1"}}]}' \
		>"$L/index.json"
	echo '{"imageLayoutVersion": "1.0.0"}' >"$L/oci-layout"
	tar -C "$L" -cf "$1" .
}

# The API subset the client uses loads, with every method the test calls
# (also as the unprivileged user: no containerd needed).
t_api_subset() {
	need_grpc
	timeout 30 node --input-type=module -e '
import { createRequire } from "node:module";
const require = createRequire(process.argv[1] + "/node_modules/x.js");
const loader = require("@grpc/proto-loader");
const d = loader.loadSync(process.argv[2], { keepCase: true });
const want = ["RuntimeService.Version", "RuntimeService.RunPodSandbox", "RuntimeService.CreateContainer",
	"RuntimeService.StartContainer", "RuntimeService.ExecSync", "RuntimeService.ContainerStatus",
	"RuntimeService.StopPodSandbox", "RuntimeService.RemovePodSandbox", "ImageService.ImageStatus"];
for (const m of want) {
	const [s, f] = m.split(".");
	const svc = d["runtime.v1." + s];
	if (!svc || !svc[f] || svc[f].path !== "/runtime.v1." + s + "/" + f) {
		console.error("missing " + m);
		process.exit(1);
	}
}
console.log("ok");' "$GRPC" "$HERE/cri_api.proto" >out 2>&1 || fail "the API subset: $(cat out)"
	assert_eq ok "$(cat out)" "the API subset"
}

# end_shims SOCKET: the runc shims this test's containerd started (their
# -address is SOCKET, under the test's own directory) end with it; a shim
# outlives its containerd when a pod could not be stopped
end_shims() {
	local f pid
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		if tr '\0' '\n' <"$f" 2>/dev/null | grep -qxF -- "$1"; then
			kill "$pid" 2>/dev/null || true
		fi
	done
}

t_cri_pod() {
	need_busybox
	need_grpc
	command -v containerd >/dev/null && command -v ctr >/dev/null ||
		skip "containerd is not installed (scripts/deps.sh)"
	command -v runc >/dev/null || skip "runc is not installed (the positive control)"
	local D=$T_OUT/ctd
	mkdir -p "$D/cni-bin" "$D/cni-conf" "$D/pods"
	cat >"$D/config.toml" <<EOF
version = 2
root = "$D/root"
state = "$D/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs",
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
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMG"
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$D/cni-bin"
    conf_dir = "$D/cni-conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["run.moat.*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat.options]
        BinaryName = "$RT"
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
		mkdir -p "$D/hostrun" /run/moat
		in_ns sh -c 'mount --bind /run "$1" && mount -t tmpfs -o mode=0755 tmpfs /run &&
			mkdir -p /run/moat /run/containerd && mount --rbind "$1/moat" /run/moat' sh "$D/hostrun"
	fi
	in_ns touch /run/containerd/.moat-test-$$
	[ ! -e "/run/containerd/.moat-test-$$" ] || fail "the private /run/containerd is the host's"
	nsenter -t "$mns" -m -- containerd --config "$D/config.toml" >"$D/log" 2>&1 &
	local cpid=$!
	# shellcheck disable=SC2064 # this containerd and the holder, whatever happens
	trap "end_shims '$D/c.sock'; kill $cpid $mns 2>/dev/null || true" EXIT
	for _ in $(seq 100); do [ -S "$D/c.sock" ] && break; sleep 0.1; done
	[ -S "$D/c.sock" ] || fail "containerd did not start: $(tail -5 "$D/log")"
	c() { timeout 60 nsenter -t "$mns" -m --wd="$PWD" -- ctr --address "$D/c.sock" "$@"; }
	oci_image "$T_OUT/img.tar"
	c -n k8s.io images import "$T_OUT/img.tar" >out 2>&1 || fail "ctr images import: $(cat out)"
	# the pod's cgroup parent below /moat/ (linux.cgroupsPath is PARENT/ID):
	# without one containerd names /k8s.io/ID, outside what moat may create
	# unless the runtime sits at every hierarchy's root
	export CGROUP_PARENT=/moat/cri-$$
	pod_run() {
		timeout 60 nsenter -t "$mns" -m -- node "$HERE/cri_client.mjs" "$GRPC" "$D/c.sock" "$1" "$IMG" "$D/pods"
	}
	local got rc=0 ex
	# the pod's run.moat.allow-hosts reaches moat through containerd's
	# pod_annotations: its egress (the DNS stub in resolv.conf) is on
	got=$(POD_ANNOTATIONS='{"run.moat.allow-hosts": "allowed.test"}' pod_run moat) || rc=$?
	[ "$rc" -eq 0 ] || fail "the pod under moat: $got; containerd: $(grep -i 'error' "$D/log" | tail -5)"
	echo "# moat: $got"
	assert_contains "$(jq -c .image <<<"$got")" "$IMG" "ImageStatus"
	assert_eq CONTAINER_RUNNING "$(jq -r .state <<<"$got")" "ContainerStatus after StartContainer"
	ex=$(jq -r .exec.stdout <<<"$got")
	assert_eq 0 "$(jq -r .exec.exit_code <<<"$got")" "ExecSync's exit code"
	assert_contains "$ex" "Seccomp:	2" "moat's seccomp filter in the container"
	assert_contains "$ex" "NoNewPrivs:	1" "no_new_privs in the container"
	assert_contains "$ex" "CapEff:	0000000000000000" "no capabilities"
	assert_eq 1000 "$(tail -1 <<<"$ex")" "the container's user"
	assert_eq 7 "$(jq -r .exec_exit <<<"$got")" "ExecSync's exit code (exit 7)"
	assert_eq CONTAINER_EXITED "$(jq -r .stopped_state <<<"$got")" "ContainerStatus after StopPodSandbox"
	assert_eq true "$(jq -r .removed <<<"$got")" "RemovePodSandbox"
	assert_contains "$(jq -r .resolv <<<"$got")" "nameserver 127.0.0.53" \
		"the pod annotation run.moat.allow-hosts: moat's DNS stub"
	# control: the same pod without the annotation has no DNS (so the check
	# above sees the annotation)
	rc=0
	got=$(pod_run moat) || rc=$?
	[ "$rc" -eq 0 ] || fail "the pod under moat without annotations: $got"
	assert_contains "$(jq -r .resolv <<<"$got")" "no DNS" "control: no annotation, no egress"
	# positive control: the same pod under runc (no seccomp, no
	# no_new_privs: nothing asks for them), so the checks above see moat
	rc=0
	got=$(pod_run runc) || rc=$?
	[ "$rc" -eq 0 ] || fail "the pod under runc: $got"
	echo "# runc: $got"
	ex=$(jq -r .exec.stdout <<<"$got")
	assert_contains "$ex" "Seccomp:	0" "runc's container (control)"
	assert_contains "$ex" "NoNewPrivs:	0" "runc's container (control)"
	assert_eq 1000 "$(tail -1 <<<"$ex")" "the control's user"
	kill "$cpid"
	wait "$cpid" 2>/dev/null || true
	kill "$mns" 2>/dev/null || true
	# moat removed its containers' groups; the pod's parent is containerd's
	[ -z "$(find /sys/fs/cgroup/pids/moat/cri-$$ -mindepth 2 -type d 2>/dev/null)" ] ||
		fail "a container's cgroup was left under /moat/cri-$$"
	find /sys/fs/cgroup/*/moat/cri-$$ -depth -type d -exec rmdir {} \; 2>/dev/null || true
}

run_test "the CRI client's API subset (cri_api.proto) loads with every method the test calls" t_api_subset
# containerd's CRI is a root daemon (its snapshotter, its shims'
# /run/containerd): the unprivileged run does not count the pod test at all
if is_root; then
	run_test "containerd's CRI with runtime handler moat: pod, container, ExecSync (seccomp 2, no_new_privs), status, stop, remove; runc as the control (root)" t_cri_pod
else
	echo "# the CRI pod test runs as root only (containerd's CRI is a root daemon): see cri.sh's root run"
fi
t_done
