#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make bench`: installs the missing peers, runs every benchmark (each one an
# interleaved side-by-side run, as root and as the unprivileged user), prints
# one table of medians and ratios with PASS/MISS against each target, and
# writes docs/BENCHMARKS.md and docs/benchmarks.png.
#
# Environment: O (build dir, default build), BENCH_SCALE (repetitions factor,
# 0.2 for a quick look), BENCH_ONLY="startup peers ..." (a subset),
# BENCH_DOCS=0 (do not rewrite docs/). `bench/run-all.sh --report` only
# rewrites the table and docs from the last run's results.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 2

# A clean environment, so that the host's shell set-up (pyenv shims, ...)
# does not leak into the bare runs; moat starts its commands with a clean one.
if [ -z "${BENCH_CLEAN_ENV:-}" ]; then
	exec env -i BENCH_CLEAN_ENV=1 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME="${HOME:-/root}" LANG=C.UTF-8 O="${O:-build}" BENCH_SCALE="${BENCH_SCALE:-1}" \
		BENCH_ONLY="${BENCH_ONLY:-}" BENCH_DOCS="${BENCH_DOCS:-1}" CC="${CC:-cc}" \
		BENCH_SANDBOXES="${BENCH_SANDBOXES:-100}" BENCH_PROXY_MB="${BENCH_PROXY_MB:-512}" \
		BENCH_PROXY_REQS="${BENCH_PROXY_REQS:-200}" "$0" "$@"
fi

# shellcheck source=bench/lib.sh
source bench/lib.sh

suites=(startup peers syscalls exec python memory proxy stdio lifecycle snapshot cycles serve oci)
[ -n "${BENCH_ONLY:-}" ] && read -r -a suites <<<"$BENCH_ONLY"

if [ "$(id -u)" -eq 0 ]; then
	bench/peers.sh --install
else
	echo "bench: not root: peers are not installed, limits and the unprivileged runs are skipped" >&2
fi
if [ ! -x "$O/moat" ]; then
	echo "bench: $O/moat is not built (make bench builds it)" >&2
	exit 2
fi

# run_proxy: bench/proxy.sh (issue 5, written with the egress proxy: bulk
# transfer direct vs CONNECT tunnel vs HTTP proxy vs transparent capture on
# loopback, request rate, --net allow start-up) once as root, its output kept
# verbatim for the report and the tunnel ratio checked against >= 0.9.
run_proxy() {
	rm -f "$BENCH_OUT/proxy.txt"
	if [ ! -f bench/proxy.sh ]; then
		bench_note proxy "proxy missing: bench/proxy.sh is not in this tree (the egress proxy has not landed)"
		return 0
	fi
	local err
	if ! err=$(BENCH_USER=root bench_as_user "$MOAT" run --quiet --net allow -- /bin/true 2>&1); then
		bench_note proxy "proxy missing: ${err:-moat run --net allow failed}"
		return 0
	fi
	# REQS bounded: its request-rate loop is sequential keep-alive requests.
	BENCH_USER=root bench_as_user env SIZE_MB="${BENCH_PROXY_MB:-512}" \
		REQS="${BENCH_PROXY_REQS:-200}" bash bench/proxy.sh "$MOAT" |
		tee "$BENCH_OUT/proxy.txt" || true
	local r
	r=$(awk '/^CONNECT tunnel/ { v = $(NF - 1); sub(/x$/, "", v); print v }' "$BENCH_OUT/proxy.txt")
	BENCH_USER=root bench_target proxy "CONNECT tunnel throughput / direct loopback" "$r" ">=" 0.9 x
}

if [ "${1:-}" = --report ]; then
	# Only rewrite the table, docs/BENCHMARKS.md and the chart from the last run.
	bench_setup || exit 2
	# shellcheck source=/dev/null
	. "$BENCH_OUT/meta.env"
else
	rm -f "$BENCH_OUT"/{results,targets,commands,notes,memory}.tsv "$BENCH_OUT/proxy.txt"
	bench_setup || exit 2
	load_start=$(cut -d' ' -f1-3 /proc/loadavg)
	started=$(date -u '+%Y-%m-%d %H:%M UTC')
	for s in "${suites[@]}"; do
		echo "=== $s"
		if [ "$s" = proxy ]; then
			run_proxy
		else
			bash "bench/$s.sh" || echo "bench: $s.sh exited $?" >&2
		fi
		echo
	done
	load_end=$(cut -d' ' -f1-3 /proc/loadavg)
	run_stage=$BENCH_STAGE
	run_commit=$(git rev-parse --short HEAD 2>/dev/null)
	printf 'load_start=%q\nload_end=%q\nstarted=%q\nrun_stage=%q\nrun_commit=%q\n' \
		"$load_start" "$load_end" "$started" "$run_stage" "$run_commit" >"$BENCH_OUT/meta.env"
