/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict HTTP/1.x request-head parser for the egress proxy, and the builder of
 * moat's error responses. Pure code: no syscalls, no allocation; the parsed
 * request holds slices into the caller's buffer, so the buffer must outlive it.
 *
 * The parser is stateless and incremental by re-parsing: call it with all the
 * bytes received so far; it returns 0 (need more), the length of the complete
 * head (> 0; the body, if any, starts there), or a negative enum moat_http1_err.
 * Errors that can be seen early (NUL, bare LF, bad request line, over-size)
 * are reported before the head is complete, so a slow or endless head fails
 * fast. The error reported is the one at the earliest position (a bad byte,
 * or the CRLF ending a bad line), so any prefix that already holds an error
 * gets the answer the whole stream gets: the reason does not depend on how
 * the reads were cut. Each call costs O(bytes so far): a caller may skip the
 * call after a read that added no control byte ('\n', '\r', NUL...) and did
 * not reach the cap (such bytes can neither complete nor refuse a head; keep
 * a trailing '\r' in the next look), which bounds the total work to
 * O(lines * head) even for a client that sends one byte at a time.
 *
 * This is moat's one HTTP/1 request grammar: the plain proxy path, the
 * credential rewriter (secrets_rewrite.c) and the TLS interceptor (intercept.c) all
 * consume this parser's output and frame bodies with moat_http1_body_*()
 * below, so no two paths can disagree on where a request ends (the table of
 * what is refused is in docs/NETWORK.md). Anything ambiguous between two HTTP
 * implementations (request smuggling material) is refused, never interpreted:
 *   obs-fold, bare CR or bare LF, NUL and other CTLs (except HTAB in values),
 *   whitespace before the colon or in names, non-token bytes in method or
 *   name, names like "Content_Length"/"Transfer_Encoding" that CGI-style
 *   servers map onto the framing headers, a Content-Length that is not
 *   1*DIGIT (at most 18) or has a leading zero ("0" itself is fine), more
 *   than one Content-Length field (even with identical values) or a list
 *   value, Content-Length with Transfer-Encoding, any Transfer-Encoding other
 *   than exactly one "chunked" (no lists, no "identity"), chunked in HTTP/1.0,
 *   several Host headers, Host different from the absolute-form/authority-form
 *   target, userinfo ("user@host"), fragments, a CONNECT target without port,
 *   HTTP versions other than 1.0 and 1.1, a head over max_head bytes or with
 *   more than max_headers fields.
 * At most one empty line (CRLF) before the request line is skipped (RFC 9112
 * 2.2); it is counted in the returned head length.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/hostmatch.h"

#define MOAT_HTTP1_DEFAULT_MAX_HEAD (32u * 1024u)
#define MOAT_HTTP1_DEFAULT_MAX_HEADERS 100u
#define MOAT_HTTP1_HARD_MAX_HEADERS 128u /* size of the headers array */
#define MOAT_HTTP1_HARD_MAX_HEAD (1024u * 1024u)

/* The response a CONNECT gets once the tunnel is up. */
#define MOAT_HTTP1_CONNECT_OK "HTTP/1.1 200 Connection established\r\n\r\n"

