/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve`: the channel between the front ("moat-serve-front", which
 * parses HTTP with libmicrohttpd and validates every request against the
 * route table, serve_route.h) and the back (the `moat serve` process, which
 * holds the tenants, the policy and the sandboxes, serve.c). Both ends are
 * built from this tree; the back still checks every length and every field
 * again: it treats the front as compromised.
 *
 * One stream socket (socketpair, SOCK_STREAM), a sequence of frames:
 *
 *   struct moat_serve_frame (12 bytes, native byte order)
 *   json_len bytes: one JSON object (UTF-8, no NUL)
 *   data_len bytes: raw bytes that go with it (a file's content, a chunk
 *                   of a process's output), 0 if none
 *
 * Front -> back (requests):
 *   {"id":N, "op":"<op>", "token":"<bearer token or ''>",
 *    "sandbox":"<id>" (ops on one sandbox), "args":{...}}
 *   N is the front's number for the request (1..2^32-1, never reused while
 *   the request is open). args are the request's fields, already checked
 *   by the route's handler (types, sizes, unknown fields refused); data is
 *   a file's content (files.write) or a process's stdin (exec).
 *   {"id":N, "op":"cancel"}: the client went away; the back stops what it
 *   does for N (kills an exec) and sends nothing more for it.
 *   {"id":N, "op":"pause"} / {"id":N, "op":"resume"}: flow control of a
 *   stream. The front sends "pause" when more than MOAT_SERVE_PAUSE_HIGH
 *   bytes of N's response wait for its client, "resume" once fewer than
 *   MOAT_SERVE_PAUSE_LOW do. While paused the back reads nothing more of
 *   that exec's output (the command blocks on its full pipe, as with a
 *   slow terminal; its timeout still runs) and sends no more events of a
 *   followed audit stream. Either is ignored for a request that is not
 *   open or not a stream; neither is answered. The front's bound on what
 *   waits (MOAT_SERVE_MAX_PENDING) stays: a back that does not pause is
 *   cut off there.
 *   The first frame is the back's, not the front's: see "config" below.
 *   The front's first frame is {"op":"ready"} (no id), sent once it is
 *   confined and serves; the back reports the server ready only after it.
 *
 * Back -> front (answers), for each request exactly one of:
 *   {"id":N, "status":S, "body":{...}}                  a JSON answer, or
 *   {"id":N, "status":S, "type":"<content type>"} + data  raw bytes, or
 *   {"id":N, "status":S, "stream":true}                 a stream opens, then
 *     {"id":N, "event":{...}} (+ data)                  any number of events,
 *     {"id":N, "end":true}                              and its end.
 *   Errors are JSON answers with status >= 400 and
 *   body {"error":{"code":"<stable code>","message":"...","field":"..."}}.
 *   How a route renders these as HTTP is the route's codec (serve_route.h):
 *   the default writes JSON bodies and one NDJSON line per event.
 *
 * The back's first frame (before any request): {"op":"config",
 *   "tls":bool, "max_body":N} + data (the TLS certificate and key, PEM,
 *   cert_len bytes then key_len bytes, named in the JSON) when TLS is on.
 */
#pragma once

#include <stdint.h>

#define MOAT_SERVE_FRAME_MAGIC 0x6d737631u /* "msv1" */

#define MOAT_SERVE_MAX_JSON (4u << 20) /* a frame's JSON */
#define MOAT_SERVE_MAX_DATA (16u << 20) /* a frame's data: a file, a chunk */
#define MOAT_SERVE_MAX_BODY (16u << 20) /* an HTTP request's body */
#define MOAT_SERVE_MAX_ARGV 256u
#define MOAT_SERVE_MAX_ARGV_BYTES (128u << 10)
#define MOAT_SERVE_MAX_ENV 256u
#define MOAT_SERVE_MAX_PATH 4096u
#define MOAT_SERVE_MAX_TOKEN 512u
#define MOAT_SERVE_MAX_ID 64u
#define MOAT_SERVE_MAX_INFLIGHT 1024u /* requests open at once */
#define MOAT_SERVE_MAX_CONNS 512u /* HTTP connections at once */
#define MOAT_SERVE_CHUNK (64u << 10) /* an output event's data */
/* Flow control (the "pause"/"resume" ops): a response's bytes waiting
 * for a slow client. What the back sends after a pause before it reads it
 * (at most MOAT_SERVE_DRAIN_ROUNDS chunks per descriptor per turn of its
 * loop, up to 6 times that once JSON-escaped) stays well below the
 * front's hard bound, MOAT_SERVE_MAX_PENDING (serve_route.h, 32 MiB). */
#define MOAT_SERVE_PAUSE_HIGH (4u << 20)
#define MOAT_SERVE_PAUSE_LOW (1u << 20)
#define MOAT_SERVE_DRAIN_ROUNDS 16

struct moat_serve_frame {
	uint32_t magic;
	uint32_t json_len;
	uint32_t data_len;
};

/* The front's descriptors ("moat-serve-front"): 0 /dev/null, 1 /dev/null,
 * 2 the server's stderr, 3 the channel to the back, 4 the unix listening
 * socket, 5 the TCP listening socket (or /dev/null when there is none);
 * nothing else. */
#define MOAT_SERVE_FRONT_FD_CHAN 3
#define MOAT_SERVE_FRONT_FD_UNIX 4
#define MOAT_SERVE_FRONT_FD_TCP 5
/* The front's exit status when it cannot go on. */
#define MOAT_SERVE_FRONT_EXIT 125
