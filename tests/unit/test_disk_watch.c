/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --disk said when hit (limits/disk_watch.h): which plan steps are watched,
 * when a filesystem counts as full, what each level says it records, and the
 * full areas in the status record and through a session's `moat rm`. Pure. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "harness/tap.h"
#include "limits/disk_watch.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "sandbox/isolation.h"
#include "supervisor/session.h"
#include "moat/moat.h"
#include "shared/macro.h"

TEST(disk_statfs_full)
{
	bool inodes = true;
	/* 8 MiB tmpfs, nr_inodes large: a page left is not full */
	struct statfs sf = {.f_blocks = 2048, .f_bfree = 1, .f_files = 1000, .f_ffree = 10};
	ASSERT_TRUE(!moat_disk_statfs_full(&sf, &inodes));
	sf.f_bfree = 0; /* no page left */
	ASSERT_TRUE(moat_disk_statfs_full(&sf, &inodes));
	ASSERT_TRUE(!inodes);
	sf.f_bfree = 100;
	sf.f_ffree = 0; /* no inode left, pages left */
	ASSERT_TRUE(moat_disk_statfs_full(&sf, &inodes));
	ASSERT_TRUE(inodes);
	/* f_files 0: no inode limit (nr_inodes=0), never full by inodes */
	sf.f_files = 0;
	ASSERT_TRUE(!moat_disk_statfs_full(&sf, &inodes));
	/* no size at all (f_blocks 0, size=0 is unlimited) */
	struct statfs un = {0};
	ASSERT_TRUE(!moat_disk_statfs_full(&un, &inodes));
}

/* Every writable tmpfs and the overlay, with its size; not the read-only
 * ones nor binds (a --rw bind is the host's disk, not --disk). */
TEST(disk_watched_steps)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	char ws[] = "/tmp/moat-disk-unit.XXXXXX";
	ASSERT_TRUE(p && mkdtemp(ws));
	ASSERT_EQ(moat_policy_set_option(p, "--disk", "8M", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", ws, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--output", ws, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--tmpfs", "/scratch:2M", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--rw", "/srv", &e), 0);
	struct moat_plan *pl = malloc(sizeof(*pl));
	ASSERT_TRUE(pl);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	char got[1024] = "";
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (!moat_disk_step_watched(s))
			continue;
		char one[256];
		snprintf(one, sizeof(one), "%s=%llu ",
			 streq(s->dest, ws)			 ? "WS"
				 : strncmp(s->dest, "/home/", 6) ? s->dest
								 : "HOME",
			 (unsigned long long)s->size);
		strncat(got, one, sizeof(got) - strlen(got) - 1);
	}
	ASSERT_STREQ(got,
		     "/dev/shm=8388608 /tmp=8388608 HOME=8388608 WS=8388608 "
		     "/output=8388608 /scratch=2097152 ");
	free(pl);
	moat_policy_free(p);
	rmdir(ws);
}

/* The start event's records: recorded at the process level; gVisor and the
 * vm say which areas they cannot see (no silent gap). */
TEST(disk_records_per_level)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	char *s = NULL;
	ASSERT_TRUE(p);
	ASSERT_EQ(moat_isolation_records_json(p, &s), 0);
	ASSERT_TRUE(strstr(s, "\"disk\":\"recorded\"") != NULL);
	free(s);
	static const char *const levels[] = {"gvisor", "vm"};
	for (unsigned i = 0; i < ELEMENTSOF(levels); i++) {
		ASSERT_EQ(moat_policy_set_option(p, "--isolation", levels[i], &e), 0);
		ASSERT_EQ(moat_isolation_records_json(p, &s), 0);
		ASSERT_TRUE(strstr(s,
				   "\"disk\":\"partial: /output and the workspace overlay only; "
				   "/tmp, /dev/shm, home and --tmpfs are ") != NULL);
		free(s);
	}
	moat_policy_free(p);
}

static struct moat_status *status_full(void)
{
	struct moat_status *st = calloc(1, sizeof(*st));
	ASSERT_TRUE(st);
	st->n_disk_full = 2;
	snprintf(st->disk_full[0].path, sizeof(st->disk_full[0].path), "/tmp");
	st->disk_full[0].limit = 8u << 20;
	snprintf(st->disk_full[1].path, sizeof(st->disk_full[1].path), "/scratch");
	st->disk_full[1].limit = 2u << 20;
	st->disk_full[1].inodes = st->disk_full[1].tmpfs_size = true;
	st->disk_full_more = 3;
	st->pids_limit_hits = 5;
	st->pids_limit = 16;
	st->oom_kills = 1;
	st->memory_limit = 64u << 20;
	return st;
}

TEST(disk_full_in_the_status_json)
{
	struct moat_status *st = status_full();
	char path[] = "/tmp/moat-disk-status.XXXXXX";
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(moat_status_write_json(st, path, NULL), 0);
	json_t *o = json_load_file(path, 0, NULL);
	unlink(path);
	ASSERT_TRUE(o);
	char *df = json_dumps(json_object_get(o, "disk_full"), JSON_COMPACT);
	ASSERT_STREQ(df,
		     "[{\"path\":\"/tmp\",\"limit\":8388608,\"inodes\":false,"
		     "\"tmpfs_size\":false},{\"path\":\"/scratch\",\"limit\":2097152,"
		     "\"inodes\":true,\"tmpfs_size\":true}]");
	ASSERT_EQ(json_integer_value(json_object_get(o, "disk_full_more")), 3);
	free(df);
	json_decref(o);
	free(st);
}

/* moat rm's status crosses the session socket: the limits survive it. */
TEST(disk_full_through_a_session)
{
	struct moat_status *st = status_full(), *back = calloc(1, sizeof(*back));
	ASSERT_TRUE(back);
	json_t *o = moat_sess_status_json(st);
	ASSERT_TRUE(o);
	moat_sess_status_from(o, back);
	json_decref(o);
	ASSERT_EQ(back->n_disk_full, 2u);
	ASSERT_STREQ(back->disk_full[1].path, "/scratch");
	ASSERT_EQ(back->disk_full[1].limit, 2u << 20);
	ASSERT_TRUE(back->disk_full[1].inodes && back->disk_full[1].tmpfs_size);
	ASSERT_TRUE(!back->disk_full[0].inodes && !back->disk_full[0].tmpfs_size);
	ASSERT_EQ(back->disk_full_more, 3u);
	ASSERT_EQ(back->pids_limit_hits, 5u);
	ASSERT_EQ(back->pids_limit, 16u);
	ASSERT_EQ(back->oom_kills, 1u);
	ASSERT_EQ(back->memory_limit, 64u << 20);
	free(st);
	free(back);
}
