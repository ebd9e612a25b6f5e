#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Static checks: clang-format (check only), cppcheck, src/cli includes, and
# the shell scripts with shellcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
rc=0
mapfile -t csrc < <(git ls-files '*.c' '*.h')
mapfile -t shsrc < <(git ls-files '*.sh' .ci/run)
if ! clang-format --dry-run --Werror "${csrc[@]}" 2>/tmp/moat-lint.$$; then
	head -40 /tmp/moat-lint.$$
	echo "lint: clang-format differs (make format)"
	rc=1
fi
rm -f /tmp/moat-lint.$$
# cppcheck does not understand __attribute__((cleanup)): its leak checks are
# replaced by LeakSanitizer in the sanitizer build (make BUILD=san check).
if ! cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
	--suppress=missingIncludeSystem --suppress=unknownMacro --suppress=memleak \
	--suppress=resourceLeak --suppress=leakReturnValNotUsed -D_GNU_SOURCE -Iinclude -Isrc \
	src include; then
	echo "lint: cppcheck"
	rc=1
fi
# The thin CLI includes only moat/moat.h and its own headers (the control
# first: the rule must catch each bad spelling).
if ! scripts/check-cli-includes.sh --control || ! scripts/check-cli-includes.sh; then
	echo "lint: src/cli includes a library-internal header"
	rc=1
fi
if ! shellcheck -x -S warning "${shsrc[@]}"; then
	echo "lint: shellcheck"
	rc=1
fi
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
