# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The "user at the host" of the review tests (review.sh, risk.sh): a base
# directory the unprivileged test user TUSER owns, with its own HOME and git
# identity, and as_user to run host-side commands (git, the positive
# controls) as that user, never as root. Sourced after tap.sh.

# Host-side commands run as the unprivileged test user, never as root.
as_user() {
	if is_root; then
		setpriv --reuid "$TUSER" --regid "$TUSER" --clear-groups env HOME="$UHOME" "$@"
	else
		env HOME="$UHOME" "$@"
	fi
}

# A base directory the test user owns (T_OUT is root's 0700 directory as root).
setup_base() {
	command -v git >/dev/null || skip "git is not installed"
	BASE="$T_OUT/base"
	UHOME="$BASE/home"
	mkdir -p "$BASE" "$UHOME"
	if is_root; then
		id "$TUSER" >/dev/null 2>&1 || skip "no $TUSER user"
		chmod 711 "$T_OUT"
		chown -R "$TUSER:" "$BASE"
	fi
	printf '[user]\n\tname = t\n\temail = t@example.invalid\n' >"$UHOME/.gitconfig"
	is_root && chown "$TUSER:" "$UHOME/.gitconfig"
	return 0
}

run_id_of() { sed -n 's/^moat: run \([A-Za-z0-9_.-]*\) .*/\1/p' "$1" | head -n 1; }
