/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "moat-serve-front": the side of `moat serve` that parses HTTP. It is
 * exec'd by the back (serve.c) with exactly /dev/null on 0 and 1, stderr,
 * the channel to the back and the listening sockets (serve_proto.h); as
 * root it first becomes nobody with no capabilities; it loads its seccomp
 * filter (kernel/confine.c's base plus what libmicrohttpd's epoll loop needs:
 * accept, send, receive, epoll; with TLS socketpair(AF_UNIX); no open, no
 * socket, no connect, no exec) before it accepts a connection, and then
 * tells the back it is ready. libmicrohttpd parses the HTTP/1.1
 * framing; every complete request goes through the route table
 * (api/serve_route.c), which answers it or forwards one checked request to
 * the back as a frame; the back's frames come back as the response.
 *
 * With --tls-cert/--tls-key, TLS is terminated here with OpenSSL (tls.c):
 * the front accepts on the TCP listener itself and hands libmicrohttpd the
 * plaintext end of a socketpair per connection.
 *
 * It is a separate executable (next to moat) because it links
 * libmicrohttpd and OpenSSL's libssl: `moat run` never loads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <jansson.h>
#include <microhttpd.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/confine.h"
#include "api/serve_proto.h"
#include "api/serve_route.h"
#include "serve/tls.h"
#include "shared/fdset.h"
#include "shared/macro.h"

/* ---- requests in flight ------------------------------------------------------------ */

enum conn_state {
	C_BODY, /* receiving the body */
	C_WAIT, /* forwarded: waiting for the back's first frame */
	C_READY, /* the first frame came: queue the response */
	C_SENT, /* response queued */
};

struct conn {
	struct conn *prev, *next;
	struct MHD_Connection *mc;
	uint32_t id; /* 0: not forwarded */
	enum conn_state state;
	char *uri; /* raw, as received */
	char *body;
	size_t len, cap;
	bool too_big;
	const struct moat_serve_route *route;
	const struct moat_serve_codec *codec;
	struct moat_serve_stream st;
	size_t sent; /* bytes of st.buf given to libmicrohttpd */
	bool ended; /* the back sent the last frame */
	bool paused; /* the back was told to pause this stream */
	bool suspended;
	bool headers_seen; /* the first call (headers only) was answered */
	bool gone; /* the client hung up while the connection was suspended */
	bool uri_too_long;
	bool close_after; /* the framing was ambiguous: no next request on it */
};

#define MAX_URI 8192u

static struct conn *conns;
static uint32_t next_id;
static int chan = MOAT_SERVE_FRONT_FD_CHAN;

/* Bytes for the back, not yet written (the channel is non-blocking: the
 * front never blocks on the back, so the back's writes always drain). */
static char *outq;
static size_t outq_len, outq_cap;

static void die(const char *why)
{
	char m[512];
	int n = snprintf(m, sizeof(m), "moat serve: front: %s\n", why);
	if (n > 0)
		(void)!write(STDERR_FILENO, m, MIN((size_t)n, sizeof(m) - 1));
	_exit(MOAT_SERVE_FRONT_EXIT);
}

static void queue_frame(json_t *j, const char *data, size_t len)
{
	char *t = json_dumps(j, JSON_COMPACT);
	if (!t)
		die("out of memory");
	struct moat_serve_frame h = {.magic = MOAT_SERVE_FRAME_MAGIC,
				     .json_len = (uint32_t)strlen(t),
				     .data_len = (uint32_t)len};
	size_t need = outq_len + sizeof(h) + h.json_len + len;
	if (need > outq_cap) {
		size_t cap = MAX(outq_cap * 2, need + 65536);
		char *q = realloc(outq, cap);
		if (!q)
			die("out of memory");
		outq = q;
		outq_cap = cap;
	}
	memcpy(outq + outq_len, &h, sizeof(h));
	memcpy(outq + outq_len + sizeof(h), t, h.json_len);
	if (len)
		memcpy(outq + outq_len + sizeof(h) + h.json_len, data, len);
	outq_len = need;
	free(t);
}

static void flush_out(void)
{
	while (outq_len) {
		ssize_t k = write(chan, outq, outq_len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0)
			die("the back is gone");
		memmove(outq, outq + k, outq_len - (size_t)k);
		outq_len -= (size_t)k;
	}
}