fi

# ---- one table ------------------------------------------------------------
table=$BENCH_OUT/table.txt
{
	printf '%-9s %-10s %-46s %8s %8s %-10s %s\n' suite user ratio wall cpu target verdict
	awk -F'\t' '{ printf "%-9s %-10s %-46s %8s %8s %-10s %s\n", $1, $2, $3, $4, $8, ($5 == "info" ? "-" : $5 " " $6), $7 }' \
		"$BENCH_OUT/targets.tsv"
} >"$table"
echo "=== summary (ratios of medians from one interleaved run; cpu = user+sys of the job)"
cat "$table"
if [ -s "$BENCH_OUT/notes.tsv" ]; then
	echo "--- missing cases and notes"
	awk -F'\t' '{ printf "%-9s %-10s %-22s %s: %s\n", $1, $2, $3, $4, $5 }' "$BENCH_OUT/notes.tsv"
fi
pass=$(awk -F'\t' '$7 == "PASS"' "$BENCH_OUT/targets.tsv" | wc -l)
miss=$(awk -F'\t' '$7 == "MISS"' "$BENCH_OUT/targets.tsv" | wc -l)
missing=$(awk -F'\t' '$7 ~ /^MISSING/' "$BENCH_OUT/targets.tsv" | wc -l)
echo "targets: $pass met, $miss missed, $missing not measurable (case missing)"

[ "${BENCH_DOCS:-1}" = 1 ] || exit 0

# ---- chart ------------------------------------------------------------------
chart=docs/benchmarks.png
mkdir -p docs
if command -v gnuplot >/dev/null; then
	# Start-up medians (ms) per tool, root and unprivileged, from the peers run
	# (falls back to the start-up run); and wall ratios against their targets.
	awk -F'\t' '($1 == "peers") { v[$3, $2] = $4 / 1000; seen[$3] = 1; if (!(($3) in ord)) ord[$3] = ++n; name[n] = $3 }
		END { for (i = 1; i <= n; i++) { c = name[i]; printf "\"%s\" %s %s\n", c, ((c, "root") in v) ? v[c, "root"] : "NaN", ((c, "moat-test") in v) ? v[c, "moat-test"] : "NaN" } }' \
		"$BENCH_OUT/results.tsv" >"$BENCH_OUT/chart-startup.dat"
	if [ ! -s "$BENCH_OUT/chart-startup.dat" ]; then
		awk -F'\t' '($1 == "startup") { v[$3, $2] = $4 / 1000; if (!(($3) in ord)) ord[$3] = ++n; name[n] = $3 }
			END { for (i = 1; i <= n; i++) { c = name[i]; printf "\"%s\" %s %s\n", c, ((c, "root") in v) ? v[c, "root"] : "NaN", ((c, "moat-test") in v) ? v[c, "moat-test"] : "NaN" } }' \
			"$BENCH_OUT/results.tsv" >"$BENCH_OUT/chart-startup.dat"
	fi
	awk -F'\t' '$5 != "info" && $4 != "n/a" && $2 == "root" && $4 ~ /^[0-9.]+$/ { gsub(/"/, "", $3); printf "\"%s: %s\" %s %s\n", $1, $3, $4 / $6, $7 == "PASS" ? 1 : 0 }' \
		"$BENCH_OUT/targets.tsv" >"$BENCH_OUT/chart-ratios.dat"
	gnuplot <<EOF || echo "bench: gnuplot failed" >&2
set terminal pngcairo size 1200,1000 font "sans,10" noenhanced
set output "$chart"
set multiplot layout 2,1 title "moat benchmarks, $(date -u +%Y-%m-%d), $(nproc) CPUs, kernel $(uname -r)"
set title "start-up of /bin/true, median ms (log scale; one interleaved run per user)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.1:*]
set grid ytics
set xtics rotate by -20
set key top left
plot "$BENCH_OUT/chart-startup.dat" using 2:xtic(1) title "root", "" using 3 title "moat-test"
unset logscale y
set title "ratio / target as root (<= 1 meets a <= target; >= 1 meets a >= target)"
set yrange [0:*]
set xtics rotate by -30 font ",8"
set style histogram clustered gap 1
unset key
plot "$BENCH_OUT/chart-ratios.dat" using 2:xtic(1) title "ratio/target", 1 with lines lw 2 lc rgb "red" notitle
unset multiplot
EOF
else
	echo "bench: gnuplot missing: no chart" >&2
fi

