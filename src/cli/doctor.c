/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat doctor [--json] [--boot LEVEL [--vm-accel kvm|any]]: the kernel
 * features found and what moat will enforce; with --boot, the proof that an
 * isolation level works here: a sandbox at that level really started.
 * Exit: 0 fine (or booted), 1 a required feature is missing (or it did not
 * boot), 2 bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: moat doctor [--json] [--boot process|gvisor|vm "
		"[--vm-accel kvm|any]]\n");
	return MOAT_EXIT_USAGE;
}

int moat_cli_doctor(int argc, char **argv)
{
	bool json = false;
	const char *boot = NULL, *accel = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--boot") == 0 && i + 1 < argc && !boot)
			boot = argv[++i];
		else if (strcmp(argv[i], "--vm-accel") == 0 && i + 1 < argc && !accel)
			accel = argv[++i];
		else
			return usage();
	}
	if (accel && (!boot || strcmp(boot, "vm") != 0)) {
		fprintf(stderr, "moat doctor: --vm-accel goes with --boot vm\n");
		return usage();
	}
	char *j = NULL, *t = NULL;
	int r = boot ? moat_doctor_boot(boot, accel, &j, &t) : moat_doctor(&j, &t);
	if (r == -EINVAL)
		return usage();
	if (r < 0) {
		fprintf(stderr, "moat doctor: %s failed: %s\n", boot ? "booting" : "probing",
			strerror(-r));
		return 1;
	}
	fputs(json ? j : t, stdout);
	if (json)
		fputc('\n', stdout);
	free(j);
	free(t);
	return r > 0 ? 1 : 0;
}
