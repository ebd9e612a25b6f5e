#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# What the seccomp listener records (issue 13, items 7 and 9): under the
# default --net none every attempt to reach the network (TCP connect, UDP
# send, DNS lookup) is a `net` event with "denied":true and reason
# "network-none", with an alert, and the summary names the flag that would
# allow it; loopback and AF_UNIX traffic is not recorded; a flood is
# aggregated. Denied-syscall events carry the decoded arguments, ppid and cwd.
# Only TEST-NET addresses are used, and only inside the sandbox's own network
# namespace (it has nothing but loopback: no packet leaves it).
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

PY=/usr/bin/python3
STATE=$(mktemp -d "${TMPDIR:-/tmp}/moat-records-state.XXXXXX")
chmod 755 "$STATE"
export XDG_STATE_HOME="$STATE"
trap 'rm -rf "$STATE" "$T_OUT"' EXIT

need_py() { [ -x "$PY" ] || skip "python3 not installed"; }

# nrun NAME PYTHON-CODE: run the code in a default (--net none) sandbox with
# its log in NAME.jsonl and moat's summary in NAME.err.
nrun() {
	local name=$1 code=$2
	rm -f "$name.jsonl"
	"$MOAT" run --log "$T_OUT/$name.jsonl" --json-status "$T_OUT/$name.status.json" \
		-- "$PY" -c "$code" >"$name.out" 2>"$name.err" || true
}

# count TYPE FILE [GREP]: events of a type (optionally also matching GREP)
count() {
	local n
	n=$(grep -c "\"type\":\"$1\"" "$2" || true)
	if [ $# -ge 3 ]; then n=$(grep "\"type\":\"$1\"" "$2" | grep -c -- "$3" || true); fi
	echo "${n:-0}"
}

t_tcp_connect_recorded() {
	need_py
	nrun tcp 'import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3)
    print("CONNECTED")
except OSError as e:
    print("refused", e.errno)'
	assert_contains "$(cat tcp.out)" refused
	assert_eq 1 "$(count net tcp.jsonl)" "net events"
	local ev
	ev=$(grep '"type":"net"' tcp.jsonl)
	assert_contains "$ev" '"proto":"tcp","host":null,"addr":"192.0.2.1","port":80'
	assert_contains "$ev" '"reason":"network-none"'
	assert_contains "$ev" '"suggest":"--allow-cidr 192.0.2.1/32"'
	assert_contains "$ev" '"syscall":"connect"'
	assert_contains "$ev" '"denied":true'
	assert_eq 1 "$(count alert tcp.jsonl '"cause":"net_denied"')" "alerts"
	assert_contains "$(grep '"type":"exit"' tcp.jsonl)" '"net_denied":1'
	assert_contains "$(cat tcp.status.json)" '"net_none_attempts":1'
	assert_contains "$(cat tcp.err)" "tried the network 1 time(s)"
	assert_contains "$(cat tcp.err)" "to allow: --allow-cidr 192.0.2.1/32"
}

t_udp_sendto_recorded() {
	need_py
	nrun udp 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"exfil", ("198.51.100.1", 53))
    print("SENT")
except OSError as e:
    print("refused", e.errno)'
	assert_contains "$(cat udp.out)" refused
	assert_eq 1 "$(count net udp.jsonl)" "net events"
	local ev
	ev=$(grep '"type":"net"' udp.jsonl)
	assert_contains "$ev" '"proto":"udp","host":null,"addr":"198.51.100.1","port":53'
	assert_contains "$ev" '"reason":"network-none"'
	assert_contains "$ev" '"syscall":"sendto"'
	assert_eq 1 "$(count alert udp.jsonl '"cause":"net_denied"')" "alerts"
	assert_contains "$(cat udp.err)" "--allow-cidr 198.51.100.1/32"
}

