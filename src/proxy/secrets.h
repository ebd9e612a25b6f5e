/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The credential side of the egress proxy: real secret values, the
 * placeholders the sandbox sees instead, and the rewriting of intercepted
 * request heads.
 *
 * The security boundary is: a real value is written only into a request head
 * whose destination is one of the secret's hosts, reached over TLS whose
 * certificate the proxy verified for that host, with an allowed method and
 * path, and only in a header. Everything else that carries a placeholder
 * (another host, the URL, the first body bytes, plain HTTP, a DNS name) is
 * refused with an alert that names the secret and the destination, never the
 * value. Detection of placeholders outside that path is a tripwire (case-
 * insensitive, also 12-character fragments of the random part, URL-decoded),
 * not the boundary: a sandbox that re-encodes its placeholder only leaks the
 * placeholder, which is worthless outside this run's proxy.
 *
 * Client-supplied credentials (RT-063): on a host that has a secret bound,
 *   - a secret sent by adding a header (`header` set) replaces any header of
 *     that name the client sent (result.warning says so);
 *   - in placeholder mode, an Authorization header that carries no
 *     placeholder is refused: the client may not act as another account on
 *     the credential host. Requests without Authorization pass unchanged.
 *   - TRACE and TRACK are refused (they would echo the injected header).
 * Redirects are not followed by the proxy: the client's next request to the
 * redirect target carries the placeholder and is refused there.
 *
 * Process hardening and order of a run (the sandbox's init is a fork of the
 * supervisor, so no value may be in the supervisor's memory when it is
 * cloned; the proxy worker is forked after the sandbox exists, because it
 * needs the listeners created inside it):
 *   before the clone: moat_secrets_new_placeholders() (definitions checked;
 *               NAME=placeholder goes into the sandbox's environment) and
 *               moat_tls_ca_new() + moat_tls_write_bundle() (the CA key then
 *               is in the init's memory copy too: the init is non-dumpable
 *               and is never given to the sandbox user; if that is not
 *               acceptable, create the CA after the clone and bind the
 *               bundle file, written then, from a path made before);
 *   before forking the worker: moat_secrets_load() (failure = the run fails,
 *               exit 125, with the error's message, nothing has run yet);
 *   the worker's first step: moat_secrets_harden_process();
 *   after the fork, in the supervisor: moat_secrets_drop_values(),
 *               moat_tls_ca_free().
 * (Not moat_secrets_harden_process() in the supervisor: a non-dumpable
 * supervisor would pass that on to the sandbox it clones, whose uid_map it
 * then could not write.)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"
#include "proxy/http1.h"

#define MOAT_SECRETS_MAX_VALUE (64u << 10) /* file / command output cap */
#define MOAT_SECRETS_CMD_TIMEOUT_MS 10000 /* command source */
#define MOAT_SECRETS_MAX_NAME 64 /* secret (variable) name */
#define MOAT_SECRETS_PLACEHOLDER_MAX 112 /* "moat-ph-" NAME "-" 32 hex NUL */
#define MOAT_SECRETS_BODY_WINDOW 8192 /* body bytes scanned */
#define MOAT_SECRETS_MAX_OUT (256u << 10) /* rewritten head */
#define MOAT_SECRETS_FRAGMENT 12 /* hex characters that count as a fragment */

struct moat_secrets;

/* Load every secret's value from its source and make its placeholder.
 * defs (the policy's array) must outlive the result. Any failure (missing
 * variable, unreadable file, command failing, value empty or with control
 * characters, malformed header/format) fails the whole call with a message
 * in ret_err that names the secret and the source, never the value.
 * Caller owns *ret; moat_secrets_free() wipes the values. */
int moat_secrets_new(const struct moat_secret *defs, unsigned n_defs, struct moat_secrets **ret,
		     struct moat_error *ret_err);
struct moat_secrets *moat_secrets_free(struct moat_secrets *s);
/* The two halves of moat_secrets_new(), for a supervisor that must give the
 * sandbox its placeholders before it may hold any value (the sandbox's init is
 * cloned from it): validate the definitions and make the placeholders; later
 * load the values (all or nothing: on failure none stays loaded). */
int moat_secrets_new_placeholders(const struct moat_secret *defs, unsigned n_defs,
				  struct moat_secrets **ret, struct moat_error *ret_err);
int moat_secrets_load(struct moat_secrets *s, struct moat_error *ret_err);

/* For the supervisor, once the proxy worker (which needs the values) is
 * forked: wipe the values, keep names and
 * placeholders (for the sandbox's environment). Nothing is injected with a
 * dropped value. */
void moat_secrets_drop_values(struct moat_secrets *s);
/* Also for the supervisor once the values are loaded: overwrite, in place,
 * the values of environment-sourced secrets in moat's own environment block
 * (which every later fork would copy) and unset them. Returns how many
 * entries were wiped. */
unsigned moat_secrets_scrub_environ(const struct moat_secrets *s);

/* Load one value (what moat_secrets_new does per secret), with a command
 * timeout. *ret_value is NUL-terminated, in locked memory when possible;
 * release with moat_secrets_value_free(). */
int moat_secrets_load_value(const struct moat_secret *def, unsigned timeout_ms, char **ret_value,
			    size_t *ret_len, struct moat_error *ret_err);
void moat_secrets_value_free(char *value, size_t len);

/* The number of secrets; the i-th one's name and placeholder (what the
 * sandbox's environment variable NAME is set to). Borrowed strings. */
/* Handing the loaded values to the exec'd proxy helper (supervise_net.c):
 * moat_secrets_value() borrows secret i's value (NULL before load);
 * moat_secrets_adopt() sets secret i's placeholder (it must be one
 * moat_secrets_placeholder_new() made for that name) and a copy of its value,
 * in locked memory, replacing what was there. 0 or -errno. */
int moat_secrets_value(const struct moat_secrets *s, unsigned i, const char **ret_value,
		       size_t *ret_len);
int moat_secrets_adopt(struct moat_secrets *s, unsigned i, const char *placeholder,
		       size_t placeholder_len, const void *value, size_t len);

unsigned moat_secrets_count(const struct moat_secrets *s);
const char *moat_secrets_name(const struct moat_secrets *s, unsigned i);
const char *moat_secrets_placeholder(const struct moat_secrets *s, unsigned i);

/* A fresh placeholder "moat-ph-<name>-<32 random hex>" into out. -EINVAL for a
 * name that is not [A-Za-z_][A-Za-z0-9_]{0,63}. */
int moat_secrets_placeholder_new(const char *name, char out[static MOAT_SECRETS_PLACEHOLDER_MAX]);

/* PR_SET_DUMPABLE 0, RLIMIT_CORE 0, and OpenSSL's secure heap (mlock'ed,
 * not dumped). Returns 0, or -errno if the process could not be made
 * non-dumpable (the caller fails closed). The secure heap is best effort. */
int moat_secrets_harden_process(void);

/* True when host (a name or literal) is one of some secret's hosts: the proxy
 * must terminate TLS for it. */
bool moat_secrets_host_bound(const struct moat_secrets *s, const char *host);

/* The index of a secret whose placeholder (or a fragment, case-insensitive)
 * appears in data, or -ENOENT. */
int moat_secrets_scan(const struct moat_secrets *s, const void *data, size_t len);
/* The same for a DNS query name: labels are joined before scanning. */
int moat_secrets_scan_dns(const struct moat_secrets *s, const char *qname);

/* One request, as moat_http1_parse_request() parsed it: the rewriter has no
 * HTTP grammar of its own (one parser per grammar: what it reads is exactly
 * what the proxy framed). */
struct moat_secrets_request {
	const char *host; /* the destination the proxy resolved (and verified, if tls) */
	bool tls; /* upstream is TLS with a certificate verified for host */
	const struct moat_http1_request *http; /* the parsed head; its slices must be valid */
	const void *body; /* the first body bytes already received, may be NULL */
	size_t body_len; /* only the first MOAT_SECRETS_BODY_WINDOW are scanned */
};

enum moat_secrets_verdict {
	MOAT_SECRETS_PASS, /* no change: forward the original head */
	MOAT_SECRETS_REWRITTEN, /* forward result.head instead */
	MOAT_SECRETS_REFUSED, /* answer 403, log result.reason as an alert */
};

struct moat_secrets_result {
	enum moat_secrets_verdict verdict;
	char *head; /* REWRITTEN: the new head (holds real values) */
	size_t head_len;
	int secret; /* the secret that was injected or caused the refusal, or -1 */
	char reason[320]; /* REFUSED: names the secret and the destination, never a value */
	char warning[320]; /* optional, e.g. a client header was replaced */
};

/* Decide and rewrite one parsed request head (s may be NULL: no secrets).
 * Returns 0 with *ret filled. The head the rewriter writes is the parsed
 * request line and field lines, each byte for byte unless a value in it
 * changed, then the headers moat adds; an absolute-form target is sent in
 * origin-form (origin_prefix + path, plus a Host from the target's authority
 * if the client sent none), so the verdict is REWRITTEN then. Its framing
 * is the parsed one: no framing field is added, dropped or changed. The
 * destination (Host or absolute-form authority) must name req->host, else
 * REFUSED. CONNECT is refused. -E2BIG when the result would exceed
 * MOAT_SECRETS_MAX_OUT, -EINVAL for a bad host or no parsed head. On any
 * error the request must be refused.
 * Free with moat_secrets_result_clear() (wipes the head). */
int moat_secrets_rewrite(const struct moat_secrets *s, const struct moat_secrets_request *req,
			 struct moat_secrets_result *ret);
void moat_secrets_result_clear(struct moat_secrets_result *r);

/* Overwrite, in place, every real value found in buf with '*' (same length,
 * so framing stays valid): responses from a credential host must not echo
 * the injected value (RT-063). Values split across two calls are not seen;
 * the caller scans with an overlap if it needs that. Returns the count. */
unsigned moat_secrets_scrub(const struct moat_secrets *s, char *buf, size_t len);
/* For a stream: how many bytes at the end of buf could be the start of a
 * real value (at most MOAT_SECRETS_SCRUB_HOLD_MAX). The caller holds them back
 * and scrubs them again together with the next bytes. */
#define MOAT_SECRETS_SCRUB_HOLD_MAX 4096u
size_t moat_secrets_scrub_hold(const struct moat_secrets *s, const char *buf, size_t len);

/* Method/path rules of the policy (http_rules) for an intercepted request:
 * 1 allowed, 0 refused. A host no rule names is allowed; a host some rules
 * name needs one of them to allow the method (exact; none listed = any)
 * and the path (prefix; none listed = any; a path with dot segments or
 * encoded '/', '.', '\' never matches a prefix). */
int moat_secrets_http_allowed(const struct moat_http_rule *rules, unsigned n_rules,
			      const char *host, const char *method, const char *path);
/* The same for a parsed request (its method, and the origin-form path:
 * origin_prefix + path, query cut off). Every path that enforces
 * http_rules calls this one. */
int moat_secrets_http_allowed_request(const struct moat_http_rule *rules, unsigned n_rules,
				      const char *host, const struct moat_http1_request *r);

/* Host pattern: exact name, or "*.example.com" (any subdomain, not the name
 * itself); case-insensitive, trailing dot ignored. */
bool moat_secrets_host_match(const char *pattern, const char *host);
