/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Connect protocol (connectrpc.com/docs/protocol) as `moat serve --e2b`
 * speaks it to E2B's SDK: JSON encoding only (the SDK's transport sets
 * useBinaryFormat false), unary calls and server-streaming calls, no
 * compression. Pure code (no I/O): the confined front of `moat serve` uses
 * it on the client's bytes.
 *
 * Unary: request body is the message (Content-Type application/json); the
 * answer is the message with status 200, or an error object
 * {"code":"not_found","message":"..."} with the code's HTTP status.
 * Server streaming: request and response bodies are envelopes (1 flag
 * byte, 4-byte big-endian length, the message) with Content-Type
 * application/connect+json; the request has exactly one; the response
 * ends with an end-of-stream envelope (flag 0x02) holding {} or
 * {"error":{...}}; its HTTP status is 200 even for an error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum moat_connect_code {
	MOAT_CONNECT_OK = 0,
	MOAT_CONNECT_CANCELED,
	MOAT_CONNECT_UNKNOWN,
	MOAT_CONNECT_INVALID_ARGUMENT,
	MOAT_CONNECT_DEADLINE_EXCEEDED,
	MOAT_CONNECT_NOT_FOUND,
	MOAT_CONNECT_ALREADY_EXISTS,
	MOAT_CONNECT_PERMISSION_DENIED,
	MOAT_CONNECT_RESOURCE_EXHAUSTED,
	MOAT_CONNECT_FAILED_PRECONDITION,
	MOAT_CONNECT_ABORTED,
	MOAT_CONNECT_OUT_OF_RANGE,
	MOAT_CONNECT_UNIMPLEMENTED,
	MOAT_CONNECT_INTERNAL,
	MOAT_CONNECT_UNAVAILABLE,
	MOAT_CONNECT_DATA_LOSS,
	MOAT_CONNECT_UNAUTHENTICATED,
	MOAT_CONNECT_CODE_MAX_,
};

#define MOAT_CONNECT_ENVELOPE_HEAD 5u
#define MOAT_CONNECT_FLAG_END 0x02u
#define MOAT_CONNECT_FLAG_COMPRESSED 0x01u
/* A request message, the largest any envd call of the SDK needs (a
 * command line with its environment). */
#define MOAT_CONNECT_MAX_MSG (1u << 20)
#define MOAT_CONNECT_MAX_ERRMSG 1024u

/* "not_found", ...; NULL for OK or out of range. */
const char *moat_connect_code_name(enum moat_connect_code c);
/* The HTTP status of a unary error (connectrpc.com/docs/protocol#error-codes). */
unsigned moat_connect_code_http(enum moat_connect_code c);
/* The code for a -errno of the library (ENOENT: not_found, ...). */
enum moat_connect_code moat_connect_code_from_errno(int err);

/* The request's Content-Type: 0 with *ret_stream for application/json
 * (unary) or application/connect+json (streaming), charset=utf-8 allowed;
 * -EPROTONOSUPPORT for the proto encoding; -EINVAL for anything else. */
int moat_connect_content_type(const char *ct, bool *ret_stream);

/* A streaming request's body: exactly one uncompressed envelope whose
 * length is what is left and at most MOAT_CONNECT_MAX_MSG. 0 and the
 * message (into body), or -EBADMSG. */
int moat_connect_unenvelope(const void *body, size_t len, const char **ret_msg, size_t *ret_len);

/* The envelope head for a message of len bytes (len < 2^32). */
void moat_connect_envelope_head(uint8_t flags, size_t len, uint8_t ret[MOAT_CONNECT_ENVELOPE_HEAD]);
/* One envelope (head + msg) in a new buffer; NULL: no memory or too long. */
char *moat_connect_envelope(uint8_t flags, const char *msg, size_t len, size_t *ret_len);

/* The error object {"code":"...","message":"..."} (message cut at
 * MOAT_CONNECT_MAX_ERRMSG, escaped). NULL: no memory. Caller frees. */
char *moat_connect_error_json(enum moat_connect_code c, const char *msg);
/* The end-of-stream envelope: {} for OK, else {"error":{...}}. */
char *moat_connect_end_stream(enum moat_connect_code c, const char *msg, size_t *ret_len);

/* Connect-Timeout-Ms: 1 to 10 ASCII digits; 0 and *ret_ms, or -EINVAL. */
int moat_connect_timeout_ms(const char *v, uint64_t *ret_ms);
