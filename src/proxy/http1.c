/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict HTTP/1.x request-head parser and moat's error responses (see http1.h). */
#include "proxy/http1.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "shared/macro.h"

static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool moat_http1_is_token(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool mem_ieq(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	if (alen != blen)
		return false;
	for (size_t i = 0; i < alen; i++)
		if (lower(a[i]) != lower(b[i]))
			return false;
	return true;
}

bool moat_http1_slice_eq(struct moat_http1_slice s, const char *str)
{
	if (!s.p || !str)
		return false;
	return mem_ieq(s.p, s.len, str);
}

char *moat_http1_slice_copy(struct moat_http1_slice s, char *buf, size_t buflen)
{
	if (!buf || buflen == 0)
		return buf;
	size_t n = s.p ? MIN(s.len, buflen - 1) : 0;
	if (n)
		memcpy(buf, s.p, n);
	buf[n] = '\0';
	return buf;
}

int moat_http1_find_header(const struct moat_http1_request *r, const char *name, unsigned start)
{
	if (!r || !name)
		return -ENOENT;
	for (unsigned i = start; i < r->n_headers && i < MOAT_HTTP1_HARD_MAX_HEADERS; i++)
		if (moat_http1_slice_eq(r->headers[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* Port: 1..65535, decimal, no sign, no leading zero. */
static int parse_port(const char *s, size_t len, uint16_t *ret)
{
	unsigned v = 0;
	if (len == 0 || len > 5 || s[0] == '0')
		return -MOAT_HTTP1_E_PORT_INVALID;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -MOAT_HTTP1_E_PORT_INVALID;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -MOAT_HTTP1_E_PORT_INVALID;
	*ret = (uint16_t)v;
	return 0;
}

int moat_http1_parse_authority(const char *s, size_t len, bool require_port, uint16_t default_port,
			       char *ret_host, enum moat_host_kind *ret_kind, uint16_t *ret_port,
			       bool *ret_loose, bool *ret_port_explicit)
{
	const char *host = s, *colon = NULL;
	size_t hostlen;
	enum moat_host_kind kind = MOAT_HOST_NAME;
	bool loose = false;
	uint16_t port = default_port;
	int r;

	if (ret_host)
		ret_host[0] = '\0';
	if (ret_loose)
		*ret_loose = false;
	if (ret_port_explicit)
		*ret_port_explicit = false;
	if (!s || !ret_host || len == 0)
		return -MOAT_HTTP1_E_HOST_INVALID;
	if (memchr(s, '@', len))
		return -MOAT_HTTP1_E_USERINFO;

	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close)
			return -MOAT_HTTP1_E_HOST_INVALID;
		hostlen = (size_t)(close - s) + 1;
		if (hostlen < len) {
			if (s[hostlen] != ':')
				return -MOAT_HTTP1_E_HOST_INVALID;
			colon = s + hostlen;
		}
	} else {
		colon = memchr(s, ':', len);
		hostlen = colon ? (size_t)(colon - s) : len;
		if (colon && memchr(colon + 1, ':', len - hostlen - 1))
			return -MOAT_HTTP1_E_HOST_INVALID; /* bare IPv6 or junk */
	}
	if (hostlen == 0)
		return -MOAT_HTTP1_E_HOST_INVALID;
	if (colon) {
		r = parse_port(colon + 1, len - hostlen - 1, &port);
		if (r < 0)
			return r;
		if (ret_port_explicit)
			*ret_port_explicit = true;
	} else if (require_port) {
		return -MOAT_HTTP1_E_PORT_MISSING;
	}
	r = moat_host_parse(host, hostlen, false, ret_host, MOAT_HOST_BUFSZ, &kind, &loose);
	if (r < 0) {
		ret_host[0] = '\0';
		return -MOAT_HTTP1_E_HOST_INVALID;
	}
	if (ret_kind)
		*ret_kind = kind;
	if (ret_loose)
		*ret_loose = loose;
	if (ret_port)
		*ret_port = port;
	return 0;
}

/* Request line "METHOD SP target SP HTTP/1.x" (without CRLF). */
static int parse_request_line(const char *line, size_t len, struct moat_http1_request *r)
{
	const char *sp1, *sp2, *target, *ver;
	size_t mlen, tlen, vlen;
	int e;

	sp1 = memchr(line, ' ', len);
	if (!sp1)
		return -MOAT_HTTP1_E_REQUEST_LINE;
	mlen = (size_t)(sp1 - line);
	if (mlen == 0)
		return -MOAT_HTTP1_E_REQUEST_LINE;
	if (!moat_http1_is_token(line, mlen))
		return -MOAT_HTTP1_E_METHOD;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', len - mlen - 1);
	if (!sp2)
		return -MOAT_HTTP1_E_REQUEST_LINE;
	tlen = (size_t)(sp2 - target);
	if (tlen == 0)
		return -MOAT_HTTP1_E_REQUEST_LINE; /* two spaces */
	ver = sp2 + 1;
	vlen = len - mlen - tlen - 2;
	if (memchr(ver, ' ', vlen) || memchr(ver, '\t', vlen))
		return -MOAT_HTTP1_E_REQUEST_LINE;
	if (vlen == 8 && memcmp(ver, "HTTP/1.", 7) == 0 && (ver[7] == '0' || ver[7] == '1'))
		r->version_minor = (unsigned)(ver[7] - '0');
	else if (vlen >= 5 && memcmp(ver, "HTTP/", 5) == 0)
		return -MOAT_HTTP1_E_VERSION;
	else
		return -MOAT_HTTP1_E_REQUEST_LINE;

	r->method = (struct moat_http1_slice){line, mlen};
	r->target = (struct moat_http1_slice){target, tlen};
	for (size_t i = 0; i < tlen; i++) {
		unsigned char c = (unsigned char)target[i];
		if (c <= 0x20 || c >= 0x7f)
			return -MOAT_HTTP1_E_TARGET;
	}
	if (memchr(target, '#', tlen))
		return -MOAT_HTTP1_E_TARGET; /* fragments are never sent */

	r->is_connect = mlen == 7 && memcmp(line, "CONNECT", 7) == 0;
	if (r->is_connect) {
		if (target[0] == '/' || (tlen >= 3 && memmem(target, tlen, "://", 3)))
			return -MOAT_HTTP1_E_FORM;
		r->form = MOAT_HTTP1_FORM_AUTHORITY;
		r->authority = r->target;
		r->path = (struct moat_http1_slice){target + tlen, 0};
		e = moat_http1_parse_authority(target, tlen, true, 0, r->host, &r->host_kind,
					       &r->port, &r->host_loose_ipv4, &r->port_explicit);
		if (e < 0)
			return e;
		r->has_host = true;
		return 0;
	}
	if (target[0] == '/') {
		r->form = MOAT_HTTP1_FORM_ORIGIN;
		r->path = r->target;
		return 0;
	}
	const char *sep = tlen >= 3 ? memmem(target, tlen, "://", 3) : NULL;
	if (!sep)
		return -MOAT_HTTP1_E_FORM; /* "*", authority-form without CONNECT, junk */
	if (!mem_ieq(target, (size_t)(sep - target), "http"))
		return -MOAT_HTTP1_E_SCHEME;
	const char *auth = sep + 3, *end = target + tlen, *p = auth;
	while (p < end && *p != '/' && *p != '?')
		p++;
	r->form = MOAT_HTTP1_FORM_ABSOLUTE;
	r->authority = (struct moat_http1_slice){auth, (size_t)(p - auth)};
	r->path = (struct moat_http1_slice){p, (size_t)(end - p)};
	if (p == end || *p == '?')
		r->origin_prefix = "/";
	e = moat_http1_parse_authority(auth, (size_t)(p - auth), false, 80, r->host, &r->host_kind,
				       &r->port, &r->host_loose_ipv4, &r->port_explicit);
	if (e < 0)
		return e;
	r->has_host = true;
	return 0;
}

/* Content-Length: 1*DIGIT, at most 18 digits (fits int64), no leading zero
 * ("0" itself is the only value starting with '0': "05" is read as 5 by
 * some and refused or read as octal by others). */
static int parse_content_length(const char *s, size_t len, int64_t *ret)
{
	int64_t v = 0;
	if (len == 0 || len > 18 || (len > 1 && s[0] == '0'))
		return -MOAT_HTTP1_E_CONTENT_LENGTH;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -MOAT_HTTP1_E_CONTENT_LENGTH;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

/* Does a comma-separated token list contain @tok (case-insensitive)? */
static bool list_has(const char *s, size_t len, const char *tok)
{
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == ','))
			i++;
		size_t start = i;
		while (i < len && s[i] != ',')
			i++;
		size_t end = i;
		while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t'))
			end--;
		if (end > start && mem_ieq(s + start, end - start, tok))
			return true;
	}
	return false;
}

/* "Content_Length", "Transfer_encoding": names some servers (CGI
 * style) map onto the framing headers. Refused: smuggling material. */
static bool lookalike_framing_name(const char *name, size_t len)
{
	static const char *const framing[] = {"content-length", "transfer-encoding"};
	char tmp[32];

	if (len >= sizeof(tmp))
		return false;
	for (size_t i = 0; i < len; i++)
		tmp[i] = name[i] == '_' ? '-' : lower(name[i]);
	for (size_t k = 0; k < ELEMENTSOF(framing); k++)
		if (len == strlen(framing[k]) && memcmp(tmp, framing[k], len) == 0)
			return true;
	return false;
}

struct head_state {
	unsigned n_host, n_te, n_cl;
	const struct moat_http1_header *host_hdr;
	bool conn_close, conn_keepalive;
};

static int parse_header_line(const char *line, size_t len, struct moat_http1_request *r,
			     unsigned max_headers, struct head_state *st)
{
	const char *colon;
	size_t nlen;

	if (line[0] == ' ' || line[0] == '\t')
		return -MOAT_HTTP1_E_OBS_FOLD;
	colon = memchr(line, ':', len);
	if (!colon)
		return -MOAT_HTTP1_E_HEADER_VALUE;
	nlen = (size_t)(colon - line);
	if (nlen == 0)
		return -MOAT_HTTP1_E_HEADER_NAME;
	if (line[nlen - 1] == ' ' || line[nlen - 1] == '\t')
		return -MOAT_HTTP1_E_SPACE_BEFORE_COLON;
	if (!moat_http1_is_token(line, nlen))
		return -MOAT_HTTP1_E_HEADER_NAME;
	const char *v = colon + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	for (const char *p = v; p < end; p++)
		if (is_ctl((unsigned char)*p) && *p != '\t')
			return -MOAT_HTTP1_E_HEADER_VALUE;
	if (memchr(line, '_', nlen) && lookalike_framing_name(line, nlen))
		return -MOAT_HTTP1_E_HEADER_NAME;
	if (r->n_headers >= max_headers)
		return -MOAT_HTTP1_E_TOO_MANY_HEADERS;

	struct moat_http1_header *h = &r->headers[r->n_headers++];
	h->line = (struct moat_http1_slice){line, len};
	h->name = (struct moat_http1_slice){line, nlen};
	h->value = (struct moat_http1_slice){v, (size_t)(end - v)};

	if (moat_http1_slice_eq(h->name, "host")) {
		if (++st->n_host > 1)
			return -MOAT_HTTP1_E_HOST_DUPLICATE;
		st->host_hdr = h;
	} else if (moat_http1_slice_eq(h->name, "content-length")) {
		int64_t cl;
		int e = parse_content_length(h->value.p, h->value.len, &cl);
		if (e < 0)
			return e;
		/* One Content-Length field, period: RFC 9110 8.6 lets a
		 * recipient merge identical ones, but not every upstream does,
		 * and the merge is one more rule two parsers can disagree on. */
		if (st->n_cl++ > 0)
			return -MOAT_HTTP1_E_CONTENT_LENGTH;
		r->content_length = cl;
	} else if (moat_http1_slice_eq(h->name, "transfer-encoding")) {
		if (++st->n_te > 1 || !moat_http1_slice_eq(h->value, "chunked"))
			return -MOAT_HTTP1_E_TRANSFER_ENCODING;
		r->chunked = true;
	} else if (moat_http1_slice_eq(h->name, "connection")) {
		if (list_has(h->value.p, h->value.len, "close"))
			st->conn_close = true;
		if (list_has(h->value.p, h->value.len, "keep-alive"))
			st->conn_keepalive = true;
	} else if (moat_http1_slice_eq(h->name, "expect")) {
		if (moat_http1_slice_eq(h->value, "100-continue"))
			r->expect_continue = true;
	}
	if (st->n_cl && st->n_te)
		return -MOAT_HTTP1_E_CL_AND_TE;
	return 0;
}

/* Checks that need the whole head. */
static int finish_head(struct moat_http1_request *r, const struct head_state *st)
{
	if (r->chunked && r->version_minor == 0)
		return -MOAT_HTTP1_E_TRANSFER_ENCODING; /* RFC 9112 6.1: faulty framing */
	if (r->is_connect && (r->chunked || r->content_length > 0))
		return -MOAT_HTTP1_E_CONTENT_LENGTH; /* a CONNECT has no body */

	if (st->host_hdr) {
		char h[MOAT_HOST_BUFSZ];
		enum moat_host_kind kind;
		uint16_t port;
		bool explicit_port, loose;
		uint16_t def = r->form == MOAT_HTTP1_FORM_AUTHORITY ? r->port : 80;
		int e = moat_http1_parse_authority(st->host_hdr->value.p, st->host_hdr->value.len,
						   false, def, h, &kind, &port, &loose,
						   &explicit_port);
		if (e < 0)
			return e;
		if (r->form == MOAT_HTTP1_FORM_ORIGIN) {
			memcpy(r->host, h, sizeof(h));
			r->host_kind = kind;
			r->port = port;
			r->port_explicit = explicit_port;
			r->authority = st->host_hdr->value;
			r->host_loose_ipv4 = loose;
			r->has_host = true;
		} else if (!streq(h, r->host) || kind != r->host_kind || port != r->port) {
			return -MOAT_HTTP1_E_HOST_MISMATCH;
		}
	} else if (r->form == MOAT_HTTP1_FORM_ORIGIN && r->version_minor >= 1) {
		return -MOAT_HTTP1_E_HOST_MISSING;
	}
	if (r->form == MOAT_HTTP1_FORM_ORIGIN && !r->has_host)
		r->port = 80;

	if (r->version_minor >= 1)
		r->keep_alive = !st->conn_close;
	else
		r->keep_alive = st->conn_keepalive && !st->conn_close;
	return 0;
}

int moat_http1_parse_request(const char *buf, size_t len, const struct moat_http1_limits *lim,
			     struct moat_http1_request *ret)
{
	size_t max_head = MOAT_HTTP1_DEFAULT_MAX_HEAD;
	unsigned max_headers = MOAT_HTTP1_DEFAULT_MAX_HEADERS;
	struct head_state st = {0};
	size_t pos = 0, scan_end, head_end = 0;
	bool complete = false;
	int e, bad_err = 0;

	if (!buf || !ret)
		return -MOAT_HTTP1_E_REQUEST_LINE;
	if (lim && lim->max_head)
		max_head = MIN(lim->max_head, (size_t)MOAT_HTTP1_HARD_MAX_HEAD);
	if (lim && lim->max_headers)
		max_headers = MIN(lim->max_headers, MOAT_HTTP1_HARD_MAX_HEADERS);
	memset(ret, 0, sizeof(*ret));
	ret->content_length = -1;
	ret->origin_prefix = "";

	/* one optional empty line before the request line */
	if (len >= 1 && buf[0] == '\r') {
		if (len < 2)
			return 0;
		if (buf[1] != '\n')
			return -MOAT_HTTP1_E_LINE_ENDING;
		pos = 2;
	} else if (len >= 1 && buf[0] == '\n') {
		return -MOAT_HTTP1_E_LINE_ENDING;
	}

	/* byte scan: line endings and control bytes, end of head. The first
	 * bad byte is remembered, not returned at once: only lines that end
	 * before it are parsed, and an error in one of them wins. So the error
	 * reported is always the one at the earliest position (a bad byte's,
	 * or a line's CRLF), the same whatever prefix of the stream has
	 * arrived: every consumer, however its reads are cut, names the same
	 * reason for the same bytes. */
	scan_end = MIN(len, max_head);
	for (size_t i = pos; i < scan_end && !bad_err; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n') {
			if (i == 0 || buf[i - 1] != '\r') {
				bad_err = -MOAT_HTTP1_E_LINE_ENDING;
				head_end = i;
			} else if (i >= pos + 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
				head_end = i + 1;
				complete = true;
				break;
			}
		} else if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n') {
				bad_err = -MOAT_HTTP1_E_LINE_ENDING;
				head_end = i;
			}
		} else if (is_ctl(c) && c != '\t') {
			bad_err = -MOAT_HTTP1_E_NUL; /* NUL and every other CTL */
			head_end = i;
		}
	}
	if (!complete && !bad_err)
		head_end = scan_end;

	/* lines: every complete "...\r\n" up to head_end */
	size_t line_start = pos;
	unsigned lineno = 0;
	for (size_t i = pos; i + 1 < head_end; i++) {
		if (buf[i] != '\r' || buf[i + 1] != '\n')
			continue;
		size_t llen = i - line_start;
		const char *line = buf + line_start;
		if (lineno == 0) {
			if (llen == 0)
				return -MOAT_HTTP1_E_REQUEST_LINE;
			ret->request_line = (struct moat_http1_slice){line, llen};
			e = parse_request_line(line, llen, ret);
		} else if (llen == 0) {
			break; /* end of head */
		} else {
			e = parse_header_line(line, llen, ret, max_headers, &st);
		}
		if (e < 0)
			return e;
		lineno++;
		line_start = i + 2;
		i++;
	}
	if (bad_err)
		return bad_err;
	if (!complete) {
		if (len >= max_head)
			return -MOAT_HTTP1_E_HEAD_TOO_LARGE;
		return 0;
	}
	e = finish_head(ret, &st);
	if (e < 0)
		return e;
	return (int)head_end;
}

