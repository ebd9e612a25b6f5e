/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sessions' wire format (session.h): one framing for both ends. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/policy.h"
#include "supervisor/session.h"
#include "shared/macro.h"

struct sess_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;
};

int moat_sess_send(int sock, unsigned type, json_t *body, const int *fds, unsigned n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_SESS_MAX_FDS)];
		struct cmsghdr align;
	} u;
	char *js = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
	if (!js)
		return -ENOMEM;
	size_t len = strlen(js);
	if (len > MOAT_SESS_MSG_MAX || n_fds > MOAT_SESS_MAX_FDS) {
		free(js);
		return -EMSGSIZE;
	}
	struct sess_hdr h = {.magic = MOAT_SESS_MAGIC,
			     .version = MOAT_SESS_VERSION,
			     .type = (uint16_t)type,
			     .len = (uint32_t)len};
	struct iovec iov[2] = {{.iov_base = &h, .iov_len = sizeof(h)},
			       {.iov_base = js, .iov_len = len}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
	memset(&u, 0, sizeof(u));
	if (n_fds) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	int k = n < 0 ? negerrno() : (size_t)n == sizeof(h) + len ? 0 : -EIO;
	free(js);
	return k;
}

void moat_sess_msg_done(struct moat_sess_msg *m)
{
	json_decref(m->body);
	m->body = NULL;
	for (unsigned i = 0; i < m->n_fds; i++)
		safe_close(m->fds[i]);
	m->n_fds = 0;
}

int moat_sess_recv(int sock, bool dontwait, struct moat_sess_msg *ret)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * (MOAT_SESS_MAX_FDS + 1))];
		struct cmsghdr align;
	} u;
	_cleanup_free_ char *data = malloc(sizeof(struct sess_hdr) + MOAT_SESS_MSG_MAX + 1);
	memset(ret, 0, sizeof(*ret));
	if (!data)
		return -ENOMEM;
	struct iovec iov = {.iov_base = data,
			    .iov_len = sizeof(struct sess_hdr) + MOAT_SESS_MSG_MAX};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return negerrno();
	int k = 0;
	/* descriptors first, so that nothing is left open on a bad message */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nf = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[MOAT_SESS_MAX_FDS + 1];
		memcpy(fds, CMSG_DATA(c), MIN(nf, ELEMENTSOF(fds)) * sizeof(int));
		for (size_t i = 0; i < MIN(nf, ELEMENTSOF(fds)); i++) {
			if (ret->n_fds < MOAT_SESS_MAX_FDS)
				ret->fds[ret->n_fds++] = fds[i];
			else {
				close(fds[i]);
				k = -EBADMSG;
			}
		}
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		k = -EBADMSG;
	if (n == 0 && ret->n_fds == 0)
		return 0; /* EOF */
	struct sess_hdr h;
	if (k == 0 && (size_t)n < sizeof(h))
		k = -EBADMSG;
	if (k == 0) {
		memcpy(&h, data, sizeof(h));
		if (h.magic != MOAT_SESS_MAGIC || h.version != MOAT_SESS_VERSION ||
		    h.len != (size_t)n - sizeof(h))
			k = -EBADMSG;
	}
	if (k == 0) {
		json_error_t je;
		ret->body = json_loadb(data + sizeof(h), h.len, JSON_REJECT_DUPLICATES, &je);
		if (!json_is_object(ret->body))
			k = -EBADMSG;
		ret->type = h.type;
	}
	if (k < 0) {
		moat_sess_msg_done(ret);
		return k;
	}
	return 1;
}

/* ---- bodies --------------------------------------------------------------- */

static void get_str(json_t *o, const char *key, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(o, key));
	snprintf(buf, len, "%s", s ? s : "");
}

static uint64_t get_u64(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v)
								: 0;
}

static int get_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
	return i < -0x7fffffff || i > 0x7fffffff ? 0 : (int)i;
}

json_t *moat_sess_error_json(const struct moat_error *e)
{
	return json_pack("{s:s,s:i,s:s}", "stage", e->stage, "err", e->err, "message", e->message);
}

int moat_sess_error_from(json_t *body, struct moat_error *e)
{
	struct moat_error tmp;
	if (!e)
		e = &tmp;
	memset(e, 0, sizeof(*e));
	get_str(body, "stage", e->stage, sizeof(e->stage));
	get_str(body, "message", e->message, sizeof(e->message));
	e->err = get_int(body, "err");
	if (e->err <= 0 || e->err > 4095)
		e->err = EIO;
	return -e->err;
}

