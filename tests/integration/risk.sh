#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The risk classes of workspace review (issue 18, docs/FLAGGED.md): what runs
# only when the user runs it (dependency trees, new executables) is applied
# and listed; what runs automatically (hooks, CI, start-up, agent, the
# project's own manifests, a repository made in the run) is held; --accept and
# --hold move classes and globs, and --accept of an automatic class needs the
# loud --accept-automatic. The user's own command lines, root and unprivileged.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

TUSER=moat-test

# shellcheck source=tests/lib/hostuser.sh
. "$(dirname "$0")/../lib/hostuser.sh"
# shellcheck source=tests/lib/npmmirror.sh
. "$(dirname "$0")/../lib/npmmirror.sh"
trap 'stop_npm_mirror; rm -rf "$T_OUT"' EXIT
start_npm_mirror || true
NPM_REG="http://$NPM_HOST:$NPM_PORT/"

# A project: its own package.json (no scripts), a Makefile that builds
# build/app, a git repository with one commit.
make_project() { # $1 = dir
	as_user mkdir -p "$1"
	as_user sh -c 'cd "$1" && printf "{\"name\":\"app\",\"version\":\"1.0.0\"}\n" >package.json &&
		printf "build/app:\n\tmkdir -p build\n\tprintf \"#!/bin/sh\\\\necho app-ran\\\\n\" >build/app\n\tchmod +x build/app\n" >Makefile &&
		git init -q . && git add -A && git commit -qm init' sh "$1"
}

# npm install from the local registry mirror (tests/lib/npmmirror.sh): the
# user's line `moat run --workspace "$PWD" --allow-host <registry> -- npm
# install express`, with two differences that keep every packet on loopback:
# --resolve maps registry.npmjs.org to the mirror on 127.0.0.3, and the
# mirror speaks plain HTTP on a port of its own, so the allowed host and
# npm's --registry name that port.
npm_install_run() { # WS [MOAT-FLAGS...] -- CMD...: moat run in WS, out/err in T_OUT
	local ws=$1
	shift
	(cd "$ws" && "$MOAT" run --workspace "$PWD" --allow-host "$NPM_HOST:$NPM_PORT" \
		--resolve "$NPM_HOST=$NPM_ADDR" "$@") >"$T_OUT/out" 2>"$T_OUT/err"
}
# requests the mirror answered since mark_requests
mark_requests() { NPM_SEEN=$(wc -l <"$T_OUT/npm-requests"); }
new_requests() { tail -n +$((NPM_SEEN + 1)) "$T_OUT/npm-requests"; }
# npm on the host as the user: no registry, no update check (no packet leaves)
host_npm() { as_user env npm_config_offline=true npm_config_update_notifier=false npm "$@"; }

