/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to the secrets*.c files (the interface is proxy/secrets.h): the
 * set's layout and the helpers more than one of them uses. Not for other callers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "proxy/secrets.h"
#include "shared/macro.h"

#define PH_PREFIX "moat-ph-"
#define HEX_LEN 32

extern char **environ;

struct secret {
	const struct moat_secret *def;
	char placeholder[MOAT_SECRETS_PLACEHOLDER_MAX];
	size_t ph_len;
	char lower[MOAT_SECRETS_PLACEHOLDER_MAX]; /* lowercase placeholder, for detection */
	const char *hex; /* the random part, inside lower */
	char *value;
	size_t value_len;
};

struct moat_secrets {
	struct secret *v;
	unsigned n;
};

/* secrets.c: errors (stage "secrets"; returns r) and checks of names and
 * header text */
_printf_(3, 4) int moat_secrets_error(struct moat_error *e, int r, const char *fmt, ...);
bool moat_secrets_valid_name(const char *n);
bool moat_secrets_valid_header_text(const char *v, size_t len);

/* secrets_heap.c: locked memory, zeroed; free wipes it (n: the size allocated) */
char *moat_secrets_secure_alloc(size_t n);
void moat_secrets_secure_free(char *p, size_t n);

/* secrets_match.c: what the rewriter shares with the rules and the tripwire */
bool moat_secrets_method_ok(char *const *methods, unsigned n, const char *m, size_t mlen);
bool moat_secrets_path_ok(char *const *paths, unsigned n, const char *p, size_t plen);
int moat_secrets_detect(const struct moat_secrets *s, const void *data, size_t len, bool pct);
void moat_secrets_request_path(const struct moat_http1_request *r, const char **ret_p,
			       size_t *ret_len);
