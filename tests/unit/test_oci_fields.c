/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.json fields of issue 16, session 11 (oci/oci_config.c, oci/oci_rlimits.c):
 * process.rlimits as records and into a policy, linux.resources.memory.disableOOMKiller,
 * and the refusals that say why (additionalGids, linux.sysctl). */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "harness/tap.h"
#include "moat/moat.h"
#include "oci/oci.h"
#include "policy/policy.h"
#include "shared/macro.h"

#define PROC_HEAD \
	"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true}," \
	"\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"sh\"]," \
	"\"env\":[\"PATH=/bin\"],\"cwd\":\"/\""

/* The records hold tag/field/a/b (NULL: any). */
static bool rec_has(const struct moat_oci_recs *r, const char *tag, const char *f, const char *a,
		    const char *b)
{
	size_t pos = 0;
	const char *t;
	while ((t = moat_oci_recs_next(r, &pos))) {
		const char *x = moat_oci_recs_next(r, &pos), *y = moat_oci_recs_next(r, &pos),
			   *z = moat_oci_recs_next(r, &pos);
		if (streq(t, tag) && (!f || streq(f, x)) && (!a || streq(a, y)) &&
		    (!b || streq(b, z)))
			return true;
	}
	return false;
}

static int parse_rl(const char *rlimits, struct moat_oci_recs *r)
{
	char json[2048];
	snprintf(json, sizeof(json), PROC_HEAD ",\"rlimits\":%s}}", rlimits);
	return moat_oci_parse(json, strlen(json), "/b", r);
}

/* the error record's field and text */
static bool err_is(const struct moat_oci_recs *r, const char *field, const char *words)
{
	size_t pos = 0;
	const char *t = moat_oci_recs_next(r, &pos);
	const char *f = t ? moat_oci_recs_next(r, &pos) : NULL;
	const char *m = f ? moat_oci_recs_next(r, &pos) : NULL;
	return t && streq(t, "err") && streq(f, field) && m && strstr(m, words);
}

TEST(oci_rlimits_every_type_soft_and_hard)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse_rl("[{\"type\":\"RLIMIT_NOFILE\",\"soft\":200,\"hard\":300},"
			   "{\"type\":\"RLIMIT_FSIZE\",\"soft\":8192,\"hard\":16384},"
			   "{\"type\":\"RLIMIT_STACK\",\"soft\":1,\"hard\":2},"
			   "{\"type\":\"RLIMIT_MEMLOCK\",\"soft\":0,\"hard\":0},"
			   "{\"type\":\"RLIMIT_NPROC\",\"soft\":5,\"hard\":9},"
			   "{\"type\":\"RLIMIT_CORE\",\"soft\":0,\"hard\":1024}]",
			   &r),
		  0);
	/* the hard value bounds moat's policy, the pair is the process's */
	ASSERT_TRUE(rec_has(&r, "opt", "process.rlimits[0]", "--nofile", "300"));
	ASSERT_TRUE(rec_has(&r, "rlim", "process.rlimits[0]", "RLIMIT_NOFILE", "200 300"));
	ASSERT_TRUE(rec_has(&r, "opt", "process.rlimits[1]", "--fsize", "16384"));
	ASSERT_TRUE(rec_has(&r, "rlim", "process.rlimits[1]", "RLIMIT_FSIZE", "8192 16384"));
	ASSERT_TRUE(rec_has(&r, "rlim", "process.rlimits[2]", "RLIMIT_STACK", "1 2"));
	ASSERT_TRUE(rec_has(&r, "rlim", "process.rlimits[3]", "RLIMIT_MEMLOCK", "0 0"));
	ASSERT_TRUE(rec_has(&r, "rlim", "process.rlimits[4]", "RLIMIT_NPROC", "5 9"));
	/* CORE: moat's 0; a nonzero request is a note, never a record */
	ASSERT_TRUE(!rec_has(&r, "rlim", "process.rlimits[5]", NULL, NULL));
	ASSERT_TRUE(rec_has(&r, "note", "process.rlimits[5]", NULL, NULL));
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse_rl("[{\"type\":\"RLIMIT_CORE\",\"soft\":0,\"hard\":0}]", &r), 0);
	ASSERT_TRUE(!rec_has(&r, "note", "process.rlimits[0]", NULL, NULL));
	moat_oci_recs_done(&r);
}