t_dns_lookup_recorded_with_name() {
	need_py
	local name="exfil-$$.example.com"
	nrun dns 'import socket
print(open("/etc/resolv.conf").read().strip())
try:
    socket.getaddrinfo("'"$name"'", 443)
    print("RESOLVED")
except OSError as e:
    print("refused", e.errno)'
	# the sandbox names no resolver: glibc falls back to 127.0.0.1:53
	assert_not_contains "$(cat dns.out)" nameserver
	assert_contains "$(cat dns.out)" refused
	assert_eq 1 "$(count net dns.jsonl)" "net events (A, AAAA and the retries are one)"
	local ev
	ev=$(grep '"type":"net"' dns.jsonl)
	assert_contains "$ev" "\"proto\":\"udp\",\"host\":\"$name\",\"addr\":\"127.0.0.1\",\"port\":53"
	assert_contains "$ev" '"reason":"network-none"'
	assert_contains "$ev" "\"suggest\":\"--allow-host $name\""
	assert_eq 1 "$(count alert dns.jsonl '"cause":"net_denied"')" "alerts"
	assert_contains "$(cat dns.err)" "dns $name (network-none)"
	assert_contains "$(cat dns.err)" "to allow: --allow-host $name"
}

# Loopback and AF_UNIX stay inside the sandbox: they work and are not recorded.
t_loopback_and_unix_not_recorded() {
	need_py
	nrun local 'import socket, os
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.connect(u.getsockname()); c.send(b"one")
c.sendto(b"two", u.getsockname())
c.sendmsg([b"three"], [], 0, u.getsockname())
print("udp", u.recv(10), u.recv(10), u.recv(10))
a, b = socket.socketpair()
a.sendmsg([b"hi"]); print("pair", b.recv(10))
p = "/tmp/moat-records.sock"
srv = socket.socket(socket.AF_UNIX); srv.bind(p); srv.listen()
cl = socket.socket(socket.AF_UNIX); cl.connect(p)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind(p + "2")
e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); e.sendto(b"dg", p + "2")
print("unix", d.recv(10))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    s6.sendto(b"x", ("::1", 9))
except OSError:
    pass
print("done")'
	assert_contains "$(cat local.out)" "udp b'one' b'two' b'three'"
	assert_contains "$(cat local.out)" "unix b'dg'"
	assert_contains "$(cat local.out)" "done"
	assert_eq 0 "$(count net local.jsonl)" "net events"
	assert_not_contains "$(cat local.err)" "tried the network"
}

# A flood: one event per destination, at most 256 destinations, all counted.
t_flood_aggregated() {
	need_py
	nrun flood 'import socket
for i in range(300):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.sendto(b"x", ("192.0.2.9", 9))
    except OSError: pass
    s.close()
for i in range(300):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try: s.sendto(b"x", ("198.51.100.%d" % (i % 250 + 1), 1000 + i))
    except OSError: pass
    s.close()
print("done")'
	assert_contains "$(cat flood.out)" "done"
	assert_eq 1 "$(count net flood.jsonl '"addr":"192.0.2.9"')" "events for the repeated destination"
	assert_eq 256 "$(count net flood.jsonl)" "net events (capped)"
	assert_eq 1 "$(count limit flood.jsonl '"what":"net_records"')" "limit events"
	assert_contains "$(cat flood.err)" "tried the network 600 time(s)"
	assert_contains "$(cat flood.err)" "denied 300x 192.0.2.9:9/udp"
}

# Variants: TCP Fast Open (sendto with MSG_FASTOPEN: Landlock's connect rule
# does not see it, the missing route refuses it), IPv6 and v4-mapped IPv6,
# connect on a UDP socket, sendmsg with an address.
t_variants_recorded() {
	need_py
	nrun var 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
try: s.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, ("192.0.2.33", 80))
except OSError as e: print("tfo", e.errno)
s6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
try: s6.connect(("::ffff:192.0.2.44", 443))
except OSError as e: print("mapped", e.errno)
u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try: u6.connect(("2001:db8::1", 443))
except OSError as e: print("v6", e.errno)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try: u.sendmsg([b"x"], [], 0, ("203.0.113.5", 123))
except OSError as e: print("sendmsg", e.errno)'
	assert_contains "$(cat var.out)" "tfo 101"
	assert_eq 4 "$(count net var.jsonl)" "net events"
	assert_eq 1 "$(count net var.jsonl '"proto":"tcp","host":null,"addr":"192.0.2.33","port":80')" "TFO"
	assert_eq 1 "$(count net var.jsonl '"addr":"192.0.2.44","port":443')" "v4-mapped"
	assert_eq 1 "$(count net var.jsonl '"proto":"udp","host":null,"addr":"2001:db8::1","port":443')" "IPv6 UDP connect"
	assert_eq 1 "$(count net var.jsonl '"addr":"203.0.113.5","port":123')" "sendmsg"
	assert_contains "$(cat var.err)" "--allow-cidr 2001:db8::1/128"
}

