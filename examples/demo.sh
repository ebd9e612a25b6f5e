#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make demo`: a real job in a sandbox, showing what it can and cannot do.
set -euo pipefail
cd "$(dirname "$0")/.."
MOAT=${MOAT:-$PWD/${O:-build}/moat}
work=$(mktemp -d /tmp/moat-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project"
cat >"$work/project/job.sh" <<'JOB'
#!/bin/sh
say() { printf '  %-46s %s\n' "$1" "$2"; }
say "I am" "$(id -un) (uid $(id -u)), host uid $(awk '{print $2}' /proc/self/uid_map)"
say "my capabilities" "$(grep CapEff /proc/self/status | cut -f2)"
say "processes I can see" "$(ls -d /proc/[0-9]* | wc -l)"
for p in /root /home/"$SUDO_USER" "$HOST_HOME/.ssh" /etc/shadow /run/docker.sock /var/lib; do
	[ -n "$p" ] && [ "$p" != "/home/" ] && { [ -e "$p" ] && say "$p" "VISIBLE" || say "$p" "not there"; }
done
(echo x > /usr/bin/evil) 2>/dev/null && say "write /usr/bin/evil" "WORKED" || say "write /usr/bin/evil" "refused (read-only)"
echo "result from the sandbox" > result.txt && say "write to the workspace" "ok"
say "SECRET_TOKEN in my environment" "${SECRET_TOKEN:-absent}"
if python3 -c 'import socket,os; socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=2)' 2>/dev/null; then
	say "connect to the host's 127.0.0.1:$HOST_PORT" "CONNECTED"
else
	say "connect to the host's 127.0.0.1:$HOST_PORT" "refused (own network namespace)"
fi
unshare -U true 2>/dev/null && say "create a user namespace" "WORKED" || say "create a user namespace" "denied (seccomp)"
JOB
chmod +x "$work/project/job.sh"
# a service on the host's loopback that the sandbox must not reach
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 "$port" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), timeout=1)" 2>/dev/null && break
	sleep 0.1
done
echo "moat demo: running job.sh in a sandbox with only $work/project visible"
echo
SECRET_TOKEN=hunter2 HOST_HOME=$HOME HOST_PORT=$port "$MOAT" run --workspace "$work/project" \
	--env HOST_HOME --env HOST_PORT --json-status "$work/status.json" -- ./job.sh
echo
echo "back on the host: $work/project/result.txt says: $(cat "$work/project/result.txt")"
echo "status record: $(cat "$work/status.json")"

echo
echo "moat demo, part 2: the worked example (examples/data-analysis/run.sh)"
echo
MOAT=$MOAT bash examples/data-analysis/run.sh "$work/example"