int moat_http1_err_status(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case MOAT_HTTP1_E_HEAD_TOO_LARGE:
	case MOAT_HTTP1_E_TOO_MANY_HEADERS:
		return 431;
	case MOAT_HTTP1_E_VERSION:
		return 505;
	case MOAT_HTTP1_E_TRANSFER_ENCODING:
		return 501;
	case MOAT_HTTP1_E_BODY_TOO_LARGE:
		return 413;
	default:
		return 400;
	}
}

const char *moat_http1_strerror(int err)
{
	static const char *const names[MOAT_HTTP1_E__MAX] = {
		[MOAT_HTTP1_E_HEAD_TOO_LARGE] = "head-too-large",
		[MOAT_HTTP1_E_TOO_MANY_HEADERS] = "too-many-headers",
		[MOAT_HTTP1_E_NUL] = "control-byte",
		[MOAT_HTTP1_E_LINE_ENDING] = "bare-cr-or-lf",
		[MOAT_HTTP1_E_REQUEST_LINE] = "bad-request-line",
		[MOAT_HTTP1_E_METHOD] = "bad-method",
		[MOAT_HTTP1_E_VERSION] = "http-version",
		[MOAT_HTTP1_E_TARGET] = "bad-target",
		[MOAT_HTTP1_E_SCHEME] = "scheme-not-http",
		[MOAT_HTTP1_E_FORM] = "target-form",
		[MOAT_HTTP1_E_USERINFO] = "userinfo",
		[MOAT_HTTP1_E_HOST_INVALID] = "invalid-host",
		[MOAT_HTTP1_E_PORT_MISSING] = "port-missing",
		[MOAT_HTTP1_E_PORT_INVALID] = "invalid-port",
		[MOAT_HTTP1_E_OBS_FOLD] = "obs-fold",
		[MOAT_HTTP1_E_HEADER_NAME] = "bad-header-name",
		[MOAT_HTTP1_E_SPACE_BEFORE_COLON] = "space-before-colon",
		[MOAT_HTTP1_E_HEADER_VALUE] = "bad-header-value",
		[MOAT_HTTP1_E_CONTENT_LENGTH] = "content-length",
		[MOAT_HTTP1_E_CL_AND_TE] = "cl-and-te",
		[MOAT_HTTP1_E_TRANSFER_ENCODING] = "transfer-encoding",
		[MOAT_HTTP1_E_HOST_MISSING] = "host-missing",
		[MOAT_HTTP1_E_HOST_DUPLICATE] = "host-duplicate",
		[MOAT_HTTP1_E_HOST_MISMATCH] = "host-mismatch",
		[MOAT_HTTP1_E_CHUNK] = "bad-chunked-body",
		[MOAT_HTTP1_E_BODY_TOO_LARGE] = "body-too-large",
	};
	if (err < 0)
		err = -err;
	if (err <= 0 || err >= MOAT_HTTP1_E__MAX || !names[err])
		return "unknown";
	return names[err];
}

