/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The structured status (moat.h): the review list from a manifest, the
 * escaper, and the status JSON built from the arrays. */
#include "harness/tap.h"

#include <jansson.h>
#include <unistd.h>

#include "workspace/fsdiff.h"
#include "audit/observe.h"
#include "moat/moat.h"
#include "shared/macro.h"

#define HOSTILE "bad\nname\x1b[31m\xff"

static struct moat_status *status_new(void)
{
	struct moat_status *st = calloc(1, sizeof(*st));
	ASSERT_TRUE(st);
	return st;
}

TEST(status_review_entries_order_and_cap)
{
	/* 20 entries: every fourth applied (not listed), a pending and a dropped
	 * one (not listed), the others held, refused, failed or in conflict */
	static char flagged[] = "flagged: .git/hooks", refused[] = "device node",
		    hostile[] = HOSTILE;
	struct moat_fs_entry e[24] = {0};
	char names[24][32];
	unsigned listed = 0;
	for (unsigned i = 0; i < ELEMENTSOF(e); i++) {
		snprintf(names[i], sizeof(names[i]), "f%02u", i);
		e[i].path = names[i];
		switch (i % 4) {
		case 0:
			e[i].state = i == 8 ? MOAT_FS_PENDING
				: i == 16   ? MOAT_FS_DROPPED
					    : MOAT_FS_APPLIED;
			continue;
		case 1:
			e[i].state = MOAT_FS_HELD;
			e[i].flagged = flagged;
			break;
		case 2:
			e[i].state = i == 2 ? MOAT_FS_CONFLICT : MOAT_FS_REFUSED;
			e[i].refused = i == 2 ? NULL : refused;
			break;
		default:
			e[i].state = MOAT_FS_FAILED;
			e[i].err = EACCES;
			break;
		}
		listed++;
	}
	e[1].path = hostile;
	struct moat_manifest m = {.entries = e, .n = ELEMENTSOF(e)};
	struct moat_status *st = status_new();
	st->review_more = 99; /* reset by the call */

	moat_observe_review_entries(st, &m);
	ASSERT_EQ(listed, 18u);
	ASSERT_EQ(st->n_review, (unsigned)MOAT_REVIEW_MAX);
	ASSERT_EQ(st->review_more, listed - MOAT_REVIEW_MAX);
	/* manifest order, the applied ones left out, raw bytes kept */
	ASSERT_STREQ(st->review[0].path, HOSTILE);
	ASSERT_EQ(st->review[0].state, MOAT_REVIEW_HELD);
	ASSERT_STREQ(st->review[0].reason, "flagged: .git/hooks");
	ASSERT_STREQ(st->review[1].path, "f02");
	ASSERT_EQ(st->review[1].state, MOAT_REVIEW_CONFLICT);
	ASSERT_STREQ(st->review[1].reason, "target changed during the run");
	ASSERT_STREQ(st->review[2].path, "f03");
	ASSERT_EQ(st->review[2].state, MOAT_REVIEW_FAILED);
	ASSERT_STREQ(st->review[2].reason, strerror(EACCES));
	ASSERT_STREQ(st->review[4].path, "f06");
	ASSERT_EQ(st->review[4].state, MOAT_REVIEW_REFUSED);
	ASSERT_STREQ(st->review[4].reason, "device node");
	ASSERT_STREQ(st->review[MOAT_REVIEW_MAX - 1].path, "f15");
	ASSERT_STREQ(moat_review_state_name(MOAT_REVIEW_CONFLICT), "conflict");
	ASSERT_STREQ(moat_review_state_name((enum moat_review_state)42), "?");

	/* a short list: no "more"; an empty one clears the last */
	m.n = 4;
	moat_observe_review_entries(st, &m);
	ASSERT_EQ(st->n_review, 3u);
	ASSERT_EQ(st->review_more, 0u);
	m.n = 0;
	moat_observe_review_entries(st, &m);
	ASSERT_EQ(st->n_review, 0u);
	free(st);
}

TEST(status_review_long_path_cut_on_a_character)
{
	/* "é" is two bytes: 1023 bytes of room end in the middle of one */
	char path[3000];
	size_t n = 0;
	path[n++] = 'x';
	path[n++] = 'y';
	while (n + 2 < sizeof(path)) {
		path[n++] = '\xc3';
		path[n++] = '\xa9';
	}
	path[n] = 0;
	struct moat_fs_entry e = {.path = path, .state = MOAT_FS_HELD};
	struct moat_manifest m = {.entries = &e, .n = 1};
	struct moat_status *st = status_new();
	moat_observe_review_entries(st, &m);
	ASSERT_EQ(st->n_review, 1u);
	size_t len = strlen(st->review[0].path);
	ASSERT_EQ(len, sizeof(st->review[0].path) - 2);
	ASSERT_EQ(memcmp(st->review[0].path, path, len), 0);
	/* whole characters only: the last byte ends a "é" */
	ASSERT_EQ((unsigned char)st->review[0].path[len - 1], 0xa9u);
	free(st);
}

