# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for moat: commands, and each command's options as
# `moat help CMD` lists them (so they follow the installed binary).
_moat() {
	local cur cmd words
	cur=${COMP_WORDS[COMP_CWORD]}
	if ((COMP_CWORD == 1)); then
		words="run create exec ls logs stop rm cp snapshot restore reset policy doctor log runs diff apply ps gc selftest mcp serve oci help --version"
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	cmd=${COMP_WORDS[1]}
	local w
	for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
		[[ $w == -- ]] && return # the sandboxed command's own words
	done
	if [[ $cmd == policy ]] && ((COMP_CWORD == 2)); then
		mapfile -t COMPREPLY < <(compgen -W "check show import" -- "$cur")
		return
	fi
	if [[ $cmd == doctor && ${COMP_WORDS[COMP_CWORD - 1]} == --boot ]]; then
		mapfile -t COMPREPLY < <(compgen -W "process gvisor vm" -- "$cur")
		return
	fi
	if [[ $cmd == doctor && ${COMP_WORDS[COMP_CWORD - 1]} == --vm-accel ]]; then
		mapfile -t COMPREPLY < <(compgen -W "kvm any" -- "$cur")
		return
	fi
	if [[ $cur == -* ]]; then
		words=$("${COMP_WORDS[0]}" help "$cmd" 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _moat moat
