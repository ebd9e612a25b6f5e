/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The red-team probes of tests/redteam/probes/, compiled into moat (their main
 * renamed by the Makefile): `moat __probe NAME ARGS` runs one, `moat selftest`
 * runs the battery. The table is generated (scripts/gen-probes-table.sh). */
#pragma once

struct moat_probe_entry {
	const char *name;
	int (*main)(int argc, char **argv);
};

/* Terminated by an entry with name NULL. */
extern const struct moat_probe_entry moat_probes[];