static struct conn *find_conn(uint32_t id)
{
	for (struct conn *c = conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Flow control (serve_proto.h's "pause"/"resume"): what waits for the
 * client, against the high and low marks. */
static void flow(struct conn *c)
{
	size_t pending = c->st.len - c->sent;
	bool want = pending > (c->paused ? MOAT_SERVE_PAUSE_LOW : MOAT_SERVE_PAUSE_HIGH);
	/* after the stream's end the back sends nothing more for it */
	if (!c->id || c->ended || want == c->paused)
		return;
	json_t *j =
		json_pack("{s:I,s:s}", "id", (json_int_t)c->id, "op", want ? "pause" : "resume");
	if (!j)
		die("out of memory");
	queue_frame(j, NULL, 0);
	json_decref(j);
	c->paused = want;
	/* at once, not after the rest of what the back sent is read: what
	 * it sends before it sees the pause is what the client's buffer
	 * holds over the high mark */
	flush_out();
}

static void wake(struct conn *c)
{
	if (c->suspended) {
		c->suspended = false;
		MHD_resume_connection(c->mc);
	}
}

/* ---- the back's frames -------------------------------------------------------------- */

static char *inbuf;
static size_t in_len, in_cap;

static void on_frame(json_t *j, const char *data, size_t len)
{
	json_t *idv = json_object_get(j, "id");
	if (!json_is_integer(idv))
		return; /* not for a request (the back's own notes) */
	struct conn *c = find_conn((uint32_t)json_integer_value(idv));
	if (!c)
		return; /* cancelled */
	if (c->state == C_WAIT) {
		json_t *st = json_object_get(j, "status");
		int status = json_is_integer(st) ? (int)json_integer_value(st) : 502;
		if (status < 100 || status > 599)
			status = 502;
		bool stream = json_is_true(json_object_get(j, "stream"));
		c->codec->start(&c->st, status, json_object_get(j, "body"),
				json_string_value(json_object_get(j, "type")), data, len, stream);
		c->state = C_READY;
		if (!stream)
			c->ended = true;
	} else if (json_object_get(j, "event")) {
		c->codec->event(&c->st, json_object_get(j, "event"), data, len);
		flow(c);
	} else if (json_is_true(json_object_get(j, "end"))) {
		c->codec->end(&c->st, false);
		c->ended = true;
	}
	wake(c);
}

/* The frames read so far, each handed on (and its bytes dropped) */
static void parse_back(void)
{
	size_t off = 0;
	while (in_len - off >= sizeof(struct moat_serve_frame)) {
		struct moat_serve_frame h;
		memcpy(&h, inbuf + off, sizeof(h));
		if (h.magic != MOAT_SERVE_FRAME_MAGIC || h.json_len > MOAT_SERVE_MAX_JSON ||
		    h.data_len > MOAT_SERVE_MAX_DATA)
			die("the back sent a malformed frame");
		size_t need = sizeof(h) + h.json_len + h.data_len;
		if (in_len - off < need)
			break;
		json_t *j = json_loadb(inbuf + off + sizeof(h), h.json_len, 0, NULL);
		if (!json_is_object(j))
			die("the back sent a malformed frame");
		on_frame(j, inbuf + off + sizeof(h) + h.json_len, h.data_len);
		json_decref(j);
		off += need;
	}
	memmove(inbuf, inbuf + off, in_len - off);
	in_len -= off;
}

/* What the back sent: read a piece at a time, each parsed before the
 * next is read, so that the buffer holds 1 MiB, or one frame that is
 * larger (at most a frame's limits), and a stream's bytes go to its
 * connection, where flow control sees them (flow()). */
static void read_back(void)
{
	for (int rounds = 0; rounds < 8; rounds++) {
		size_t want = 1u << 20;
		if (in_len >= sizeof(struct moat_serve_frame)) {
			struct moat_serve_frame h;
			memcpy(&h, inbuf, sizeof(h));
			if (h.json_len <= MOAT_SERVE_MAX_JSON && h.data_len <= MOAT_SERVE_MAX_DATA)
				want = MAX(want, sizeof(h) + (size_t)h.json_len + h.data_len);
		}
		if (want > in_cap) {
			char *b = realloc(inbuf, want);
			if (!b)
				die("out of memory");
			inbuf = b;
			in_cap = want;
		}
		ssize_t k = read(chan, inbuf + in_len, in_cap - in_len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0)
			die("the back is gone");
		in_len += (size_t)k;
		parse_back();
	}
}

/* ---- libmicrohttpd's callbacks ------------------------------------------------------- */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *mc)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->mc = mc;
	/* a target longer than this is refused (414), never cut */
	c->uri_too_long = uri && strlen(uri) > MAX_URI;
	c->uri = strndup(c->uri_too_long || !uri ? "" : uri, MAX_URI);
	c->codec = &moat_serve_codec_json;
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	return c;
}

static void conn_free(struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else if (conns == c)
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->uri);
	free(c->body);
	free(c->st.buf);
	free(c->st.note);
	for (unsigned i = 0; i < c->st.n_headers; i++)
		free(c->st.headers[i]);
	free(c);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn *c = *con_cls;
	if (!c)
		return;
	if (c->id && !c->ended) {
		json_t *j = json_pack("{s:I,s:s}", "id", (json_int_t)c->id, "op", "cancel");
		if (j)
			queue_frame(j, NULL, 0);
		json_decref(j);
	}
	conn_free(c);
	*con_cls = NULL;
}

