/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Snapshots of sessions: moat snapshot / restore / reset (docs/SESSIONS.md,
 * "Snapshots"). Clients of libmoat's moat_session_snapshot() and the others.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static int snap_error(const char *cmd, const struct moat_error *e)
{
	fprintf(stderr, "moat %s: ", cmd);
	moat_cli_put_safe(stderr, e->message[0] ? e->message : "unknown error");
	fputc('\n', stderr);
	/* no such session, or a bad name: bad usage (2); anything else: 1 */
	if (strcmp(e->stage, "session") == 0 && (e->err == ENOENT || e->err == ECONNREFUSED))
		return MOAT_EXIT_USAGE;
	if (strcmp(e->stage, "snapshot") == 0 && e->err == EINVAL)
		return MOAT_EXIT_USAGE;
	return 1;
}

static int list(const char *id, bool json)
{
	struct moat_error err = {0};
	struct moat_snapshot_info *v = NULL;
	size_t n = 0;
	if (moat_session_snapshot_list(id, &v, &n, &err) < 0)
		return snap_error("snapshot", &err);
	if (json)
		fputc('[', stdout);
	else if (n)
		printf("%-24s %-20s %12s\n", "NAME", "CREATED", "BYTES");
	for (size_t i = 0; i < n; i++) {
		/* names are [A-Za-z0-9_.-]: nothing to escape */
		if (json) {
			printf("%s{\"name\":\"%s\",\"created_us\":%llu,\"bytes\":%llu,"
			       "\"current\":%s}",
			       i ? "," : "", v[i].name, (unsigned long long)v[i].created_us,
			       (unsigned long long)v[i].bytes, v[i].current ? "true" : "false");
			continue;
		}
		char when[32] = "?";
		time_t t = (time_t)(v[i].created_us / 1000000u);
		struct tm tm;
		if (localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-24s %-20s %12llu%s\n", v[i].name, when, (unsigned long long)v[i].bytes,
		       v[i].current ? "  (current)" : "");
	}
	if (json)
		fputs("]\n", stdout);
	free(v);
	return 0;
}

int moat_cli_snapshot(int argc, char **argv)
{
	bool force = false, do_list = false, do_delete = false, json = false;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--force") == 0)
			force = true;
		else if (strcmp(argv[i], "--list") == 0)
			do_list = true;
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--delete") == 0)
			do_delete = true;
		else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else
			goto usage;
	}
	int rest = argc - i;
	signal(SIGPIPE, SIG_IGN);
	if (do_list) {
		if (rest != 1 || do_delete || force)
			goto usage;
		return list(argv[i], json);
	}
	struct moat_error err = {0};
	if (do_delete) {
		if (rest != 2 || force || json)
			goto usage;
		if (moat_session_snapshot_delete(argv[i], argv[i + 1], &err) < 0)
			return snap_error("snapshot", &err);
		return 0;
	}
	if (rest < 1 || rest > 2 || json)
		goto usage;
	char name[MOAT_SNAPSHOT_NAME_MAX + 1];
	if (moat_session_snapshot(argv[i], rest == 2 ? argv[i + 1] : NULL, force, name, &err) < 0)
		return snap_error("snapshot", &err);
	printf("%s\n", name);
	return 0;
usage:
	fprintf(stderr,
		"usage: moat snapshot [--force] ID|NAME [SNAPSHOT]\n"
		"       moat snapshot --list [--json] ID|NAME\n"
		"       moat snapshot --delete ID|NAME SNAPSHOT\n");
	return MOAT_EXIT_USAGE;
}

int moat_cli_restore(int argc, char **argv)
{
	bool force = argc > 1 && strcmp(argv[1], "--force") == 0;
	int i = force ? 2 : 1;
	if (argc - i != 2 || argv[i][0] == '-') {
		fprintf(stderr, "usage: moat restore [--force] ID|NAME SNAPSHOT\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_error err = {0};
	signal(SIGPIPE, SIG_IGN);
	if (moat_session_restore(argv[i], argv[i + 1], force, &err) < 0)
		return snap_error("restore", &err);
	return 0;
}

int moat_cli_reset(int argc, char **argv)
{
	bool force = argc > 1 && strcmp(argv[1], "--force") == 0;
	int i = force ? 2 : 1;
	if (argc - i != 1 || argv[i][0] == '-') {
		fprintf(stderr, "usage: moat reset [--force] ID|NAME\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_error err = {0};
	signal(SIGPIPE, SIG_IGN);
	if (moat_session_reset(argv[i], force, &err) < 0)
		return snap_error("reset", &err);
	return 0;
}
