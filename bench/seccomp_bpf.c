/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/seccomp_bpf: writes moat's own seccomp program as raw BPF (struct
 * sock_filter array, host byte order) to a file, for bubblewrap's
 * `--seccomp FD` (bench/startup.sh, the bubblewrap command of the same
 * isolation).
 *
 *   seccomp_bpf OUT
 *
 * Built by bench_setup from moat's own src/kernel/seccomp.c and the build's
 * generated $O/gen/seccomp_baked.c: the program written is the one a
 * `moat run` of the default policy (no --allow-syscall/--deny-syscall)
 * installs when its filter has no listener, i.e. moat_seccomp_baked_find()
 * of moat_plan_seccomp_opts(plan, notify = false): the same rules, each
 * denial answered by the kernel with its errno instead of being recorded
 * first. The program with a listener cannot be given to bubblewrap: without
 * a listener the kernel answers SECCOMP_RET_USER_NOTIF with ENOSYS, also
 * for the recorded execve. Before writing, the baked program is checked
 * against a fresh compilation by libseccomp (moat_seccomp_build +
 * moat_seccomp_export, as moat does for a policy with lists); any
 * difference is an error. Prints the instruction counts on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernel/seccomp.h"

static int compile(const struct moat_seccomp_opts *o, struct moat_seccomp_prog *ret)
{
	scmp_filter_ctx ctx = NULL;
	int k = moat_seccomp_build(o, &ctx);
	if (k >= 0)
		k = moat_seccomp_export(ctx, o->notify, ret);
	seccomp_release(ctx);
	return k;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seccomp_bpf OUT\n");
		return 2;
	}
	/* moat_plan_seccomp_opts() of the default policy without a listener:
	 * no lists, and exec/net recording exist only with one. */
	const struct moat_seccomp_opts o = {.notify = false};
	/* what moat installs with a listener (default policy, --net none) */
	const struct moat_seccomp_opts on = {
		.notify = true, .record_exec = true, .record_net = true};
	const struct moat_seccomp_baked *b = moat_seccomp_baked_find(&o);
	const struct moat_seccomp_baked *bn = moat_seccomp_baked_find(&on);
	if (!b || !bn) {
		fprintf(stderr, "seccomp_bpf: moat has no built-in default program\n");
		return 1;
	}
	struct moat_seccomp_prog fresh = {0};
	int k = compile(&o, &fresh);
	if (k < 0) {
		fprintf(stderr, "seccomp_bpf: cannot compile the filter: %s\n", strerror(-k));
		return 1;
	}
	if (fresh.len != b->len || memcmp(fresh.insns, b->insns, b->len * sizeof(b->insns[0]))) {
		fprintf(stderr,
			"seccomp_bpf: moat's built-in program (%u insns) differs from a fresh "
			"compilation (%u insns)\n",
			b->len, fresh.len);
		moat_seccomp_prog_done(&fresh);
		return 1;
	}
	moat_seccomp_prog_done(&fresh);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "seccomp_bpf: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size_t len = b->len * sizeof(b->insns[0]);
	ssize_t n = write(fd, b->insns, len);
	if (n != (ssize_t)len || close(fd) < 0) {
		fprintf(stderr, "seccomp_bpf: %s: short write\n", argv[1]);
		return 1;
	}
	fprintf(stderr,
		"seccomp_bpf: moat's default program without listener: %u insns (with "
		"listener, exec and net records: %u)\n",
		b->len, bn->len);
	return 0;
}