/* A suspended connection is not watched by libmicrohttpd: whether its
 * client hung up, from its socket (no byte is consumed). */
static bool client_gone(struct conn *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c->mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	struct pollfd pf = {.fd = ci->connect_fd, .events = POLLRDHUP};
	return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct conn *c = cls;
	if (c->st.failed || c->gone)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (c->sent < c->st.len) {
		size_t n = MIN(max, c->st.len - c->sent);
		memcpy(buf, c->st.buf + c->sent, n);
		c->sent += n;
		/* what was sent leaves the buffer (its bound counts what waits) */
		if (c->sent == c->st.len) {
			c->sent = c->st.len = 0;
		} else if (c->sent >= (1u << 20)) {
			memmove(c->st.buf, c->st.buf + c->sent, c->st.len - c->sent);
			c->st.len -= c->sent;
			c->sent = 0;
		}
		flow(c);
		return (ssize_t)n;
	}
	if (c->ended)
		return MHD_CONTENT_READER_END_OF_STREAM;
	c->suspended = true;
	MHD_suspend_connection(c->mc);
	return 0;
}

static enum MHD_Result queue(struct conn *c, int status, const char *type, char *body, size_t len,
			     bool stream)
{
	bool close_after = c->close_after;
	struct MHD_Response *r = stream
		? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, reader, c, NULL)
		: MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		if (!stream)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type ? type : "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (close_after)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	for (unsigned i = 0; i < c->st.n_headers; i++) {
		char *colon = strchr(c->st.headers[i], ':');
		if (colon) {
			*colon = '\0';
			MHD_add_response_header(r, c->st.headers[i], colon + 1 + (colon[1] == ' '));
			*colon = ':';
		}
	}
	c->state = C_SENT;
	enum MHD_Result k = MHD_queue_response(c->mc, (unsigned)status, r);
	MHD_destroy_response(r);
	return k;
}

static enum MHD_Result queue_error(struct conn *c, int status, const char *code, const char *msg)
{
	struct moat_serve_out out = {0};
	moat_serve_reply_error(&out, status, code, "%s", msg);
	enum MHD_Result k =
		queue(c, out.status, out.content_type, TAKE_PTR(out.body), out.body_len, false);
	moat_serve_out_clear(&out);
	return k;
}

struct hdrs {
	struct moat_serve_header h[MOAT_SERVE_MAX_HEADERS];
	size_t n;
	bool over;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct hdrs *hs = cls;
	if (hs->n >= MOAT_SERVE_MAX_HEADERS) {
		hs->over = true;
		return MHD_NO;
	}
	hs->h[hs->n++] = (struct moat_serve_header){key, value ? value : ""};
	return MHD_YES;
}

/* The bearer token: "" if none; NULL if malformed. */
static const char *bearer(const char *auth)
{
	if (!auth)
		return "";
	if (strncasecmp(auth, "Bearer ", 7) != 0)
		return NULL;
	const char *t = auth + 7;
	size_t n = strlen(t);
	if (n == 0 || n > MOAT_SERVE_MAX_TOKEN)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e)
			return NULL;
	return t;
}