TEST(oci_rlimits_refused_by_name)
{
	static const struct {
		const char *json, *field, *words;
	} cases[] = {
		{"[{\"type\":\"RLIMIT_BOGUS\",\"soft\":1,\"hard\":1}]", "process.rlimits[0]",
		 "RLIMIT_BOGUS"},
		{"[{\"type\":\"RLIMIT_STACK\",\"soft\":1,\"hard\":1},"
		 "{\"type\":\"RLIMIT_STACK\",\"soft\":1,\"hard\":1}]",
		 "process.rlimits[1]", "twice"},
		{"[{\"type\":\"RLIMIT_CPU\",\"soft\":2,\"hard\":1}]", "process.rlimits[0]",
		 "soft <= hard"},
		{"[{\"type\":\"RLIMIT_CPU\",\"soft\":-1,\"hard\":1}]", "process.rlimits[0]",
		 "soft <= hard"},
		{"[{\"type\":\"RLIMIT_CPU\",\"soft\":1,\"hard\":1,\"x\":1}]",
		 "process.rlimits[0].x", "not supported"},
		{"[7]", "process.rlimits[0]", "needs type"},
		{"{}", "process.rlimits", "array"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct moat_oci_recs r;
		ASSERT_EQ(parse_rl(cases[i].json, &r), -EINVAL);
		if (!err_is(&r, cases[i].field, cases[i].words))
			moat_tap_fail(__FILE__, __LINE__, "case %zu: not an error '%s' about '%s'",
				      i, cases[i].field, cases[i].words);
		moat_oci_recs_done(&r);
	}
}

TEST(oci_rlimits_place_bounds)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	struct rlimit own;
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &own), 0);
	p->pids = 50;
	p->nofile = 300;
	struct moat_oci_process pr = {
		.n_rlimits = 3,
		.rlimits = {{.resource = RLIMIT_NPROC, .index = 0, .soft = 100, .hard = 200},
			    {.resource = RLIMIT_NOFILE, .index = 1, .soft = 20, .hard = 30},
			    {.resource = RLIMIT_STACK, .index = 2, .soft = 1, .hard = 2}}};
	ASSERT_EQ(moat_oci_rlimits_place(p, &pr, &e), 0);
	/* NPROC: the lower of the spec's and moat's pids limit */
	ASSERT_TRUE(p->rlimits[RLIMIT_NPROC].set);
	ASSERT_EQ(p->rlimits[RLIMIT_NPROC].hard, 50);
	ASSERT_EQ(p->rlimits[RLIMIT_NPROC].soft, 50);
	ASSERT_EQ(pr.rlimits[0].hard, 50);
	ASSERT_EQ(p->rlimits[RLIMIT_NOFILE].soft, 20);
	ASSERT_EQ(p->rlimits[RLIMIT_NOFILE].hard, 30);
	ASSERT_EQ(p->rlimits[RLIMIT_STACK].hard, 2);
	ASSERT_TRUE(!p->rlimits[RLIMIT_CPU].set);
	/* above moat's --nofile: refused, naming the field */
	struct moat_oci_process hi = {
		.n_rlimits = 1,
		.rlimits = {{.resource = RLIMIT_NOFILE, .index = 4, .soft = 1, .hard = 301}}};
	ASSERT_EQ(moat_oci_rlimits_place(p, &hi, &e), -EPERM);
	ASSERT_TRUE(strstr(e.message, "process.rlimits[4]") != NULL);
	ASSERT_TRUE(strstr(e.message, "--nofile") != NULL);
	/* above the runtime's own hard limit (never raised) */
	if (own.rlim_max != RLIM_INFINITY) {
		p->nofile = 0;
		hi.rlimits[0].hard = own.rlim_max + 1;
		ASSERT_EQ(moat_oci_rlimits_place(p, &hi, &e), -EPERM);
		ASSERT_TRUE(strstr(e.message, "runtime's own") != NULL);
	}
	/* CORE never comes as a record; an unknown resource is refused */
	struct moat_oci_process bad = {.n_rlimits = 1,
				       .rlimits = {{.resource = RLIMIT_CORE, .hard = 1}}};
	ASSERT_EQ(moat_oci_rlimits_place(p, &bad, &e), -EPROTO);
	ASSERT_STREQ(moat_oci_rlimit_name(RLIMIT_MSGQUEUE), "RLIMIT_MSGQUEUE");
	ASSERT_EQ(moat_oci_rlimit_resource("RLIMIT_RTTIME"), RLIMIT_RTTIME);
	ASSERT_EQ(moat_oci_rlimit_resource("RLIMIT_X"), -1);
	moat_policy_free(p);
}