json_t *moat_sess_proc_status_json(const struct moat_proc_status *ps)
{
	return json_pack("{s:i,s:i,s:i,s:i,s:I,s:i,s:I,s:I,s:I,s:I,s:s}", "reason", (int)ps->reason,
			 "exit_code", ps->exit_code, "status", ps->status, "signal", ps->signal,
			 "id", (json_int_t)ps->id, "pid", ps->pid, "wall_us",
			 (json_int_t)ps->wall_us, "cpu_user_us", (json_int_t)ps->cpu_user_us,
			 "cpu_sys_us", (json_int_t)ps->cpu_sys_us, "mem_peak",
			 (json_int_t)ps->mem_peak, "stdio_error", ps->stdio_error);
}

void moat_sess_proc_status_from(json_t *o, struct moat_proc_status *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->reason = (enum moat_reason)get_int(o, "reason");
	ps->exit_code = get_int(o, "exit_code");
	ps->status = get_int(o, "status");
	ps->signal = get_int(o, "signal");
	ps->id = (uint32_t)get_u64(o, "id");
	ps->pid = get_int(o, "pid");
	ps->wall_us = get_u64(o, "wall_us");
	ps->cpu_user_us = get_u64(o, "cpu_user_us");
	ps->cpu_sys_us = get_u64(o, "cpu_sys_us");
	ps->mem_peak = get_u64(o, "mem_peak");
	get_str(o, "stdio_error", ps->stdio_error, sizeof(ps->stdio_error));
}

/* The fields of a moat_status that `moat rm` reports. */
json_t *moat_sess_status_json(const struct moat_status *st)
{
	json_t *o =
		json_pack("{s:i,s:i,s:i,s:i,s:I,s:I,s:s,s:s,s:s}", "reason", (int)st->reason,
			  "exit_code", st->exit_code, "status", st->status, "signal", st->signal,
			  "wall_us", (json_int_t)st->wall_us, "execs", (json_int_t)st->execs,
			  "run_id", st->run_id, "log_path", st->log_path, "degraded", st->degraded);
	if (!o)
		return NULL;
	json_object_set_new(o, "files_changed", json_integer((json_int_t)st->files_changed));
	json_object_set_new(o, "files_applied", json_integer((json_int_t)st->files_applied));
	json_object_set_new(o, "files_held", json_integer((json_int_t)st->files_held));
	json_object_set_new(o, "files_flagged", json_integer((json_int_t)st->files_flagged));
	json_object_set_new(o, "files_refused", json_integer((json_int_t)st->files_refused));
	json_object_set_new(o, "files_listed", json_integer((json_int_t)st->files_listed));
	json_object_set_new(o, "files_accepted_automatic",
			    json_integer((json_int_t)st->files_accepted_automatic));
	json_object_set_new(o, "listed", json_string(st->listed));
	json_object_set_new(o, "output_files", json_integer((json_int_t)st->output_files));
	json_object_set_new(o, "output_skipped", json_integer((json_int_t)st->output_skipped));
	json_object_set_new(o, "net_allowed", json_integer((json_int_t)st->net_allowed));
	json_object_set_new(o, "net_denied", json_integer((json_int_t)st->net_denied));
	json_object_set_new(o, "dns_allowed", json_integer((json_int_t)st->dns_allowed));
	json_object_set_new(o, "dns_denied", json_integer((json_int_t)st->dns_denied));
	json_object_set_new(o, "net_none_attempts",
			    json_integer((json_int_t)st->net_none_attempts));
	json_object_set_new(o, "output_error", json_string(st->output_error));
	json_object_set_new(o, "stdio_error", json_string(st->stdio_error));
	json_t *rev = json_array(), *top = json_array();
	for (unsigned i = 0; rev && i < st->n_review && i < MOAT_REVIEW_MAX; i++)
		json_array_append_new(rev,
				      json_pack("{s:i,s:s,s:s}", "state", (int)st->review[i].state,
						"path", st->review[i].path, "reason",
						st->review[i].reason));
	for (unsigned i = 0; top && i < st->n_top_denied && i < MOAT_TOP_DENIED_MAX; i++)
		json_array_append_new(
			top,
			json_pack("{s:I,s:s,s:s,s:b,s:s,s:s,s:i,s:s,s:s}", "count",
				  (json_int_t)st->top_denied[i].count, "destination",
				  st->top_denied[i].destination, "rule", st->top_denied[i].rule,
				  "dns", st->top_denied[i].dns, "host", st->top_denied[i].host,
				  "addr", st->top_denied[i].addr, "port", st->top_denied[i].port,
				  "proto", st->top_denied[i].proto, "reason",
				  st->top_denied[i].reason));
	json_object_set_new(o, "review", rev ? rev : json_null());
	json_object_set_new(o, "top_denied", top ? top : json_null());
	json_object_set_new(o, "review_more", json_integer((json_int_t)st->review_more));
	json_object_set_new(o, "review_errno", json_integer(st->review_errno));
	json_object_set_new(o, "held_not_kept", json_boolean(st->held_not_kept));
	json_object_set_new(o, "held_dropped", json_integer((json_int_t)st->held_dropped));
	json_object_set_new(o, "held_needed", json_integer((json_int_t)st->held_needed));
	json_object_set_new(o, "held_cap", json_integer((json_int_t)st->held_cap));
	json_object_set_new(o, "rw_new_repo", json_string(st->rw_new_repo));
	/* the limits that were hit (moat rm's `moat: limits:` lines) */
	json_object_set_new(o, "pids_limit_hits", json_integer((json_int_t)st->pids_limit_hits));
	json_object_set_new(o, "pids_limit", json_integer((json_int_t)st->pids_limit));
	json_object_set_new(o, "oom_kills", json_integer((json_int_t)st->oom_kills));
	json_object_set_new(o, "memory_limit", json_integer((json_int_t)st->memory_limit));
	moat_status_disk_full_set(o, st);
	return o;
}