enum moat_http1_err {
	MOAT_HTTP1_E_HEAD_TOO_LARGE = 1, /* 431 */
	MOAT_HTTP1_E_TOO_MANY_HEADERS, /* 431 */
	MOAT_HTTP1_E_NUL, /* 400: NUL or another CTL byte */
	MOAT_HTTP1_E_LINE_ENDING, /* 400: bare CR or bare LF */
	MOAT_HTTP1_E_REQUEST_LINE, /* 400: not "METHOD SP target SP version" */
	MOAT_HTTP1_E_METHOD, /* 400: empty/non-token method */
	MOAT_HTTP1_E_VERSION, /* 505: not HTTP/1.0 or HTTP/1.1 */
	MOAT_HTTP1_E_TARGET, /* 400: malformed request-target */
	MOAT_HTTP1_E_SCHEME, /* 400: absolute-form scheme other than http */
	MOAT_HTTP1_E_FORM, /* 400: target form wrong for method (e.g.
					  * CONNECT /x, GET host:443, OPTIONS *) */
	MOAT_HTTP1_E_USERINFO, /* 400: user@host in an authority */
	MOAT_HTTP1_E_HOST_INVALID, /* 400: host is not a name or IP */
	MOAT_HTTP1_E_PORT_MISSING, /* 400: CONNECT host without :port */
	MOAT_HTTP1_E_PORT_INVALID, /* 400: port empty, 0, >65535, not digits */
	MOAT_HTTP1_E_OBS_FOLD, /* 400: header line starting with SP/HTAB */
	MOAT_HTTP1_E_HEADER_NAME, /* 400: empty/non-token header name */
	MOAT_HTTP1_E_SPACE_BEFORE_COLON, /* 400 */
	MOAT_HTTP1_E_HEADER_VALUE, /* 400: CTL in value, or no colon */
	MOAT_HTTP1_E_CONTENT_LENGTH, /* 400: invalid or conflicting Content-Length */
	MOAT_HTTP1_E_CL_AND_TE, /* 400: both Content-Length and Transfer-Encoding */
	MOAT_HTTP1_E_TRANSFER_ENCODING, /* 501: TE other than exactly "chunked" */
	MOAT_HTTP1_E_HOST_MISSING, /* 400: HTTP/1.1 origin-form without Host */
	MOAT_HTTP1_E_HOST_DUPLICATE, /* 400: more than one Host header */
	MOAT_HTTP1_E_HOST_MISMATCH, /* 400: Host differs from the target authority */
	MOAT_HTTP1_E_CHUNK, /* 400: malformed chunked body framing */
	MOAT_HTTP1_E_BODY_TOO_LARGE, /* 413: chunked body over its limit */
	MOAT_HTTP1_E__MAX
};

enum moat_http1_form {
	MOAT_HTTP1_FORM_ORIGIN = 0, /* "/path?q" (transparent capture; host from Host) */
	MOAT_HTTP1_FORM_ABSOLUTE, /* "http://host[:port]/path" (explicit proxy) */
	MOAT_HTTP1_FORM_AUTHORITY, /* "host:port" (CONNECT only) */
};

struct moat_http1_slice {
	const char *p; /* into the parsed buffer, not NUL-terminated */
	size_t len;
};

struct moat_http1_header {
	struct moat_http1_slice line; /* the whole field line as sent, without CRLF */
	struct moat_http1_slice name; /* token, case as sent */
	struct moat_http1_slice value; /* leading/trailing SP/HTAB trimmed */
};

struct moat_http1_limits {
	size_t max_head; /* bytes incl. final CRLFCRLF; 0 = default 32 KiB */
	unsigned max_headers; /* 0 = default 100; capped at MOAT_HTTP1_HARD_MAX_HEADERS */
};

struct moat_http1_request {
	struct moat_http1_slice request_line; /* as sent, without CRLF */
	struct moat_http1_slice method; /* e.g. "GET", "CONNECT" */
	struct moat_http1_slice target; /* request-target as sent */
	unsigned version_minor; /* 0 or 1 (HTTP/1.x) */
	enum moat_http1_form form;
	bool is_connect;

	/* Destination. For absolute/authority form from the target; for origin
	 * form from the Host header if present (has_host false otherwise: the
	 * caller uses SO_ORIGINAL_DST and must decide by address). */
	bool has_host;
	enum moat_host_kind host_kind;
	bool host_loose_ipv4; /* host was an alternative IPv4 form ("127.1") */
	char host[MOAT_HOST_BUFSZ]; /* normalized name or canonical address */
	uint16_t port; /* explicit, or 80 (http/origin) if absent */
	bool port_explicit;
	struct moat_http1_slice authority; /* raw authority as sent (target or Host) */
	/* path+query as sent: origin-form = the whole target; absolute-form =
	 * what follows the authority, "" or starting with '/' or '?' (send "/"
	 * in front when it does not start with '/'); CONNECT = "" */
	struct moat_http1_slice path;
	/* The path to forward in origin-form is origin_prefix + path: "/" when
	 * path is empty or starts with '?' ("http://h?x" goes on as "/?x"),
	 * else "". */
	const char *origin_prefix;