static enum MHD_Result dispatch(struct conn *c, const char *method)
{
	struct hdrs hs = {.n = 0};
	MHD_get_connection_values(c->mc, MHD_HEADER_KIND, collect_header, &hs);
	if (hs.over)
		return queue_error(c, 431, "bad_request", "too many header fields");
	/* Ambiguous framing (request smuggling through an intermediary): a
	 * body length given twice, or both ways, is refused, and nothing more
	 * is read from the connection. */
	unsigned n_cl = 0, n_te = 0;
	for (size_t i = 0; i < hs.n; i++) {
		n_cl += strcasecmp(hs.h[i].name, "Content-Length") == 0;
		n_te += strcasecmp(hs.h[i].name, "Transfer-Encoding") == 0;
	}
	if (n_cl > 1 || n_te > 1 || (n_cl && n_te)) {
		c->close_after = true;
		return queue_error(c, 400, "bad_request",
				   "the body's length is given more than once (Content-Length, "
				   "Transfer-Encoding)");
	}
	char *q = strchr(c->uri, '?');
	if (q)
		*q++ = '\0';
	struct moat_serve_http_req rq = {.method = method,
					 .path = c->uri,
					 .query = q ? q : "",
					 .headers = hs.h,
					 .n_headers = hs.n,
					 .body = c->body ? c->body : "",
					 .body_len = c->len};
	struct moat_serve_out out = {0};
	/* NULL (malformed): the route table refuses it, but on the routes that
	 * take their credential from other headers (E2B's) */
	const char *token = bearer(moat_serve_header(&rq, "Authorization"));
	moat_serve_dispatch(&rq, token, &out, &c->route);
	if (c->route && c->route->codec)
		c->codec = c->route->codec;
	if (out.status) {
		enum MHD_Result k = queue(c, out.status, out.content_type, TAKE_PTR(out.body),
					  out.body_len, false);
		moat_serve_out_clear(&out);
		return k;
	}
	if (++next_id == 0)
		next_id = 1;
	c->id = next_id;
	json_object_set_new(out.fwd, "id", json_integer(c->id));
	queue_frame(out.fwd, out.fwd_data, out.fwd_len);
	c->st.note = TAKE_PTR(out.note);
	moat_serve_out_clear(&out);
	/* the body was copied into the frame */
	free(c->body);
	c->body = NULL;
	c->len = c->cap = 0;
	c->state = C_WAIT;
	c->suspended = true;
	MHD_suspend_connection(c->mc);
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct conn *c = *con_cls;
	if (!c)
		return MHD_NO;
	switch (c->state) {
	case C_BODY:
		if (!c->headers_seen) {
			/* the first call: headers only; the body (if any) follows */
			c->headers_seen = true;
			return MHD_YES;
		}
		if (*upload_size) {
			if (!c->too_big && c->len + *upload_size > MOAT_SERVE_MAX_BODY) {
				c->too_big = true;
				free(c->body);
				c->body = NULL;
				c->len = c->cap = 0;
			}
			if (!c->too_big) {
				if (c->len + *upload_size > c->cap) {
					size_t cap = MAX(c->cap * 2, c->len + *upload_size + 1);
					cap = MIN(cap, (size_t)MOAT_SERVE_MAX_BODY + 1);
					char *b = realloc(c->body, cap);
					if (!b)
						return MHD_NO;
					c->body = b;
					c->cap = cap;
				}
				memcpy(c->body + c->len, upload, *upload_size);
				c->len += *upload_size;
			}
			*upload_size = 0;
			return MHD_YES;
		}
		if (c->too_big)
			return queue_error(c, 413, "payload_too_large",
					   "the body is larger than 16 MiB");
		if (c->uri_too_long)
			return queue_error(c, 414, "bad_request",
					   "the request target is longer than 8192 bytes");
		return dispatch(c, method);
	case C_WAIT:
		if (c->gone)
			return MHD_NO; /* the client hung up: the connection is closed */
		c->suspended = true;
		MHD_suspend_connection(c->mc);
		return MHD_YES;
	case C_READY: {
		bool stream = c->st.streaming || !c->ended;
		if (stream)
			return queue(c, c->st.status, c->st.content_type, NULL, 0, true);
		char *b = TAKE_PTR(c->st.buf);
		size_t n = c->st.len;
		c->st.len = c->st.cap = 0;
		if (c->st.failed) {
			free(b);
			return MHD_NO;
		}
		return queue(c, c->st.status, c->st.content_type, b ? b : strdup(""), b ? n : 0,
			     false);
	}
	case C_SENT:
		return MHD_YES;
	}
	return MHD_NO;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	/* libmicrohttpd's own diagnostics: dropped (the client's bytes may be
	 * in them; the front has no log of its own) */
}

