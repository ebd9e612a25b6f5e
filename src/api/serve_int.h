/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/api/: moat serve: the HTTP API's back (sandboxes per tenant, narrowing, pool), the
 * route table the confined front (front.c) parses with, E2B's REST and Connect codecs
 */
/* What the back of `moat serve` shares between its files (serve.c: the
 * event loop and the endpoints; serve_policy.c: tenants and narrowing). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

#define MOAT_SERVE_MAX_TENANTS 256u
#define MOAT_SERVE_TENANT_NAME 64u

struct moat_serve_tenant {
	char name[MOAT_SERVE_TENANT_NAME + 1];
	uint8_t hash[32]; /* SHA-256 of the token */
	unsigned max_sandboxes; /* 0: no limit */
	uint64_t max_memory; /* bytes, sum of the sandboxes' --memory; 0: no limit */
	/* in use */
	unsigned n_sandboxes;
	uint64_t memory;
};

struct moat_serve_tenants {
	struct moat_serve_tenant *t;
	size_t n;
	bool open; /* no token file: one tenant "default", no token needed */
};

/* The tokens file: a JSON object {"tenants":[{"token":..,"name":..,
 * "max_sandboxes":N,"max_memory":"SIZE"|N}, ...]} or one line with a
 * single token (tenant "default", no quotas). Refused: a file others can
 * read or write, a token shorter than 16 bytes, duplicate tokens or names. */
int moat_serve_tenants_load(const char *path, struct moat_serve_tenants *ret,
			    struct moat_error *ret_err);
void moat_serve_tenants_free(struct moat_serve_tenants *ts);
/* The tenant of a bearer token, compared in constant time against every
 * tenant's (hashes: the time does not depend on which tenant, if any,
 * matches, nor on how much of it does). NULL: none. */
struct moat_serve_tenant *moat_serve_tenant_find(struct moat_serve_tenants *ts, const char *token);

/* A copy of the policy (through its JSON). NULL on failure. */
struct moat_policy *moat_serve_policy_copy(const struct moat_policy *p, struct moat_error *ret_err);

/* Narrows p (a copy of ceiling) by a create request's fields (args, as the
 * front checked them): 0; -EPERM when a field asks for more than ceiling
 * (field names it, msg says why); -EINVAL for a bad value (same). */
int moat_serve_narrow(struct moat_policy *p, const struct moat_policy *ceiling, json_t *args,
		      char *field, size_t field_len, char *msg, size_t msg_len);

/* The memory limit a sandbox of p counts against its tenant (0: none). */
uint64_t moat_serve_policy_memory(const struct moat_policy *p);
uint64_t moat_serve_policy_timeout(const struct moat_policy *p);
/* A few of p's fields for inspect: caller owns the object. */
json_t *moat_serve_policy_summary(const struct moat_policy *p);