	struct moat_http1_header headers[MOAT_HTTP1_HARD_MAX_HEADERS];
	unsigned n_headers;

	/* Body framing, validated: chunked, or content_length >= 0, or neither
	 * (content_length == -1 and !chunked: no body). */
	int64_t content_length;
	bool chunked;
	bool keep_alive; /* 1.1 unless "Connection: close"; 1.0 only with keep-alive */
	bool expect_continue;
};

/*
 * Parse the request head in @buf[0..@len). @lim may be NULL for defaults.
 * Returns > 0: complete, the head length (@ret filled, slices into @buf);
 * 0: need more bytes (@ret contents unspecified); < 0: -enum moat_http1_err.
 */
int moat_http1_parse_request(const char *buf, size_t len, const struct moat_http1_limits *lim,
			     struct moat_http1_request *ret);

/*
 * Parse an authority "host[:port]" (@len bytes). host is a DNS name, an IPv4
 * literal (also loose forms, flagged) or "[IPv6]"; userinfo, empty host, a
 * zone id, an empty or invalid port are refused. @require_port: a missing port
 * is MOAT_HTTP1_E_PORT_MISSING; else @default_port is used. Fills @ret_host
 * (MOAT_HOST_BUFSZ bytes), @ret_kind, @ret_port; @ret_loose and
 * @ret_port_explicit may be NULL. Returns 0 or -enum moat_http1_err.
 */
int moat_http1_parse_authority(const char *s, size_t len, bool require_port, uint16_t default_port,
			       char *ret_host, enum moat_host_kind *ret_kind, uint16_t *ret_port,
			       bool *ret_loose, bool *ret_port_explicit);

/* Index of the first header named @name (case-insensitive) at index >=
 * @start, or -ENOENT. */
int moat_http1_find_header(const struct moat_http1_request *r, const char *name, unsigned start);

/* Is s[0..len) a token (RFC 9110 tchar+: a method or field name)? False when
 * empty. Also what the secrets' definitions (methods, header names) must be. */
bool moat_http1_is_token(const char *s, size_t len);

/* Case-insensitive comparison of a slice with a NUL-terminated string. */
bool moat_http1_slice_eq(struct moat_http1_slice s, const char *str);

/* Copy a slice to a NUL-terminated string; truncates. Returns @buf. */
char *moat_http1_slice_copy(struct moat_http1_slice s, char *buf, size_t buflen);

/* HTTP status code for an error (400, 431, 501 or 505). */
int moat_http1_err_status(int err);
/* Short reason token for an error, e.g. "obs-fold", "cl-and-te" (for
 * X-Moat-Denied and logs). Accepts err or -err. Static string, never NULL. */
const char *moat_http1_strerror(int err);
/* Standard reason phrase for a status ("Forbidden"), "Error" if unknown. */
const char *moat_http1_status_phrase(int status);

/*
 * Build a complete error response for the sandbox, into @buf:
 *   HTTP/1.1 <status> <phrase>\r\n
 *   X-Moat-Denied: <reason>\r\n
 *   Content-Type: text/plain; charset=utf-8\r\n
 *   Content-Length: N\r\nConnection: close\r\n\r\n
 *   moat: refused <what> (<reason>)[; to allow it: <allow_rule>]\n
 * e.g. status 403, reason "not-allowed", what "CONNECT api.example.com:443",
 * allow_rule "--allow-host api.example.com:443" (NULL or "" = no hint).
 * Every string is sanitized (bytes outside printable ASCII become '?', and
 * strings are capped at 300 bytes each), so hostile host names cannot inject
 * headers. Returns the length (no NUL counted; buf is NUL-terminated) or
 * -ENOBUFS. 1 KiB + 3 * 300 always suffices.
 */
int moat_http1_build_error(char *buf, size_t buflen, int status, const char *reason,
			   const char *what, const char *allow_rule);

