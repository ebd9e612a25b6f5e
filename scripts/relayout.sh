#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One-shot move of src/lib into one folder per part of the architecture
# (issue 14: "let the folder layout under src/ show the architecture"), for
# the lead to run once after every branch is merged:
#
#   scripts/relayout.sh [--dry-run]
#
# What it moves (the table below is the only place that says so):
#   src/policy/     policy*, plan*, status.c, errors.*
#   src/supervisor/ spawn, proc, run.*, supervise.*, layer.h, layer_view.c,
#                   stdio_relay*, state*, session*
#   src/sandbox/    backend*, sandbox*, init_*, ctl.h, hooks.h, hook_caps.c,
#                   paths.*, sbfiles.c, layer_mount.c, layer_identity.c
#   src/kernel/     seccomp*, landlock*, restrict*, hook_restrict.c,
#                   layer_seccomp.c, layer_landlock.c
#   src/limits/     cgroup*, rlimits*, limits*, supervise_limits*, layer_limits.c
#   src/network/    net_*, netns*, netrec*, nft_*, supervise_net*, moat-*.map,
#                   hook_net.c, layer_network.c, layer_credentials.c
#   src/workspace/  fsdiff*, review*, wscheck*, copytree*, layer_workspace.c
#   src/audit/      audit*, observe*, layer_audit.c
#   src/mcp/        mcp*
#   src/doctor/     doctor*, selftest*
#   src/api/        serve* (moat serve's back, routes, E2B codecs; its front is src/serve/)
#   src/oci/        oci* (config.json translation)
#   src/image/      image_* (--image: OCI images, their cache)
#   also: snapshot* in workspace, confine.* in kernel, isolation.* in sandbox
# src/shared, src/compat, src/proxy and src/cli stay where they are.
#
# It also: rewrites every reference to a moved file (#include "lib/x.h" ->
# "DIR/x.h", src/lib/x.c -> src/DIR/x.c, lib/x.h in comments) in sources,
# tests, fuzz/, bench/, scripts/, docs and the Makefile (src/lib/*.c becomes
# the new folders); teaches scripts/check-cli-includes.sh the new folders;
# puts a two-line "README" comment at the top of each folder's main header;
# and regenerates the "## Source layout" section of docs/ARCHITECTURE.md.
#
# It refuses (before it changes anything) when a file in src/lib matches no
# row of the table, listing them: add a row and run it again. Idempotent: a
# second run finds nothing to move and changes nothing. Moves are `git mv`,
# so history follows the files; commit the result yourself after
# `make -j2 all && build/unit-tests && make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."

# ---- the table ---------------------------------------------------------------
# folder | main header | two-line README | patterns (shell globs on the file
# name in src/lib, first matching row wins)
TABLE=(
	"policy|policy.h|the policy (options, JSON file, validation) and its plan, the one|pure product of the policy that every layer applies; moat policy show prints it|policy* plan* status.c errors.c errors.h"
	"supervisor|run.h|the lifecycle (create/exec/wait/destroy, moat_run), the event loop,|the layers' table (supervise.c, layer.h), stdio relays, live-run state, sessions|spawn.c proc.c run.c run.h run_* supervise.c supervise.h layer.h layer_view.c stdio_relay* state.* session*"
	"sandbox|backend.h|the isolation backends (backend.h; today namespaces) and the|sandbox's init: its ordered set-up steps, control channel, fd hand-over, the user's paths|backend* sandbox* init_* ctl.h hooks.h hook_caps.c paths.* sbfiles.c layer_mount.c layer_identity.c isolation.*"
	"kernel|restrict.h|the kernel layers: the seccomp filter and its listener, Landlock,|their supervisor side (restrict.c) and their steps inside the sandbox|seccomp* landlock* restrict* hook_restrict.c layer_seccomp.c layer_landlock.c confine.*"
	"limits|limits.h|the limits layer: cgroup v1/v2/hybrid behind one ops table, rlimits,|the supervisor's cgroup steps and the state record|cgroup* rlimits* limits* supervise_limits* layer_limits.c"
	"network|supervise_net.h|the network and credentials layers: the plugins' loader and ABI,|the namespace's capture rules and listeners, the proxy helper's start, --net none records|net_* netns* netrec* nft_* supervise_net* moat-net.map moat-nft.map hook_net.c layer_network.c layer_credentials.c"
	"workspace|fsdiff.h|the workspace layer: the change manifest (fsdiff*), its review and apply,|the workspace checks, the copy of --input trees|fsdiff* review* wscheck* copytree* layer_workspace.c snapshot*"
	"audit|audit.h|the audit layer: the event stream and its sinks (log, --on-alert), the|start/limit/exit records, the observation of a run (observe.c)|audit* observe* layer_audit.c"
	"mcp|mcp_proto.h|moat mcp: the unprivileged JSON-RPC front and the supervisor that drives|sandboxes for it, with the fixed records between them|mcp*"
	"doctor|doctor.h|moat doctor (what this host gives each layer) and moat selftest's battery|of probes against a real sandbox|doctor* selftest*"
	"api|serve_int.h|moat serve: the HTTP API's back (sandboxes per tenant, narrowing, pool), the|route table the confined front (front.c) parses with, E2B's REST and Connect codecs|serve*"
	"oci|oci.h|moat as an OCI runtime: config.json read by a confined parser and translated|into moat options (every field honoured, satisfied or refused by name)|oci*"
	"image|image.h|--image: an OCI image (layout dir, oci-archive or docker-archive) read,|its blobs verified by sha256, its layers unpacked by a confined child into a per-user cache|image_*"
)
# The folders that stay, with their README lines (main header | line 1 | line 2).
STAY=(
	"shared|macro.h|no knowledge of moat: size/duration parsers, JSON escaping and positions,|fd sets, SCM_RIGHTS, write_all, openat2, recursive removal, cleanup macros"
	"compat|landlock.h|kernel UAPI the distribution's headers lack (Landlock ABI >= 3), nothing|else; included instead of <linux/landlock.h>"
	"proxy|proxy.h|the egress and credential proxy (moat-net.so and moat __proxy): accept loop,|HTTP/SOCKS/transparent, TLS interception, DNS stub, secrets; rule parsers in the core"
	"cli|cli.h|the thin CLI, one file per subcommand; includes only moat/moat.h and its|own headers (scripts/check-cli-includes.sh)"
)