t_npm_install_and_build_applied() {
	setup_base
	need_npm_mirror
	command -v make >/dev/null || skip "make is not installed"
	local ws="$BASE/ws1" l
	make_project "$ws"
	mark_requests
	npm_install_run "$ws" -- npm install express --registry "$NPM_REG" ||
		fail "moat run npm install failed: $(cat "$T_OUT/err") $(tail -20 "$T_OUT/out")"
	local reqs
	reqs=$(new_requests)
	grep -qx 'GET /express 200' <<<"$reqs" || fail "npm did not ask the mirror for express: $(head <<<"$reqs")"
	grep -qx 'GET /express/-/express-4.21.2.tgz 200' <<<"$reqs" ||
		fail "npm did not fetch express's tarball from the mirror"
	# what the user does next, on the host
	(cd "$ws" && as_user node -e "require('express'); console.log('express-ok')") >"$T_OUT/node" 2>&1 ||
		fail "require('express') on the host: $(cat "$T_OUT/node"); $(cat "$T_OUT/err")"
	assert_eq express-ok "$(cat "$T_OUT/node")" "require('express') on the host"
	# every .bin link resolves, and its newly executable target runs
	[ -n "$(ls "$ws/node_modules/.bin")" ] || fail "node_modules/.bin is empty"
	for l in "$ws"/node_modules/.bin/*; do
		[ -L "$l" ] && [ -e "$l" ] || fail "$l is no link that resolves: $(ls -l "$l")"
	done
	assert_eq "text/plain" "$(cd "$ws" && as_user node_modules/.bin/mime a.txt)" "node_modules/.bin/mime on the host"
	assert_contains "$(cat "$ws/package.json")" '"express":' "the project's package.json records the dependency"
	[ -r "$ws/package-lock.json" ] || fail "package-lock.json not applied"
	assert_contains "$(cat "$T_OUT/err")" "applied and listed" "the summary lists them"
	assert_contains "$(cat "$T_OUT/err")" "dependency trees: node_modules/" "the summary names the tree"
	if grep -q '^  held' "$T_OUT/err"; then fail "something was held: $(cat "$T_OUT/err")"; fi
	assert_contains "$(cat "$T_OUT/err")" " 0 held back, 0 refused" "nothing held"
	assert_contains "$(cat "$T_OUT/err")" " allowed, 0 denied (" "npm needed nothing but the registry"
	local id json
	id=$(run_id_of "$T_OUT/err")
	json=$("$MOAT" diff --json "$id")
	printf '%s' "$json" | grep -F '"path":"node_modules/express/package.json"' | grep '"class":"deps"' |
		grep -q '"state":"applied"' || fail "node_modules/express/package.json not applied as class deps"
	if printf '%s' "$json" | grep -q '"state":"held"'; then
		fail "held entries: $(printf '%s' "$json" | grep '"state":"held"' | head -c 1000)"
	fi
	assert_contains "$("$MOAT" diff "$id")" "LISTED: inside a dependency tree: runs only when the project uses it (class deps)"
	# make's build/app, in a run of its own
	(cd "$ws" && "$MOAT" run --workspace "$PWD" -- make -s build/app) >/dev/null 2>"$T_OUT/err" ||
		fail "moat run make failed: $(cat "$T_OUT/err")"
	assert_eq "app-ran" "$(cd "$ws" && as_user ./build/app)" "./build/app on the host"
	assert_contains "$(cat "$T_OUT/err")" "new executables: build/app" "the summary names build/app"
	id=$(run_id_of "$T_OUT/err")
	"$MOAT" diff --json "$id" | grep -F '"path":"build/app"' | grep -q '"class":"executable"' ||
		fail "build/app has no class executable in the manifest"
}

# The sandbox adds a "postinstall" to the project's own package.json (the
# next host `npm install` would run it) and installs express: package.json is
# held whole (its scripts changed), the tree is applied and works. The probe
# is npm running the lifecycle script on the host; its positive control is
# the user's explicit `moat apply RUN package.json`.
t_npm_postinstall_held() {
	setup_base
	need_npm_mirror
	local ws="$BASE/ws5" marks="$BASE/pi-marks" id
	make_project "$ws"
	as_user touch "$marks"
	# shellcheck disable=SC2016 # expanded by npm's shell, later
	npm_install_run "$ws" -- sh -c 'npm --registry "$1" pkg set scripts.postinstall="echo POSTINSTALL >> \"\${MARKS:-/dev/null}\"" &&
		npm install express --registry "$1"' sh "$NPM_REG" ||
		fail "moat run failed: $(cat "$T_OUT/err") $(tail -20 "$T_OUT/out")"
	assert_eq '{"name":"app","version":"1.0.0"}' "$(cat "$ws/package.json")" "the host's package.json"
	grep -Eq '^ +held +package\.json +\(manifest: ' "$T_OUT/err" || fail "package.json is not held: $(cat "$T_OUT/err")"
	assert_contains "$(cat "$T_OUT/err")" "1 held back" "only package.json held"
	(cd "$ws" && as_user node -e "require('express'); console.log('express-ok')") >"$T_OUT/node" 2>&1 ||
		fail "require('express') on the host: $(cat "$T_OUT/node")"
	(cd "$ws" && MARKS="$marks" host_npm run --if-present postinstall) >"$T_OUT/npm" 2>&1 ||
		fail "npm run: $(cat "$T_OUT/npm")"
	assert_eq "" "$(cat "$marks")" "the held postinstall ran on the host"
	# positive control: applied by the user's choice, npm runs it
	id=$(run_id_of "$T_OUT/err")
	"$MOAT" apply "$id" package.json >/dev/null 2>"$T_OUT/err2" || fail "moat apply package.json: $(cat "$T_OUT/err2")"
	is_root && chown "$TUSER:" "$ws/package.json"
	assert_contains "$(cat "$ws/package.json")" '"postinstall"' "package.json after moat apply"
	(cd "$ws" && MARKS="$marks" host_npm run --if-present postinstall) >"$T_OUT/npm" 2>&1 ||
		fail "npm run: $(cat "$T_OUT/npm")"
	assert_eq POSTINSTALL "$(cat "$marks")" "control: npm ran the applied postinstall"
}

# The same install without --allow-host (the default --net none): npm is
# refused at once (no minute of retries, tools.sh checks the environment
# that does it), moat says which flag would allow it, no request reaches the
# mirror and nothing lands in the workspace. The first test is the positive
# control (the same line with --allow-host reaches the mirror).
t_npm_install_denied() {
	setup_base
	need_npm_mirror
	local ws="$BASE/ws6" rc=0 t0 t1
	make_project "$ws"
	mark_requests
	t0=$(date +%s)
	(cd "$ws" && timeout 120 "$MOAT" run --workspace "$PWD" -- npm install express --registry "$NPM_REG") \
		>"$T_OUT/out" 2>"$T_OUT/err" || rc=$?
	t1=$(date +%s)
	assert_eq 1 "$rc" "npm install under --net none: $(cat "$T_OUT/err")"
	[ $((t1 - t0)) -lt 30 ] || fail "npm took $((t1 - t0)) s to give up under --net none"
	assert_contains "$(cat "$T_OUT/err")" "--net none refused it"
	assert_contains "$(cat "$T_OUT/err")" "to allow: --allow-host $NPM_HOST"
	assert_eq "" "$(new_requests)" "requests that reached the mirror"
	[ ! -e "$ws/node_modules" ] || fail "node_modules appeared on the host"
}

# Each plant runs "echo TAG >> MARKS" when it reaches the host and the user
# does what the file's class is about (a git commit for the hook).
PLANT='M=$1; set -e
printf "#!/bin/sh\necho HOOK >> %s\n" "$M" >.git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
mkdir -p .github/workflows .vscode node_modules/dep
echo "on: push" >.github/workflows/x.yml
echo "echo BASHRC >> $M" >.bashrc
echo "{\"tasks\":[]}" >.vscode/tasks.json
printf "{\"name\":\"app\",\"version\":\"1.0.0\",\"scripts\":{\"test\":\"echo PKG\"}}\n" >package.json
ln -s ../.git/hooks node_modules/evil
mkdir -p node_modules/dep/.git/hooks; echo x >node_modules/dep/.git/hooks/post-checkout
mkdir -p node_modules/dep/.husky; echo x >node_modules/dep/.husky/pre-commit
echo ordinary >plain.txt'

t_automatic_held() {
	setup_base
	local ws="$BASE/ws2" marks="$BASE/marks" p
	make_project "$ws"
	as_user touch "$marks"
	"$MOAT" run --workspace "$ws" -- /bin/sh -c "$PLANT" sh "$marks" >"$T_OUT/out" 2>"$T_OUT/err" ||
		fail "moat run failed: $(cat "$T_OUT/err")"
	assert_eq ordinary "$(cat "$ws/plain.txt")" "an ordinary change is applied"
	for p in .git/hooks/pre-commit .github/workflows/x.yml .bashrc .vscode/tasks.json \
		node_modules/evil node_modules/dep/.git/hooks/post-checkout; do
		[ ! -e "$ws/$p" ] && [ ! -L "$ws/$p" ] || fail "$p was applied: $(cat "$T_OUT/err")"
	done
	[ -e "$ws/node_modules/dep/.husky/pre-commit" ] || fail "a .husky inside a dependency is not the project's: applied"
	assert_contains "$(cat "$ws/package.json")" '"1.0.0"}' "the project's package.json keeps its old scripts"
	(cd "$ws" && as_user git commit -qm x --allow-empty) >/dev/null 2>&1 || true
	assert_eq "" "$(cat "$marks")" "the planted hook ran"
	local err
	err=$(cat "$T_OUT/err")
	assert_contains "$err" "(hooks: git hook"
	assert_contains "$err" "(ci: CI workflow"
	assert_contains "$err" "(startup: shell start-up file"

	# --accept hooks is refused (usage, nothing starts) ...
	local rc=0
	"$MOAT" run --workspace "$ws" --accept hooks -- true >/dev/null 2>"$T_OUT/err2" || rc=$?
	assert_eq 2 "$rc" "--accept hooks exit"
	assert_contains "$(cat "$T_OUT/err2")" "--accept-automatic"
	for p in '.git/**' '**' '*.yml' '.github/**' '.bash*'; do
		rc=0
		"$MOAT" run --workspace "$ws" --accept "$p" -- true >/dev/null 2>"$T_OUT/err2" || rc=$?
		assert_eq 2 "$rc" "--accept '$p' exit ($(cat "$T_OUT/err2"))"
	done
	# ... and a glob that covers no automatic path is accepted
	"$MOAT" run --workspace "$ws" --accept 'build/**' -- true >/dev/null 2>"$T_OUT/err2" ||
		fail "--accept 'build/**' refused: $(cat "$T_OUT/err2")"

	# positive control: the loud form lets the hook arrive, and the probe sees it run
	"$MOAT" run --workspace "$ws" --accept-automatic --accept hooks -- /bin/sh -c "$PLANT" sh "$marks" \
		>/dev/null 2>"$T_OUT/err3" || fail "moat run (accept-automatic) failed: $(cat "$T_OUT/err3")"
	assert_contains "$(cat "$T_OUT/err3")" "WARNING: --accept-automatic applied"
	is_root && chown -R "$TUSER:" "$ws"
	(cd "$ws" && as_user git commit -qm y --allow-empty) >/dev/null 2>&1 || true
	grep -qx HOOK "$marks" || fail "control: the accepted hook did not run at git commit"
	[ ! -e "$ws/.bashrc" ] || fail "--accept hooks applied the startup class too"
	local id
	id=$(run_id_of "$T_OUT/err3")
	"$MOAT" log "$id" >"$T_OUT/log" 2>&1 || fail "moat log $id: $(cat "$T_OUT/log")"
	grep -q 'config .*key=audit.accept_automatic' "$T_OUT/log" || fail "no config event for accept_automatic"
}

t_hold_and_accept() {
	setup_base
	need_npm_mirror
	command -v make >/dev/null || skip "make is not installed"
	local ws="$BASE/ws3" id
	make_project "$ws"
	# --hold deps: today's strict behaviour for the tree; a more specific
	# accept glob wins over the hold class (accepts and its three
	# dependencies, from the mirror)
	npm_install_run "$ws" --hold deps --accept 'node_modules/accepts/**' -- \
		/bin/sh -c 'npm install accepts --registry "$1" && make -s build/app' sh "$NPM_REG" ||
		fail "moat run failed: $(cat "$T_OUT/err") $(tail -20 "$T_OUT/out")"
	[ -e "$ws/node_modules/accepts/package.json" ] || fail "the accepted glob was not applied"
	[ ! -e "$ws/node_modules/mime-types/package.json" ] || fail "--hold deps applied node_modules/mime-types"
	[ -x "$ws/build/app" ] || fail "build/app not applied"
	id=$(run_id_of "$T_OUT/err")
	assert_contains "$(cat "$T_OUT/err")" "(deps: inside a dependency tree"
	# after the fact: moat apply RUN --accept deps
	"$MOAT" apply "$id" --accept deps >/dev/null 2>"$T_OUT/err2" ||
		fail "moat apply --accept deps failed: $(cat "$T_OUT/err2")"
	[ -e "$ws/node_modules/mime-types/package.json" ] || fail "moat apply --accept deps did not apply"
	local rc=0
	"$MOAT" apply "$id" --accept ci >/dev/null 2>&1 || rc=$?
	assert_eq 2 "$rc" "moat apply --accept of a class with nothing held"

	# --hold executable
	rm -rf "$ws/build"
	"$MOAT" run --workspace "$ws" --hold executable -- make -s build/app >/dev/null 2>"$T_OUT/err" ||
		fail "moat run failed: $(cat "$T_OUT/err")"
	[ ! -e "$ws/build/app" ] || fail "--hold executable applied build/app"
	assert_contains "$(cat "$T_OUT/err")" "(executable: newly executable"
	# the policy key does the same
	printf '{"version":1,"audit":{"hold":["executable"]}}\n' >"$BASE/p.json"
	chmod a+r "$BASE/p.json"
	"$MOAT" policy show --policy "$BASE/p.json" 2>&1 | grep -q 'executable held' ||
		fail "policy show does not say executable held"
}

t_new_repo_whole() {
	setup_base
	local ws="$BASE/ws4"
	as_user mkdir -p "$ws"
	# git init inside a directory that is no repository: the whole new
	# repository is held, nothing of it half applied
	"$MOAT" run --workspace "$ws" -- /bin/sh -c 'git init -q . && echo a >a && git add a &&
		git -c user.name=t -c user.email=t@x commit -qm a' >/dev/null 2>"$T_OUT/err" ||
		fail "moat run failed: $(cat "$T_OUT/err")"
	[ ! -e "$ws/.git" ] || fail "a part of the new repository was applied: $(find "$ws/.git" | head)"
	assert_eq a "$(cat "$ws/a")" "the work tree file is applied"
	# a glob cannot split it, even with the loud form
	"$MOAT" run --workspace "$ws" --accept-automatic --accept '.git/objects/**' -- \
		/bin/sh -c 'git init -q .' >/dev/null 2>"$T_OUT/err" || fail "moat run failed: $(cat "$T_OUT/err")"
	[ ! -e "$ws/.git" ] || fail "--accept '.git/objects/**' split the new repository"
	# the class applies it whole, and the host's git reads it
	"$MOAT" run --workspace "$ws" --accept-automatic --accept repo -- /bin/sh -c 'git init -q . &&
		git add a && git -c user.name=t -c user.email=t@x commit -qm a' >/dev/null 2>"$T_OUT/err" ||
		fail "moat run failed: $(cat "$T_OUT/err")"
	is_root && chown -R "$TUSER:" "$ws"
	(cd "$ws" && as_user git log --oneline) >"$T_OUT/log" 2>&1 || fail "git log on the host: $(cat "$T_OUT/log")"
	assert_contains "$(cat "$T_OUT/log")" " a"
}

run_test "npm install express (local mirror) and make's build/app are applied and listed; require(), .bin and ./build/app work on the host" t_npm_install_and_build_applied
run_test "npm install with a postinstall the sandbox added: package.json held, the tree applied; npm runs it once applied by choice" t_npm_postinstall_held
run_test "npm install express without --allow-host: refused at once, with the flag to allow it; nothing reaches the mirror" t_npm_install_denied
run_test "hooks, CI, start-up, editor, project manifest, links into .git held; --accept hooks needs --accept-automatic" t_automatic_held
run_test "--hold deps, a more specific --accept glob, moat apply --accept, --hold executable" t_hold_and_accept
run_test "a repository created in the run is held or applied whole" t_new_repo_whole
t_done
