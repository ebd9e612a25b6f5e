#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 15: snapshot and restore of a session whose workspace holds 10,000
# files: target <= 50 ms each (the moat snapshot / moat restore command, end
# to end). Two cases: the sandbox changed 100 of the files (and wrote a few
# to /tmp); the sandbox itself wrote all 10,000 files (every one is a change:
# the copy a snapshot makes is as large as it gets). Medians over the
# rounds; root and unprivileged.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

rounds=$(bench_runs 20)
files=10000

# One measurement, run as the user: prints "snapshot_us MEDIAN" and
# "restore_us MEDIAN" for one case (changed: "some" or "all").
cat >"$BENCH_STAGE/bin/snapbench" <<'EOS'
#!/usr/bin/env bash
set -euo pipefail
moat=$1 dir=$2 files=$3 rounds=$4 case=$5
export XDG_RUNTIME_DIR=$dir/xdg
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
ws=$dir/ws-$case
rm -rf "$ws"
mkdir -p "$ws"
if [ "$case" = some ]; then
	for d in $(seq 0 99); do
		mkdir "$ws/d$d"
		for f in $(seq 0 99); do echo "$d $f" >"$ws/d$d/f$f"; done
	done
fi
id=$("$moat" create --workspace "$ws")
trap '"$moat" rm --force --quiet "$id" >/dev/null 2>&1 || true' EXIT
if [ "$case" = all ]; then
	"$moat" exec "$id" -- sh -c "for d in \$(seq 0 99); do mkdir d\$d; for f in \$(seq 0 99); do echo \"\$d \$f\" >d\$d/f\$f; done; done"
fi
[ "$("$moat" exec "$id" -- sh -c 'find . -type f | wc -l')" -ge "$files" ] || { echo "setup: fewer files than $files" >&2; exit 1; }
now() { date +%s%N; }
snaps=() rests=()
for r in $(seq "$rounds"); do
	# what the sandbox changes before the snapshot: 100 files, a few in /tmp
	"$moat" exec "$id" -- sh -c "for i in \$(seq 0 99); do echo r$r >d\$i/f$r; done; echo $r >/tmp/t$r"
	t0=$(now)
	"$moat" snapshot "$id" "s$r" >/dev/null
	t1=$(now)
	# and after it, what the restore takes back: 100 more files, one deleted
	"$moat" exec "$id" -- sh -c "for i in \$(seq 0 99); do echo later >d\$i/f$((r + 1)); done; rm -f d0/f0"
	t2=$(now)
	"$moat" restore "$id" "s$r"
	t3=$(now)
	"$moat" snapshot --delete "$id" "s$r"
	snaps+=($(((t1 - t0) / 1000)))
	rests+=($(((t3 - t2) / 1000)))
done
med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
p90() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.9 + 0.5); if (i < 1) i = 1; print v[i] }'; }
echo "snapshot_us $(med "${snaps[@]}") $(p90 "${snaps[@]}")"
echo "restore_us $(med "${rests[@]}") $(p90 "${rests[@]}")"
EOS
chmod a+rx "$BENCH_STAGE/bin/snapbench"

for BENCH_USER in $(bench_users); do
	work=$(mktemp -d "$BENCH_STAGE/snap-XXXXXX")
	chmod 0777 "$work"
	for c in some all; do
		label="changed: 100 of $files"
		[ "$c" = all ] && label="written by the sandbox: $files"
		echo "snapshot (as $BENCH_USER, $rounds rounds, $label)"
		out=$(bench_as_user "$BENCH_STAGE/bin/snapbench" "$MOAT" "$work" "$files" "$rounds" "$c") || {
			bench_note snapshot "snapshot bench ($c) failed as $BENCH_USER"
			continue
		}
		for k in snapshot restore; do
			med=$(awk -v k="${k}_us" '$1 == k { print $2 }' <<<"$out")
			p90=$(awk -v k="${k}_us" '$1 == k { print $3 }' <<<"$out")
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' snapshot "$BENCH_USER" "$k ($label)" \
				"$med" "$p90" "$rounds" 0 0 0 >>"$BENCH_OUT/results.tsv"
			bench_target snapshot "moat $k, workspace of $files files ($label), median" \
				"$(awk -v u="$med" 'BEGIN { printf "%.1f", u / 1000 }')" "<=" 50 ms
		done
	done
	rm -rf "$work"
done
