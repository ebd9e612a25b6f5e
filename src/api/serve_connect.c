/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The Connect protocol's JSON framing for `moat serve --e2b` (serve_connect.h). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/serve_connect.h"
#include "shared/macro.h"

static const char *const code_names[MOAT_CONNECT_CODE_MAX_] = {
	[MOAT_CONNECT_CANCELED] = "canceled",
	[MOAT_CONNECT_UNKNOWN] = "unknown",
	[MOAT_CONNECT_INVALID_ARGUMENT] = "invalid_argument",
	[MOAT_CONNECT_DEADLINE_EXCEEDED] = "deadline_exceeded",
	[MOAT_CONNECT_NOT_FOUND] = "not_found",
	[MOAT_CONNECT_ALREADY_EXISTS] = "already_exists",
	[MOAT_CONNECT_PERMISSION_DENIED] = "permission_denied",
	[MOAT_CONNECT_RESOURCE_EXHAUSTED] = "resource_exhausted",
	[MOAT_CONNECT_FAILED_PRECONDITION] = "failed_precondition",
	[MOAT_CONNECT_ABORTED] = "aborted",
	[MOAT_CONNECT_OUT_OF_RANGE] = "out_of_range",
	[MOAT_CONNECT_UNIMPLEMENTED] = "unimplemented",
	[MOAT_CONNECT_INTERNAL] = "internal",
	[MOAT_CONNECT_UNAVAILABLE] = "unavailable",
	[MOAT_CONNECT_DATA_LOSS] = "data_loss",
	[MOAT_CONNECT_UNAUTHENTICATED] = "unauthenticated",
};

const char *moat_connect_code_name(enum moat_connect_code c)
{
	if ((unsigned)c >= MOAT_CONNECT_CODE_MAX_)
		return NULL;
	return code_names[c];
}

unsigned moat_connect_code_http(enum moat_connect_code c)
{
	switch (c) {
	case MOAT_CONNECT_OK:
		return 200;
	case MOAT_CONNECT_CANCELED:
		return 499;
	case MOAT_CONNECT_INVALID_ARGUMENT:
	case MOAT_CONNECT_FAILED_PRECONDITION:
	case MOAT_CONNECT_OUT_OF_RANGE:
		return 400;
	case MOAT_CONNECT_DEADLINE_EXCEEDED:
		return 504;
	case MOAT_CONNECT_NOT_FOUND:
		return 404;
	case MOAT_CONNECT_ALREADY_EXISTS:
	case MOAT_CONNECT_ABORTED:
		return 409;
	case MOAT_CONNECT_PERMISSION_DENIED:
		return 403;
	case MOAT_CONNECT_RESOURCE_EXHAUSTED:
		return 429;
	case MOAT_CONNECT_UNIMPLEMENTED:
		return 501;
	case MOAT_CONNECT_UNAVAILABLE:
		return 503;
	case MOAT_CONNECT_UNAUTHENTICATED:
		return 401;
	default:
		return 500;
	}
}

enum moat_connect_code moat_connect_code_from_errno(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return MOAT_CONNECT_OK;
	case ENOENT:
	case ESRCH:
		return MOAT_CONNECT_NOT_FOUND;
	case EEXIST:
		return MOAT_CONNECT_ALREADY_EXISTS;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
		return MOAT_CONNECT_INVALID_ARGUMENT;
	case EACCES:
	case EPERM:
	case EROFS:
		return MOAT_CONNECT_PERMISSION_DENIED;
	case EFBIG:
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case EAGAIN:
		return MOAT_CONNECT_RESOURCE_EXHAUSTED;
	case ETIMEDOUT:
		return MOAT_CONNECT_DEADLINE_EXCEEDED;
	case EBUSY:
	case ENOTEMPTY:
		return MOAT_CONNECT_FAILED_PRECONDITION;
	case EOPNOTSUPP:
	case ENOSYS:
		return MOAT_CONNECT_UNIMPLEMENTED;
	case EPIPE:
	case ECONNRESET:
		return MOAT_CONNECT_UNAVAILABLE;
	default:
		return MOAT_CONNECT_INTERNAL;
	}
}

/* s starts with the case-insensitive word w and what follows is the end,
 * or "; charset=utf-8" (or "utf8", with or without the space). */
