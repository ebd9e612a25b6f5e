/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Isolation levels (docs/ISOLATION.md): which policy keys each level honours,
 * from one table (isolation.c). A key in use that the chosen level cannot
 * honour with the same meaning stops the run before anything starts (stage
 * "isolation", exit 125) with the key's name; `moat policy show` prints the
 * level's part of the table; the audit start event says which records the
 * level produces. Pure code: no syscalls.
 */
#pragma once

#include <stdio.h>

#include "policy/policy.h"
#include "moat/moat.h"

/* How a level treats a key. */
enum moat_iso_support {
	MOAT_ISO_SAME, /* the same meaning, by the same mechanism */
	MOAT_ISO_EQUIV, /* the same meaning, by the level's own mechanism (said in `how`) */
	MOAT_ISO_REFUSED, /* in use: the run fails closed naming the key */
};

struct moat_iso_key {
	const char *key; /* the policy key ("syscalls.deny"), or the option's value */
	/* the key is in use with a value this row is about (NULL: always) */
	bool (*used)(const struct moat_policy *p);
	enum moat_iso_support level[3]; /* by enum moat_isolation */
	const char *how[3]; /* how the level honours it, or why it cannot */
};

/* The table, and its length. */
const struct moat_iso_key *moat_isolation_keys(unsigned *ret_n);

/* 0, or -EOPNOTSUPP with err filled (stage "isolation"): the first key in
 * use that p's level cannot honour, or a level this build cannot start. */
int moat_isolation_check(const struct moat_policy *p, struct moat_error *err);

/* The records the level produces, as a JSON object text for the audit start
 * event ({"exec": "recorded", ...}); owned by the caller. */
int moat_isolation_records_json(const struct moat_policy *p, char **ret_json);

/* The plan's "## isolation" section. */
void moat_isolation_format(FILE *f, const struct moat_policy *p);
