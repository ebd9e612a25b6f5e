/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat gc [--state-dir DIR] [--runs-dir DIR] [--policy FILE] [--retention DURATION]
 * [--runs-max SIZE]: remove what crashed runs left (cgroups, temporary
 * directories, state records), then the logs and held-back data of finished
 * runs past the retention age and, oldest first, past the total cap. Runs
 * that are alive are left alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int usage(void)
{
	fprintf(stderr,
		"usage: moat gc [--quiet] [--state-dir DIR] [--runs-dir DIR] [--policy FILE]\n"
		"               [--retention DURATION] [--runs-max SIZE]\n"
		"defaults: --retention 14d, --runs-max 4G (or the policy's audit.retention, "
		"audit.runs_max)\n");
	return MOAT_EXIT_USAGE;
}

int moat_cli_gc(int argc, char **argv)
{
	const char *dir = NULL, *runs_dir = NULL;
	struct moat_gc_result g;
	struct moat_runs_gc_result rg;
	struct moat_error err = {0};
	struct moat_policy *p = moat_policy_new();
	bool quiet = false;
	int rc = 0;

	if (!p)
		return MOAT_EXIT_SETUP;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (strcmp(o, "--state-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(o, "--runs-dir") == 0 && i + 1 < argc)
			runs_dir = argv[++i];
		else if (strcmp(o, "--quiet") == 0 || strcmp(o, "-q") == 0)
			quiet = true;
		else if (strcmp(o, "--policy") == 0 && i + 1 < argc) {
			if (moat_policy_load_file(p, argv[++i], &err) < 0) {
				moat_cli_print_error(&err);
				moat_policy_free(p);
				return MOAT_EXIT_USAGE;
			}
		} else if ((strcmp(o, "--retention") == 0 || strcmp(o, "--runs-max") == 0) &&
			   i + 1 < argc) {
			if (moat_policy_set_option(p, o, argv[++i], &err) < 0) {
				moat_cli_print_error(&err);
				moat_policy_free(p);
				return MOAT_EXIT_USAGE;
			}
		} else {
			moat_policy_free(p);
			return usage();
		}
	}
	int r = moat_gc(dir, &g, &err);
	if (!quiet || r < 0)
		fprintf(stderr,
			"moat gc: %u dead run(s) cleaned (%u cgroup(s), %u temporary dir(s)), %u live, "
			"%u failed\n",
			g.removed, g.cgroups, g.tmpdirs, g.live, g.failed);
	if (r < 0) {
		moat_cli_print_error(&err);
		rc = 1;
	}

	/* the live runs keep their logs */
	struct moat_run_info *live = NULL;
	size_t n_live = 0;
	if (moat_ps(dir, &live, &n_live, NULL) < 0)
		n_live = 0;
	const char **ids = calloc(n_live + 1, sizeof(char *));
	if (!ids) {
		free(live);
		moat_policy_free(p);
		return 1;
	}
	for (size_t i = 0; i < n_live; i++)
		ids[i] = live[i].id;
	/* what dead sessions left: their sockets and name files */
	unsigned sess_removed = 0;
	if (moat_session_gc(ids, n_live, &sess_removed, &err) < 0) {
		moat_cli_print_error(&err);
		rc = 1;
	} else if (!quiet)
		fprintf(stderr, "moat gc: sessions: %u dead socket(s) or name(s) removed\n",
			sess_removed);
	r = moat_runs_gc(runs_dir, moat_policy_retention_ms(p), moat_policy_runs_max(p), ids, &rg,
			 &err);
	if (!quiet || r < 0)
		fprintf(stderr,
			"moat gc: runs: %u removed past the retention age, %u past the total cap, "
			"%llu bytes freed, %llu bytes left, %u failed\n",
			rg.removed_age, rg.removed_cap, rg.bytes_freed, rg.total_after, rg.failed);
	if (r < 0) {
		moat_cli_print_error(&err);
		rc = 1;
	}
	/* cached images no sandbox holds (docs/IMAGES.md) */
	struct moat_image_gc_result ig;
	if (moat_image_gc(&ig, &err) < 0) {
		moat_cli_print_error(&err);
		rc = 1;
	} else if (!quiet)
		fprintf(stderr,
			"moat gc: images: %u unused removed, %u in use, %u interrupted unpack(s) "
			"removed, %u failed\n",
			ig.removed, ig.in_use, ig.stale, ig.failed);
	if (ig.failed)
		rc = 1;
	/* the vm level's initramfs files not used for a week (docs/ISOLATION.md) */
	struct moat_vm_gc_result vg;
	if (moat_vm_gc(7 * 24 * 3600, &vg, &err) < 0) {
		moat_cli_print_error(&err);
		rc = 1;
	} else if (!quiet)
		fprintf(stderr,
			"moat gc: vm: %u initramfs file(s) unused for a week removed, %u kept, "
			"%u failed\n",
			vg.removed, vg.kept, vg.failed);
	if (vg.failed)
		rc = 1;
	free(ids);
	free(live);
	moat_policy_free(p);
	return rc;
}
