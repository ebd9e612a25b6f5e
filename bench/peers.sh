#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The tools users would pick instead of moat (issue 9): installs the missing
# ones (Debian: bubblewrap, crun, firejail, hyperfine, gnuplot-nox and srt's
# socat and ripgrep; npm: @anthropic-ai/sandbox-runtime into bench/.peers)
# and times `/bin/true` under each, interleaved in one run, as root and as an
# unprivileged user. A peer that cannot be installed or run is reported as
# "missing: <reason>", never dropped.
#
#   bench/peers.sh            install, then measure
#   bench/peers.sh --install  install only (run-all.sh does this first)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PEERS_DIR=$BENCH_TOP/bench/.peers
SRT=$PEERS_DIR/node_modules/.bin/srt

peers_install() {
	local -a want=(bubblewrap crun firejail hyperfine gnuplot-nox socat ripgrep) missing=()
	local p
	for p in "${want[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
			missing+=("$p")
		fi
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "peers: missing Debian packages (run as root to install): ${missing[*]}" >&2
		else
			echo "peers: installing ${missing[*]}" >&2
			export DEBIAN_FRONTEND=noninteractive
			apt-get update -qq >/dev/null || true
			# One at a time, so that one package that is not available does
			# not keep the others out; what stays missing is reported.
			for p in "${missing[@]}"; do
				apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
					echo "peers: apt-get install $p failed" >&2
			done
		fi
	fi
	if [ ! -x "$SRT" ]; then
		if command -v npm >/dev/null; then
			echo "peers: installing @anthropic-ai/sandbox-runtime into bench/.peers" >&2
			mkdir -p "$PEERS_DIR"
			npm install --prefix "$PEERS_DIR" --no-audit --no-fund --loglevel=error \
				@anthropic-ai/sandbox-runtime >/dev/null 2>"$PEERS_DIR/npm.log" ||
				echo "peers: npm install failed (bench/.peers/npm.log)" >&2
		else
			echo "peers: npm not found, srt stays missing" >&2
		fi
	fi
	chmod -R a+rX "$PEERS_DIR" 2>/dev/null || true
}

# peers_crun_bundle DIR UID GID: an OCI bundle with the isolation of the
# others: user, pid, ipc, uts, net and mount namespaces, the host /usr
# read-only in an otherwise read-only rootfs with the merged-usr symlinks,
# tmpfs /tmp, fresh /proc and /dev, uid 1000 inside mapped to the caller.
peers_crun_bundle() {
	local dir=$1 uid=$2 gid=$3 l
	mkdir -p "$dir/rootfs"
	for l in usr proc dev tmp etc; do mkdir -p "$dir/rootfs/$l"; done
	for l in bin lib lib64 sbin; do ln -sfn "usr/$l" "$dir/rootfs/$l"; done
	: >"$dir/rootfs/etc/ld.so.cache"
	cat >"$dir/config.json" <<EOF
{
  "ociVersion": "1.0.0",
  "process": {
    "terminal": false,
    "user": { "uid": 1000, "gid": 1000 },
    "args": [ "/bin/true" ],
    "env": [ "PATH=/usr/bin:/bin" ],
    "cwd": "/",
    "capabilities": { "bounding": [], "effective": [], "permitted": [], "ambient": [] },
    "noNewPrivileges": true
  },
  "root": { "path": "rootfs", "readonly": true },
  "hostname": "moat",
  "mounts": [
    { "destination": "/usr", "type": "bind", "source": "/usr",
      "options": [ "rbind", "ro", "nosuid", "nodev" ] },
    { "destination": "/etc/ld.so.cache", "type": "bind", "source": "/etc/ld.so.cache",
      "options": [ "bind", "ro" ] },
    { "destination": "/proc", "type": "proc", "source": "proc" },
    { "destination": "/dev", "type": "tmpfs", "source": "tmpfs",
      "options": [ "nosuid", "mode=755", "size=65536k" ] },
    { "destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
      "options": [ "nosuid", "nodev", "mode=1777" ] }
  ],
  "linux": {
    "uidMappings": [ { "containerID": 1000, "hostID": $uid, "size": 1 } ],
    "gidMappings": [ { "containerID": 1000, "hostID": $gid, "size": 1 } ],
    "namespaces": [
      { "type": "pid" }, { "type": "network" }, { "type": "ipc" },
      { "type": "uts" }, { "type": "user" }, { "type": "mount" }
    ]
  }
}
EOF
}

