/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The set of secrets: definitions checked, placeholders made, values loaded,
 * dropped or adopted; the accessors the proxy and the supervisor use. */
#include "proxy/secrets_int.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/tls.h"
#include "shared/macro.h"

/* ---- errors -------------------------------------------------------------- */

int moat_secrets_error(struct moat_error *e, int r, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "secrets");
		e->err = -r;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return r;
}

/* ---- loading --------------------------------------------------------------- */

bool moat_secrets_valid_name(const char *n)
{
	size_t len = n ? strlen(n) : 0;
	if (len == 0 || len > MOAT_SECRETS_MAX_NAME || isdigit((unsigned char)n[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(isascii((unsigned char)n[i]) &&
		      (isalnum((unsigned char)n[i]) || n[i] == '_')))
			return false;
	return true;
}

/* A value must be usable inside a header: no control characters at all. */
bool moat_secrets_valid_header_text(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

int moat_secrets_placeholder_new(const char *name, char out[static MOAT_SECRETS_PLACEHOLDER_MAX])
{
	unsigned char rnd[HEX_LEN / 2];
	char hex[HEX_LEN + 1];

	if (!moat_secrets_valid_name(name))
		return -EINVAL;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	snprintf(out, MOAT_SECRETS_PLACEHOLDER_MAX, PH_PREFIX "%s-%s", name, hex);
	return 0;
}

static int check_def(const struct moat_secret *d, struct moat_error *e)
{
	if (!moat_secrets_valid_name(d->name))
		return moat_secrets_error(e, -EINVAL,
					  "secret %s: the name must be [A-Za-z_][A-Za-z0-9_]*, "
					  "at most %d characters",
					  d->name ? d->name : "(null)", MOAT_SECRETS_MAX_NAME);
	if (d->n_hosts == 0 || !d->hosts)
		return moat_secrets_error(e, -EINVAL, "secret %s: no hosts it may be sent to",
					  d->name);
	for (unsigned i = 0; i < d->n_hosts; i++) {
		char norm[MOAT_TLS_MAX_NAME + 1];
		const char *h = d->hosts[i];
		bool ip;
		if (h && startswith(h, "*."))
			h += 2;
		if (!h || moat_tls_normalize_host(h, norm, &ip) < 0)
			return moat_secrets_error(e, -EINVAL, "secret %s: invalid host \"%s\"",
						  d->name, d->hosts[i] ? d->hosts[i] : "(null)");
	}
	for (unsigned i = 0; i < d->n_methods; i++)
		if (!d->methods[i] || !moat_http1_is_token(d->methods[i], strlen(d->methods[i])))
			return moat_secrets_error(e, -EINVAL, "secret %s: invalid method", d->name);
	for (unsigned i = 0; i < d->n_paths; i++)
		if (!d->paths[i] || d->paths[i][0] != '/')
			return moat_secrets_error(
				e, -EINVAL, "secret %s: a path prefix must start with /", d->name);
	if (d->header) {
		const char *f = d->format ? d->format : "%s", *pct = strstr(f, "%s");
		if (!moat_http1_is_token(d->header, strlen(d->header)))
			return moat_secrets_error(e, -EINVAL,
						  "secret %s: invalid header name \"%s\"", d->name,
						  d->header);
		if (!pct || strchr(pct + 2, '%') || memchr(f, '%', (size_t)(pct - f)) ||
		    !moat_secrets_valid_header_text(f, strlen(f)) || strlen(f) > 1024)
			return moat_secrets_error(
				e, -EINVAL,
				"secret %s: the format must contain exactly one %%s and no other %%",
				d->name);
	} else if (d->format)
		return moat_secrets_error(e, -EINVAL, "secret %s: a format needs a header",
					  d->name);
	return 0;
}

int moat_secrets_new_placeholders(const struct moat_secret *defs, unsigned n_defs,
				  struct moat_secrets **ret, struct moat_error *ret_err)
{
	struct moat_secrets *s;
	int r;

	if (n_defs > MOAT_MAX_SECRETS)
		return moat_secrets_error(ret_err, -E2BIG, "too many secrets (at most %d)",
					  MOAT_MAX_SECRETS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return moat_secrets_error(ret_err, -ENOMEM, "out of memory");
	s->v = calloc(n_defs ? n_defs : 1, sizeof(*s->v));
	if (!s->v) {
		free(s);
		return moat_secrets_error(ret_err, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < n_defs; i++) {
		struct secret *x = &s->v[i];
		r = check_def(&defs[i], ret_err);
		if (r < 0)
			goto fail;
		for (unsigned j = 0; j < i; j++)
			if (strcasecmp(defs[j].name, defs[i].name) == 0) {
				r = moat_secrets_error(ret_err, -EEXIST, "secret %s: defined twice",
						       defs[i].name);
				goto fail;
			}
		x->def = &defs[i];
		r = moat_secrets_placeholder_new(defs[i].name, x->placeholder);
		if (r < 0) {
			moat_secrets_error(ret_err, r,
					   "secret %s: no randomness for the placeholder",
					   defs[i].name);
			goto fail;
		}
		x->ph_len = strlen(x->placeholder);
		for (size_t k = 0; k <= x->ph_len; k++)
			x->lower[k] = (char)tolower((unsigned char)x->placeholder[k]);
		x->hex = x->lower + x->ph_len - HEX_LEN;
		s->n = i + 1;
	}
	s->n = n_defs;
	*ret = s;
	return 0;
fail:
	moat_secrets_free(s);
	return r;
}

int moat_secrets_load(struct moat_secrets *s, struct moat_error *ret_err)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct secret *x = &s->v[i];
		int r;
		if (x->value)
			continue;
		r = moat_secrets_load_value(x->def, MOAT_SECRETS_CMD_TIMEOUT_MS, &x->value,
					    &x->value_len, ret_err);
		if (r < 0) {
			moat_secrets_drop_values(s);
			return r;
		}
	}
	return 0;
}

int moat_secrets_new(const struct moat_secret *defs, unsigned n_defs, struct moat_secrets **ret,
		     struct moat_error *ret_err)
{
	struct moat_secrets *s = NULL;
	int r = moat_secrets_new_placeholders(defs, n_defs, &s, ret_err);

	if (r < 0)
		return r;
	r = moat_secrets_load(s, ret_err);
	if (r < 0) {
		moat_secrets_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

struct moat_secrets *moat_secrets_free(struct moat_secrets *s)
{
	if (!s)
		return NULL;
	for (unsigned i = 0; i < s->n; i++)
		moat_secrets_value_free(s->v[i].value, s->v[i].value_len);
	OPENSSL_cleanse(s->v, sizeof(*s->v) * (s->n ? s->n : 1));
	free(s->v);
	free(s);
	return NULL;
}

void moat_secrets_drop_values(struct moat_secrets *s)
{
	for (unsigned i = 0; s && i < s->n; i++) {
		moat_secrets_value_free(s->v[i].value, s->v[i].value_len);
		s->v[i].value = NULL;
		s->v[i].value_len = 0;
	}
}

unsigned moat_secrets_scrub_environ(const struct moat_secrets *s)
{
	unsigned count = 0;

	for (unsigned i = 0; s && i < s->n; i++) {
		const struct moat_secret *d = s->v[i].def;
		size_t nlen;
		if (d->source != MOAT_SECRET_ENV)
			continue;
		nlen = strlen(d->from);
		for (char **e = environ; e && *e; e++)
			if (strncmp(*e, d->from, nlen) == 0 && (*e)[nlen] == '=') {
				/* Overwrite in place: the initial environment block
				 * cannot be freed and would be copied into every
				 * process forked later. */
				OPENSSL_cleanse(*e + nlen + 1, strlen(*e + nlen + 1));
				count++;
			}
		(void)unsetenv(d->from);
	}
	return count;
}

int moat_secrets_value(const struct moat_secrets *s, unsigned i, const char **ret_value,
		       size_t *ret_len)
{
	if (!s || i >= s->n)
		return -EINVAL;
	*ret_value = s->v[i].value;
	*ret_len = s->v[i].value_len;
	return 0;
}

int moat_secrets_adopt(struct moat_secrets *s, unsigned i, const char *placeholder,
		       size_t placeholder_len, const void *value, size_t len)
{
	struct secret *x;
	size_t nlen;
	char *v;

	if (!s || i >= s->n || !value || len > MOAT_SECRETS_MAX_VALUE)
		return -EINVAL;
	x = &s->v[i];
	nlen = strlen(x->def->name);
	/* exactly PH_PREFIX NAME "-" HEX_LEN lowercase hex digits */
	if (placeholder_len != strlen(PH_PREFIX) + nlen + 1 + HEX_LEN ||
	    memcmp(placeholder, PH_PREFIX, strlen(PH_PREFIX)) != 0 ||
	    memcmp(placeholder + strlen(PH_PREFIX), x->def->name, nlen) != 0 ||
	    placeholder[strlen(PH_PREFIX) + nlen] != '-')
		return -EINVAL;
	for (size_t k = placeholder_len - HEX_LEN; k < placeholder_len; k++)
		if (!isxdigit((unsigned char)placeholder[k]) ||
		    isupper((unsigned char)placeholder[k]))
			return -EINVAL;
	v = moat_secrets_secure_alloc(len + 1);
	if (!v)
		return -ENOMEM;
	memcpy(v, value, len);
	v[len] = 0;
	moat_secrets_value_free(x->value, x->value_len);
	x->value = v;
	x->value_len = len;
	memcpy(x->placeholder, placeholder, placeholder_len);
	x->placeholder[placeholder_len] = 0;
	x->ph_len = placeholder_len;
	for (size_t k = 0; k <= x->ph_len; k++)
		x->lower[k] = (char)tolower((unsigned char)x->placeholder[k]);
	x->hex = x->lower + x->ph_len - HEX_LEN;
	return 0;
}

unsigned moat_secrets_count(const struct moat_secrets *s)
{
	return s ? s->n : 0;
}

const char *moat_secrets_name(const struct moat_secrets *s, unsigned i)
{
	return i < s->n ? s->v[i].def->name : NULL;
}

const char *moat_secrets_placeholder(const struct moat_secrets *s, unsigned i)
{
	return i < s->n ? s->v[i].placeholder : NULL;
}