# Positive control: the same probes, outside moat in a namespace with only
# loopback (what --net none gives), really try the network and are refused
# the same way; nothing but moat records them.
t_control_probes_attempt_outside() {
	need_py
	unshare -Urn true 2>/dev/null || skip "unshare -Urn not permitted"
	local out
	out=$(unshare -Urn "$PY" -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try: s.sendto(b"x", ("198.51.100.1", 53))
except OSError as e: print("udp", e.errno)
try: socket.create_connection(("192.0.2.1", 80), timeout=3)
except OSError as e: print("tcp", e.errno)')
	assert_contains "$out" "udp 101" # ENETUNREACH
	assert_contains "$out" "tcp 101"
}

# Item 9: the arguments that say what a denied call tried, ppid and cwd.
t_denied_syscall_arguments() {
	need_py
	nrun sys 'import socket, fcntl, os, ctypes
os.chdir("/tmp")
try: socket.socket(17, socket.SOCK_RAW, 0)
except OSError: pass
try: fcntl.ioctl(0, 0x5412, b"x")
except OSError: pass
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000), os.getpid(), os.getppid())'
	local ev pid
	read -r _ _ pid _ < <(grep unshare sys.out)
	[ -n "$pid" ] || fail "no output: $(cat sys.out sys.err)"
	ev=$(grep '"type":"syscall","name":"ioctl"' sys.jsonl)
	assert_contains "$ev" '"request":21522,"request_name":"TIOCSTI"'
	assert_contains "$ev" '"cwd":"/tmp"'
	assert_contains "$ev" '"ppid":'
	ev=$(grep '"type":"syscall","name":"socket"' sys.jsonl)
	assert_contains "$ev" '"family":17,"family_name":"AF_PACKET","sock_type":524291,"sock_type_name":"SOCK_RAW|SOCK_CLOEXEC","protocol":0'
	ev=$(grep '"type":"syscall","name":"unshare"' sys.jsonl)
	assert_contains "$ev" '"flags":268435456,"flags_name":"CLONE_NEWUSER"'
	assert_contains "$ev" '"args":["0x10000000"'
	assert_contains "$ev" '"cwd":"/tmp"'
	assert_contains "$ev" '"errno":"EPERM"'
	# pids as the host sees them: the event's pid's parent is the event's ppid
	local epid eppid
	epid=$(sed -n 's/.*"name":"unshare".*"pid":\([0-9]*\),"ppid":\([0-9]*\).*/\1/p' sys.jsonl)
	eppid=$(sed -n 's/.*"name":"unshare".*"pid":\([0-9]*\),"ppid":\([0-9]*\).*/\2/p' sys.jsonl)
	[ -n "$epid" ] && [ "$eppid" -gt 0 ] || fail "pid/ppid missing: $ev"
	[ "$epid" != "$eppid" ] || fail "ppid equals pid: $ev"
}

run_test tcp_connect_recorded t_tcp_connect_recorded
run_test udp_sendto_recorded t_udp_sendto_recorded
run_test dns_lookup_recorded_with_name t_dns_lookup_recorded_with_name
run_test loopback_and_unix_not_recorded t_loopback_and_unix_not_recorded
run_test flood_aggregated t_flood_aggregated
run_test variants_recorded t_variants_recorded
run_test control_probes_attempt_outside t_control_probes_attempt_outside
run_test denied_syscall_arguments t_denied_syscall_arguments
t_done
