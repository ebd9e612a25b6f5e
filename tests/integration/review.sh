#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Nothing the sandbox writes becomes code the host runs without review
# (issue 13, item 5): git's indirections (gitdir files, bare repositories found
# by structure, `.git` symlinks, submodule git dirs, include.path), rw/ro start
# checks (repositories, hard links), extended attributes, and the bounds on
# held-back data (caps, moat gc). Run as root and as the unprivileged user.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

TUSER=moat-test

# shellcheck source=tests/lib/hostuser.sh
. "$(dirname "$0")/../lib/hostuser.sh"

# The plants: each one makes `git status` in one directory run the command
# "echo TAG >> MARKS" if it reaches the host unreviewed. Written by a plain
# shell (no git inside the sandbox). $1 = the marks file.
PLANT='M=$1; set -e
f() { printf "[core]\n\tbare = false\n\tfsmonitor = \"echo %s >> %s; false\"\n" "$1" "$M"; }
skel() { mkdir -p "$1/objects" "$1/refs"; printf "ref: refs/heads/main\n" >"$1/HEAD"; }
# P1: a .git FILE sends git to a bare repository by structure (no .git name)
mkdir -p gitfile; skel gitfile/elsewhere; f P1 >gitfile/elsewhere/config
printf "gitdir: ./elsewhere\n" >gitfile/.git
# P2: a .git SYMLINK to a repository elsewhere in the workspace
skel store; f P2 >store/config; mkdir -p symdir; ln -s ../store symdir/.git
# P4: the file the existing config includes (include.path)
mkdir -p tools; printf "[core]\n\tfsmonitor = \"echo P4 >> %s; false\"\n" "$M" >tools/git.inc
# P5: core.fsmonitor in the config of a new repository
skel newrepo/.git; f P5 >newrepo/.git/config
# P6: a submodule: sm/.git -> .git/modules/sm
skel .git/modules/sm; f P6 >.git/modules/sm/config
printf "\tworktree = ../../../sm\n" >>.git/modules/sm/config
mkdir -p sm; printf "gitdir: ../.git/modules/sm\n" >sm/.git
# symlinks into the repository and to a bare one: held, never followed
ln -s .git/hooks/pre-commit hooklink; ln -s gitfile/elsewhere bare-link
echo ordinary >plain.txt'

PROBE_DIRS=". gitfile symdir newrepo sm"

git_status_all() { # $1 = workspace
	local d
	for d in $PROBE_DIRS; do
		(cd "$1/$d" 2>/dev/null && as_user git status >/dev/null 2>&1) || true
	done
}

make_ws() { # $1 = dir: a repository whose config includes ../tools/git.inc
	as_user git init -q "$1"
	as_user git -C "$1" config include.path ../tools/git.inc
}

t_git_indirections_held() {
	setup_base
	local ws="$BASE/ws" ctl="$BASE/ctl" marks="$BASE/marks" cmarks="$BASE/cmarks"
	make_ws "$ws"
	as_user touch "$marks" "$cmarks"
	# positive control: the SAME plants written directly by the user into a
	# copy do run at the next `git status` (so the probe is live)
	as_user cp -a "$ws" "$ctl"
	(cd "$ctl" && as_user sh -c "$PLANT" sh "$cmarks")
	git_status_all "$ctl"
	local tag
	for tag in P1 P2 P4 P5 P6; do
		grep -qx "$tag" "$cmarks" || fail "control: plant $tag did not run without moat: $(cat "$cmarks")"
	done

	# through moat (overlay, --apply safe): nothing of it runs
	"$MOAT" run --workspace "$ws" -- /bin/sh -c "$PLANT" sh "$marks" 2>"$T_OUT/err" ||
		fail "moat run failed: $(cat "$T_OUT/err")"
	git_status_all "$ws"
	assert_eq "" "$(cat "$marks")" "planted commands that ran at git status"
	assert_eq ordinary "$(cat "$ws/plain.txt")" "an ordinary change is applied"
	local p
	for p in gitfile/.git gitfile/elsewhere/config symdir/.git store/config tools/git.inc \
		newrepo/.git/config .git/modules/sm/config sm/.git hooklink bare-link; do
		[ ! -e "$ws/$p" ] && [ ! -L "$ws/$p" ] || fail "$p was applied unreviewed"
	done
	local id json
	id=$(run_id_of "$T_OUT/err")
	[ -n "$id" ] || fail "no run id in: $(cat "$T_OUT/err")"
	json=$("$MOAT" diff --json "$id")
	for p in gitfile/elsewhere/config store/config tools/git.inc hooklink bare-link .git/modules/sm/config; do
		printf '%s' "$json" | grep -F "\"path\":\"$p\"" | grep -q '"state":"held"' ||
			fail "$p not held in the manifest"
	done
	assert_contains "$("$MOAT" diff "$id")" "FLAGGED"

	# the reviewed path still works: applying the include target makes it live
	"$MOAT" apply "$id" tools/git.inc >/dev/null 2>&1 || fail "moat apply tools/git.inc failed"
	is_root && chown -R "$TUSER:" "$ws"
	git_status_all "$ws"
	grep -qx P4 "$marks" || fail "after moat apply the include target is live (control)"
}

