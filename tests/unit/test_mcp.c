/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat mcp`: the supervisor's second check of the front's records
 * (moat_mcp_req_parse: a well-formed record passes, each malformed variant
 * is refused) and the front's validation (a bad call sends nothing to the
 * supervisor, a good one sends exactly its record; an answer becomes the
 * JSON-RPC result). Each test runs in its own forked child. */
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/tap.h"
#include "mcp/mcp_front.h"
#include "mcp/mcp_proto.h"
#include "shared/macro.h"

struct rec {
	struct moat_mcp_req h;
	char pay[512];
	size_t len;
};

/* A run of "sh -c true" in /tmp, well formed. */
static void good_run(struct rec *r)
{
	static const char args[] = "sh\0-c\0true";
	memset(r, 0, sizeof(*r));
	r->h = (struct moat_mcp_req){
		.magic = MOAT_MCP_REQ_MAGIC, .op = MOAT_MCP_OP_RUN, .n_args = 3};
	memcpy(r->pay, args, sizeof(args));
	r->h.args_len = sizeof(args);
	memcpy(r->pay + sizeof(args), "/tmp", 4);
	r->h.cwd_len = 4;
	r->len = sizeof(args) + 4;
}

static void good_read(struct rec *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->h = (struct moat_mcp_req){.magic = MOAT_MCP_REQ_MAGIC, .op = MOAT_MCP_OP_READ_FILE};
	r->h.path_len = (uint32_t)strlen(path);
	memcpy(r->pay, path, r->h.path_len);
	r->len = r->h.path_len;
}

static int parse(struct rec *r)
{
	static struct moat_mcp_call c;
	size_t len;
	int k = moat_mcp_req_head_check(&r->h, &len);
	if (k < 0)
		return k;
	if (len != r->len)
		return -EFAULT; /* the test's own mistake */
	return moat_mcp_req_parse(&r->h, r->pay, &c);
}

TEST(mcp_record_well_formed)
{
	struct rec r;
	static struct moat_mcp_call c;
	size_t len;
	good_run(&r);
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), 0);
	ASSERT_EQ(moat_mcp_req_parse(&r.h, r.pay, &c), 0);
	ASSERT_STREQ(c.argv[0], "sh");
	ASSERT_STREQ(c.argv[2], "true");
	ASSERT_TRUE(c.argv[3] == NULL);
	ASSERT_STREQ(c.cwd, "/tmp");
	good_read(&r, "/etc/hostname");
	ASSERT_EQ(parse(&r), 0);
}

TEST(mcp_record_malformed_is_refused)
{
	struct rec r;
	good_run(&r);
	r.h.n_args = 2; /* three strings */
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.n_args = 4;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.pay[r.h.args_len - 1] = 'x'; /* the last argument not terminated */
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.pay[0] = 0; /* argv[0] empty: one more string */
	r.pay[1] = 0;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.pay[r.h.args_len] = 't'; /* a relative cwd */
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.op = 0;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.op = MOAT_MCP_OP_MAX_;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.has_stdin = 2;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.timeout_ms = MOAT_MCP_MAX_TIMEOUT_MS + 1;
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.op = MOAT_MCP_OP_READ_FILE; /* a file op with arguments */
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_run(&r);
	r.h.op = MOAT_MCP_OP_CREATE; /* create takes nothing */
	ASSERT_EQ(parse(&r), -EBADMSG);

	good_read(&r, "relative");
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_read(&r, "/a\1b");
	r.pay[2] = 0; /* a NUL inside the path */
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_read(&r, "/x");
	r.h.data_len = 1; /* data on a read */
	r.pay[r.len++] = 'd';
	ASSERT_EQ(parse(&r), -EBADMSG);
	good_read(&r, "/x");
	r.h.op = MOAT_MCP_OP_WRITE_FILE; /* the same with write: data is its content */
	r.h.data_len = 1;
	r.pay[r.len++] = 'd';
	ASSERT_EQ(parse(&r), 0);

	/* the header's lengths: the stream cannot be framed */
	size_t len;
	good_run(&r);
	r.h.magic ^= 1;
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), -EBADMSG);
	good_run(&r);
	r.h.data_len = MOAT_MCP_MAX_DATA + 1;
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), -EBADMSG);
	good_run(&r);
	r.h.path_len = MOAT_MCP_MAX_PATH + 1;
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), -EBADMSG);
	good_run(&r);
	r.h.args_len = MOAT_MCP_MAX_ARGV_BYTES + 1;
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), -EBADMSG);
	good_run(&r);
	r.h.n_args = MOAT_MCP_MAX_ARGS + 1;
	ASSERT_EQ(moat_mcp_req_head_check(&r.h, &len), -EBADMSG);
}

/* ---- the front ------------------------------------------------------------ */

struct fx {
	struct moat_mcp_front *f;
	int out_r, out_w,
		sup; /* the client's read end, the front's write end, the supervisor's end */
	int sock;
};

static void fx_open(struct fx *x)
{
	int p[2], sv[2];
	if (pipe2(p, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	x->out_r = p[0];
	x->out_w = p[1];
	x->sup = sv[0];
	x->sock = sv[1];
	fcntl(x->out_r, F_SETFL, O_NONBLOCK);
	fcntl(x->sup, F_SETFL, O_NONBLOCK);
	x->f = moat_mcp_front_new(x->out_w, x->sock);
	if (!x->f)
		abort();
}

/* The next JSON-RPC line the front wrote. */
static json_t *fx_out(struct fx *x)
{
	static char buf[1 << 16];
	ssize_t n = read(x->out_r, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	return json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL);
}

static void fx_line(struct fx *x, const char *s)
{
	moat_mcp_front_feed(x->f, s, strlen(s));
	moat_mcp_front_feed(x->f, "\n", 1);
}

static bool fx_sent(struct fx *x)
{
	struct pollfd pf = {.fd = x->sup, .events = POLLIN};
	return poll(&pf, 1, 0) == 1;
}

static int error_code(json_t *m)
{
	return (int)json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
}

TEST(mcp_front_refuses_without_sending)
{
	struct fx x;
	fx_open(&x);
	static const char *const bad[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"run\","
		"\"arguments\":{\"argv\":[\"true\"],\"allow_host\":\"x.test\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"run\","
		"\"arguments\":{\"argv\":[]}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\","
		"\"arguments\":{\"path\":\"etc/passwd\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"write_file\","
		"\"arguments\":{\"path\":\"/x\",\"content\":\"@@\",\"encoding\":\"base64\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"run\","
		"\"arguments\":{\"argv\":[\"true\"],\"timeout_ms\":0}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"destroy_sandbox\","
		"\"arguments\":{}}}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		fx_line(&x, bad[i]);
		json_t *m = fx_out(&x);
		ASSERT_TRUE(m != NULL);
		ASSERT_EQ(error_code(m), -32602);
		ASSERT_EQ(json_integer_value(json_object_get(m, "id")), (json_int_t)(i + 1));
		json_decref(m);
		ASSERT_TRUE(!fx_sent(&x));
	}
	ASSERT_EQ(moat_mcp_front_pending(x.f), 0u);
	moat_mcp_front_free(x.f);
}

TEST(mcp_front_sends_the_record_and_answers)
{
	struct fx x;
	fx_open(&x);
	/* positive control: a good call reaches the supervisor as its record */
	fx_line(&x,
		"{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"run\",\"arguments\":{\"shell\":\"echo hi\",\"cwd\":\"/tmp\"}}}");
	ASSERT_TRUE(fx_sent(&x));
	ASSERT_EQ(moat_mcp_front_pending(x.f), 1u);
	struct moat_mcp_req q;
	char pay[256];
	ASSERT_EQ(read(x.sup, &q, sizeof(q)), (ssize_t)sizeof(q));
	ASSERT_EQ(q.magic, MOAT_MCP_REQ_MAGIC);
	ASSERT_EQ(q.op, (uint32_t)MOAT_MCP_OP_RUN);
	ASSERT_EQ(q.n_args, 3u);
	size_t len;
	ASSERT_EQ(moat_mcp_req_head_check(&q, &len), 0);
	ASSERT_EQ(read(x.sup, pay, len), (ssize_t)len);
	static struct moat_mcp_call c;
	ASSERT_EQ(moat_mcp_req_parse(&q, pay, &c), 0);
	ASSERT_STREQ(c.argv[2], "echo hi");
	ASSERT_STREQ(c.cwd, "/tmp");
	/* the answer, with bytes that are not UTF-8 in stdout, and a denial
	 * after an odd number of bytes (the arrays are not aligned in the
	 * payload: the sanitizer build checks they are read as such) */
	struct moat_mcp_resp h = {.magic = MOAT_MCP_RESP_MAGIC,
				  .seq = q.seq,
				  .exit_code = 0,
				  .out_len = 4,
				  .err_len = 1,
				  .n_denied = 1};
	struct moat_mcp_denied d = {
		.count = 2, .dest = "x.test:443", .rule = "--allow-host x.test"};
	snprintf(h.run_id, sizeof(h.run_id), "abc");
	ASSERT_EQ(write(x.sup, &h, sizeof(h)), (ssize_t)sizeof(h));
	ASSERT_EQ(write(x.sup, "hi\xff\ne", 5), 5);
	ASSERT_EQ(write(x.sup, &d, sizeof(d)), (ssize_t)sizeof(d));
	ASSERT_EQ(moat_mcp_front_answer(x.f), 0);
	json_t *m = fx_out(&x);
	ASSERT_TRUE(m != NULL);
	ASSERT_STREQ(json_string_value(json_object_get(m, "id")), "r1");
	json_t *sc = json_object_get(json_object_get(m, "result"), "structuredContent");
	ASSERT_STREQ(json_string_value(json_object_get(sc, "stdout")), "hi\xef\xbf\xbd\n");
	ASSERT_STREQ(json_string_value(json_object_get(sc, "run_id")), "abc");
	json_t *den = json_array_get(json_object_get(sc, "denied"), 0);
	ASSERT_STREQ(json_string_value(json_object_get(den, "rule")), "--allow-host x.test");
	ASSERT_EQ(json_integer_value(json_object_get(den, "count")), 2);
	ASSERT_EQ(moat_mcp_front_pending(x.f), 0u);
	json_decref(m);
	/* an answer for no call (or the wrong one): refused */
	ASSERT_EQ(write(x.sup, &h, sizeof(h)), (ssize_t)sizeof(h));
	ASSERT_EQ(moat_mcp_front_answer(x.f), -EBADMSG);
	moat_mcp_front_free(x.f);
}

TEST(mcp_front_cancel)
{
	struct fx x;
	struct moat_mcp_req q;
	fx_open(&x);
	fx_line(&x,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"run\",\"arguments\":{\"argv\":[\"sleep\",\"9\"]}}}");
	fx_line(&x,
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"list_dir\",\"arguments\":{\"path\":\"/\"}}}");
	ASSERT_EQ(moat_mcp_front_pending(x.f), 2u);
	char pay[64];
	ASSERT_EQ(read(x.sup, &q, sizeof(q)), (ssize_t)sizeof(q));
	ASSERT_EQ(read(x.sup, pay, q.args_len), (ssize_t)q.args_len);
	uint32_t seq = q.seq;
	ASSERT_TRUE(!fx_sent(&x)); /* one call at a time */
	/* the waiting one: dropped, never sent; the running one: a cancel record */
	fx_line(&x,
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
		"{\"requestId\":2}}");
	ASSERT_TRUE(!fx_sent(&x));
	fx_line(&x,
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
		"{\"requestId\":1}}");
	ASSERT_EQ(read(x.sup, &q, sizeof(q)), (ssize_t)sizeof(q));
	ASSERT_EQ(q.op, (uint32_t)MOAT_MCP_OP_CANCEL);
	ASSERT_EQ(q.seq, seq);
	/* its answer is swallowed, and nothing follows */
	struct moat_mcp_resp h = {.magic = MOAT_MCP_RESP_MAGIC, .seq = seq, .exit_code = 137};
	ASSERT_EQ(write(x.sup, &h, sizeof(h)), (ssize_t)sizeof(h));
	ASSERT_EQ(moat_mcp_front_answer(x.f), 0);
	ASSERT_TRUE(fx_out(&x) == NULL);
	ASSERT_TRUE(!fx_sent(&x));
	ASSERT_EQ(moat_mcp_front_pending(x.f), 0u);
	moat_mcp_front_free(x.f);
}