# peers_srt_settings FILE [DOMAIN...]: srt settings with an allowlist
# (empty: no network at all).
peers_srt_settings() {
	local file=$1 list="" d
	shift
	for d in "$@"; do list+="${list:+, }\"$d\""; done
	cat >"$file" <<EOF
{
  "network": { "allowedDomains": [ $list ], "deniedDomains": [] },
  "filesystem": { "denyRead": [], "allowWrite": [ "/tmp" ], "denyWrite": [] }
}
EOF
	chmod 644 "$file"
}

# peers_add_cases: every peer's `/bin/true` as a case for the next run, as
# $BENCH_USER; each missing peer is noted with its reason.
peers_add_cases() {
	local suite=$1 w
	w=$(bench_workdir peers)
	if command -v crun >/dev/null; then
		# crun 1.8 refuses a hybrid cgroup layout whose v2 hierarchy holds a
		# controller (here hugetlb) even with --cgroup-manager=disabled: hide
		# the v2 mount for this run only (every case of it, alike).
		if [ -d /sys/fs/cgroup/unified ] && grep -q . /sys/fs/cgroup/unified/cgroup.controllers; then
			BENCH_HIDE=/sys/fs/cgroup/unified
			bench_note "$suite" "run in a private mount namespace with /sys/fs/cgroup/unified hidden (crun vs hybrid cgroups)"
		fi
		peers_crun_bundle "$w/crun" "$(id -u "$BENCH_USER")" "$(id -g "$BENCH_USER")"
		mkdir -p "$w/crun-state"
		chown -R "$BENCH_USER:" "$w/crun-state"
		bench_case crun crun --root "$w/crun-state" --cgroup-manager=disabled run \
			--bundle "$w/crun" "moat-bench-$BENCH_USER"
	else
		bench_note "$suite" "crun missing: not installed (Debian crun)"
	fi
	if command -v firejail >/dev/null; then
		bench_case firejail firejail --quiet --noprofile --net=none --ipc-namespace \
			--hostname=moat --private-tmp --private-dev --read-only=/ /bin/true
	else
		bench_note "$suite" "firejail missing: not installed (Debian firejail)"
	fi
	if [ -x "$SRT" ] && command -v node >/dev/null; then
		peers_srt_settings "$w/srt-none.json"
		peers_srt_settings "$w/srt-allow.json" example.com "*.example.org"
		bench_case srt env HOME="$w" "$SRT" -s "$w/srt-none.json" /bin/true
		bench_case srt-allowlist env HOME="$w" "$SRT" -s "$w/srt-allow.json" /bin/true
	else
		bench_note "$suite" "srt missing: npm install @anthropic-ai/sandbox-runtime failed or node missing"
	fi
}

if [ "${1:-}" = --install ]; then
	peers_install
	exit 0
fi
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	return 0
fi

peers_install
bench_setup
runs=$(bench_runs 20)
for BENCH_USER in $(bench_users); do
	bench_case bare /bin/true
	bench_case moat "$MOAT" run -- /bin/true
	bench_case moat-net-allow "$MOAT" run --net allow -- /bin/true
	bench_case bwrap "${BENCH_BWRAP[@]}" /bin/true
	peers_add_cases peers
	bench_run peers "$runs" 90
	BENCH_HIDE=
	bench_ratio peers "start-up moat / bwrap" moat bwrap "<=" 1.0
	bench_ratio peers "start-up moat / crun" moat crun info -
	bench_ratio peers "start-up moat / firejail" moat firejail info -
	bench_ratio peers "start-up moat / srt" moat srt "<=" 0.02
	bench_ratio peers "start-up moat --net allow / srt allowlist" moat-net-allow srt-allowlist "<=" 0.05
	echo
done