t_rw_refuses_repositories() {
	setup_base
	local ws="$BASE/rw" rc=0 out
	mkdir -p "$ws/src"
	# positive control: no repository, rw starts (and says review does not apply)
	out=$("$MOAT" run --log "$T_OUT/ev0" --workspace "$ws:rw" -- /bin/true 2>&1) || rc=$?
	assert_eq 0 "$rc" "rw without a repository: $out"
	assert_contains "$out" "review does not apply"
	assert_contains "$(grep '"type":"start"' "$T_OUT/ev0")" '"review":false'
	assert_contains "$(grep '"type":"start"' "$T_OUT/ev0")" '"review_note":'
	assert_not_contains "$out" "created a git repository"
	# a repository the run creates in rw is said plainly at the end (and alerted)
	rc=0
	out=$("$MOAT" run --log "$T_OUT/ev5" --workspace "$ws:rw" -- /bin/sh -c \
		'mkdir -p src/.git/objects src/.git/refs && echo "ref: refs/heads/m" > src/.git/HEAD' 2>&1) || rc=$?
	assert_eq 0 "$rc" "rw run creating a repository: $out"
	assert_contains "$out" "created a git repository in the rw workspace: $ws/src/.git"
	assert_contains "$(grep '"type":"alert"' "$T_OUT/ev5")" "appeared in the rw workspace"
	rm -rf "$ws/src/.git"
	# a repository by structure, not by name
	mkdir -p "$ws/src/data/objects" "$ws/src/data/refs"
	echo 'ref: refs/heads/x' >"$ws/src/data/HEAD"
	rc=0
	out=$("$MOAT" run --workspace "$ws:rw" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "rw over a bare repository: $out"
	assert_contains "$out" "$ws/src/data"
	assert_contains "$out" "--allow-rw-git"
	rc=0
	"$MOAT" run --quiet --allow-rw-git --workspace "$ws:rw" -- /bin/true 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "rw with --allow-rw-git"
	rm -rf "$ws/src/data"
	# a repository ABOVE the workspace: git's discovery walks upward
	as_user git init -q "$BASE/up"
	mkdir -p "$BASE/up/sub"
	rc=0
	out=$("$MOAT" run --workspace "$BASE/up/sub:rw" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "rw below a repository: $out"
	assert_contains "$out" "$BASE/up/.git"
	# --rw binds are not reviewed either: the same refusal
	rc=0
	out=$("$MOAT" run --rw "$BASE/up:/mnt/up" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--rw bind of a repository: $out"
	assert_contains "$out" "--rw $BASE/up"
	rc=0
	"$MOAT" run --quiet --rw "$ws:/mnt/ws" -- /bin/true 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "--rw bind without a repository (control)"
	# the policy key does what the flag does
	printf '{"version":1,"filesystem":{"allow_rw_git":true}}\n' >"$T_OUT/p.json"
	rc=0
	"$MOAT" run --quiet --policy "$T_OUT/p.json" --workspace "$BASE/up/sub:rw" -- /bin/true 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "rw with filesystem.allow_rw_git"
}

t_rw_hardlinks() {
	setup_base
	local ws="$BASE/hl" outside="$BASE/outside.txt" rc=0 out
	mkdir -p "$ws"
	echo secret >"$outside"
	# both names inside the workspace: nothing outside to reach, rw starts
	echo in >"$ws/g"
	ln "$ws/g" "$ws/g2"
	"$MOAT" run --quiet --workspace "$ws:rw" -- /bin/true 2>/dev/null || fail "rw refused links that stay inside"
	ln "$outside" "$ws/f" || skip "no hard links here"
	out=$("$MOAT" run --log "$T_OUT/ev1" --workspace "$ws:rw" -- /bin/sh -c 'echo pwned > f' 2>&1) || rc=$?
	assert_eq 125 "$rc" "rw with a hard link: $out"
	assert_contains "$out" "hard links"
	assert_contains "$(grep '"type":"start"' "$T_OUT/ev1")" '"workspace_hardlinks":1'
	assert_eq secret "$(cat "$outside")" "the refused run wrote nothing"
	# positive control: with the flag the write-through does happen
	rc=0
	"$MOAT" run --quiet --allow-hardlinks --workspace "$ws:rw" -- /bin/sh -c 'echo pwned > f' 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "rw with --allow-hardlinks"
	assert_eq pwned "$(cat "$outside")" "write-through with --allow-hardlinks"
	# ro: it starts, warns, and records the count
	rc=0
	out=$("$MOAT" run --log "$T_OUT/ev2" --workspace "$ws:ro" -- /bin/cat f 2>&1) || rc=$?
	assert_eq 0 "$rc" "ro with a hard link: $out"
	assert_contains "$out" "hard links"
	assert_contains "$(grep '"type":"start"' "$T_OUT/ev2")" '"workspace_hardlinks":1'
	# overlay: apply renames, so the other name keeps its content
	echo secret >"$outside"
	"$MOAT" run --quiet --workspace "$ws" -- /bin/sh -c 'echo changed > f' 2>/dev/null
	assert_eq changed "$(cat "$ws/f")" "the overlay change is applied"
	assert_eq secret "$(cat "$outside")" "the other name is untouched in overlay mode"
}

t_xattr_in_manifest() {
	setup_base
	command -v python3 >/dev/null || skip "python3 is not installed"
	local ws="$BASE/xa" id
	mkdir -p "$ws"
	echo same >"$ws/a"
	echo all: >"$ws/Makefile"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.t", b"1")' "$ws/a" 2>/dev/null ||
		skip "no user xattrs on $ws"
	is_root && chown -R "$TUSER:" "$ws"
	"$MOAT" run --log "$T_OUT/ev3" --workspace "$ws" -- /usr/bin/python3 -c '
import os
os.setxattr("a", "user.t", b"2")
os.setxattr("Makefile", "user.m", b"x")' 2>"$T_OUT/err" || fail "run failed: $(cat "$T_OUT/err")"
	id=$(run_id_of "$T_OUT/err")
	local text
	text=$("$MOAT" diff "$id")
	assert_contains "$text" "xattr    file    a (xattrs ~user.t)"
	assert_contains "$text" "Makefile (xattrs +user.m)  FLAGGED"
	assert_contains "$(grep '"type":"file"' "$T_OUT/ev3")" '"xattrs":"~user.t"'
	assert_eq 2 "$(python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.t").decode())' "$ws/a")" \
		"the plain xattr change is applied"
	if python3 -c 'import os,sys; os.getxattr(sys.argv[1], "user.m")' "$ws/Makefile" 2>/dev/null; then
		fail "the xattr change on a flagged path was applied"
	fi
}

t_held_cap() {
	setup_base
	local ws="$BASE/cap" id out rc=0
	mkdir -p "$ws"
	is_root && chown -R "$TUSER:" "$ws"
	"$MOAT" run --apply never --held-max 1M --log "$T_OUT/ev4" --workspace "$ws" -- \
		/bin/sh -c 'head -c 2000000 /dev/zero > big; echo s > small' 2>"$T_OUT/err"
	assert_contains "$(cat "$T_OUT/err")" "NOT KEPT"
	assert_contains "$(cat "$T_OUT/ev4")" '"what":"held"'
	id=$(run_id_of "$T_OUT/err")
	assert_contains "$("$MOAT" diff "$id")" "[dropped]"
	out=$("$MOAT" apply "$id" 2>&1) || rc=$?
	assert_eq 1 "$rc" "moat apply of dropped changes: $out"
	assert_contains "$out" "not kept"
	[ ! -e "$ws/big" ] && [ ! -e "$ws/small" ] || fail "dropped changes landed"
	# positive control: under the cap the same run keeps them, apply works
	"$MOAT" run --apply never --held-max 8M --workspace "$ws" -- \
		/bin/sh -c 'head -c 2000000 /dev/zero > big; echo s > small' 2>"$T_OUT/err"
	id=$(run_id_of "$T_OUT/err")
	"$MOAT" apply "$id" >/dev/null 2>&1 || fail "apply under the cap failed"
	assert_eq s "$(cat "$ws/small")"
	assert_eq 2000000 "$(stat -c %s "$ws/big")"
}

t_gc_age_and_total() {
	local runs="$T_OUT/runs" sd="$T_OUT/state"
	mkdir -p "$runs/r-old" "$runs/r-mid" "$runs/r-new" "$sd"
	echo x >"$runs/r-old/events.jsonl"
	head -c 3000000 /dev/urandom >"$runs/r-mid/events.jsonl"
	echo y >"$runs/r-new/events.jsonl"
	touch -d '30 days ago' "$runs/r-old/events.jsonl" "$runs/r-old"
	touch -d '5 days ago' "$runs/r-mid/events.jsonl" "$runs/r-mid"
	# positive control: with room and a long retention nothing goes
	"$MOAT" gc --quiet --state-dir "$sd" --runs-dir "$runs" --retention 60d --runs-max 1G
	[ -d "$runs/r-old" ] && [ -d "$runs/r-mid" ] || fail "gc removed runs it should keep"
	local out
	out=$("$MOAT" gc --state-dir "$sd" --runs-dir "$runs" --retention 14d --runs-max 2M 2>&1)
	assert_contains "$out" "1 removed past the retention age, 1 past the total cap"
	[ ! -e "$runs/r-old" ] || fail "r-old (past the retention age) kept"
	[ ! -e "$runs/r-mid" ] || fail "r-mid (oldest over the total cap) kept"
	[ -d "$runs/r-new" ] || fail "r-new removed"
}

run_test "git indirections planted in the workspace are held, git status runs none" t_git_indirections_held
run_test "rw refuses a workspace holding or inside a repository (by structure)" t_rw_refuses_repositories
run_test "rw refuses hard links unless --allow-hardlinks; ro warns; overlay renames" t_rw_hardlinks
run_test "an xattr change is in the manifest and held on a flagged path" t_xattr_in_manifest
run_test "held-back data over the per-run cap is dropped as a whole" t_held_cap
run_test "moat gc removes runs past the retention age and over the total cap" t_gc_age_and_total
t_done
