#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The plugin boundary, checked on the built files (src/network/net_plugin.h):
#   - the moat executable exports no symbol of its own (no -rdynamic): a
#     plugin cannot bind to moat's internals;
#   - each plugin exports exactly its one entry, moat_*_plugin_v2;
#   - every symbol a plugin leaves undefined comes from a library the plugin
#     itself links (otherwise dlopen fails at run time only).
#   scripts/check-plugin-syms.sh MOAT PLUGIN...
#   scripts/check-plugin-syms.sh --control CC   (the check must fail on an
#       executable linked with -rdynamic and on a plugin exporting more)
set -euo pipefail
if [ "${1:-}" = --control ]; then
	read -r -a cc <<<"$2"
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	printf 'int moat_leak(void);\nint moat_leak(void) { return 0; }\nint main(void) { return moat_leak(); }\n' >"$t/exe.c"
	printf 'const void *moat_net_plugin_v2(void);\nconst void *moat_net_plugin_v2(void) { return 0; }\nint moat_extra(void);\nint moat_extra(void) { return 1; }\n' >"$t/so.c"
	"${cc[@]}" -fPIE -pie -o "$t/exe" "$t/exe.c"
	"${cc[@]}" -fPIE -pie -rdynamic -o "$t/exe-rdynamic" "$t/exe.c"
	"${cc[@]}" -fPIC -shared -o "$t/plugin.so" "$t/so.c"
	printf '{ global: moat_net_plugin_v2; local: *; };\n' >"$t/map"
	"${cc[@]}" -fPIC -shared -Wl,--version-script="$t/map" -o "$t/plugin-ok.so" "$t/so.c"
	"$0" "$t/exe" "$t/plugin-ok.so" || {
		echo "check-plugin-syms: control: a good pair is refused" >&2
		exit 1
	}
	if "$0" "$t/exe-rdynamic" "$t/plugin-ok.so" 2>/dev/null; then
		echo "check-plugin-syms: control: an executable linked with -rdynamic passes" >&2
		exit 1
	fi
	if "$0" "$t/exe" "$t/plugin.so" 2>/dev/null; then
		echo "check-plugin-syms: control: a plugin exporting more than its entry passes" >&2
		exit 1
	fi
	exit 0
fi
exe=$1
shift
rc=0
# What a PIE executable defines in its dynamic table without exporting
# anything of its own: the C runtime's _IO_stdin_used, the linker's markers
# and the C library's variables it copies (stdin, environ, ...: versioned);
# in the sanitizer build (BUILD=san) the runtime's own interface
# (__asan_*, __ubsan_*, __lsan_*, __sanitizer_*), which is not moat's.
own=$(nm -D --defined-only "$exe" | awk '{print $3}' | grep -v '@' |
	grep -vxE '_IO_stdin_used|_edata|_end|__bss_start|_init|_fini' |
	grep -vE '^__(asan|ubsan|lsan|sanitizer)_' || true)
if [ -n "$own" ]; then
	echo "$exe exports symbols (a plugin could bind to them): $(echo "$own" | head -5 | tr '\n' ' ')" >&2
	rc=1
fi
for so in "$@"; do
	exports=$(nm -D --defined-only "$so" | awk '{print $3}' | sed 's/@.*//' |
		grep -vxE '_edata|_end|__bss_start|_init|_fini' | sort -u)
	if [ "$(wc -l <<<"$exports")" -ne 1 ] || ! grep -qxE 'moat_(net|nft)_plugin_v2' <<<"$exports"; then
		echo "$so must export exactly its entry moat_*_plugin_v2, it exports: $(echo "$exports" | head -5 | tr '\n' ' ')" >&2
		rc=1
	fi
	have=$(ldd "$so" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
		nm -D --defined-only "$lib" | awk '{print $3}'
	done)
	have=$(sed 's/@.*//' <<<"$have" | sort -u)
	while read -r sym; do
		[ -n "$sym" ] || continue
		if ! grep -qxF "$sym" <<<"$have"; then
			echo "$so needs $sym, which none of the plugin's own libraries export" >&2
			rc=1
		fi
	done < <(nm -D --undefined-only "$so" | awk '$1 == "U" {print $2}' | sed 's/@.*//' | sort -u)
done
exit $rc