/* ---- the process --------------------------------------------------------------------- */

static int front_rules(scmp_filter_ctx ctx, void *userdata)
{
	/* Accepting on the listening sockets it holds; no new socket of any
	 * kind, but with TLS the anonymous AF_UNIX pair per connection that
	 * carries its plaintext to libmicrohttpd (connected to nothing else,
	 * and it can name no address). */
	if (!*(const bool *)userdata)
		return 0;
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
				SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
}

static int install_seccomp(bool tls)
{
	static const int allow[] = {
		SCMP_SYS(poll),	       SCMP_SYS(ppoll),	       SCMP_SYS(epoll_wait),
		SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),    SCMP_SYS(accept4),
		SCMP_SYS(accept),      SCMP_SYS(recvfrom),     SCMP_SYS(sendto),
		SCMP_SYS(recvmsg),     SCMP_SYS(sendmsg),      SCMP_SYS(shutdown),
		SCMP_SYS(setsockopt),  SCMP_SYS(getsockopt),   SCMP_SYS(getsockname),
		SCMP_SYS(getpeername), SCMP_SYS(fcntl),	       SCMP_SYS(writev),
		SCMP_SYS(readv),       SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday),
		SCMP_SYS(time),	       SCMP_SYS(sched_yield),  SCMP_SYS(ioctl),
	};
	return moat_confine_seccomp(allow, ELEMENTSOF(allow), front_rules, &tls);
}

static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t k = read(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* A daemon on listener fd; fd < 0: without a listener (the TLS side, whose
 * connections tls.c adds). */
static struct MHD_Daemon *start_daemon(int fd)
{
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
		(fd < 0 ? MHD_USE_NO_LISTEN_SOCKET : 0);
	struct MHD_OptionItem o[] = {
		{MHD_OPTION_CONNECTION_LIMIT, MOAT_SERVE_MAX_CONNS, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, 600, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, 128 * 1024, NULL},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL},
		{MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL},
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL},
		{fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_END, fd, NULL},
		{MHD_OPTION_END, 0, NULL},
	};
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_ARRAY, o,
				MHD_OPTION_END);
}