/*
 * Write the head to forward for @r in origin-form into @buf (@cap bytes):
 *   METHOD SP origin_prefix path SP HTTP/1.x CRLF
 *   every header but Proxy-Connection and Proxy-Authorization, "name: value"
 *   Host: authority (only if the client sent no Host)
 *   CRLF
 * Returns the length, or -ENOBUFS. MOAT_HTTP1_ORIGIN_HEAD_MAX(r, head_len)
 * bytes always suffice, head_len being what moat_http1_parse_request()
 * returned for @r.
 */
#define MOAT_HTTP1_ORIGIN_HEAD_MAX(r, head_len) \
	((size_t)(head_len) + (size_t)(r)->n_headers + (r)->authority.len + 32u)
int moat_http1_write_origin_head(const struct moat_http1_request *r, char *buf, size_t cap);

/*
 * Strict incremental decoder of a chunked request body (RFC 9112 7.1), so the
 * proxy knows where the body ends and the next request on a keep-alive
 * connection begins. It only frames: the bytes are forwarded unchanged.
 * Refused as MOAT_HTTP1_E_CHUNK: chunk sizes that are empty, not hex, longer
 * than 15 hex digits, or followed by anything but CRLF (chunk extensions
 * ";..." and whitespace included), chunk data not followed by exactly CRLF,
 * bare LF anywhere, and any trailer field after the last chunk (only the
 * empty trailer section "0\r\n\r\n" is accepted). A body whose chunk sizes
 * add up to more than @max_body is MOAT_HTTP1_E_BODY_TOO_LARGE.
 */
struct moat_http1_chunked {
	unsigned state; /* private */
	unsigned digits; /* private */
	uint64_t size; /* private: the chunk size being read */
	uint64_t remaining; /* private: chunk data bytes still to come */
	uint64_t total; /* sum of chunk sizes so far */
	uint64_t chunks; /* chunks whose data was complete (the last, 0, included) */
	uint64_t max_body; /* 0 = unlimited */
	bool done; /* the final CRLF was consumed */
};

void moat_http1_chunked_init(struct moat_http1_chunked *c, uint64_t max_body);

/*
 * Feed the next @len body bytes (at most INT_MAX are looked at). Returns the
 * number of bytes that belong to the body (all of @len while it continues;
 * fewer when it ended inside @buf: c->done is then true and the rest is the
 * next request), or -MOAT_HTTP1_E_CHUNK / -MOAT_HTTP1_E_BODY_TOO_LARGE (the
 * connection must be closed). Feeding a finished decoder returns 0.
 */
int moat_http1_chunked_feed(struct moat_http1_chunked *c, const char *buf, size_t len);

/*
 * The body framing of one request, whatever its kind: every consumer of a
 * parsed head (plain proxy path, TLS interceptor) frames the body that
 * follows with this, so all of them find the next request at the same byte.
 * Content-Length bodies are counted, chunked ones go through
 * moat_http1_chunked_feed(); a request without either has no body (RFC 9112
 * 6.3: a request without framing headers has length 0).
 */
struct moat_http1_body {
	bool active; /* body bytes are still expected */
	bool chunked;
	uint64_t left; /* Content-Length: bytes still to come */
	uint64_t length; /* bytes framed so far (chunk framing included) */
	struct moat_http1_chunked ch;
};

/* Start framing the body of @r (@max_body as for moat_http1_chunked_init,
 * 0 = unlimited). b->active is false afterwards when @r has no body. */
void moat_http1_body_start(struct moat_http1_body *b, const struct moat_http1_request *r,
			   uint64_t max_body);
/*
 * Feed the next @len bytes received after the head (or after what earlier
 * calls consumed). Returns how many belong to the body (the caller forwards
 * exactly those; when b->active turned false the rest is the next request),
 * 0 when no body is active, or -MOAT_HTTP1_E_CHUNK / -MOAT_HTTP1_E_BODY_TOO_LARGE.
 */
int moat_http1_body_feed(struct moat_http1_body *b, const char *buf, size_t len);