void moat_sess_status_from(json_t *o, struct moat_status *st)
{
	memset(st, 0, sizeof(*st));
	st->reason = (enum moat_reason)get_int(o, "reason");
	st->exit_code = get_int(o, "exit_code");
	st->status = get_int(o, "status");
	st->signal = get_int(o, "signal");
	st->wall_us = get_u64(o, "wall_us");
	st->execs = get_u64(o, "execs");
	get_str(o, "run_id", st->run_id, sizeof(st->run_id));
	get_str(o, "log_path", st->log_path, sizeof(st->log_path));
	get_str(o, "degraded", st->degraded, sizeof(st->degraded));
	st->files_changed = get_u64(o, "files_changed");
	st->files_applied = get_u64(o, "files_applied");
	st->files_held = get_u64(o, "files_held");
	st->files_flagged = get_u64(o, "files_flagged");
	st->files_refused = get_u64(o, "files_refused");
	st->files_listed = get_u64(o, "files_listed");
	st->files_accepted_automatic = get_u64(o, "files_accepted_automatic");
	get_str(o, "listed", st->listed, sizeof(st->listed));
	st->output_files = get_u64(o, "output_files");
	st->output_skipped = get_u64(o, "output_skipped");
	st->net_allowed = get_u64(o, "net_allowed");
	st->net_denied = get_u64(o, "net_denied");
	st->dns_allowed = get_u64(o, "dns_allowed");
	st->dns_denied = get_u64(o, "dns_denied");
	st->net_none_attempts = get_u64(o, "net_none_attempts");
	get_str(o, "output_error", st->output_error, sizeof(st->output_error));
	get_str(o, "stdio_error", st->stdio_error, sizeof(st->stdio_error));
	json_t *rev = json_object_get(o, "review"), *top = json_object_get(o, "top_denied"), *e;
	size_t i;
	json_array_foreach(rev, i, e)
	{
		if (st->n_review >= MOAT_REVIEW_MAX)
			break;
		struct moat_review_entry *r = &st->review[st->n_review++];
		r->state = (enum moat_review_state)get_int(e, "state");
		get_str(e, "path", r->path, sizeof(r->path));
		get_str(e, "reason", r->reason, sizeof(r->reason));
	}
	json_array_foreach(top, i, e)
	{
		if (st->n_top_denied >= MOAT_TOP_DENIED_MAX)
			break;
		struct moat_denied *d = &st->top_denied[st->n_top_denied++];
		d->count = get_u64(e, "count");
		get_str(e, "destination", d->destination, sizeof(d->destination));
		get_str(e, "rule", d->rule, sizeof(d->rule));
		d->dns = json_is_true(json_object_get(e, "dns"));
		get_str(e, "host", d->host, sizeof(d->host));
		get_str(e, "addr", d->addr, sizeof(d->addr));
		uint64_t port = get_u64(e, "port");
		d->port = port > UINT16_MAX ? 0 : (uint16_t)port;
		get_str(e, "proto", d->proto, sizeof(d->proto));
		get_str(e, "reason", d->reason, sizeof(d->reason));
	}
	st->review_more = get_u64(o, "review_more");
	st->review_errno = get_int(o, "review_errno");
	st->held_not_kept = json_is_true(json_object_get(o, "held_not_kept"));
	st->held_dropped = get_u64(o, "held_dropped");
	st->held_needed = get_u64(o, "held_needed");
	st->held_cap = get_u64(o, "held_cap");
	get_str(o, "rw_new_repo", st->rw_new_repo, sizeof(st->rw_new_repo));
	st->pids_limit_hits = get_u64(o, "pids_limit_hits");
	st->pids_limit = get_u64(o, "pids_limit");
	st->oom_kills = get_u64(o, "oom_kills");
	st->memory_limit = get_u64(o, "memory_limit");
	json_array_foreach(json_object_get(o, "disk_full"), i, e)
	{
		if (st->n_disk_full >= MOAT_DISK_FULL_MAX)
			break;
		struct moat_disk_full *d = &st->disk_full[st->n_disk_full++];
		get_str(e, "path", d->path, sizeof(d->path));
		d->limit = get_u64(e, "limit");
		d->inodes = json_is_true(json_object_get(e, "inodes"));
		d->tmpfs_size = json_is_true(json_object_get(e, "tmpfs_size"));
	}
	uint64_t more = get_u64(o, "disk_full_more");
	st->disk_full_more = more > MOAT_DISK_FULL_MAX * 1024u ? 0 : (unsigned)more;
}