TEST(oci_refusals_say_why)
{
	struct moat_oci_recs r;
	char json[1024];
	snprintf(json, sizeof(json),
		 "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
		 "\"process\":{\"user\":{\"uid\":1000,\"gid\":1000,\"additionalGids\":[1000,"
		 "27]},\"args\":[\"sh\"],\"env\":[],\"cwd\":\"/\"}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), -EINVAL);
	ASSERT_TRUE(err_is(&r, "process.user.additionalGids", "host gid"));
	moat_oci_recs_done(&r);
	/* the gid itself repeated is accepted */
	snprintf(json, sizeof(json),
		 "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
		 "\"process\":{\"user\":{\"uid\":1000,\"gid\":1000,\"additionalGids\":[1000]},"
		 "\"args\":[\"sh\"],\"env\":[],\"cwd\":\"/\"}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), 0);
	moat_oci_recs_done(&r);
	snprintf(json, sizeof(json), PROC_HEAD "},\"linux\":{\"sysctl\":{\"net.core.x\":\"1\"}}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), -EINVAL);
	ASSERT_TRUE(err_is(&r, "linux.sysctl", "network namespace"));
	moat_oci_recs_done(&r);
}

TEST(oci_disable_oom_killer)
{
	struct moat_oci_recs r;
	char json[1024];
	const char *f = "linux.resources.memory.disableOOMKiller";
	snprintf(json, sizeof(json),
		 PROC_HEAD "},\"linux\":{\"resources\":{\"memory\":{\"limit\":33554432,"
			   "\"disableOOMKiller\":true}}}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), 0);
	ASSERT_TRUE(rec_has(&r, "nooom", f, NULL, NULL));
	moat_oci_recs_done(&r);
	snprintf(json, sizeof(json),
		 PROC_HEAD
		 "},\"linux\":{\"resources\":{\"memory\":{\"disableOOMKiller\":false}}}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), 0);
	ASSERT_TRUE(!rec_has(&r, "nooom", NULL, NULL, NULL));
	ASSERT_TRUE(rec_has(&r, "note", f, NULL, NULL));
	moat_oci_recs_done(&r);
	snprintf(json, sizeof(json),
		 PROC_HEAD "},\"linux\":{\"resources\":{\"memory\":{\"disableOOMKiller\":1}}}}");
	ASSERT_EQ(moat_oci_parse(json, strlen(json), "/b", &r), -EINVAL);
	ASSERT_TRUE(err_is(&r, f, "boolean"));
	moat_oci_recs_done(&r);
	/* into a policy: never without moat's cgroup layer */
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	struct moat_oci_process pr = {.disable_oom_killer = true}, none = {0};
	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(moat_oci_oom_killer_place(p, &none, true, &e), 0);
	ASSERT_TRUE(!p->oom_kill_disable);
	ASSERT_EQ(moat_oci_oom_killer_place(p, &pr, true, &e), -EOPNOTSUPP);
	ASSERT_TRUE(strstr(e.message, f) != NULL);
	ASSERT_TRUE(!p->oom_kill_disable);
	ASSERT_EQ(moat_oci_oom_killer_place(p, &pr, false, &e), 0);
	ASSERT_TRUE(p->oom_kill_disable);
	moat_policy_free(p);
}