# ---- docs/BENCHMARKS.md -------------------------------------------------------
md=docs/BENCHMARKS.md
{
	echo "# Benchmarks"
	echo
	echo "Generated by \`make bench\` (bench/run-all.sh) on $started. Every comparison is one"
	echo "interleaved run of \`bench/timer\` (rounds ABC, BCA, CAB, ...; fork + execvp + waitpid,"
	echo "no shell): numbers on these machines drift by ±30 % between minutes, so only ratios"
	echo "taken in one run are compared. Medians of wall-clock time, which ends when the"
	echo "command's top process exits. \"cpu\" is user + system time of the command and all of"
	echo "its descendants, also those it did not wait for (the timer is a child subreaper and"
	echo "reaps them, e.g. bubblewrap's init in its pid namespace): less sensitive to other"
	echo "load on the machine than wall-clock time, and a truer cost for comparing tools."
	echo
	echo "## Machine"
	echo
	echo "| fact | value |"
	echo "|---|---|"
	echo "| date | $started |"
	echo "| CPUs (nproc) | $(nproc) |"
	echo "| CPU | $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo) |"
	echo "| memory | $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| kernel | $(uname -r) |"
	echo "| distribution | $(. /etc/os-release && echo "$PRETTY_NAME") |"
	echo "| cgroups | $(stat -f -c %T /sys/fs/cgroup) at /sys/fs/cgroup$([ -d /sys/fs/cgroup/unified ] && echo " (hybrid: v1 controllers + v2 at /sys/fs/cgroup/unified)") |"
	echo "| load average at start / end | $load_start / $load_end |"
	echo "| moat | ${run_commit:-$(git rev-parse --short HEAD 2>/dev/null)} ($("$O/moat" --version 2>/dev/null | head -1)) |"
	echo "| peers | bwrap $(bwrap --version 2>/dev/null | awk '{ print $2 }'), crun $(crun --version 2>/dev/null | awk 'NR == 1 { print $3 }'), firejail $(firejail --version 2>/dev/null | awk 'NR == 1 { print $3 }'), srt $(node -e 'console.log(require(process.argv[1]).version)' "$top/bench/.peers/node_modules/@anthropic-ai/sandbox-runtime/package.json" 2>/dev/null || echo missing), node $(node --version 2>/dev/null) |"
	echo "| scale | BENCH_SCALE=${BENCH_SCALE:-1} |"
	echo
	echo "## Targets"
	echo
	echo "| suite | user | ratio | wall | cpu | target | verdict |"
	echo "|---|---|---|---|---|---|---|"
	awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $8, ($5 == "info" ? "-" : $5 " " $6), $7 }' \
		"$BENCH_OUT/targets.tsv"
	echo
	echo "![chart](benchmarks.png)"
	echo
	echo "## Medians"
	echo
	echo "| suite | user | case | median ms | p90 ms | min ms | cpu ms | runs | fails |"
	echo "|---|---|---|---|---|---|---|---|---|"
	awk -F'\t' '{ printf "| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %s | %s |\n", $1, $2, $3, $4 / 1000, $5 / 1000, $9 / 1000, $8 / 1000, $6, $7 }' \
		"$BENCH_OUT/results.tsv"
	if [ -s "$BENCH_OUT/memory.tsv" ]; then
		echo
		echo "## Many sandboxes at once"
		echo
		echo "| user | tool | sandboxes | ms until all run | own processes | PSS MiB per sandbox | RSS MiB per sandbox |"
		echo "|---|---|---|---|---|---|---|"
		awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' \
			"$BENCH_OUT/memory.tsv"
	fi
	if [ -s "$BENCH_OUT/proxy.txt" ]; then
		echo
		echo "## Egress proxy (bench/proxy.sh, as root, one pass; not interleaved)"
		echo
		echo '```'
		cat "$BENCH_OUT/proxy.txt"
		echo '```'
	fi
	if [ -s "$BENCH_OUT/notes.tsv" ]; then
		echo
		echo "## Missing cases and notes"
		echo
		awk -F'\t' '{ printf "- %s, %s, %s: %s: %s\n", $1, $2, $3, $4, $5 }' "$BENCH_OUT/notes.tsv" |
			sed "s|$run_stage|\$STAGE|g" | sort -u
	fi
	echo
	echo "## Command lines"
	echo
	echo "\$STAGE is the run's staging directory (/tmp/moat-bench.XXXXXX: moat, timer and"
	echo "sysload copied there, workspaces under it, on a tmpfs where noted). Each command was"
	echo "run by \`\$STAGE/bin/timer -n RUNS -w 2 -T SECONDS CMD1 :: CMD2 :: ...\`, as root and"
	echo "through \`runuser -u moat-test --\`."
	echo
	awk -F'\t' '!seen[$1 FS $2]++ { printf "- %s, %s:\n\n  ```\n  %s\n  ```\n\n", $1, $2, $3 }' \
		"$BENCH_OUT/commands.tsv" | sed "s|$run_stage|\$STAGE|g"
	if [ -f bench/FINDINGS.md ]; then
		echo
		cat bench/FINDINGS.md
	fi
} >"$md"
echo "bench: wrote $md and $chart"