static bool type_is(const char *s, const char *w)
{
	size_t n = strlen(w);
	if (strncasecmp(s, w, n) != 0)
		return false;
	s += n;
	if (!*s)
		return true;
	if (*s++ != ';')
		return false;
	if (*s == ' ')
		s++;
	return strcasecmp(s, "charset=utf-8") == 0 || strcasecmp(s, "charset=utf8") == 0;
}

int moat_connect_content_type(const char *ct, bool *ret_stream)
{
	if (!ct)
		return -EINVAL;
	if (type_is(ct, "application/json")) {
		*ret_stream = false;
		return 0;
	}
	if (type_is(ct, "application/connect+json")) {
		*ret_stream = true;
		return 0;
	}
	if (strcasecmp(ct, "application/proto") == 0 ||
	    strcasecmp(ct, "application/connect+proto") == 0)
		return -EPROTONOSUPPORT;
	return -EINVAL;
}

int moat_connect_unenvelope(const void *body, size_t len, const char **ret_msg, size_t *ret_len)
{
	const uint8_t *b = body;
	if (len < MOAT_CONNECT_ENVELOPE_HEAD)
		return -EBADMSG;
	/* flag 0 only: a compressed message (we offer no compression) or an
	 * end-of-stream from the client is not a request */
	if (b[0] != 0)
		return -EBADMSG;
	uint32_t n = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];
	if (n > MOAT_CONNECT_MAX_MSG || n != len - MOAT_CONNECT_ENVELOPE_HEAD)
		return -EBADMSG;
	*ret_msg = (const char *)b + MOAT_CONNECT_ENVELOPE_HEAD;
	*ret_len = n;
	return 0;
}

void moat_connect_envelope_head(uint8_t flags, size_t len, uint8_t ret[MOAT_CONNECT_ENVELOPE_HEAD])
{
	ret[0] = flags;
	ret[1] = (uint8_t)(len >> 24);
	ret[2] = (uint8_t)(len >> 16);
	ret[3] = (uint8_t)(len >> 8);
	ret[4] = (uint8_t)len;
}

char *moat_connect_envelope(uint8_t flags, const char *msg, size_t len, size_t *ret_len)
{
	if (len > UINT32_MAX)
		return NULL;
	char *out = malloc(MOAT_CONNECT_ENVELOPE_HEAD + len);
	if (!out)
		return NULL;
	moat_connect_envelope_head(flags, len, (uint8_t *)out);
	if (len)
		memcpy(out + MOAT_CONNECT_ENVELOPE_HEAD, msg, len);
	*ret_len = MOAT_CONNECT_ENVELOPE_HEAD + len;
	return out;
}

static json_t *error_object(enum moat_connect_code c, const char *msg)
{
	const char *name = moat_connect_code_name(c);
	if (!name)
		name = "unknown";
	char cut[MOAT_CONNECT_MAX_ERRMSG + 1];
	snprintf(cut, sizeof(cut), "%s", msg ? msg : "");
	/* jansson refuses invalid UTF-8: such a message becomes a plain one */
	json_t *m = json_string(cut);
	if (!m)
		m = json_string("(message not valid UTF-8)");
	json_t *o = json_object();
	if (!o || !m || json_object_set_new(o, "code", json_string(name)) < 0 ||
	    json_object_set_new(o, "message", m) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *moat_connect_error_json(enum moat_connect_code c, const char *msg)
{
	json_t *o = error_object(c, msg);
	if (!o)
		return NULL;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

char *moat_connect_end_stream(enum moat_connect_code c, const char *msg, size_t *ret_len)
{
	_cleanup_free_ char *s = NULL;
	if (c == MOAT_CONNECT_OK) {
		s = strdup("{}");
	} else {
		json_t *e = error_object(c, msg);
		json_t *o = json_object();
		if (!e || !o || json_object_set_new(o, "error", e) < 0) {
			json_decref(o);
			return NULL;
		}
		s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	if (!s)
		return NULL;
	return moat_connect_envelope(MOAT_CONNECT_FLAG_END, s, strlen(s), ret_len);
}

int moat_connect_timeout_ms(const char *v, uint64_t *ret_ms)
{
	uint64_t n = 0;
	size_t i = 0;
	if (!v)
		return -EINVAL;
	for (; v[i]; i++) {
		if (i >= 10 || v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	if (i == 0)
		return -EINVAL;
	*ret_ms = n;
	return 0;
}
