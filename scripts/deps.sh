#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the Debian packages moat builds and tests with, if any are missing.
# Run as root on Debian 12; elsewhere it only reports what is missing.
set -euo pipefail

build_pkgs=(gcc make pkg-config libmicrohttpd-dev libjansson-dev libseccomp-dev nettle-dev libnftables-dev libssl-dev
	libpsl-dev libidn2-dev libunistring-dev libarchive-dev)
# libclang-rt-14-dev: libFuzzer and the sanitizer runtimes for `make fuzz`
# (only recommended by clang-14, so not pulled in by --no-install-recommends).
test_pkgs=(clang libclang-rt-14-dev python3 git curl openssl iproute2 util-linux passwd procps bubblewrap
	shellcheck cppcheck clang-format busybox-static make gcc nodejs
	podman runc conmon containerd jq file runsc zsh slirp4netns qemu-system-x86 linux-image-amd64 libcap2-bin)
# podman, runc, conmon, containerd: tests/integration/oci.sh runs podman and
# containerd (ctr) with moat as their runtime (runc: the reference runtime);
# tests/integration/cri.sh runs containerd's CRI plugin with a handler moat
# (runc: its control; the gRPC client's npm packages go to the test npm cache);
# qemu-system-x86, linux-image-amd64: the vm isolation level (tests/integration/vm.sh;
# libarchive-dev: test_vm.c reads its initramfs back);
# runsc: the gvisor isolation level (tests/integration/isolation.sh); zsh:
# tests/integration/install.sh parses the zsh completion; slirp4netns: rootless
# podman's default network (oci.sh: the engine's namespace as the proxy's upstream)
# libcap2-bin: tests/integration/image.sh reads file capabilities (getcap) of an
# unpacked image and of its control
# chromium: tests/integration/daily.sh runs the headless recipe of
# docs/AGENTS.md (122 MB download, 39 s to install here, ~6 s of test per user)
test_pkgs+=(chromium)
# socat: tests/integration/sessions.sh drives a session's socket directly (another
# user, a process inside the sandbox: both must be refused)
test_pkgs+=(socat)
# python3-pytest: tests/integration/docs.sh runs the README's `moat run --workspace . -- pytest -q`
test_pkgs+=(python3-pytest)
want=("${build_pkgs[@]}")
if [ "${1:-}" != "--build-only" ]; then
	want+=("${test_pkgs[@]}")
	# npm (tests/integration/mcp.sh installs the MCP SDK client): Debian's
	# package, unless the nodejs installed ships its own npm (NodeSource's)
	command -v npm >/dev/null || want+=(npm)
fi

missing=()
for p in "${want[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "moat: missing Debian packages: ${missing[*]}" >&2
	echo "moat: run as root: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "moat: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
