/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The route table of `moat serve`'s front (pure code: no libmicrohttpd, no
 * system calls; the fuzz target drives it). The front's HTTP glue
 * (src/serve/front.c) hands each complete request to moat_serve_dispatch(),
 * which finds the route, and the route's handler either answers itself
 * (moat_serve_reply*) or forwards one checked request to the back
 * (moat_serve_forward, serve_proto.h). The back's frames for it are then
 * turned into the HTTP response by the route's codec (NULL: the default,
 * JSON bodies and NDJSON streams).
 *
 * Adding routes: write a handler (and, for another wire format, a codec),
 * and add a table to the list in serve_route.c (routes_tables[]).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/macro.h"

#define MOAT_SERVE_MAX_PARAMS 4
#define MOAT_SERVE_MAX_HEADERS 64

struct moat_serve_header {
	const char *name, *value; /* name as the client sent it; compare case-insensitively */
};

/* A complete HTTP request as the glue saw it. Every pointer stays valid
 * during the handler's call only. */
struct moat_serve_http_req {
	const char *method; /* "GET", ... */
	const char *path; /* the raw path, without the query ("/v1/sandboxes/sb-1") */
	const char *query; /* the raw query, without '?', "" if none */
	const struct moat_serve_header *headers;
	size_t n_headers;
	const char *body;
	size_t body_len;
	/* the route's {name} segments, in order, as matched (no '/', no '%') */
	char param[MOAT_SERVE_MAX_PARAMS][128 + 1];
	unsigned n_param;
};
#define MOAT_SERVE_MAX_PARAM_LEN 128

/* What a handler produces: one of a reply or a forward. */
struct moat_serve_out {
	/* reply */
	int status; /* 0: none yet */
	const char *content_type; /* static string */
	char *body; /* malloc'd, owned */
	size_t body_len;
	/* extra response headers, "Name: value" each, static or owned below */
	char *headers[4];
	unsigned n_headers;
	/* forward: the request frame's JSON (owned) and data (points into the
	 * request's body: valid until the glue frees the request) */
	json_t *fwd;
	const char *fwd_data;
	size_t fwd_len;
	/* a note for the route's codec (owned; handed to the response's
	 * stream: moat_serve_stream.note), e.g. what the answer must name */
	char *note;
};

/* How the back's frames become the HTTP response. */
struct moat_serve_stream;
struct moat_serve_codec {
	/* The first frame: the response's status, content type and headers.
	 * A JSON answer (body set), raw bytes (data) or the opening of a
	 * stream (stream true). Appends the bytes to send. */
	void (*start)(struct moat_serve_stream *s, int status, json_t *body, const char *type,
		      const char *data, size_t len, bool stream);
	/* One event of a stream (the frame's "event" and its data). */
	void (*event)(struct moat_serve_stream *s, json_t *event, const char *data, size_t len);
	/* The stream's end (or the back's end: aborted true). */
	void (*end)(struct moat_serve_stream *s, bool aborted);
};

/* The response as a codec builds it (the glue sends it). */
struct moat_serve_stream {
	int status;
	const char *content_type;
	char *headers[4];
	unsigned n_headers;
	bool streaming; /* chunked: more bytes follow */
	char *buf; /* bytes to send, owned */
	size_t len, cap;
	bool failed; /* out of memory or over MOAT_SERVE_MAX_PENDING: drop the connection */
	void *route_state; /* a codec's own, freed by its end() */
	char *note; /* the handler's note (moat_serve_out.note), owned */
};
/* A response holds at most this much not yet sent (a slow client). */
#define MOAT_SERVE_MAX_PENDING (32u << 20)

/* Appends bytes to s (sets failed instead when it cannot). */
void moat_serve_stream_append(struct moat_serve_stream *s, const void *data, size_t len);
/* The default codec: JSON answers, raw bytes, NDJSON events. */
extern const struct moat_serve_codec moat_serve_codec_json;

enum {
	MOAT_SERVE_ROUTE_RAW_BODY = 1u << 0, /* the body is bytes, not JSON */
	/* the route takes its credential from other headers (E2B's
	 * X-API-KEY, X-Access-Token: the handler puts it in the forward's
	 * "token"), so a malformed Authorization header is its to judge */
	MOAT_SERVE_ROUTE_OWN_TOKEN = 1u << 1,
};

struct moat_serve_route {
	const char *method;
	const char *pattern; /* "/v1/sandboxes/{id}/exec": {x} matches one segment */
	int (*handle)(const struct moat_serve_http_req *rq, struct moat_serve_out *out);
	const struct moat_serve_codec *codec; /* NULL: moat_serve_codec_json */
	uint32_t flags;
	const char *op; /* for the simple handlers: the back's op */
};

/* The E2B routes (serve_e2b_route.c), searched after /v1 once enabled
 * (`moat serve --e2b`: the back's configuration frame says so). */
extern const struct moat_serve_route moat_serve_routes_e2b[];
void moat_serve_routes_enable_e2b(bool on);

/* Finds the route of rq (fills rq->param), runs its handler. Always leaves
 * out with a reply or a forward (a 404/405/400 reply when nothing matched
 * or the handler refused); *ret_route: the matched route (NULL if none).
 * token: the request's bearer token ("" if none; NULL: the Authorization
 * header was malformed, refused but on the routes that take their credential
 * from elsewhere), put in the forward. */
void moat_serve_dispatch(struct moat_serve_http_req *rq, const char *token,
			 struct moat_serve_out *out, const struct moat_serve_route **ret_route);
/* Frees what out owns; out is zeroed. */
void moat_serve_out_clear(struct moat_serve_out *out);

/* Helpers for handlers. */
_printf_(4, 5) int moat_serve_reply_error(struct moat_serve_out *out, int status, const char *code,
					  const char *fmt, ...);
/* Takes body (may be NULL: "{}"). */
int moat_serve_reply_json(struct moat_serve_out *out, int status, json_t *body);
/* Forward op with args (taken; NULL: {}) and the route's sandbox param
 * (NULL: none); data may be NULL. The frame gets the request's bearer
 * token unless the handler put a "token" into out->fwd itself. The ops the
 * back knows and their args: serve.c (serve_one) and docs/API.md. */
int moat_serve_forward(struct moat_serve_out *out, const char *op, const char *sandbox,
		       json_t *args, const char *data, size_t len);
/* The request's body as a JSON object (an empty body is {}): NULL after a
 * 400 reply. */
json_t *moat_serve_body_object(const struct moat_serve_http_req *rq, struct moat_serve_out *out);
/* A query parameter, percent-decoded into buf (at most len-1 bytes, no
 * NUL inside): 1 found, 0 absent, -EINVAL malformed or too long. */
int moat_serve_query(const struct moat_serve_http_req *rq, const char *name, char *buf, size_t len);
/* A header's value (first of that name, case-insensitive), NULL if none. */
const char *moat_serve_header(const struct moat_serve_http_req *rq, const char *name);
/* Checks every key of o is in allowed (NULL-terminated): 0, or a 400 reply
 * naming the field. */
int moat_serve_only_fields(json_t *o, const char *const *allowed, struct moat_serve_out *out);