dry=0
[ "${1:-}" = --dry-run ] && dry=1

die() {
	echo "relayout: $*" >&2
	exit 1
}

command -v perl >/dev/null || die "perl is needed (perl-base)"
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "not in a git work tree"

# dest NAME: the folder of a src/lib file name, or nothing
dest() {
	local - row f pat
	set -f # the patterns are globs on the name, not on this directory
	for row in "${TABLE[@]}"; do
		IFS='|' read -r f _ _ _ pats <<<"$row"
		for pat in $pats; do
			# shellcheck disable=SC2053 # a glob on purpose
			if [[ $1 == $pat ]]; then
				echo "$f"
				return
			fi
		done
	done
}

# ---- 1. every file of src/lib has a row, and nowhere to collide ---------------
declare -A map=() # file name -> folder (what is in src/lib now, and what was)
moves=()
if [ -d src/lib ]; then
	unmapped=()
	while IFS= read -r -d '' p; do
		n=${p#src/lib/}
		if [[ $n == */* ]]; then
			unmapped+=("$n (a subfolder)")
			continue
		fi
		d=$(dest "$n")
		if [ -z "$d" ]; then
			unmapped+=("$n")
			continue
		fi
		[ -e "src/$d/$n" ] && die "src/lib/$n: src/$d/$n exists already"
		map[$n]=$d
		moves+=("$n")
	done < <(find src/lib -mindepth 1 \( -type f -o -type l \) -print0 | sort -z)
	if [ ${#unmapped[@]} -gt 0 ]; then
		echo "relayout: these files of src/lib match no row of the table in $0:" >&2
		printf '  %s\n' "${unmapped[@]}" >&2
		echo "relayout: add them to TABLE and run it again; nothing was changed" >&2
		exit 1
	fi
	git ls-files --error-unmatch "${moves[@]/#/src/lib/}" >/dev/null 2>&1 ||
		die "src/lib holds files git does not track (commit or remove them first)"
fi
# What was moved by an earlier run (for the rewrites, which are idempotent).
for row in "${TABLE[@]}"; do
	IFS='|' read -r f _ _ _ _ <<<"$row"
	[ -d "src/$f" ] || continue
	for p in "src/$f"/*; do
		[ -f "$p" ] || continue
		n=${p##*/}
		[ -n "$(dest "$n")" ] && map[$n]=${map[$n]:-$f}
	done
done
[ ${#map[@]} -gt 0 ] || die "nothing to do: no src/lib and none of the table's folders"

if [ $dry -eq 1 ]; then
	for n in "${moves[@]}"; do echo "src/lib/$n -> src/${map[$n]}/$n"; done
	exit 0
fi

# ---- 2. the moves ------------------------------------------------------------
for n in "${moves[@]}"; do
	mkdir -p "src/${map[$n]}"
	git mv "src/lib/$n" "src/${map[$n]}/$n"
done
[ -d src/lib ] && rmdir src/lib 2>/dev/null || true

# ---- 3. the references -------------------------------------------------------
pmap=$(mktemp)
trap 'rm -f "$pmap"' EXIT
for n in "${!map[@]}"; do printf '%s\t%s\n' "$n" "${map[$n]}"; done | sort >"$pmap"
dirs=$(for row in "${TABLE[@]}"; do IFS='|' read -r f _ <<<"$row"; printf 'src/%s/*.c ' "$f"; done)
dirs=${dirs% }
alts=$(for row in "${TABLE[@]}"; do IFS='|' read -r f _ <<<"$row"; printf '|%s' "$f"; done)

# Text files that may name a moved file (this script excepted: its table).
mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.sh' '*.md' '*.py' '*.mjs' '*.map' \
	'Makefile' '.ci/*' | grep -v '^scripts/relayout\.sh$' | while read -r f; do
	[ -f "$f" ] && echo "$f"
done)
# src/lib/NAME and lib/NAME (not .../usr/lib/NAME) -> src/DIR/NAME and DIR/NAME;
# "src/lib/*.c" in the Makefile -> the folders
MOAT_MAP=$pmap MOAT_DIRS=$dirs perl -pi -e '
	BEGIN {
		open(my $m, "<", $ENV{MOAT_MAP}) or die;
		while (<$m>) { chomp; my ($n, $d) = split /\t/; $M{$n} = $d; }
		$re = join("|", map { quotemeta } sort { length($b) <=> length($a) } keys %M);
	}
	s{src/lib/\*\.c}{$ENV{MOAT_DIRS}}g;
	s{src/lib/moat-\*\.map}{src/network/moat-*.map}g;
	s{(?<![\w/.-])(src/)?lib/($re)(?![\w.-])}{($1 // "") . $M{$2} . "/" . $2}ge;
' "${files[@]}"

# The CLI may not include the new folders either (<policy/x.h> is no system header).
perl -pi -e 's{\(lib\|proxy\|shared\|compat\|cli\|moat\|src\)}{(lib|proxy|shared|compat|cli|moat|src'"$alts"')}' \
	scripts/check-cli-includes.sh
grep -q "'<policy/policy.h>'" scripts/check-cli-includes.sh ||
	perl -pi -e "s{'<src/(\w+)/run\.h>'; do}{'<src/\$1/run.h>' '<policy/policy.h>'; do}" \
		scripts/check-cli-includes.sh

# ---- 4. a two-line README comment at the top of each folder's main header ------
readme() { # DIR HEADER LINE1 LINE2
	local h="src/$1/$2" tmp
	# within clang-format's 100 columns, or it would reflow them
	[ $((${#1} + ${#3} + 17)) -le 100 ] && [ $((${#4} + 3)) -le 100 ] ||
		die "the README lines of src/$1 are too long for 100 columns"
	[ -f "$h" ] || die "$h: the main header of src/$1 is missing (fix the table)"
	grep -q "README src/$1/:" "$h" && return
	tmp=$(mktemp)
	{
		sed -n '1p' "$h"
		printf '/*\n * README src/%s/: %s\n * %s\n */\n' "$1" "$3" "$4"
		sed '1d' "$h"
	} >"$tmp"
	cat "$tmp" >"$h"
	rm -f "$tmp"
}
for row in "${TABLE[@]}" "${STAY[@]}"; do
	IFS='|' read -r f h l1 l2 _ <<<"$row"
	readme "$f" "$h" "$l1" "$l2"
done

# ---- 5. docs/ARCHITECTURE.md: the source layout, from the table ----------------
layout=$(mktemp)
{
	echo "## Source layout"
	echo
	echo "One folder per part; each folder's main header starts with a two-line"
	echo "README comment saying what the folder holds (generated by"
	echo "\`scripts/relayout.sh\`, which made this layout; its table is the map)."
	echo
	echo '```'
	echo "include/moat/moat.h   the public API (the CLI includes nothing else of the library)"
	for row in "${STAY[@]:0:2}" "${TABLE[@]}" "${STAY[@]:2}"; do
		IFS='|' read -r f h l1 l2 _ <<<"$row"
		printf '%-21s %s\n' "src/$f/" "$l1"
		printf '%-21s %s\n' "" "$l2"
		list=$(
			cd "src/$f"
			shopt -s nullglob
			for x in *.c *.h *.map; do echo "${x%.*}"; done | sort -u | tr '\n' ' '
		)
		fold -s -w 70 <<<"${list% }" | sed 's/ *$//; s/^/                        /'
	done
	echo "tests/unit            C unit tests (tests/harness/tap.h), each forked with a timeout"
	echo "tests/integration     bash tests driving the real binary, as root and unprivileged"
	echo "tests/redteam         probes with positive controls"
	echo "fuzz/                 libFuzzer targets and their seed corpora"
	echo "bench/                side-by-side benchmarks (make bench)"
	echo '```'
	echo
} >"$layout"
MOAT_LAYOUT=$layout perl -0pi -e '
	BEGIN { local $/; open(my $l, "<", $ENV{MOAT_LAYOUT}) or die; $L = <$l>; }
	s{^## Source layout\n.*?(?=^## |\z)}{$L}ms or die "no ## Source layout section\n";
' docs/ARCHITECTURE.md
rm -f "$layout"

# ---- 6. what is left ------------------------------------------------------------
left=$(git grep -n -E '(^|[^/[:alnum:]_.-])(src/)?lib/[a-z_0-9-]+\.(c|h|map)' -- \
	':!scripts/relayout.sh' ':!*.txt' || true)
left2=$(git grep -n -E '(^|[^/[:alnum:]_.-])src/lib([^/[:alnum:]_.-]|$)' -- ':!scripts/relayout.sh' || true)
if [ -n "$left$left2" ]; then
	echo "relayout: still naming src/lib or a file of it (check by hand):" >&2
	printf '%s\n' "$left" "$left2" | grep -v '^$' >&2
fi
echo "relayout: moved ${#moves[@]} files; now: make -j2 all && build/unit-tests && make lint"
