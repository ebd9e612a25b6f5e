/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve`: the back. It holds the operator's policy, the tenants and
 * the sandboxes (the lifecycle API, one event loop, no threads) and never
 * parses HTTP: the front ("moat-serve-front", src/serve/front.c), exec'd
 * afresh with only its listening sockets and one channel to this process,
 * does, and forwards checked requests as frames (serve_proto.h). Every
 * field is checked again here; a tenant sees only its own sandboxes (any
 * other id answers as not found); a create can only narrow the policy
 * (serve_policy.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "policy/policy.h"
#include "api/serve_int.h"
#include "api/serve_proto.h"
#include "supervisor/session.h"
#include "moat/moat.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/macro.h"

#define FRONT_EXE "moat-serve-front"
#define MAX_SANDBOXES 4096u
#define MAX_POOLS 16u
#define MAX_POOL 256u
#define MAX_READ (16u << 20)
/* A refill's start (the clone, the maps, the layers' steps; the rest of the
 * set-up is the init's, waited for in the loop like a client's create) holds
 * the loop for a moment: it waits until the loop has been quiet this long
 * (no frame from the front, no exec output), so that a client's next
 * request (the exec after a warm create) is not queued behind it; a pool
 * short for POOL_MAX_DEFER_US under steady traffic still gets one sandbox
 * then (between frames). */
#define POOL_QUIET_US 50000u
#define POOL_MAX_DEFER_US 1000000u

struct sbx {
	struct sbx *next;
	char id[40]; /* "sb-" and 16 hex digits: the API's id */
	char name[MOAT_SESSION_NAME_MAX + 1];
	struct moat_serve_tenant *tenant; /* NULL: in a pool */
	struct moat_sandbox *sb;
	struct moat_policy *p; /* owned */
	char *policy_json; /* owned: what a pool matches */
	uint64_t created_us;
	uint64_t execs;
	unsigned running;
	bool failed; /* its init died */
	/* being created (moat_sandbox_create_start()), on the server's
	 * creating list: the client's request answered when it is ready (req
	 * 0: a pool's refill, for pools[pool]) */
	uint32_t req;
	unsigned pool;
	uint64_t mem; /* counted in its tenant's quota since the request */
	/* a reset's fresh sandbox in flight: the tenant's sandbox it replaces
	 * once ready (no quota of its own, no pool); on the replaced one, its
	 * replacement (every other request on it: 409 busy meanwhile) */
	struct sbx *replaces, *replacement;
};

enum job_kind {
	JOB_EXEC,
	JOB_EVENTS
};

struct job {
	struct job *next;
	enum job_kind kind;
	uint32_t req;
	struct sbx *s;
	/* exec */
	struct moat_proc *pr;
	int out, err, in; /* our ends; -1 when closed */
	int out_w, err_w; /* the process's ends, kept until it is done */
	char *in_data;
	size_t in_len, in_off;
	/* events */
	struct moat_log *log;
	bool follow;
	bool more; /* the last turn stopped at EVENTS_TURN: more may be there */
	/* exec: its number in the sandbox (1, 2, ...: the pid E2B's clients
	 * see) and its argv (exec.list) */
	uint64_t num;
	json_t *argv;
	/* flow control (serve_proto.h's "pause"): while paused, its output
	 * is not read (exec) and its log not followed (events) */
	bool paused;
	uint64_t paused_us; /* mono: since when */
	uint64_t done_us; /* mono: its process was seen done (exec), 0: not yet */
	/* exec: its process is starting (moat_sandbox_exec_start_async()):
	 * the request is not answered yet */
	bool starting;
};

struct pool {
	unsigned want;
	struct moat_policy *p;
	char *policy_json;
	struct sbx *ready; /* tenant NULL */
	unsigned n;
	bool failing; /* the last refill failed: retried after a pause */
	uint64_t retry_us;
	unsigned creating; /* refills in flight */
};

struct server {
	const struct moat_policy *ceiling;
	struct moat_serve_tenants tenants;
	int chan;
	struct sbx *sbs;
	unsigned n_sbs;
	struct sbx *creating; /* creates in flight (tenants' and pools') */
	unsigned n_creating;
	struct job *jobs;
	struct pool pools[MAX_POOLS];
	unsigned n_pools;
	uint64_t busy_us; /* mono: the last frame served, the last exec output */
	uint64_t short_us; /* mono: since when a pool has wanted (0: none) */
	bool stop;
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- frames to the front ------------------------------------------------------------ */

static int send_frame(struct server *s, json_t *j, const void *data, size_t len)
{
	char *t = json_dumps(j, JSON_COMPACT);
	if (t && strlen(t) > MOAT_SERVE_MAX_JSON) {
		/* the front refuses a frame over the limit: an error instead */
		free(t);
		json_t *e = json_pack("{s:O,s:i,s:{s:{s:s,s:s}}}", "id", json_object_get(j, "id"),
				      "status", 500, "body", "error", "code", "payload_too_large",
				      "message", "the answer is larger than the frame limit");
		t = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
		data = NULL;
		len = 0;
	}
	json_decref(j);
	if (!t)
		return -ENOMEM;
	struct moat_serve_frame h = {.magic = MOAT_SERVE_FRAME_MAGIC,
				     .json_len = (uint32_t)strlen(t),
				     .data_len = (uint32_t)len};
	int k = moat_write_all(s->chan, &h, sizeof(h));
	if (k >= 0)
		k = moat_write_all(s->chan, t, h.json_len);
	if (k >= 0 && len)
		k = moat_write_all(s->chan, data, len);
	free(t);
	if (k < 0)
		s->stop = true; /* the front is gone */
	return k;
}

static int answer(struct server *s, uint32_t req, int status, json_t *body)
{
	return send_frame(s,
			  json_pack("{s:I,s:i,s:o}", "id", (json_int_t)req, "status", status,
				    "body", body ? body : json_object()),
			  NULL, 0);
}

_printf_(5, 6) static int answer_error(struct server *s, uint32_t req, int status, const char *code,
				       const char *fmt, ...)
{
	char msg[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *m = json_string(msg);
	if (!m) {
		/* a message that quotes bytes that are not UTF-8 */
		char esc[1400];
		moat_escape(msg, strlen(msg), esc, sizeof(esc));
		m = json_string(esc);
	}
	return answer(s, req, status,
		      json_pack("{s:{s:s,s:o}}", "error", "code", code, "message", m));
}

static int answer_field(struct server *s, uint32_t req, int status, const char *code,
			const char *field, const char *msg)
{
	return answer(s, req, status,
		      json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "message", msg, "field",
				field));
}

static int stream_open(struct server *s, uint32_t req)
{
	return send_frame(
		s, json_pack("{s:I,s:i,s:b}", "id", (json_int_t)req, "status", 200, "stream", 1),
		NULL, 0);
}

static int stream_event(struct server *s, uint32_t req, json_t *ev, const void *data, size_t len)
{
	return send_frame(s, json_pack("{s:I,s:o}", "id", (json_int_t)req, "event", ev), data, len);
}

static int stream_end(struct server *s, uint32_t req)
{
	return send_frame(s, json_pack("{s:I,s:b}", "id", (json_int_t)req, "end", 1), NULL, 0);
}

/* ---- sandboxes ---------------------------------------------------------------------- */

static void new_id(char id[40])
{
	uint8_t b[8] = {0};
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = mono_us() ^ (uint64_t)getpid() << 40;
		memcpy(b, &t, sizeof(b));
	}
	snprintf(id, 40, "sb-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
		 b[6], b[7]);
}

static struct sbx *sbx_free(struct sbx *x)
{
	if (!x)
		return NULL;
	moat_policy_free(x->p);
	free(x->policy_json);
	free(x);
	return NULL;
}

/* A new sandbox of p (taken on success): being created (its init sets it
 * up while the loop serves everything else: create_progress()), or, when
 * blocking (the test build's control), ready. */
static int sbx_create(struct moat_policy *p, char *policy_json, bool blocking, struct sbx **ret,
		      struct moat_error *err)
{
	struct sbx *x = calloc(1, sizeof(*x));
	if (!x)
		return moat_error_set(err, "serve", ENOMEM, "out of memory");
	int k = blocking ? moat_sandbox_create(p, &x->sb, err)
			 : moat_sandbox_create_start(p, &x->sb, err);
	if (k < 0) {
		free(x);
		return k;
	}
	new_id(x->id);
	x->p = p;
	x->policy_json = policy_json;
	x->created_us = now_us();
	*ret = x;
	return 0;
}

static struct sbx *sbx_find(struct server *s, struct moat_serve_tenant *t, const char *id)
{
	if (!id)
		return NULL;
	for (struct sbx *x = s->sbs; x; x = x->next)
		if (x->tenant == t && (streq(x->id, id) || (x->name[0] && streq(x->name, id))))
			return x;
	return NULL;
}

/* A name is taken by a sandbox or by a create in flight. */
static bool name_taken(struct server *s, struct moat_serve_tenant *t, const char *name)
{
	if (sbx_find(s, t, name))
		return true;
	for (struct sbx *x = s->creating; x; x = x->next)
		if (x->tenant == t && x->name[0] && streq(x->name, name))
			return true;
	return false;
}

static void job_finish(struct server *s, struct job *j, bool destroyed);

static json_t *status_json(const struct moat_status *st)
{
	json_t *rev = json_array();
	for (unsigned i = 0; rev && i < st->n_review; i++) {
		char path[2100];
		moat_escape(st->review[i].path, strlen(st->review[i].path), path, sizeof(path));
		json_array_append_new(rev,
				      json_pack("{s:s,s:s,s:s}", "state",
						moat_review_state_name(st->review[i].state), "path",
						path, "reason", st->review[i].reason));
	}
	char oe[600];
	moat_escape(st->output_error, strlen(st->output_error), oe, sizeof(oe));
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:s,s:o,s:I,s:I}",
			 "run_id", st->run_id, "reason", moat_reason_name(st->reason), "wall_us",
			 (json_int_t)st->wall_us, "execs", (json_int_t)st->execs, "mem_peak",
			 (json_int_t)st->mem_peak, "net_denied", (json_int_t)st->net_denied,
			 "denied_syscalls", (json_int_t)st->denied_syscalls, "files_changed",
			 (json_int_t)st->files_changed, "log_path", st->log_path, "files_applied",
			 (json_int_t)st->files_applied, "files_held", (json_int_t)st->files_held,
			 "output_files", (json_int_t)st->output_files, "output_error", oe, "review",
			 rev ? rev : json_array(), "review_more", (json_int_t)st->review_more,
			 "output_skipped", (json_int_t)st->output_skipped);
}

/* Ends x's jobs, destroys it, unlinks it. ret_status may be NULL. */
static int sbx_destroy(struct server *s, struct sbx *x, struct moat_status *ret_status,
		       struct moat_error *err)
{
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->s == x)
			job_finish(s, j, true);
	for (struct sbx **pp = &s->sbs; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			s->n_sbs--;
			break;
		}
	if (x->tenant) {
		x->tenant->n_sandboxes--;
		x->tenant->memory -= moat_serve_policy_memory(x->p);
	}
	int k = moat_sandbox_destroy(x->sb, ret_status, err);
	sbx_free(x);
	return k;
}

static json_t *sbx_json(const struct sbx *x)
{
	return json_pack("{s:s,s:s?,s:s,s:s,s:I,s:I,s:i,s:o}", "id", x->id, "name",
			 x->name[0] ? x->name : NULL, "state",
			 x->failed	      ? "failed"
				 : x->running ? "running"
					      : "ready",
			 "run_id", moat_sandbox_id(x->sb), "created_us", (json_int_t)x->created_us,
			 "execs", (json_int_t)x->execs, "running", (int)x->running, "policy",
			 moat_serve_policy_summary(x->p));
}

/* ---- the requests -------------------------------------------------------------------- */

struct request {
	uint32_t id;
	const char *op;
	const char *sandbox;
	json_t *args;
	const char *data;
	size_t len;
	struct moat_serve_tenant *tenant;
};

static int auth(struct server *s, json_t *j, struct request *r)
{
	const char *token = json_string_value(json_object_get(j, "token"));
	if (s->tenants.open) {
		r->tenant = &s->tenants.t[0];
		return 0;
	}
	r->tenant = moat_serve_tenant_find(&s->tenants, token);
	if (!r->tenant) {
		answer_error(s, r->id, 401, "unauthorized",
			     token && token[0]
				     ? "the token is not valid"
				     : "a bearer token is required (Authorization: Bearer "
				       "TOKEN)");
		return -EACCES;
	}
	return 0;
}

static int pool_take(struct server *s, const char *policy_json, struct sbx **ret)
{
	for (unsigned i = 0; i < s->n_pools; i++) {
		struct pool *pl = &s->pools[i];
		if (!pl->ready || !streq(pl->policy_json, policy_json))
			continue;
		struct sbx *x = pl->ready;
		pl->ready = x->next;
		pl->n--;
		x->next = NULL;
		/* a sandbox that failed while it waited is not handed out */
		if (x->failed) {
			moat_sandbox_destroy(x->sb, NULL, NULL);
			sbx_free(x);
			i--;
			continue;
		}
		*ret = x;
		return 1;
	}
	return 0;
}

static int create_ready(struct server *s, struct sbx *x, bool warm);

static int op_create(struct server *s, struct request *r)
{
	struct moat_serve_tenant *t = r->tenant;
	struct moat_error err = {0};
	char field[64], msg[600];
	const char *name = json_string_value(json_object_get(r->args, "name"));

	/* creates in flight count: they are in n_sandboxes and memory */
	if (t->max_sandboxes && t->n_sandboxes >= t->max_sandboxes)
		return answer_error(s, r->id, 429, "quota_exceeded",
				    "tenant %s: at most %u sandboxes (quota)", t->name,
				    t->max_sandboxes);
	if (s->n_sbs + s->n_creating >= MAX_SANDBOXES)
		return answer_error(s, r->id, 503, "unavailable", "the server holds %u sandboxes",
				    MAX_SANDBOXES);
	if (name) {
		bool ok = name[0] && strlen(name) <= MOAT_SESSION_NAME_MAX &&
			!startswith(name, "sb-");
		for (const char *c = name; ok && *c; c++)
			ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				(*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.';
		if (!ok)
			return answer_field(
				s, r->id, 400, "bad_request", "name",
				"name: [A-Za-z0-9_.-], at most 64, not starting with sb-");
		if (name_taken(s, t, name))
			return answer_field(s, r->id, 409, "conflict", "name",
					    "name: a sandbox of that name exists");
	}
	struct moat_policy *p = moat_serve_policy_copy(s->ceiling, &err);
	if (!p)
		return answer_error(s, r->id, 500, "internal", "policy: %s", err.message);
	int k = moat_serve_narrow(p, s->ceiling, r->args, field, sizeof(field), msg, sizeof(msg));
	if (k < 0) {
		moat_policy_free(p);
		return answer_field(s, r->id, k == -EPERM ? 403 : 400,
				    k == -EPERM ? "policy_widening" : "bad_request", field, msg);
	}
	uint64_t mem = moat_serve_policy_memory(p);
	if (t->max_memory && (mem == 0 || t->memory + mem > t->max_memory)) {
		moat_policy_free(p);
		return answer_field(
			s, r->id, 429, "quota_exceeded", "memory",
			mem == 0 ? "memory: the tenant has a memory quota: a sandbox "
				   "needs a memory limit (policy or request)"
				 : "memory: the tenant's memory quota would be exceeded");
	}
	char *pj = NULL;
	if (moat_policy_to_json(p, &pj) < 0) {
		moat_policy_free(p);
		return answer_error(s, r->id, 500, "internal", "out of memory");
	}
	struct sbx *x = NULL;
	bool warm = pool_take(s, pj, &x) > 0, blocking = false;
#ifdef MOAT_TESTING
	/* test build only: the blocking create the back had before, as the
	 * control of serve.sh's stalled-create test */
	const char *gate = getenv("MOAT_TEST_LAYERS"),
		   *blk = getenv("MOAT_TEST_SERVE_BLOCKING_CREATE");
	blocking = gate && streq(gate, "1") && blk && streq(blk, "1");
#endif
	if (warm) {
		moat_policy_free(p);
		free(pj);
	} else if ((k = sbx_create(p, pj, blocking, &x, &err)) < 0) {
		moat_policy_free(p);
		free(pj);
		return answer_error(s, r->id, k == -ENOMEM ? 500 : 503, "sandbox_failed",
				    "the sandbox could not be set up: %s step: %s", err.stage,
				    err.message);
	}
	x->tenant = t;
	if (name)
		snprintf(x->name, sizeof(x->name), "%s", name);
	t->n_sandboxes++;
	t->memory += mem;
	x->mem = mem;
	x->req = r->id;
	if (!warm && !blocking) {
		/* answered when it is ready (create_progress()); in the quota
		 * from now on, so that racing creates cannot exceed it */
		x->next = s->creating;
		s->creating = x;
		s->n_creating++;
		return 0;
	}
	return create_ready(s, x, warm);
}

/* A tenant's sandbox is ready: it joins the server's, the client has it. */
static int create_ready(struct server *s, struct sbx *x, bool warm)
{
	uint32_t req = x->req;
	x->req = 0;
	x->next = s->sbs;
	s->sbs = x;
	s->n_sbs++;
	json_t *b = sbx_json(x);
	json_object_set_new(b, "warm", json_boolean(warm));
	return answer(s, req, 201, b);
}

/* A create in flight leaves the list; its quota share is given back
 * unless it became the tenant's. */
static void creating_unlink(struct server *s, struct sbx *x, bool release_quota)
{
	for (struct sbx **pp = &s->creating; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			s->n_creating--;
			break;
		}
	x->next = NULL;
	if (x->replaces) {
		x->replaces->replacement = NULL;
		return; /* a reset's: the quota is the replaced sandbox's */
	}
	if (x->tenant && release_quota) {
		x->tenant->n_sandboxes--;
		x->tenant->memory -= x->mem;
	}
	if (!x->tenant && s->pools[x->pool].creating)
		s->pools[x->pool].creating--;
}

/* A reset's fresh sandbox y is ready (k 1) or failed (k < 0, err): the
 * replaced sandbox's processes and files go, y's init takes its place
 * under the same id; on failure the old one is kept. */
static void reset_progress(struct server *s, struct sbx *y, int k, const struct moat_error *err)
{
	struct sbx *x = y->replaces;
	uint32_t req = y->req;
	creating_unlink(s, y, k < 0);
	if (k < 0) {
		y->sb = NULL; /* gone */
		answer_error(
			s, req, k == -ENOMEM ? 500 : 503, "sandbox_failed",
			"a fresh sandbox could not be set up (the old one is kept): %s step: %s",
			err->stage, err->message);
		free(y);
		return;
	}
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->s == x)
			job_finish(s, j, true);
	moat_sandbox_destroy(x->sb, NULL, NULL);
	x->sb = TAKE_PTR(y->sb);
	x->execs = 0;
	x->running = 0;
	x->failed = false;
	free(y);
	json_t *b = sbx_json(x);
	json_object_set_new(b, "replaced", json_true());
	answer(s, req, 200, b);
}

/* One step of a create in flight: answered (201, or 503 naming the step)
 * once it is ready or failed; a pool's joins its pool. */
static void create_progress(struct server *s, struct sbx *x)
{
	struct moat_error err = {0};
	int k = moat_sandbox_create_poll(x->sb, &err);
	if (k == 0)
		return;
	if (x->replaces)
		return reset_progress(s, x, k, &err);
	creating_unlink(s, x, k < 0);
	if (k < 0) {
		x->sb = NULL; /* gone */
		if (x->tenant)
			answer_error(s, x->req, k == -ENOMEM ? 500 : 503, "sandbox_failed",
				     "the sandbox could not be set up: %s step: %s", err.stage,
				     err.message);
		else {
			s->pools[x->pool].failing = true;
			s->pools[x->pool].retry_us = mono_us() + 1000000u;
		}
		sbx_free(x);
		return;
	}
	if (!x->tenant) {
		struct pool *pl = &s->pools[x->pool];
		pl->failing = false;
		x->next = pl->ready;
		pl->ready = x;
		pl->n++;
		return;
	}
	create_ready(s, x, false);
}

/* A create whose client went away (or the server's end): the sandbox is
 * abandoned, nothing is left of it. */
static void create_abandon(struct server *s, struct sbx *x)
{
	bool reset = x->replaces != NULL;
	creating_unlink(s, x, true);
	moat_sandbox_destroy(x->sb, NULL, NULL);
	if (reset)
		free(x); /* its policy is the replaced sandbox's */
	else
		sbx_free(x);
}

static int need_sbx(struct server *s, struct request *r, struct sbx **ret)
{
	struct sbx *x = sbx_find(s, r->tenant, r->sandbox);
	if (!x) {
		answer_error(s, r->id, 404, "not_found", "no sandbox %s",
			     r->sandbox ? r->sandbox : "");
		return -ENOENT;
	}
	if (x->failed) {
		answer_error(s, r->id, 410, "sandbox_failed",
			     "the sandbox failed (its init died): delete it");
		return -ECHILD;
	}
	if (x->replacement) {
		answer_error(s, r->id, 409, "busy",
			     "the sandbox is being reset (a fresh one is being set up)");
		return -EBUSY;
	}
	*ret = x;
	return 0;
}

static int op_delete(struct server *s, struct request *r)
{
	struct sbx *x = sbx_find(s, r->tenant, r->sandbox);
	struct moat_status st = {0};
	struct moat_error err = {0};
	if (!x)
		return answer_error(s, r->id, 404, "not_found", "no sandbox %s", r->sandbox);
	char id[40];
	snprintf(id, sizeof(id), "%s", x->id);
	if (x->replacement) {
		/* deleted while being reset: the reset's answer first */
		uint32_t req = x->replacement->req;
		create_abandon(s, x->replacement);
		answer_error(s, req, 409, "busy", "the sandbox was deleted during its reset");
	}
	int k = sbx_destroy(s, x, &st, &err);
	json_t *b = status_json(&st);
	json_object_set_new(b, "id", json_string(id));
	json_object_set_new(b, "deleted", json_true());
	if (k < 0)
		json_object_set_new(b, "error", json_string(err.message));
	return answer(s, r->id, 200, b);
}

static int op_list(struct server *s, struct request *r)
{
	json_t *a = json_array();
	for (struct sbx *x = s->sbs; a && x; x = x->next)
		if (x->tenant == r->tenant)
			json_array_append_new(a, sbx_json(x));
	return answer(s, r->id, 200, json_pack("{s:o}", "sandboxes", a ? a : json_array()));
}

static int snap_error(struct server *s, struct request *r, int k, const struct moat_error *err)
{
	int st = k == -EBUSY || k == -EEXIST ? 409 : k == -ENOENT ? 404 : k == -ENOSPC ? 507 : 422;
	const char *code = k == -EBUSY ? "busy"
		: k == -EEXIST	       ? "conflict"
		: k == -ENOENT	       ? "snapshot_not_found"
		: k == -ENOSPC	       ? "no_space"
		: k == -ENOTSUP	       ? "not_supported"
				       : "snapshot_failed";
	return answer_error(s, r->id, st, code, "%s",
			    err->message[0] ? err->message : strerror(-k));
}

static json_t *snap_json(const struct moat_snapshot_info *si)
{
	return json_pack("{s:s,s:I,s:I,s:b}", "name", si->name, "created_us",
			 (json_int_t)si->created_us, "bytes", (json_int_t)si->bytes, "current",
			 si->current);
}

/* The jobs of x end first when force: the library kills its processes. */
static void end_jobs(struct server *s, struct sbx *x)
{
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->s == x && j->kind == JOB_EXEC && j->req) {
			/* its process is killed: what it wrote is relayed, the
			 * exit record follows from the loop */
			if (j->pr)
				moat_proc_signal(j->pr, SIGKILL);
		}
}

static int op_snapshots(struct server *s, struct request *r)
{
	struct sbx *x;
	struct moat_error err = {0};
	int k;
	if (need_sbx(s, r, &x) < 0)
		return 0;
	bool force = json_is_true(json_object_get(r->args, "force"));
	if (force)
		end_jobs(s, x);
	if (streq(r->op, "snapshot")) {
		char name[MOAT_SNAPSHOT_NAME_MAX + 1] = "";
		const char *want = json_string_value(json_object_get(r->args, "name"));
		if ((k = moat_sandbox_snapshot(x->sb, want, force, name, &err)) < 0)
			return snap_error(s, r, k, &err);
		struct moat_snapshot_info *l = NULL;
		size_t n = 0;
		json_t *b = NULL;
		if (moat_sandbox_snapshot_list(x->sb, &l, &n, &err) >= 0)
			for (size_t i = 0; i < n && !b; i++)
				if (streq(l[i].name, name))
					b = snap_json(&l[i]);
		free(l);
		return answer(s, r->id, 201, b ? b : json_pack("{s:s}", "name", name));
	}
	if (streq(r->op, "snapshots")) {
		struct moat_snapshot_info *l = NULL;
		size_t n = 0;
		if ((k = moat_sandbox_snapshot_list(x->sb, &l, &n, &err)) < 0)
			return snap_error(s, r, k, &err);
		json_t *a = json_array();
		for (size_t i = 0; a && i < n; i++)
			json_array_append_new(a, snap_json(&l[i]));
		free(l);
		return answer(s, r->id, 200, json_pack("{s:o}", "snapshots", a ? a : json_array()));
	}
	if (streq(r->op, "snapshot.delete")) {
		const char *name = json_string_value(json_object_get(r->args, "name"));
		if ((k = moat_sandbox_snapshot_delete(x->sb, name ? name : "", &err)) < 0)
			return snap_error(s, r, k, &err);
		return answer(s, r->id, 200, json_pack("{s:s,s:b}", "name", name, "deleted", 1));
	}
	if (streq(r->op, "restore")) {
		const char *name = json_string_value(json_object_get(r->args, "snapshot"));
		if ((k = moat_sandbox_restore(x->sb, name ? name : "", force, &err)) < 0)
			return snap_error(s, r, k, &err);
		return answer(s, r->id, 200, sbx_json(x));
	}
	/* reset: the files back to the start; a sandbox without layered
	 * state (its workspace is the host's) is replaced by a fresh one */
	if ((k = moat_sandbox_reset(x->sb, force, &err)) == -ENOTSUP) {
		/* a fresh sandbox of the same policy, set up while the loop
		 * serves everything else (at the vm level a guest boots):
		 * reset_progress() answers once it is ready */
		struct sbx *y = calloc(1, sizeof(*y));
		struct moat_error e2 = {0};
		if (!y)
			return answer_error(s, r->id, 500, "internal", "out of memory");
		if ((k = moat_sandbox_create_start(x->p, &y->sb, &e2)) < 0) {
			free(y);
			return answer_error(s, r->id, k == -ENOMEM ? 500 : 503, "sandbox_failed",
					    "a fresh sandbox could not be set up (the old one is "
					    "kept): %s step: %s",
					    e2.stage, e2.message);
		}
		snprintf(y->id, sizeof(y->id), "%s", x->id);
		y->tenant = x->tenant;
		y->req = r->id;
		y->replaces = x;
		x->replacement = y;
		y->next = s->creating;
		s->creating = y;
		s->n_creating++;
		return 0;
	}
	if (k < 0)
		return snap_error(s, r, k, &err);
	return answer(s, r->id, 200, sbx_json(x));
}

/* ---- exec ------------------------------------------------------------------------------ */

static void job_close_fds(struct job *j)
{
	j->out = safe_close(j->out);
	j->err = safe_close(j->err);
	j->in = safe_close(j->in);
	j->out_w = safe_close(j->out_w);
	j->err_w = safe_close(j->err_w);
}

/* The job ends: its last event (destroyed: the sandbox went first) and the
 * stream's end. The job is marked (req 0) and reaped by the loop. */
static void job_finish(struct server *s, struct job *j, bool destroyed)
{
	if (!j->req)
		return;
	if (j->kind == JOB_EXEC && j->starting) {
		/* not answered yet: no stream to end */
		answer_error(s, j->req, 422, "cannot_exec",
			     "exec: the sandbox ended before the process started");
		if (j->pr && !destroyed)
			moat_proc_release(j->pr);
		j->pr = NULL;
		j->starting = false;
		if (j->s->running)
			j->s->running--;
		job_close_fds(j);
		j->req = 0;
		return;
	}
	if (j->kind == JOB_EXEC) {
		if (destroyed) {
			stream_event(s, j->req,
				     json_pack("{s:s,s:s}", "type", "exit", "reason", "destroyed"),
				     NULL, 0);
			j->pr = NULL; /* freed with the sandbox */
		}
		if (j->pr)
			moat_proc_release(j->pr);
		j->pr = NULL;
		if (j->s->running)
			j->s->running--;
		job_close_fds(j);
		free(j->in_data);
		j->in_data = NULL;
	} else {
		j->log = moat_log_free(j->log);
	}
	stream_end(s, j->req);
	j->req = 0;
}

static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return negerrno();
	return 0;
}

static int op_exec(struct server *s, struct request *r)
{
	struct sbx *x;
	struct moat_error err = {0};
	if (need_sbx(s, r, &x) < 0)
		return 0;
	json_t *av = json_object_get(r->args, "argv"), *e;
	size_t n = json_array_size(av), i;
	if (!json_is_array(av) || n == 0 || n > MOAT_SERVE_MAX_ARGV)
		return answer_field(s, r->id, 400, "bad_request", "argv",
				    "argv: a non-empty array of strings");
	uint64_t limit = moat_serve_policy_timeout(x->p), t = 0;
	json_t *tv = json_object_get(r->args, "timeout_ms");
	if (tv) {
		if (!json_is_integer(tv) || json_integer_value(tv) < 0)
			return answer_field(s, r->id, 400, "bad_request", "timeout_ms",
					    "timeout_ms: a non-negative integer");
		t = (uint64_t)json_integer_value(tv);
		if (limit && t > limit) {
			char m[200];
			snprintf(m, sizeof(m),
				 "timeout_ms: %llu is longer than the sandbox's timeout (%llu ms): "
				 "a request can narrow the policy, never widen it",
				 (unsigned long long)t, (unsigned long long)limit);
			return answer_field(s, r->id, 403, "policy_widening", "timeout_ms", m);
		}
	}
	char **argv = calloc(n + 1, sizeof(*argv));
	json_t *env = json_object_get(r->args, "env");
	size_t ne = json_is_object(env) ? json_object_size(env) : 0;
	char **envp = calloc(ne + 1, sizeof(*envp));
	struct job *j = calloc(1, sizeof(*j));
	int o[2] = {-1, -1}, er[2] = {-1, -1}, in[2] = {-1, -1}, k = 0;
	size_t ei = 0;
	if (!argv || !envp || !j) {
		k = -ENOMEM;
		goto fail;
	}
	json_array_foreach(av, i, e)
	{
		if (!json_is_string(e) || memchr(json_string_value(e), 0, json_string_length(e))) {
			free(argv);
			free(envp);
			free(j);
			return answer_field(s, r->id, 400, "bad_request", "argv",
					    "argv: strings without NUL");
		}
		argv[i] = (char *)(uintptr_t)json_string_value(e);
	}
	const char *name;
	json_object_foreach(env, name, e)
	{
		if (!json_is_string(e) ||
		    asprintf(&envp[ei], "%s=%s", name, json_string_value(e)) < 0) {
			k = -EINVAL;
			goto fail;
		}
		ei++;
	}
	const char *stdin_s = json_string_value(json_object_get(r->args, "stdin"));
	if ((k = make_pipe(o)) < 0 || (k = make_pipe(er)) < 0 ||
	    (stdin_s && (k = make_pipe(in)) < 0))
		goto fail;
	struct moat_exec ex = {
		.argv = argv,
		.env = ne ? envp : NULL,
		.cwd = json_string_value(json_object_get(r->args, "cwd")),
		.fd = {stdin_s ? in[0] : -1, o[1], er[1]},
		.timeout_ms = t,
	};
	/* the answer (the stream, or a 422) comes when it started: the loop
	 * serves every other request meanwhile (exec_start_progress()) */
	bool blocking = false;
#ifdef MOAT_TESTING
	/* test build only: the blocking start the back had before, as the
	 * control of serve.sh's stalled-exec test */
	const char *gate = getenv("MOAT_TEST_LAYERS"),
		   *blk = getenv("MOAT_TEST_SERVE_BLOCKING_EXEC");
	blocking = gate && streq(gate, "1") && blk && streq(blk, "1");
	if (blocking)
		k = moat_sandbox_exec(x->sb, &ex, &j->pr, &err);
	else
#endif
		k = moat_sandbox_exec_start_async(x->sb, &ex, &j->pr, &err);
	in[0] = safe_close(in[0]);
	if (k < 0) {
		const char *code = k == -ENOENT ? "command_not_found" : "cannot_exec";
		answer_error(s, r->id, 422, code, "%s: %s", err.stage, err.message);
		k = 0;
		goto fail_answered;
	}
	j->kind = JOB_EXEC;
	j->starting = true;
	j->req = r->id;
	j->s = x;
	j->out = TAKE_FD(o[0]);
	j->err = TAKE_FD(er[0]);
	j->out_w = TAKE_FD(o[1]);
	j->err_w = TAKE_FD(er[1]);
	j->in = TAKE_FD(in[1]);
	fcntl(j->out, F_SETFL, O_NONBLOCK);
	fcntl(j->err, F_SETFL, O_NONBLOCK);
	if (j->in >= 0) {
		fcntl(j->in, F_SETFL, O_NONBLOCK);
		j->in_len = strlen(stdin_s);
		j->in_data = j->in_len ? strdup(stdin_s) : NULL;
		if (!j->in_len)
			j->in = safe_close(j->in);
	}
	x->execs++;
	x->running++;
	j->num = x->execs;
	j->argv = json_incref(av);
	j->next = s->jobs;
	s->jobs = j;
	for (i = 0; i < ei; i++)
		free(envp[i]);
	free(envp);
	free(argv);
	if (blocking) {
		j->starting = false;
		stream_open(s, r->id);
		return stream_event(
			s, r->id,
			json_pack("{s:s,s:I}", "type", "start", "num", (json_int_t)j->num), NULL,
			0);
	}
	return 0;
fail:
	answer_error(s, r->id, k == -ENOMEM ? 500 : 400, k == -ENOMEM ? "internal" : "bad_request",
		     "exec: %s", strerror(-k));
fail_answered:
	for (i = 0; envp && i < ei; i++)
		free(envp[i]);
	free(envp);
	free(argv);
	if (j && j->pr)
		moat_proc_release(j->pr);
	free(j);
	safe_close(o[0]);
	safe_close(o[1]);
	safe_close(er[0]);
	safe_close(er[1]);
	safe_close(in[0]);
	safe_close(in[1]);
	return k;
}

/* A starting exec: answered once its process executed its command (the
 * stream opens) or could not (422, as a blocking exec answered). */
static void exec_start_progress(struct server *s, struct job *j)
{
	struct moat_error err = {0};
	if (!j->req || j->kind != JOB_EXEC || !j->starting)
		return;
	int k = moat_proc_start_poll(j->pr, &err);
	if (k == 0)
		return;
	j->starting = false;
	if (k < 0) {
		j->pr = NULL; /* gone */
		answer_error(s, j->req, 422, k == -ENOENT ? "command_not_found" : "cannot_exec",
			     "%s: %s", err.stage, err.message);
		if (j->s->running)
			j->s->running--;
		job_close_fds(j);
		j->req = 0;
		return;
	}
	stream_open(s, j->req);
	stream_event(s, j->req, json_pack("{s:s,s:I}", "type", "start", "num", (json_int_t)j->num),
		     NULL, 0);
}

/* Output that is there, as events (at most a chunk a read). 1 at EOF. */
static int drain(struct server *s, struct job *j, int *fd, const char *type)
{
	char buf[MOAT_SERVE_CHUNK];
	for (int rounds = 0; *fd >= 0 && rounds < MOAT_SERVE_DRAIN_ROUNDS; rounds++) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			*fd = safe_close(*fd);
			return 1;
		}
		stream_event(s, j->req, json_pack("{s:s}", "type", type), buf, (size_t)n);
	}
	return 0;
}

/* After its process is done: how long output is still read from a writer
 * it left behind (a background process holding the pipe), not counting
 * the time its client paused the stream. */
#define EXEC_DRAIN_US 640000u

static void exec_progress(struct server *s, struct job *j)
{
	if (!j->req || j->kind != JOB_EXEC || j->starting)
		return;
	/* paused: the pipes fill and the command blocks on them */
	if (!j->paused) {
		drain(s, j, &j->out, "stdout");
		drain(s, j, &j->err, "stderr");
	}
	if (j->in >= 0 && j->in_off < j->in_len) {
		ssize_t w = write(j->in, j->in_data + j->in_off, j->in_len - j->in_off);
		if (w > 0)
			j->in_off += (size_t)w;
		if ((w < 0 && errno != EAGAIN && errno != EINTR) || j->in_off == j->in_len)
			j->in = safe_close(j->in);
	}
	if (!j->pr || !moat_proc_done(j->pr))
		return;
	/* done: the write ends close, the rest is read (a turn of the loop
	 * at a time, so that a pause is seen), then the exit record */
	if (!j->done_us) {
		j->done_us = mono_us();
		j->out_w = safe_close(j->out_w);
		j->err_w = safe_close(j->err_w);
	}
	if (j->paused)
		return;
	if ((j->out >= 0 || j->err >= 0) && mono_us() < j->done_us + EXEC_DRAIN_US)
		return;
	struct moat_proc_status ps = {0};
	moat_proc_status(j->pr, &ps);
	json_t *ev = json_pack("{s:s,s:s,s:i,s:i,s:i,s:I,s:I,s:I,s:I,s:i}", "type", "exit",
			       "reason", moat_reason_name(ps.reason), "exit_code", ps.exit_code,
			       "status", ps.status, "signal", ps.signal, "wall_us",
			       (json_int_t)ps.wall_us, "cpu_user_us", (json_int_t)ps.cpu_user_us,
			       "cpu_sys_us", (json_int_t)ps.cpu_sys_us, "mem_peak",
			       (json_int_t)ps.mem_peak, "pid", ps.pid);
	if (ev && ps.stdio_error[0])
		json_object_set_new(ev, "stdio_error", json_string(ps.stdio_error));
	stream_event(s, j->req, ev, NULL, 0);
	job_finish(s, j, false);
}

/* The sandbox's running execs (E2B's Process/List): number and argv. */
static int op_exec_list(struct server *s, struct request *r)
{
	struct sbx *x;
	if (need_sbx(s, r, &x) < 0)
		return 0;
	json_t *a = json_array();
	for (struct job *j = s->jobs; a && j; j = j->next)
		if (j->kind == JOB_EXEC && j->req && j->s == x && j->pr && !j->starting &&
		    !moat_proc_done(j->pr))
			json_array_append_new(
				a,
				json_pack("{s:I,s:O}", "num", (json_int_t)j->num, "argv", j->argv));
	return answer(s, r->id, 200, json_pack("{s:o}", "execs", a ? a : json_array()));
}

/* A signal to one running exec of the sandbox, by its number (E2B's
 * Process/SendSignal): KILL or TERM only. */
static int op_exec_signal(struct server *s, struct request *r)
{
	struct sbx *x;
	if (need_sbx(s, r, &x) < 0)
		return 0;
	json_t *nv = json_object_get(r->args, "pid");
	const char *sig = json_string_value(json_object_get(r->args, "signal"));
	if (!json_is_integer(nv) || json_integer_value(nv) <= 0)
		return answer_field(s, r->id, 400, "bad_request", "pid", "pid: a positive integer");
	if (!sig || !(streq(sig, "KILL") || streq(sig, "TERM")))
		return answer_field(s, r->id, 400, "bad_request", "signal", "signal: KILL or TERM");
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->kind == JOB_EXEC && j->req && j->s == x && j->pr && !j->starting &&
		    j->num == (uint64_t)json_integer_value(nv) && !moat_proc_done(j->pr)) {
			int k = moat_proc_signal(j->pr, streq(sig, "KILL") ? SIGKILL : SIGTERM);
			if (k < 0)
				return answer_error(s, r->id, 500, "internal", "signal: %s",
						    strerror(-k));
			return answer(s, r->id, 200, json_pack("{s:b}", "signaled", 1));
		}
	return answer_error(s, r->id, 404, "not_found", "no running process %lld in sandbox %s",
			    (long long)json_integer_value(nv), x->id);
}

/* ---- events -------------------------------------------------------------------------- */

/* audit events sent for one stream in one turn of the loop */
#define EVENTS_TURN 256

static void events_progress(struct server *s, struct job *j)
{
	char *line = NULL;
	int k, n = 0;
	if (!j->req || j->kind != JOB_EVENTS || j->paused)
		return;
	/* at most EVENTS_TURN a turn (others are served between), the rest
	 * on the next turns: without follow the stream ends at the log's end
	 * (k 0) or a read error, never at a count */
	for (k = 1; n < EVENTS_TURN && (k = moat_log_next(j->log, &line, NULL)) > 0; n++) {
		json_t *ev = json_loads(line, 0, NULL);
		free(line);
		line = NULL;
		if (ev)
			stream_event(s, j->req,
				     json_pack("{s:s,s:o}", "type", "audit", "event", ev), NULL, 0);
	}
	j->more = k > 0;
	if (!j->follow && !j->more)
		job_finish(s, j, false);
}

static int op_events(struct server *s, struct request *r)
{
	struct sbx *x;
	struct moat_error err = {0};
	if (need_sbx(s, r, &x) < 0)
		return 0;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return answer_error(s, r->id, 500, "internal", "out of memory");
	j->out = j->err = j->in = j->out_w = j->err_w = -1;
	const char *types = json_string_value(json_object_get(r->args, "types"));
	bool denied = json_is_true(json_object_get(r->args, "denied"));
	if (moat_log_open(moat_sandbox_id(x->sb), types, denied, &j->log, &err) < 0) {
		free(j);
		return answer_error(s, r->id, 404, "not_found", "the audit log: %s", err.message);
	}
	j->kind = JOB_EVENTS;
	j->req = r->id;
	j->s = x;
	j->follow = json_is_true(json_object_get(r->args, "follow"));
	j->next = s->jobs;
	s->jobs = j;
	stream_open(s, r->id);
	events_progress(s, j);
	return 0;
}

/* ---- files ----------------------------------------------------------------------------- */

static const char *type_name(enum moat_file_type t)
{
	switch (t) {
	case MOAT_FILE_REG:
		return "file";
	case MOAT_FILE_DIR:
		return "dir";
	case MOAT_FILE_SYMLINK:
		return "symlink";
	default:
		return "other";
	}
}

static json_t *info_json(const struct moat_file_info *fi)
{
	char name[1100];
	moat_escape(fi->name, strnlen(fi->name, sizeof(fi->name)), name, sizeof(name));
	return json_pack("{s:s,s:s,s:I,s:i,s:I}", "name", name, "type", type_name(fi->type), "size",
			 (json_int_t)fi->size, "mode", (int)fi->mode, "mtime_s",
			 (json_int_t)fi->mtime_s);
}

static int file_error(struct server *s, struct request *r, int k, const struct moat_error *err)
{
	int st = k == -ENOENT			? 404
		: k == -EISDIR || k == -ENOTDIR ? 409
		: k == -EACCES || k == -EPERM	? 403
		: k == -EFBIG			? 413
						: 422;
	const char *code = k == -ENOENT	      ? "file_not_found"
		: k == -EACCES || k == -EPERM ? "permission_denied"
					      : "file_error";
	return answer_error(s, r->id, st, code, "%s",
			    err->message[0] ? err->message : strerror(-k));
}

static int op_files(struct server *s, struct request *r)
{
	struct sbx *x;
	struct moat_error err = {0};
	int k;
	if (need_sbx(s, r, &x) < 0)
		return 0;
	const char *path = json_string_value(json_object_get(r->args, "path"));
	if (!path || path[0] != '/' || strlen(path) > MOAT_SERVE_MAX_PATH)
		return answer_field(s, r->id, 400, "bad_request", "path",
				    "path: an absolute path is required");
	if (streq(r->op, "files.read")) {
		char *data = NULL;
		size_t len = 0;
		bool trunc = false;
		if ((k = moat_sandbox_read_file(x->sb, path, MAX_READ, &data, &len, &trunc, &err)) <
		    0)
			return file_error(s, r, k, &err);
		if (trunc) {
			free(data);
			return answer_error(s, r->id, 413, "payload_too_large",
					    "the file is larger than 16 MiB");
		}
		k = send_frame(s,
			       json_pack("{s:I,s:i,s:s}", "id", (json_int_t)r->id, "status", 200,
					 "type", "application/octet-stream"),
			       data, len);
		free(data);
		return k;
	}
	if (streq(r->op, "files.write")) {
		if ((k = moat_sandbox_write_file(x->sb, path, r->data, r->len, &err)) < 0)
			return file_error(s, r, k, &err);
		return answer(s, r->id, 200,
			      json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)r->len));
	}
	if (streq(r->op, "files.remove")) {
		bool rec = json_is_true(json_object_get(r->args, "recursive"));
		if ((k = moat_sandbox_remove(x->sb, path, rec, &err)) < 0)
			return file_error(s, r, k, &err);
		return answer(s, r->id, 200, json_pack("{s:s,s:b}", "path", path, "removed", 1));
	}
	if (streq(r->op, "files.stat")) {
		struct moat_file_info fi;
		if ((k = moat_sandbox_stat(x->sb, path, &fi, &err)) < 0)
			return file_error(s, r, k, &err);
		return answer(s, r->id, 200, info_json(&fi));
	}
	/* files.list */
	struct moat_file_info *ents = NULL;
	size_t n = 0;
	if ((k = moat_sandbox_list_dir(x->sb, path, &ents, &n, &err)) < 0)
		return file_error(s, r, k, &err);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, info_json(&ents[i]));
	free(ents);
	return answer(s, r->id, 200,
		      json_pack("{s:s,s:o,s:b}", "path", path, "entries", a ? a : json_array(),
				"truncated", k == 1));
}

/* ---- one request --------------------------------------------------------------------- */

static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t k = read(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? negerrno() : -EPIPE;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* The front's first frame, {"op":"ready"}, once it is confined and
 * serves: before it, the server is not reported ready. A front that ends
 * first (it said why on stderr: a certificate that does not load, a filter
 * that does not apply) or says nothing for 30 s fails the start. */
static int wait_front_ready(struct server *s)
{
	struct pollfd pf = {.fd = s->chan, .events = POLLIN};
	int k;
	do
		k = poll(&pf, 1, 30000);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return k < 0 ? negerrno() : -ETIMEDOUT;
	struct moat_serve_frame h;
	char buf[64];
	if ((k = read_exact(s->chan, &h, sizeof(h))) < 0)
		return k;
	if (h.magic != MOAT_SERVE_FRAME_MAGIC || h.json_len >= sizeof(buf) || h.data_len)
		return -EBADMSG;
	if ((k = read_exact(s->chan, buf, h.json_len)) < 0)
		return k;
	buf[h.json_len] = '\0';
	return streq(buf, "{\"op\":\"ready\"}") ? 0 : -EBADMSG;
}

static void cancel(struct server *s, uint32_t id)
{
	for (struct sbx *x = s->creating; x; x = x->next)
		if (x->req == id && x->tenant) {
			create_abandon(s, x);
			break;
		}
	for (struct job *j = s->jobs; j; j = j->next)
		if (j->req == id) {
			if (j->kind == JOB_EXEC && j->pr)
				moat_proc_signal(j->pr, SIGKILL);
			j->req = 0; /* nothing more is sent for it */
			if (j->kind == JOB_EXEC) {
				if (j->pr)
					moat_proc_release(j->pr);
				j->pr = NULL;
				if (j->s->running)
					j->s->running--;
				job_close_fds(j);
			} else {
				j->log = moat_log_free(j->log);
			}
		}
}

/* Flow control from the front (serve_proto.h): ignored for a request that
 * is not open. */
static void set_paused(struct server *s, uint32_t id, bool paused)
{
	uint64_t now = mono_us();
	for (struct job *j = s->jobs; j; j = j->next) {
		if (j->req != id || j->paused == paused)
			continue;
		if (paused) {
			j->paused_us = now;
		} else if (j->done_us) {
			/* the time it was paused after its process ended does not
			 * count against the drain window */
			j->done_us += now - MAX(j->paused_us, j->done_us);
		}
		j->paused = paused;
	}
}

static int op_health(struct server *s, struct request *r)
{
	json_t *pools = json_array();
	for (unsigned i = 0; pools && i < s->n_pools; i++)
		json_array_append_new(pools,
				      json_pack("{s:i,s:i}", "want", (int)s->pools[i].want, "ready",
						(int)s->pools[i].n));
	return answer(s, r->id, 200,
		      json_pack("{s:s,s:s,s:i,s:i,s:o}", "status", "ok", "version", MOAT_VERSION,
				"sandboxes", (int)s->n_sbs, "creating", (int)s->n_creating, "pools",
				pools ? pools : json_array()));
}

static int serve_one(struct server *s)
{
	struct moat_serve_frame h;
	int k = read_exact(s->chan, &h, sizeof(h));
	if (k < 0)
		return k;
	if (h.magic != MOAT_SERVE_FRAME_MAGIC || h.json_len > MOAT_SERVE_MAX_JSON ||
	    h.data_len > MOAT_SERVE_MAX_BODY)
		return -EBADMSG;
	_cleanup_free_ char *buf = malloc((size_t)h.json_len + h.data_len + 1);
	if (!buf)
		return -ENOMEM;
	if ((k = read_exact(s->chan, buf, (size_t)h.json_len + h.data_len)) < 0)
		return k;
	json_t *j = json_loadb(buf, h.json_len, JSON_REJECT_DUPLICATES, NULL);
	json_t *idv = json_object_get(j, "id");
	struct request r = {
		.op = json_string_value(json_object_get(j, "op")),
		.sandbox = json_string_value(json_object_get(j, "sandbox")),
		.args = json_object_get(j, "args"),
		.data = buf + h.json_len,
		.len = h.data_len,
	};
	if (!json_is_object(j) || !json_is_integer(idv) || json_integer_value(idv) <= 0 ||
	    json_integer_value(idv) > UINT32_MAX || !r.op) {
		json_decref(j);
		return -EBADMSG;
	}
	r.id = (uint32_t)json_integer_value(idv);
	if (streq(r.op, "cancel")) {
		cancel(s, r.id);
		json_decref(j);
		return 0;
	}
	if (streq(r.op, "pause") || streq(r.op, "resume")) {
		set_paused(s, r.id, streq(r.op, "pause"));
		json_decref(j);
		return 0;
	}
	if (r.args && !json_is_object(r.args)) {
		json_decref(j);
		return -EBADMSG;
	}
	json_t *empty = json_object();
	if (!r.args)
		r.args = empty;
	if (r.sandbox && strlen(r.sandbox) > 128)
		r.sandbox = NULL;
	if (streq(r.op, "health") && !s->tenants.open &&
	    !moat_serve_tenant_find(&s->tenants, json_string_value(json_object_get(j, "token"))))
		/* without a valid token: that it is up, nothing of its state */
		answer(s, r.id, 200,
		       json_pack("{s:s,s:s}", "status", "ok", "version", MOAT_VERSION));
	else if (streq(r.op, "health"))
		op_health(s, &r);
	else if (auth(s, j, &r) < 0)
		;
	else if (streq(r.op, "create"))
		op_create(s, &r);
	else if (streq(r.op, "list"))
		op_list(s, &r);
	else if (streq(r.op, "inspect")) {
		struct sbx *x;
		if (need_sbx(s, &r, &x) == 0)
			answer(s, r.id, 200, sbx_json(x));
	} else if (streq(r.op, "delete"))
		op_delete(s, &r);
	else if (streq(r.op, "exec.list"))
		op_exec_list(s, &r);
	else if (streq(r.op, "exec.signal"))
		op_exec_signal(s, &r);
	else if (streq(r.op, "exec"))
		op_exec(s, &r);
	else if (startswith(r.op, "files."))
		op_files(s, &r);
	else if (streq(r.op, "events"))
		op_events(s, &r);
	else if (streq(r.op, "reset") || streq(r.op, "snapshot") || streq(r.op, "snapshots") ||
		 streq(r.op, "snapshot.delete") || streq(r.op, "restore"))
		op_snapshots(s, &r);
	else
		answer_error(s, r.id, 400, "bad_request", "unknown operation");
	json_decref(empty);
	json_decref(j);
	return 0;
}

/* ---- the pool -------------------------------------------------------------------------- */

/* One sandbox started for the first pool below its count (counting its
 * refills in flight); 1 if one was started. */
static int pool_refill(struct server *s)
{
	for (unsigned i = 0; i < s->n_pools; i++) {
		struct pool *pl = &s->pools[i];
		if (pl->n + pl->creating >= pl->want || (pl->failing && mono_us() < pl->retry_us))
			continue;
		struct moat_error err = {0};
		struct moat_policy *p = moat_serve_policy_copy(pl->p, &err);
		char *pj = p ? strdup(pl->policy_json) : NULL;
		struct sbx *x = NULL;
		if (!p || !pj || sbx_create(p, pj, false, &x, &err) < 0) {
			moat_policy_free(p);
			free(pj);
			pl->failing = true;
			pl->retry_us = mono_us() + 1000000u;
			return 0;
		}
		x->pool = i;
		pl->creating++;
		x->next = s->creating;
		s->creating = x;
		s->n_creating++;
		return 1;
	}
	return 0;
}

static bool pool_wants(const struct server *s)
{
	for (unsigned i = 0; i < s->n_pools; i++)
		if (s->pools[i].n + s->pools[i].creating < s->pools[i].want &&
		    (!s->pools[i].failing || mono_us() >= s->pools[i].retry_us))
			return true;
	return false;
}

/* 0 if a refill may run now (the loop quiet for POOL_QUIET_US, or a pool
 * short for POOL_MAX_DEFER_US), else the microseconds until it may; -1 if no
 * pool wants one. Never with a frame waiting: the caller polls the channel. */
static int64_t pool_due(struct server *s)
{
	if (s->stop || !pool_wants(s)) {
		s->short_us = 0;
		return -1;
	}
	uint64_t now = mono_us();
	if (!s->short_us)
		s->short_us = now;
	uint64_t quiet = s->busy_us + POOL_QUIET_US, forced = s->short_us + POOL_MAX_DEFER_US;
	uint64_t at = quiet < forced ? quiet : forced;
	return now >= at ? 0 : (int64_t)(at - now);
}

/* ---- listening ------------------------------------------------------------------------- */

int moat_serve_socket_default(char *buf, size_t len)
{
	char d[PATH_MAX];
	int k = moat_sess_dir_path(d, sizeof(d));
	if (k < 0)
		return k;
	char *slash = strrchr(d, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	return snprintf(buf, len, "%s/serve.sock", d) >= (int)len ? -ENAMETOOLONG : 0;
}

static int listen_unix(const char *path, struct moat_error *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[PATH_MAX];
	if (strlen(path) >= sizeof(sa.sun_path))
		return moat_error_set(err, "socket", ENAMETOOLONG, "%s: too long for a unix socket",
				      path);
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		_cleanup_close_ int dfd =
			moat_path_open(dir, MOAT_PATH_DIR | MOAT_PATH_MKDIR, 0700, NULL);
		if (dfd < 0)
			return moat_error_set(err, "socket", -dfd, "%s: cannot open or create: %s",
					      dir, strerror(-dfd));
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return moat_error_set(err, "socket", errno, "socket: %s", strerror(errno));
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			return moat_error_set(err, "socket", EEXIST,
					      "%s exists and is not a socket", path);
		}
		/* a live server answers; a crashed one's socket is replaced */
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(c);
			close(fd);
			return moat_error_set(err, "socket", EADDRINUSE,
					      "%s: another moat serve listens there", path);
		}
		safe_close(c);
		unlink(path);
	}
	mode_t old = umask(0177);
	int k = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (k < 0 || chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
		k = errno;
		close(fd);
		return moat_error_set(err, "socket", k, "%s: %s", path, strerror(k));
	}
	return fd;
}

static int listen_tcp(const char *addr, char *bound, size_t blen, struct moat_error *err)
{
	char host[128];
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
		return moat_error_set(err, "listen", EINVAL, "--listen %s: expected ADDR:PORT",
				      addr);
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port > 65535 || !colon[1])
		return moat_error_set(err, "listen", EINVAL, "--listen %s: bad port", addr);
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return moat_error_set(err, "listen", EINVAL, "--listen %s: bad address",
					      addr);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return moat_error_set(err, "listen", EINVAL,
					      "--listen %s: a numeric address is required", addr);
		sl = sizeof(*s4);
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		safe_close(fd);
		return moat_error_set(err, "listen", e, "--listen %s: %s", addr, strerror(e));
	}
	sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	char a[INET6_ADDRSTRLEN] = "";
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a));
		snprintf(bound, blen, "[%s]:%u", a, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a, sizeof(a));
		snprintf(bound, blen, "%s:%u", a, ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
	return fd;
}

/* The API socket must not be inside anything the policy binds into a
 * sandbox (the workspace, --ro/--rw mounts): a process there could connect
 * to it. A request cannot add a mount, so checking the ceiling suffices. */
static int socket_exposed(const struct moat_policy *p, const char *sock, struct moat_error *err)
{
	char dir[PATH_MAX], real[PATH_MAX], src[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", sock);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	else if (slash)
		dir[1] = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (!realpath(dir, real))
		return moat_error_set(err, "socket", errno, "%s: %s", dir, strerror(errno));
	for (unsigned i = 0; i <= p->n_mounts; i++) {
		const char *from = i == p->n_mounts ? p->workspace
			: (p->mounts[i].kind == MOAT_MOUNT_RO || p->mounts[i].kind == MOAT_MOUNT_RW)
			? p->mounts[i].src
			: NULL;
		if (!from || !realpath(from, src))
			continue;
		size_t n = strlen(src);
		if (streq(src, "/") || (strncmp(real, src, n) == 0 && (real[n] == '/' || !real[n])))
			return moat_error_set(err, "socket", EPERM,
					      "the API socket %s would be inside %s, which the "
					      "policy binds into every sandbox: choose another "
					      "--socket",
					      sock, from);
	}
	return 0;
}

/* ---- the front ------------------------------------------------------------------------ */

/* The front's executable next to moat's (or in ../lib/moat/), owned by
 * root or moat's owner and writable by nobody else; opened once, exec'd
 * through that descriptor. */
static int front_open(struct moat_error *err)
{
	static const char *const where[] = {"", "../lib/moat/"};
	char exe[PATH_MAX], path[PATH_MAX + 64];
	struct stat est, st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || stat("/proc/self/exe", &est) < 0)
		return moat_error_set(err, "front", errno, "cannot find moat's own executable");
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return moat_error_set(err, "front", ENOENT, "cannot find moat's own executable");
	*slash = '\0';
	for (size_t i = 0; i < ELEMENTSOF(where); i++) {
		snprintf(path, sizeof(path), "%s/%s%s", exe, where[i], FRONT_EXE);
		int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    (st.st_uid != 0 && st.st_uid != est.st_uid) || (st.st_mode & 022)) {
			close(fd);
			return moat_error_set(err, "front", EPERM,
					      "%s is not owned by root or moat's owner, or others "
					      "can write it",
					      path);
		}
		return fd;
	}
	return moat_error_set(err, "front", ENOENT, "%s is not installed next to %s/moat",
			      FRONT_EXE, exe);
}

_noreturn_ static void front_exec(int exe, int chan, int ufd, int tfd, int null_fd, pid_t parent,
				  const char *const *envp)
{
	static char arg0[] = FRONT_EXE;
	char *const argv[] = {arg0, NULL};
	int fds[] = {null_fd, null_fd, 2, chan, ufd >= 0 ? ufd : null_fd, tfd >= 0 ? tfd : null_fd,
		     exe};
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(MOAT_EXIT_SETUP);
	if (moat_fdset_compact(fds, ELEMENTSOF(fds)) < 0 ||
	    fcntl((int)ELEMENTSOF(fds) - 1, F_SETFD, FD_CLOEXEC) < 0)
		_exit(MOAT_EXIT_SETUP);
	syscall(SYS_execveat, (int)ELEMENTSOF(fds) - 1, "", argv, envp, AT_EMPTY_PATH);
	_exit(MOAT_EXIT_SETUP);
}

static int read_small_file(const char *path, char **ret, size_t *ret_len, struct moat_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > (256 << 10))
		return moat_error_set(err, "tls", fd < 0 ? errno : EINVAL,
				      "%s: not a readable regular file of at most 256 KiB", path);
	char *b = malloc((size_t)st.st_size + 1);
	if (!b || read(fd, b, (size_t)st.st_size) != st.st_size) {
		free(b);
		return moat_error_set(err, "tls", EIO, "%s: cannot read", path);
	}
	b[st.st_size] = '\0';
	*ret = b;
	*ret_len = (size_t)st.st_size;
	return 0;
}

int moat_serve(const struct moat_policy *ceiling, const struct moat_serve_opts *o,
	       struct moat_error *ret_err)
{
	struct server s = {.ceiling = ceiling, .chan = -1};
	int k, ufd = -1, tfd = -1, exe = -1, null_fd = -1, sfd = -1, sv[2] = {-1, -1};
	pid_t front = -1;
	char sock_path[PATH_MAX] = "", bound[128] = "";
	char *cert = NULL, *key = NULL;
	size_t cert_len = 0, key_len = 0;
	sigset_t mask, old;

	signal(SIGPIPE, SIG_IGN);
	if (o->listen && !o->token_file)
		return moat_error_set(ret_err, "listen", EINVAL,
				      "--listen needs --token-file (a TCP listener is reachable by "
				      "other users of the machine)");
	if ((o->tls_cert != NULL) != (o->tls_key != NULL) || (o->tls_cert && !o->listen))
		return moat_error_set(ret_err, "tls", EINVAL,
				      "--tls-cert and --tls-key go together, with --listen");
	if (o->token_file) {
		if ((k = moat_serve_tenants_load(o->token_file, &s.tenants, ret_err)) < 0)
			return k;
	} else {
		s.tenants.t = calloc(1, sizeof(*s.tenants.t));
		if (!s.tenants.t)
			return moat_error_set(ret_err, "serve", ENOMEM, "out of memory");
		s.tenants.n = 1;
		s.tenants.open = true;
		snprintf(s.tenants.t[0].name, sizeof(s.tenants.t[0].name), "default");
	}
	/* the pools: each policy within the ceiling */
	for (size_t i = 0; i < o->n_pools; i++) {
		struct pool *pl = &s.pools[s.n_pools];
		if (s.n_pools >= MAX_POOLS) {
			k = moat_error_set(ret_err, "pool", EINVAL, "at most %u pools", MAX_POOLS);
			goto out;
		}
		const char *spec = o->pools[i], *colon = strchr(spec, ':');
		char *end;
		unsigned long n = strtoul(spec, &end, 10);
		if (end == spec || (*end && *end != ':') || n == 0 || n > MAX_POOL) {
			k = moat_error_set(ret_err, "pool", EINVAL,
					   "--pool %s: N[:POLICY] with N from 1 to %u", spec,
					   MAX_POOL);
			goto out;
		}
		pl->want = (unsigned)n;
		pl->p = moat_serve_policy_copy(ceiling, ret_err);
		if (!pl->p) {
			k = -EINVAL;
			goto out;
		}
		s.n_pools++;
		if (colon) {
			/* the pool's policy file is a request: it narrows the ceiling */
			struct moat_policy *req = moat_policy_new();
			_cleanup_free_ char *rj = NULL;
			if (!req || moat_policy_load_file(req, colon + 1, ret_err) < 0 ||
			    moat_policy_to_json(req, &rj) < 0) {
				moat_policy_free(req);
				k = -EINVAL;
				goto out;
			}
			json_t *args = json_object();
			if (req->memory)
				json_object_set_new(args, "memory",
						    json_integer((json_int_t)req->memory));
			if (req->cpus_milli) {
				char c[32];
				snprintf(c, sizeof(c), "%llu.%03llu",
					 (unsigned long long)req->cpus_milli / 1000,
					 (unsigned long long)req->cpus_milli % 1000);
				json_object_set_new(args, "cpus", json_string(c));
			}
			if (req->limits_set & MOAT_LIMIT_PIDS)
				json_object_set_new(args, "pids",
						    json_integer((json_int_t)req->pids));
			if (req->timeout_ms) {
				char t[32];
				snprintf(t, sizeof(t), "%llums",
					 (unsigned long long)req->timeout_ms);
				json_object_set_new(args, "timeout", json_string(t));
			}
			if (req->net != ceiling->net)
				json_object_set_new(args, "net",
						    json_string(moat_net_mode_names[req->net]));
			moat_policy_free(req);
			char field[64], msg[600];
			k = moat_serve_narrow(pl->p, ceiling, args, field, sizeof(field), msg,
					      sizeof(msg));
			json_decref(args);
			if (k < 0) {
				k = moat_error_set(ret_err, "pool", EPERM, "--pool %s: %s", spec,
						   msg);
				goto out;
			}
		}
		if (moat_policy_to_json(pl->p, &pl->policy_json) < 0) {
			k = moat_error_set(ret_err, "pool", ENOMEM, "out of memory");
			goto out;
		}
	}

	if (o->tls_cert &&
	    ((k = read_small_file(o->tls_cert, &cert, &cert_len, ret_err)) < 0 ||
	     (k = read_small_file(o->tls_key, &key, &key_len, ret_err)) < 0))
		goto out;
	if ((exe = front_open(ret_err)) < 0) {
		k = exe;
		goto out;
	}
	if (o->socket_path)
		snprintf(sock_path, sizeof(sock_path), "%s", o->socket_path);
	else if ((k = moat_serve_socket_default(sock_path, sizeof(sock_path))) < 0) {
		k = moat_error_set(ret_err, "socket", -k, "cannot find the runtime directory");
		goto out;
	}
	{
		/* the directory must exist for the check: listen_unix creates it */
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", sock_path);
		char *sl = strrchr(dir, '/');
		if (sl && sl != dir) {
			*sl = '\0';
			int dfd = moat_path_open(dir, MOAT_PATH_DIR | MOAT_PATH_MKDIR, 0700, NULL);
			safe_close(dfd);
		}
		if ((k = socket_exposed(ceiling, sock_path, ret_err)) < 0) {
			sock_path[0] = '\0';
			goto out;
		}
	}
	if ((ufd = listen_unix(sock_path, ret_err)) < 0) {
		k = ufd;
		sock_path[0] = '\0';
		goto out;
	}
	if (o->listen && (tfd = listen_tcp(o->listen, bound, sizeof(bound), ret_err)) < 0) {
		k = tfd;
		goto out;
	}
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		k = moat_error_set(ret_err, "front", errno, "socketpair: %s", strerror(errno));
		goto out;
	}
	/* What is in flight on the channel is what a stream's client may get
	 * over the front's high mark before the back sees a "pause"
	 * (serve_proto.h): 512 KiB (the kernel doubles it), with the back's
	 * own turn (2 MiB) and the codec's escaping (up to 6 times) under the
	 * front's bound, MOAT_SERVE_MAX_PENDING. */
	int big = 512 << 10;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	const char *envp[8];
	size_t ne = 0;
	for (char **e = environ; e && *e && ne < ELEMENTSOF(envp) - 1; e++)
		if (startswith(*e, "ASAN_OPTIONS=") || startswith(*e, "UBSAN_OPTIONS=") ||
		    startswith(*e, "LSAN_OPTIONS="))
			envp[ne++] = *e;
	envp[ne] = NULL;
	pid_t parent = getpid();
	front = fork();
	if (front < 0) {
		k = moat_error_set(ret_err, "front", errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (front == 0)
		front_exec(exe, sv[1], ufd, tfd, null_fd, parent, envp);
	sv[1] = safe_close(sv[1]);
	ufd = safe_close(ufd);
	tfd = safe_close(tfd);
	exe = safe_close(exe);
	s.chan = TAKE_FD(sv[0]);
	/* the configuration frame */
	json_t *cfg = json_pack("{s:s,s:b,s:b,s:b,s:b,s:I,s:I}", "op", "config", "e2b", o->e2b,
				"tls", cert != NULL, "unix", 1, "tcp", o->listen != NULL,
				"cert_len", (json_int_t)cert_len, "key_len", (json_int_t)key_len);
	char *mat = NULL;
	if (cert) {
		mat = malloc(cert_len + key_len);
		if (mat) {
			memcpy(mat, cert, cert_len);
			memcpy(mat + cert_len, key, key_len);
		}
	}
	k = send_frame(&s, cfg, mat, mat ? cert_len + key_len : 0);
	if (mat) {
		explicit_bzero(mat, cert_len + key_len);
		free(mat);
	}
	if (k < 0 || (k = wait_front_ready(&s)) < 0) {
		k = moat_error_set(ret_err, "front", -k,
				   "the front did not start (its reason, if any, is above)");
		goto out;
	}
	if (o->on_ready)
		o->on_ready(sock_path, bound[0] ? bound : NULL, o->userdata);

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	while (!s.stop) {
		size_t cap = 2 + s.n_sbs + 3 * 64;
		unsigned nj = 0;
		for (struct job *j = s.jobs; j; j = j->next)
			nj++;
		cap = 2 + s.n_sbs + s.n_creating + 3u * nj;
		for (unsigned i = 0; i < s.n_pools; i++)
			cap += s.pools[i].n;
		struct pollfd *pf = calloc(cap, sizeof(*pf));
		void **of = calloc(cap, sizeof(*of));
		char *kind = calloc(cap, 1);
		if (!pf || !of || !kind) {
			free(pf);
			free(of);
			free(kind);
			break;
		}
		unsigned n = 0;
		bool follow = false;
		pf[n++] = (struct pollfd){.fd = s.chan, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		for (struct sbx *x = s.sbs; x; x = x->next) {
			of[n] = x;
			kind[n] = 's';
			pf[n++] = (struct pollfd){.fd = moat_sandbox_fd(x->sb), .events = POLLIN};
		}
		for (unsigned i = 0; i < s.n_pools; i++)
			for (struct sbx *x = s.pools[i].ready; x; x = x->next) {
				of[n] = x;
				kind[n] = 's';
				pf[n++] = (struct pollfd){.fd = moat_sandbox_fd(x->sb),
							  .events = POLLIN};
			}
		bool draining = false, more = false;
		int start_due = -1; /* the nearest bound of a starting exec or a create */
		for (struct sbx *x = s.creating; x; x = x->next) {
			int d = moat_sandbox_create_due_ms(x->sb);
			if (d >= 0 && (start_due < 0 || d < start_due))
				start_due = d;
			of[n] = x;
			kind[n] = 'c';
			pf[n++] = (struct pollfd){.fd = moat_sandbox_fd(x->sb), .events = POLLIN};
		}
		for (struct job *j = s.jobs; j; j = j->next) {
			if (!j->req)
				continue;
			if (j->kind == JOB_EXEC && j->starting) {
				/* its STARTED comes through its sandbox's fd */
				int d = moat_proc_start_due_ms(j->pr),
				    fd = moat_proc_start_fd(j->pr);
				if (d >= 0 && (start_due < 0 || d < start_due))
					start_due = d;
				if (fd >= 0) {
					of[n] = j;
					kind[n] = 'j';
					pf[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
				}
				continue;
			}
			follow = follow || (j->kind == JOB_EVENTS && !j->paused);
			/* a log read in part: the rest next turn, without waiting */
			more = more || (j->kind == JOB_EVENTS && !j->paused && j->more);
			/* done, its output still open: the drain window is timed */
			draining = draining || (j->done_us && !j->paused);
			int fds[3] = {j->out, j->err, j->in};
			for (int f = 0; f < 3; f++)
				/* a paused one's output is not watched */
				if (fds[f] >= 0 && (f == 2 || !j->paused)) {
					of[n] = j;
					kind[n] = 'j';
					pf[n++] = (struct pollfd){
						.fd = fds[f], .events = f == 2 ? POLLOUT : POLLIN};
				}
		}
		int timeout = more ? 0 : draining ? 10 : follow ? 250 : 1000;
		int64_t due = pool_due(&s);
		if (due >= 0 && due / 1000 + 1 < timeout)
			timeout = due ? (int)(due / 1000 + 1) : 0;
		if (start_due >= 0 && start_due < timeout)
			timeout = start_due;
		k = poll(pf, n, timeout);
		if (k < 0 && errno != EINTR) {
			free(pf);
			free(of);
			free(kind);
			break;
		}
		if (k > 0 && pf[1].revents) {
			struct signalfd_siginfo si;
			bool quit = false;
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				if (si.ssi_signo != SIGCHLD)
					quit = true;
				else if ((pid_t)si.ssi_pid == front)
					quit = true;
			if (quit) {
				free(pf);
				free(of);
				free(kind);
				break;
			}
		}
		for (unsigned i = 2; k > 0 && i < n; i++) {
			if (pf[i].revents && kind[i] == 'j')
				s.busy_us = mono_us();
			if (!pf[i].revents || kind[i] != 's')
				continue;
			struct sbx *x = of[i];
			if (!x->failed && moat_sandbox_dispatch(x->sb) < 0)
				x->failed = true;
		}
		free(pf);
		free(of);
		free(kind);
		/* every create in flight looks at its set-up (cheap: a few polls
		 * of its channels), then the sandboxes it made join */
		for (struct sbx *x = s.creating, *nx; x; x = nx) {
			nx = x->next;
			create_progress(&s, x);
		}
		/* every job looks at its fds and its process (dispatch may have
		 * ended it), the followers at their logs */
		for (struct job *j = s.jobs; j; j = j->next) {
			if (j->kind == JOB_EXEC && j->starting)
				exec_start_progress(&s, j);
			if (j->kind == JOB_EXEC)
				exec_progress(&s, j);
			else if (j->req && (j->follow || j->more))
				events_progress(&s, j);
		}
		for (struct job **pp = &s.jobs; *pp;) {
			struct job *j = *pp;
			if (!j->req) {
				*pp = j->next;
				json_decref(j->argv);
				free(j->in_data);
				job_close_fds(j);
				moat_log_free(j->log);
				free(j);
			} else {
				pp = &j->next;
			}
		}
		/* a few frames a turn: a "pause" behind other requests is seen
		 * before much more output is sent */
		struct pollfd cp = {.fd = s.chan, .events = POLLIN};
		bool gone = false;
		for (int f = 0; f < 16 && poll(&cp, 1, 0) > 0; f++) {
			if (serve_one(&s) < 0) {
				gone = true;
				break;
			}
			s.busy_us = mono_us();
		}
		if (gone)
			break; /* the front ended or misbehaves */
		/* one sandbox per quiet turn, never with a frame waiting */
		if (pool_due(&s) == 0 && poll(&cp, 1, 0) == 0) {
			/* forced (steady traffic): the next one a pause later */
			bool forced = mono_us() < s.busy_us + POOL_QUIET_US;
			pool_refill(&s);
			if (forced)
				s.short_us = mono_us();
		}
	}
	k = 0;
out:
	if (s.chan >= 0)
		s.chan = safe_close(s.chan);
	s.stop = true;
	while (s.jobs) {
		struct job *j = s.jobs;
		s.jobs = j->next;
		if (j->req && j->kind == JOB_EXEC && j->pr)
			moat_proc_release(j->pr);
		job_close_fds(j);
		moat_log_free(j->log);
		json_decref(j->argv);
		free(j->in_data);
		free(j);
	}
	while (s.creating)
		create_abandon(&s, s.creating);
	while (s.sbs) {
		struct sbx *x = s.sbs;
		s.sbs = x->next;
		moat_sandbox_destroy(x->sb, NULL, NULL);
		sbx_free(x);
	}
	for (unsigned i = 0; i < s.n_pools; i++) {
		while (s.pools[i].ready) {
			struct sbx *x = s.pools[i].ready;
			s.pools[i].ready = x->next;
			moat_sandbox_destroy(x->sb, NULL, NULL);
			sbx_free(x);
		}
		moat_policy_free(s.pools[i].p);
		free(s.pools[i].policy_json);
	}
	if (front > 0) {
		kill(front, SIGKILL);
		while (waitpid(front, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (sock_path[0] && ufd < 0)
		unlink(sock_path);
	safe_close(ufd);
	safe_close(tfd);
	safe_close(exe);
	safe_close(null_fd);
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(sfd);
	if (key) {
		explicit_bzero(key, key_len);
		free(key);
	}
	free(cert);
	moat_serve_tenants_free(&s.tenants);
	return k;
}