json_t *moat_sess_info_json(const struct moat_session_info *in)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:I,s:I,s:i,s:I,s:I,s:I,s:s}", "id", in->id, "name",
			      in->name, "state", in->state, "pid", in->pid, "created_us",
			      (json_int_t)in->created_us, "execs", (json_int_t)in->execs, "running",
			      (int)in->running, "mem_current", (json_int_t)in->mem_current,
			      "idle_timeout_ms", (json_int_t)in->idle_timeout_ms, "lifetime_ms",
			      (json_int_t)in->lifetime_ms, "policy_sha256", in->policy_sha256);
	if (o)
		json_object_set_new(
			o, "limits",
			json_pack("{s:I,s:I,s:I,s:I,s:I}", "memory", (json_int_t)in->memory_max,
				  "cpus_milli", (json_int_t)in->cpus_milli, "pids",
				  (json_int_t)in->pids_max, "disk", (json_int_t)in->disk_max,
				  "timeout_ms", (json_int_t)in->timeout_ms));
	if (o && in->reason[0])
		json_object_set_new(o, "reason", json_string(in->reason));
	return o;
}

void moat_sess_info_from(json_t *o, struct moat_session_info *in)
{
	memset(in, 0, sizeof(*in));
	get_str(o, "id", in->id, sizeof(in->id));
	get_str(o, "name", in->name, sizeof(in->name));
	get_str(o, "state", in->state, sizeof(in->state));
	get_str(o, "reason", in->reason, sizeof(in->reason));
	in->pid = get_int(o, "pid");
	in->created_us = get_u64(o, "created_us");
	in->execs = get_u64(o, "execs");
	in->running = (unsigned)get_int(o, "running");
	in->mem_current = get_u64(o, "mem_current");
	in->idle_timeout_ms = get_u64(o, "idle_timeout_ms");
	in->lifetime_ms = get_u64(o, "lifetime_ms");
	get_str(o, "policy_sha256", in->policy_sha256, sizeof(in->policy_sha256));
	json_t *l = json_object_get(o, "limits");
	in->memory_max = get_u64(l, "memory");
	in->cpus_milli = get_u64(l, "cpus_milli");
	in->pids_max = get_u64(l, "pids");
	in->disk_max = get_u64(l, "disk");
	in->timeout_ms = get_u64(l, "timeout_ms");
}