const char *moat_http1_status_phrase(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 407:
		return "Proxy Authentication Required";
	case 408:
		return "Request Timeout";
	case 413:
		return "Content Too Large";
	case 421:
		return "Misdirected Request";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

/* Copy @s into @out (size >= 301) keeping printable ASCII only, max 300 bytes. */
static const char *sanitize(const char *s, char *out)
{
	size_t n = 0;
	for (; s && *s && n < 300; s++)
		out[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[n] = '\0';
	return out;
}

int moat_http1_build_error(char *buf, size_t buflen, int status, const char *reason,
			   const char *what, const char *allow_rule)
{
	char r[301], w[301], a[301], body[1100];
	int blen, n;

	if (!buf || buflen == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	if (status < 100 || status > 999)
		status = 500;
	sanitize(reason && *reason ? reason : "denied", r);
	sanitize(what && *what ? what : "request", w);
	sanitize(allow_rule, a);
	if (a[0])
		blen = snprintf(body, sizeof(body), "moat: refused %s (%s); to allow it: %s\n", w,
				r, a);
	else
		blen = snprintf(body, sizeof(body), "moat: refused %s (%s)\n", w, r);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		return -ENOBUFS;
	n = snprintf(buf, buflen,
		     "HTTP/1.1 %d %s\r\n"
		     "X-Moat-Denied: %s\r\n"
		     "Content-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: %d\r\n"
		     "Connection: close\r\n"
		     "\r\n"
		     "%s",
		     status, moat_http1_status_phrase(status), r, blen, body);
	if (n < 0 || (size_t)n >= buflen) {
		buf[0] = '\0';
		return -ENOBUFS;
	}
	return n;
}

enum {
	CH_SIZE = 0,
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_END_CR,
	CH_END_LF,
	CH_DONE,
};

void moat_http1_chunked_init(struct moat_http1_chunked *c, uint64_t max_body)
{
	memset(c, 0, sizeof(*c));
	c->max_body = max_body;
}

int moat_http1_chunked_feed(struct moat_http1_chunked *c, const char *buf, size_t len)
{
	size_t i = 0;

	if (!c || c->state == CH_DONE)
		return 0;
	if (len > INT_MAX)
		len = INT_MAX;
	while (i < len) {
		char ch = buf[i];
		int v;
		switch (c->state) {
		case CH_SIZE:
			if (ch == '\r') {
				if (c->digits == 0)
					return -MOAT_HTTP1_E_CHUNK;
				c->state = CH_SIZE_LF;
				break;
			}
			v = (ch >= '0' && ch <= '9')	   ? ch - '0'
				: (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
				: (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
							   : -1;
			if (v < 0 || c->digits >= 15)
				return -MOAT_HTTP1_E_CHUNK;
			c->size = c->size * 16 + (uint64_t)v;
			c->digits++;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -MOAT_HTTP1_E_CHUNK;
			if (c->size == 0) {
				c->chunks++;
				c->state = CH_END_CR;
				break;
			}
			c->total += c->size;
			if (c->max_body && c->total > c->max_body)
				return -MOAT_HTTP1_E_BODY_TOO_LARGE;
			c->remaining = c->size;
			c->state = CH_DATA;
			break;
		case CH_DATA: {
			size_t n = MIN((uint64_t)(len - i), c->remaining);
			c->remaining -= n;
			i += n;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		case CH_DATA_CR:
			if (ch != '\r')
				return -MOAT_HTTP1_E_CHUNK;
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (ch != '\n')
				return -MOAT_HTTP1_E_CHUNK;
			c->chunks++;
			c->state = CH_SIZE;
			c->size = 0;
			c->digits = 0;
			break;
		case CH_END_CR:
			if (ch != '\r')
				return -MOAT_HTTP1_E_CHUNK; /* a trailer field: refused */
			c->state = CH_END_LF;
			break;
		case CH_END_LF:
			if (ch != '\n')
				return -MOAT_HTTP1_E_CHUNK;
			c->state = CH_DONE;
			c->done = true;
			return (int)(i + 1);
		default:
			return -MOAT_HTTP1_E_CHUNK;
		}
		i++;
	}
	return (int)i;
}

static int put(char *buf, size_t cap, size_t *pos, const void *p, size_t n)
{
	if (n > cap - *pos)
		return -ENOBUFS;
	if (n)
		memcpy(buf + *pos, p, n);
	*pos += n;
	return 0;
}

int moat_http1_write_origin_head(const struct moat_http1_request *r, char *buf, size_t cap)
{
	char ver[16];
	size_t pos = 0;
	bool host = false;
	int k = 0;

	if (!r || !buf)
		return -ENOBUFS;
	snprintf(ver, sizeof(ver), " HTTP/1.%u\r\n", r->version_minor);
	k |= put(buf, cap, &pos, r->method.p, r->method.len);
	k |= put(buf, cap, &pos, " ", 1);
	k |= put(buf, cap, &pos, r->origin_prefix, strlen(r->origin_prefix));
	k |= put(buf, cap, &pos, r->path.p, r->path.len);
	k |= put(buf, cap, &pos, ver, strlen(ver));
	for (unsigned i = 0; i < r->n_headers && i < MOAT_HTTP1_HARD_MAX_HEADERS; i++) {
		const struct moat_http1_header *h = &r->headers[i];
		if (moat_http1_slice_eq(h->name, "proxy-connection") ||
		    moat_http1_slice_eq(h->name, "proxy-authorization"))
			continue;
		if (moat_http1_slice_eq(h->name, "host"))
			host = true;
		k |= put(buf, cap, &pos, h->name.p, h->name.len);
		k |= put(buf, cap, &pos, ": ", 2);
		k |= put(buf, cap, &pos, h->value.p, h->value.len);
		k |= put(buf, cap, &pos, "\r\n", 2);
	}
	if (!host) {
		k |= put(buf, cap, &pos, "Host: ", 6);
		k |= put(buf, cap, &pos, r->authority.p, r->authority.len);
		k |= put(buf, cap, &pos, "\r\n", 2);
	}
	k |= put(buf, cap, &pos, "\r\n", 2);
	if (k || pos > INT_MAX)
		return -ENOBUFS;
	return (int)pos;
}

void moat_http1_body_start(struct moat_http1_body *b, const struct moat_http1_request *r,
			   uint64_t max_body)
{
	memset(b, 0, sizeof(*b));
	if (r->chunked) {
		b->active = b->chunked = true;
		moat_http1_chunked_init(&b->ch, max_body);
	} else if (r->content_length > 0) {
		b->active = true;
		b->left = (uint64_t)r->content_length;
	}
}

int moat_http1_body_feed(struct moat_http1_body *b, const char *buf, size_t len)
{
	int k;

	if (!b || !b->active)
		return 0;
	if (len > INT_MAX)
		len = INT_MAX;
	if (b->chunked) {
		k = moat_http1_chunked_feed(&b->ch, buf, len);
		if (k < 0) {
			b->active = false;
			return k;
		}
		if (b->ch.done)
			b->active = false;
	} else {
		k = (int)MIN((uint64_t)len, b->left);
		b->left -= (uint64_t)k;
		if (b->left == 0)
			b->active = false;
	}
	b->length += (uint64_t)k;
	return k;
}
