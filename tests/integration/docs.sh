#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every command line of the README and docs/ is run verbatim (issue 18): each
# line of a fenced code block that runs moat is extracted, and is either run
# here (exactly as written, in a scratch directory with the files it names)
# with its exit status and key output asserted, or listed below with the
# reason it cannot run in a test (a real host on the network, an agent, a
# placeholder synopsis). A new, unlisted command line fails the test.
# About 10 s per user. Only loopback and the sandbox's own namespaces are used.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

SRC=${MOAT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
# moat on PATH as the docs spell it
mkdir -p "$T_OUT/bin"
ln -sf "$MOAT" "$T_OUT/bin/moat"
PATH="$T_OUT/bin:$PATH"
export PATH

# extract: "FILE<TAB>LINE" for each command line of a code block
extract() {
	python3 - "$SRC" <<'PY'
import glob, os, re, sys
src = sys.argv[1]
files = ["README.md"] + sorted(os.path.relpath(f, src) for f in glob.glob(os.path.join(src, "docs", "*.md")))
cmd = re.compile(r"^(\$ )?(sudo )?moat( |$)|\$\(moat ")
for f in files:
    inb = False
    for line in open(os.path.join(src, f), encoding="utf-8"):
        if line.startswith("```"):
            inb = not inb
            continue
        t = line.rstrip("\n").strip()
        if inb and cmd.search(t):
            print(f + "\t" + t)
PY
}

# The lines not run, with the reason. Keys are the exact text.
declare -A SKIP=(
	# synopses: placeholders in capitals or brackets, not commands
	["moat run [OPTIONS] -- COMMAND [ARG...]     run COMMAND in a fresh sandbox"]=synopsis
	["moat create [OPTIONS] [--name N] [--idle-timeout D] [--lifetime D]   a sandbox for a task (prints its id)"]=synopsis
	["moat exec ID [--tty] [--env K=V] [--cwd DIR] -- COMMAND   one more command in it (files kept)"]=synopsis
	["moat ls [--json] / moat logs ID [--follow] / moat cp SRC ID:DEST / moat stop ID / moat rm ID|--all"]=synopsis
	["moat snapshot ID [NAME] / moat restore ID NAME / moat reset ID   its files back to a snapshot or the start"]=synopsis
	["moat log [RUN-ID|FILE|--last] [--type T,..] [--denied] [--json]"]=synopsis
	["moat runs [-n N] [--json]                  the recent runs: id, start, exit, held changes, command"]=synopsis
	["moat diff RUN-ID / moat apply RUN-ID [PATH...]   review / apply held-back workspace changes"]=synopsis
	["moat policy check FILE / moat policy show [--policy FILE] [OPTIONS]"]=synopsis
	["moat ps [--json] / moat gc [--retention D] [--runs-max SIZE]   runs in progress / clean up crashed runs, old logs and held data, unused cached images"]=synopsis
	["moat policy import --from srt FILE [-o OUT]   a policy from sandbox-runtime / Claude Code sandbox settings"]=synopsis
	["moat doctor [--json]                       kernel features, what moat enforces and refuses"]=synopsis
	["moat selftest [--json] [OPTIONS]           the red-team battery against this machine and policy"]=synopsis
	["moat mcp [--policy FILE] [OPTIONS]         an MCP server (stdio) for agent frameworks: run, files, reset"]=synopsis
	["moat serve [--socket PATH] [--listen ADDR:PORT --token-file F [--tls-cert F --tls-key F]]"]=synopsis
	["moat oci COMMAND / moat-oci COMMAND         the OCI runtime for podman, containerd, Kubernetes (docs/OCI.md)"]=synopsis
	["moat serve [--socket PATH] [--listen ADDR:PORT --token-file FILE [--tls-cert F --tls-key F]]"]=synopsis
	["moat serve --e2b --listen 127.0.0.1:8080 --token-file tokens.json [POLICY OPTIONS]"]=synopsis
	["moat oci [GLOBAL OPTIONS] COMMAND ...        # or, the same binary linked as moat-oci:"]=synopsis
	["moat snapshot --list [--json] task1        # name, created, bytes, current"]=synopsis
	# diagrams and configuration, not commands
	["moat mcp (supervisor: the policy, the sandboxes; stdin and"]=diagram
	["moat create ──fork──► (exits)  ──fork──► supervisor (setsid, fds 0..2 /dev/null)"]=diagram
	["moat exec ──connect, request + fds 0..2──►  │ moat_sandbox_exec() → init of the sandbox"]=diagram
	['moat = ["/usr/local/bin/moat-oci"]']="containerd configuration (oci.sh and cri.sh use it)"
	# a real host on the network
	["moat run --workspace . --allow-host pypi.org --allow-host '*.pythonhosted.org' -- pip install -r requirements.txt"]="needs pypi.org"
	['moat run --workspace "$PWD" --allow-host registry.npmjs.org -- npm install express']="needs registry.npmjs.org (risk.sh runs this line against a loopback mirror of the registry)"
	["moat run --workspace . --secret GH_TOKEN@api.github.com -- gh pr list"]="needs api.github.com and gh"
	["moat run --workspace . --allow-host api.anthropic.com --secret ANTHROPIC_API_KEY@api.anthropic.com -- claude"]="needs api.anthropic.com and Claude Code"
	["moat run --workspace . --allow-host api.openai.com --secret OPENAI_API_KEY@api.openai.com -- codex"]="needs api.openai.com and Codex CLI"
	["moat run --workspace . --allow-host api.openai.com --secret OPENAI_API_KEY@api.openai.com -- aider"]="needs api.openai.com and aider"
	["moat run --ro /etc/chromium.d --allow-host example.com -- chromium --headless --no-sandbox --dump-dom https://example.com/"]="needs example.com (daily.sh t_chromium_headless runs the recipe against a loopback server)"
	['moat run --ro /etc/chromium.d --workspace "$PWD" -- chromium --headless --no-sandbox --dump-dom "file://$PWD/page.html"']="daily.sh t_chromium_headless runs Chromium (6 s); not twice"
	["moat exec task1 -- pip install -r requirements.txt"]="needs pypi.org"
	["moat serve --memory 1G --timeout 10m &"]="a server that runs until stopped (serve.sh)"
	["make demo    # installs missing Debian packages, builds, runs a real sandboxed job"]="the top-level targets (CI runs make check)"
	["make check   # installs missing Debian packages, builds, runs every test"]="the top-level targets (CI runs make check)"
)

# The lines run below (the same exact text).
declare -A RUN=(
	["moat run --workspace . -- pytest -q"]=t_readme_pytest
	["moat run --workspace . --input ~/datasets --output ./results --memory 4G --timeout 10m -- python3 analyse.py"]=t_readme_input_output
	['moat run --quiet --workspace "$PWD" -- /bin/sh -c "$COMMAND"']=t_agents_shell_tool
	["moat policy import --from srt ~/.srt-settings.json -o .moat/policy.json"]=t_agents_import
	["moat policy check .moat/policy.json"]=t_agents_import
	["id=\$(moat create --workspace . --net allow --allow-host pypi.org --name task1)"]=t_sessions
	["moat exec task1 -- pytest -q"]=t_sessions
	["moat cp task1:/tmp/report.html ./report.html"]=t_sessions
	["moat rm task1            # /output, workspace review, exit record: as moat run's end"]=t_sessions
	["moat snapshot task1 deps-installed        # prints the name (default: snap-N)"]=t_snapshots
	["moat exec task1 -- ./try-something-risky"]=t_snapshots
	["moat restore task1 deps-installed          # the files as they were at the snapshot"]=t_snapshots
	["moat reset task1                           # the files as they were at create"]=t_snapshots
	["moat snapshot --delete task1 deps-installed"]=t_snapshots
)

t_every_line_listed() {
	local f line n=0 unlisted=""
	while IFS=$'\t' read -r f line; do
		n=$((n + 1))
		[ -n "${SKIP[$line]+x}" ] || [ -n "${RUN[$line]+x}" ] || unlisted="$unlisted
  $f: $line"
	done < <(extract)
	[ "$n" -ge 40 ] || fail "only $n command lines found: the extraction is broken"
	[ -z "$unlisted" ] || fail "command lines in the docs that this test neither runs nor lists:$unlisted"
	# control: an unlisted line is caught (the extraction sees a new block)
	local d="$T_OUT/ctl"
	mkdir -p "$d/docs"
	cp "$SRC/README.md" "$d/"
	printf '```\nmoat run --frobnicate -- true\n```\n' >"$d/docs/NEW.md"
	SRC="$d" extract | grep -q $'docs/NEW.md\tmoat run --frobnicate -- true' ||
		fail "control: a new docs line was not extracted"
}

# a scratch project: a passing test, cwd there
project() {
	local d
	d=$(mktemp -d "$T_OUT/proj.XXXXXX")
	chmod 755 "$d"
	printf 'def test_ok():\n    assert 1 + 1 == 2\n' >"$d/test_ok.py"
	cd "$d" || fail "cd $d"
}

t_readme_pytest() {
	command -v pytest >/dev/null || skip "pytest not installed (python3-pytest)"
	project
	local out
	out=$(moat run --workspace . -- pytest -q 2>&1) || fail "exit $?: $out"
	assert_contains "$out" "1 passed"
	# control: a failing test fails the run the same way
	printf 'def test_no():\n    assert False\n' >test_no.py
	out=$(moat run --workspace . -- pytest -q 2>&1) && fail "a failing test passed: $out"
	assert_contains "$out" "1 failed"
}

t_readme_input_output() {
	project
	export HOME="$T_OUT/home"
	mkdir -p "$HOME/datasets"
	echo 3 >"$HOME/datasets/n.txt"
	cat >analyse.py <<'PY'
n = int(open("/data/n.txt").read())
open("/output/result.txt", "w").write(str(n * 2) + "\n")
print("analysed")
PY
	local out rc=0
	out=$(moat run --workspace . --input ~/datasets --output ./results --memory 4G --timeout 10m -- python3 analyse.py 2>&1) || rc=$?
	if ! is_root && [ "$rc" -eq 125 ]; then
		# unprivileged without cgroup delegation: --memory fails closed
		assert_contains "$out" "cgroup" "the refusal names the step"
		return 0
	fi
	assert_eq 0 "$rc" "exit: $out"
	assert_contains "$out" "analysed"
	assert_eq 6 "$(cat results/result.txt)" "/output collected into ./results"
}

t_agents_shell_tool() {
	project
	local out COMMAND='echo from-tool > made.txt; echo ran'
	out=$(moat run --quiet --workspace "$PWD" -- /bin/sh -c "$COMMAND") || fail "exit $?"
	assert_eq ran "$out"
	assert_eq from-tool "$(cat made.txt)" "the change applied to the workspace"
}

t_agents_import() {
	project
	export HOME="$T_OUT/home"
	mkdir -p "$HOME"
	cat >"$HOME/.srt-settings.json" <<'JSON'
{"network": {"allowedDomains": ["pypi.org"], "deniedDomains": ["evil.test"]},
 "filesystem": {"denyRead": ["~/.ssh"], "allowWrite": ["."], "denyWrite": []}}
JSON
	mkdir -p .moat
	local out
	out=$(moat policy import --from srt ~/.srt-settings.json -o .moat/policy.json 2>&1) || fail "import: $out"
	[ -s .moat/policy.json ] || fail "no policy written"
	out=$(moat policy check .moat/policy.json 2>&1) || fail "check: $out"
	assert_contains "$(cat .moat/policy.json)" "pypi.org"
}

t_sessions() {
	command -v pytest >/dev/null || skip "pytest not installed (python3-pytest)"
	project
	export HOME="$T_OUT/home"
	mkdir -p "$HOME"
	moat rm task1 >/dev/null 2>&1 || true
	local out id
	id=$(moat create --workspace . --net allow --allow-host pypi.org --name task1) || fail "create"
	[ -n "$id" ] || fail "create printed no id"
	out=$(moat exec task1 -- pytest -q 2>&1) || fail "exec: $out"
	assert_contains "$out" "1 passed"
	moat exec task1 -- sh -c 'echo report > /tmp/report.html' || fail "exec"
	moat cp task1:/tmp/report.html ./report.html || fail "cp"
	assert_eq report "$(cat report.html)"
	out=$(moat rm task1 2>&1) || fail "rm: $out"
	moat exec task1 -- true 2>/dev/null && fail "task1 still there after rm"
	true
}

t_snapshots() {
	project
	export HOME="$T_OUT/home"
	mkdir -p "$HOME"
	moat rm task1 >/dev/null 2>&1 || true
	moat create --workspace . --name task1 >/dev/null || fail "create"
	printf '#!/bin/sh\necho risky > made-by-risky.txt\n' >try-something-risky
	chmod +x try-something-risky
	moat exec task1 -- sh -c 'echo dep > deps.txt' || fail "exec"
	local out
	out=$(moat snapshot task1 deps-installed) || fail "snapshot"
	assert_eq deps-installed "$out" "prints the name"
	moat exec task1 -- ./try-something-risky || fail "exec risky"
	moat exec task1 -- test -e made-by-risky.txt || fail "the risky change is there"
	moat restore task1 deps-installed || fail "restore"
	moat exec task1 -- test -e made-by-risky.txt && fail "restore kept the risky change"
	moat exec task1 -- test -e deps.txt || fail "restore lost the snapshot's file"
	moat reset task1 || fail "reset"
	moat exec task1 -- test -e deps.txt && fail "reset kept a change made after create"
	moat snapshot --delete task1 deps-installed || fail "delete"
	moat restore task1 deps-installed 2>/dev/null && fail "restore of a deleted snapshot"
	moat rm task1 >/dev/null 2>&1 || fail "rm"
}

run_test "every command line of the README and docs/ is run here or listed with a reason" t_every_line_listed
run_test "README: moat run --workspace . -- pytest -q" t_readme_pytest
run_test "README: moat run --workspace . --input ~/datasets --output ./results ... python3 analyse.py" t_readme_input_output
run_test "AGENTS.md: the shell tool's command line" t_agents_shell_tool
run_test "AGENTS.md: moat policy import --from srt, moat policy check" t_agents_import
run_test "SESSIONS.md: create, exec pytest, cp, rm" t_sessions
run_test "SESSIONS.md: snapshot, restore, reset, delete" t_snapshots
t_done
