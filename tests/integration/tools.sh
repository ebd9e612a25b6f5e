#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Tools people reach for (issue 18): npm under --net none gives up at once
# (no minute of retries) and moat says which flag would allow the registry.
# As root and as the unprivileged user (tests/run-all.sh). No packet leaves:
# --net none.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

t_net_none_no_retries_env() {
	local out
	out=$("$MOAT" run --quiet -- /bin/sh -c 'echo "npm=$npm_config_fetch_retries pip=$PIP_RETRIES"')
	assert_eq "npm=0 pip=0" "$out"
	# the user's --env wins
	out=$("$MOAT" run --quiet --env npm_config_fetch_retries=3 -- /bin/sh -c 'echo "$npm_config_fetch_retries"')
	assert_eq 3 "$out"
	# with network access the package managers keep their own defaults
	out=$("$MOAT" policy show --allow-host registry.npmjs.org 2>/dev/null | grep -c npm_config_fetch_retries || true)
	assert_eq 0 "$out"
}

t_npm_net_none_fails_fast() {
	command -v npm >/dev/null || skip "npm not installed"
	local ws="$T_OUT/proj" out rc=0 t0 t1
	mkdir -p "$ws"
	echo '{"name":"p","version":"1.0.0"}' >"$ws/package.json"
	t0=$(date +%s)
	out=$(timeout 60 "$MOAT" run --workspace "$ws" -- npm view express version 2>&1) || rc=$?
	t1=$(date +%s)
	assert_eq 1 "$rc" "npm under --net none: $out"
	[ $((t1 - t0)) -lt 30 ] || fail "npm took $((t1 - t0)) s to give up under --net none"
	assert_contains "$out" "--net none refused it"
	assert_contains "$out" "to allow: --allow-host registry.npmjs.org"
}

# Node trusts only its built-in roots unless told: with --net allow the
# sandbox's Node trusts the system bundle the host trusts. A TLS server on the
# sandbox's own loopback with a certificate from a test CA that is in the
# bundle (bound over /etc/ssl/certs/ca-certificates.crt for the run).
t_node_trusts_system_bundle() {
	command -v node >/dev/null || skip "node not installed"
	command -v openssl >/dev/null || skip "openssl not installed"
	local d="$T_OUT/ca" out
	mkdir -p "$d"
	(
		cd "$d"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=moat-test-ca
		openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=localhost
		printf 'subjectAltName=DNS:localhost\n' >ext
		openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt -days 2 -extfile ext
		cat /etc/ssl/certs/ca-certificates.crt ca.crt >bundle.crt
	) >/dev/null 2>&1 || skip "cannot make test certificates"
	cat >"$d/t.js" <<'JS'
const https = require('https'), fs = require('fs'), d = process.argv[2];
const s = https.createServer({key: fs.readFileSync(d + '/srv.key'), cert: fs.readFileSync(d + '/srv.crt')},
  (q, r) => r.end('tls-ok'));
s.listen(0, '127.0.0.1', () => {
  https.get({host: 'localhost', port: s.address().port, path: '/'}, (r) => {
    let b = ''; r.on('data', (c) => b += c); r.on('end', () => { console.log(b); s.close(); });
  }).on('error', (e) => { console.log('error ' + e.code); s.close(); });
});
JS
	chmod -R a+rX "$T_OUT"
	out=$("$MOAT" run --quiet --allow-host example.invalid --ro "$d" \
		--ro "$d/bundle.crt:/etc/ssl/certs/ca-certificates.crt" -- node "$d/t.js" "$d" 2>&1)
	assert_eq tls-ok "$out"
	# control: the same Node without the variable does not trust the test CA
	out=$("$MOAT" run --quiet --allow-host example.invalid --ro "$d" \
		--ro "$d/bundle.crt:/etc/ssl/certs/ca-certificates.crt" -- \
		/usr/bin/env -u NODE_EXTRA_CA_CERTS node "$d/t.js" "$d" 2>&1)
	assert_contains "$out" "error UNABLE_TO_VERIFY_LEAF_SIGNATURE"
}

# docs/AGENTS.md: its command lines, verbatim (each must be in the file), with
# a stand-in for the agents, which CI does not install.
AGENTS_MD=${MOAT_SRC:?}/docs/AGENTS.md
recipe() {
	grep -F -x -- "$1" "$AGENTS_MD" >/dev/null || fail "not in docs/AGENTS.md: $1"
	printf '%s\n' "$1"
}

t_agents_recipes() {
	local proj="$T_OUT/agentproj" out line COMMAND
	mkdir -p "$proj" "$T_OUT/bin" "$T_OUT/home"
	ln -sf "$MOAT" "$T_OUT/bin/moat"
	export PATH="$T_OUT/bin:$PATH"
	cd "$proj"
	# the whole agent inside: the key stays outside, only the API host allowed
	line=$(recipe 'moat run --workspace . --allow-host api.anthropic.com --secret ANTHROPIC_API_KEY@api.anthropic.com -- claude')
	out=$(ANTHROPIC_API_KEY=sk-real-key-123 eval "${line% -- claude} --quiet -- /bin/sh -c 'echo \"key=\$ANTHROPIC_API_KEY\"; echo made > agent.txt'" 2>&1)
	assert_contains "$out" "key="
	assert_not_contains "$out" "sk-real-key-123"
	assert_eq made "$(cat agent.txt)" "the agent's change reached the workspace"
	# only the shell tool inside
	# shellcheck disable=SC2034 # the recipe reads it through eval
	COMMAND='echo tool > tool.txt; cat tool.txt'
	line=$(recipe 'moat run --quiet --workspace "$PWD" -- /bin/sh -c "$COMMAND"')
	out=$(eval "$line")
	assert_eq tool "$out"
	assert_eq tool "$(cat tool.txt)"
	# from sandbox-runtime settings
	echo '{"network":{"allowedDomains":["github.com"]},"filesystem":{"allowWrite":["."]}}' >"$T_OUT/home/.srt-settings.json"
	HOME="$T_OUT/home" eval "$(recipe 'mkdir -p .moat')"
	HOME="$T_OUT/home" eval "$(recipe 'moat policy import --from srt ~/.srt-settings.json -o .moat/policy.json')" 2>/dev/null
	out=$(eval "$(recipe 'moat policy check .moat/policy.json')")
	assert_contains "$out" ": ok"
	assert_contains "$(cat .moat/policy.json)" '"github.com"'
}

run_test "--net none: npm and pip told not to retry; --env overrides" t_net_none_no_retries_env
run_test "npm under --net none fails in seconds with the flag to allow" t_npm_net_none_fails_fast
run_test "--net allow: Node trusts the system CA bundle (NODE_EXTRA_CA_CERTS)" t_node_trusts_system_bundle
run_test "docs/AGENTS.md recipes, verbatim" t_agents_recipes
t_done