int main(int argc, char **argv)
{
	struct stat st;
	int k;

	if (argc != 1)
		die("internal to moat serve");
	if (syscall(SYS_close_range, MOAT_SERVE_FRONT_FD_TCP + 1, ~0U, 0) < 0 ||
	    fstat(MOAT_SERVE_FRONT_FD_CHAN, &st) < 0 || !S_ISSOCK(st.st_mode))
		die("descriptors: not started by moat serve");
	if (getppid() == 1)
		_exit(MOAT_SERVE_FRONT_EXIT);
	if ((k = moat_confine_drop_root()) < 0)
		die("identity: cannot drop root");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die("dumpable");
	signal(SIGPIPE, SIG_IGN);
	json_object_seed(0);

	/* the back's configuration frame (blocking read, before anything else) */
	struct moat_serve_frame h;
	if (read_exact(chan, &h, sizeof(h)) < 0 || h.magic != MOAT_SERVE_FRAME_MAGIC ||
	    h.json_len > MOAT_SERVE_MAX_JSON || h.data_len > (1u << 20))
		die("no configuration from the back");
	char *cfg = malloc((size_t)h.json_len + h.data_len + 2);
	if (!cfg || read_exact(chan, cfg, (size_t)h.json_len + h.data_len) < 0)
		die("no configuration from the back");
	json_t *j = json_loadb(cfg, h.json_len, 0, NULL);
	bool tls = json_is_true(json_object_get(j, "tls"));
	size_t cert_len = (size_t)json_integer_value(json_object_get(j, "cert_len"));
	size_t key_len = (size_t)json_integer_value(json_object_get(j, "key_len"));
	bool have_unix = json_is_true(json_object_get(j, "unix"));
	bool have_tcp = json_is_true(json_object_get(j, "tcp"));
	moat_serve_routes_enable_e2b(json_is_true(json_object_get(j, "e2b")));
	json_decref(j);
	if (tls && (cert_len + key_len != h.data_len || !have_tcp))
		die("configuration: TLS material");
	char *cert = NULL, *key = NULL;
	if (tls) {
		cert = strndup(cfg + h.json_len, cert_len);
		key = strndup(cfg + h.json_len + cert_len, key_len);
		if (!cert || !key)
			die("out of memory");
	}
	explicit_bzero(cfg, (size_t)h.json_len + h.data_len);
	free(cfg);

	/* Descriptors: the unix daemon's 512 connections, and per TLS
	 * connection its TCP socket and both ends of its socketpair. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)4096);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct MHD_Daemon *du = have_unix ? start_daemon(MOAT_SERVE_FRONT_FD_UNIX) : NULL;
	struct MHD_Daemon *dt = have_tcp ? start_daemon(tls ? -1 : MOAT_SERVE_FRONT_FD_TCP) : NULL;
	if ((have_unix && !du) || (have_tcp && !dt))
		die("libmicrohttpd did not start");
	struct moat_front_tls *tt = NULL;
	if (tls) {
		char why[300];
		k = moat_front_tls_new(MOAT_SERVE_FRONT_FD_TCP, dt, cert, cert_len, key, key_len,
				       &tt, why, sizeof(why));
		explicit_bzero(key, key_len);
		if (k < 0)
			die(why);
	}
	free(key);
	free(cert);
	if (fcntl(chan, F_SETFL, O_NONBLOCK) < 0)
		die("channel");

	char fds[512], line[700];
	if (moat_fdset_describe(fds, sizeof(fds)) < 0)
		die("descriptors");
	for (char *p = fds; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
	unsigned uid = (unsigned)getuid();
	if (install_seccomp(tls) < 0)
		die("seccomp");
	k = snprintf(line, sizeof(line),
		     "moat serve: front %d (uid %u) serves: fds %s, seccomp on\n", (int)getpid(),
		     uid, fds);
	if (k > 0)
		(void)!write(STDERR_FILENO, line, MIN((size_t)k, sizeof(line) - 1));
	/* the back reports the server ready only after this */
	json_t *ready = json_pack("{s:s}", "op", "ready");
	if (!ready)
		die("out of memory");
	queue_frame(ready, NULL, 0);
	json_decref(ready);
	flush_out();

	time_t last_sweep = 0;
	static struct pollfd pf[3 + MOAT_FRONT_TLS_POLLFDS];
	for (;;) {
		unsigned n = 0;
		pf[n++] = (struct pollfd){.fd = chan, .events = POLLIN | (outq_len ? POLLOUT : 0)};
		struct MHD_Daemon *ds[2] = {du, dt};
		unsigned nd = 0;
		MHD_UNSIGNED_LONG_LONG tmo = 0, t;
		int timeout = -1;
		for (unsigned i = 0; i < 2; i++) {
			if (!ds[i])
				continue;
			const union MHD_DaemonInfo *di =
				MHD_get_daemon_info(ds[i], MHD_DAEMON_INFO_EPOLL_FD);
			pf[n++] = (struct pollfd){.fd = di->epoll_fd, .events = POLLIN};
			nd++;
			if (MHD_get_timeout(ds[i], &t) == MHD_YES && (timeout < 0 || t < tmo)) {
				tmo = t;
				timeout = (int)MIN(t, 60000ull);
			}
		}
		/* A suspended connection's client is not watched by
		 * libmicrohttpd: once a second, the suspended ones are checked
		 * for a client that hung up (then closed: its request is
		 * cancelled, a command it runs is killed) */
		if (timeout < 0 || timeout > 1000)
			timeout = 1000;
		unsigned tls_at = n;
		if (tt)
			n += moat_front_tls_poll(tt, pf + tls_at, &timeout);
		k = poll(pf, n, timeout);
		if (k < 0 && errno != EINTR)
			die("poll");
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec != last_sweep) {
			last_sweep = now.tv_sec;
			for (struct conn *c = conns; c; c = c->next)
				if (c->state != C_BODY && !c->ended && c->suspended &&
				    client_gone(c)) {
					c->gone = true;
					wake(c);
				}
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_back();
		if (tt)
			moat_front_tls_run(tt, pf + tls_at);
		for (unsigned i = 0; i < 2; i++)
			if (ds[i])
				MHD_run(ds[i]);
		flush_out();
	}
}