TEST(status_escape)
{
	char out[64];
	ASSERT_EQ(moat_escape(HOSTILE, strlen(HOSTILE), out, sizeof(out)),
		  strlen("bad\\nname\\u001b[31m\\ufffd"));
	ASSERT_STREQ(out, "bad\\nname\\u001b[31m\\ufffd");
	/* truncated, never in the middle of an escape */
	ASSERT_EQ(moat_escape(HOSTILE, strlen(HOSTILE), out, 12), 25u);
	ASSERT_STREQ(out, "bad\\nname");
	ASSERT_EQ(moat_escape("a\"b\\", 4, out, sizeof(out)), 6u);
	ASSERT_STREQ(out, "a\\\"b\\\\");
}

static json_t *write_and_load(const struct moat_status *st)
{
	char dir[] = "/tmp/moat-status.XXXXXX", path[64];
	struct moat_error err = {0};
	ASSERT_TRUE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/st.json", dir);
	int k = moat_status_write_json(st, path, &err);
	if (k < 0)
		moat_tap_fail(__FILE__, __LINE__, "write_json: %s", err.message);
	json_error_t je;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	unlink(path);
	rmdir(dir);
	if (!o)
		moat_tap_fail(__FILE__, __LINE__, "status JSON: %s", je.text);
	return o;
}

TEST(status_json_from_the_arrays)
{
	struct moat_status *st = status_new();
	snprintf(st->run_id, sizeof(st->run_id), "r1");
	st->n_top_denied = 3;
	st->top_denied[0] = (struct moat_denied){.count = 3};
	snprintf(st->top_denied[0].destination, sizeof(st->top_denied[0].destination),
		 "evil.test:80");
	snprintf(st->top_denied[0].rule, sizeof(st->top_denied[0].rule),
		 "--allow-host evil.test:80");
	st->top_denied[1] = (struct moat_denied){.count = 1};
	snprintf(st->top_denied[1].destination, sizeof(st->top_denied[1].destination),
		 "other.test:443");
	/* not UTF-8: kept, escaped, never dropped */
	st->top_denied[2] = (struct moat_denied){.count = 1};
	snprintf(st->top_denied[2].destination, sizeof(st->top_denied[2].destination), "%s",
		 HOSTILE);
	st->n_review = 2;
	st->review[0].state = MOAT_REVIEW_HELD;
	snprintf(st->review[0].path, sizeof(st->review[0].path), "%s", "a\nb");
	snprintf(st->review[0].reason, sizeof(st->review[0].reason), "%s", "flagged");
	st->review[1].state = MOAT_REVIEW_REFUSED;
	snprintf(st->review[1].path, sizeof(st->review[1].path), "%s", HOSTILE);
	st->review_more = 7;

	json_t *o = write_and_load(st);
	json_t *top = json_object_get(o, "net_top_denied");
	ASSERT_EQ(json_array_size(top), 3u);
	ASSERT_STREQ(json_string_value(json_array_get(top, 0)),
		     "3 evil.test:80\t--allow-host evil.test:80");
	ASSERT_STREQ(json_string_value(json_array_get(top, 1)), "1 other.test:443\t");
	ASSERT_STREQ(json_string_value(json_array_get(top, 2)), "1 bad\\nname\\u001b[31m\\ufffd\t");
	json_t *d = json_array_get(json_object_get(o, "top_denied"), 0);
	ASSERT_EQ(json_integer_value(json_object_get(d, "count")), 3);
	ASSERT_STREQ(json_string_value(json_object_get(d, "destination")), "evil.test:80");
	ASSERT_STREQ(json_string_value(json_object_get(d, "rule")), "--allow-host evil.test:80");
	d = json_array_get(json_object_get(o, "top_denied"), 2);
	ASSERT_STREQ(json_string_value(json_object_get(d, "destination")),
		     "bad\\nname\\u001b[31m\\ufffd");
	json_t *rev = json_object_get(o, "review");
	ASSERT_EQ(json_array_size(rev), 2u);
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rev, 0), "state")), "held");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rev, 0), "path")), "a\nb");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rev, 0), "reason")),
		     "flagged");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rev, 1), "state")),
		     "refused");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(rev, 1), "path")),
		     "bad\\nname\\u001b[31m\\ufffd");
	ASSERT_EQ(json_integer_value(json_object_get(o, "review_more")), 7);
	json_decref(o);

	/* nothing denied, nothing to review: empty arrays, as before */
	memset(st, 0, sizeof(*st));
	o = write_and_load(st);
	ASSERT_EQ(json_array_size(json_object_get(o, "net_top_denied")), 0u);
	ASSERT_TRUE(json_is_array(json_object_get(o, "net_top_denied")));
	ASSERT_EQ(json_array_size(json_object_get(o, "review")), 0u);
	json_decref(o);
	free(st);
}
