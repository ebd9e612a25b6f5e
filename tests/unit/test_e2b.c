/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat serve --e2b`: the Connect codec (envelopes, end of stream, error
 * codes, content types) and the E2B mapping (routes, the strict check of
 * each request body, upload bodies, the answers' JSON). Each well-formed
 * case is next to the variants that must be refused. */
#include <jansson.h>
#include <signal.h>
#include <string.h>

#include "harness/tap.h"
#include "api/serve_connect.h"
#include "api/serve_e2b.h"
#include "shared/macro.h"

TEST(connect_envelope_roundtrip)
{
	size_t n;
	const char *msg;
	size_t ml;
	_cleanup_free_ char *e = moat_connect_envelope(0, "{\"a\":1}", 7, &n);
	ASSERT_TRUE(e != NULL);
	ASSERT_EQ(n, 12);
	ASSERT_EQ((unsigned char)e[0], 0);
	ASSERT_EQ((unsigned char)e[4], 7);
	ASSERT_EQ(moat_connect_unenvelope(e, n, &msg, &ml), 0);
	ASSERT_EQ(ml, 7);
	ASSERT_TRUE(memcmp(msg, "{\"a\":1}", 7) == 0);
	/* one byte short, one byte more, a second envelope: refused */
	ASSERT_EQ(moat_connect_unenvelope(e, n - 1, &msg, &ml), -EBADMSG);
	char two[32];
	memcpy(two, e, n);
	memcpy(two + n, e, 5);
	ASSERT_EQ(moat_connect_unenvelope(two, n + 5, &msg, &ml), -EBADMSG);
	ASSERT_EQ(moat_connect_unenvelope(e, 4, &msg, &ml), -EBADMSG);
	/* compressed or end-of-stream flags from the client: refused */
	e[0] = MOAT_CONNECT_FLAG_COMPRESSED;
	ASSERT_EQ(moat_connect_unenvelope(e, n, &msg, &ml), -EBADMSG);
	e[0] = MOAT_CONNECT_FLAG_END;
	ASSERT_EQ(moat_connect_unenvelope(e, n, &msg, &ml), -EBADMSG);
	/* a length over the limit, even if the bytes were there */
	uint8_t big[5];
	moat_connect_envelope_head(0, MOAT_CONNECT_MAX_MSG + 1, big);
	ASSERT_EQ(moat_connect_unenvelope(big, 5, &msg, &ml), -EBADMSG);
	ASSERT_EQ(big[1], 0);
	ASSERT_EQ(big[2], 0x10);
}

TEST(connect_end_stream_and_errors)
{
	size_t n;
	_cleanup_free_ char *ok = moat_connect_end_stream(MOAT_CONNECT_OK, NULL, &n);
	ASSERT_TRUE(ok != NULL);
	ASSERT_EQ(n, 7);
	ASSERT_EQ((unsigned char)ok[0], MOAT_CONNECT_FLAG_END);
	ASSERT_TRUE(memcmp(ok + 5, "{}", 2) == 0);
	_cleanup_free_ char *err =
		moat_connect_end_stream(MOAT_CONNECT_NOT_FOUND, "no \"such\" process", &n);
	ASSERT_TRUE(err != NULL);
	_cleanup_free_ char *body = strndup(err + 5, n - 5);
	ASSERT_STREQ(body,
		     "{\"error\":{\"code\":\"not_found\",\"message\":\"no \\\"such\\\" "
		     "process\"}}");
	/* a message that is not UTF-8 still gives valid JSON */
	_cleanup_free_ char *u = moat_connect_error_json(MOAT_CONNECT_INTERNAL, "bad \xff byte");
	ASSERT_TRUE(u != NULL);
	json_t *j = json_loads(u, 0, NULL);
	ASSERT_TRUE(j != NULL);
	ASSERT_STREQ(json_string_value(json_object_get(j, "code")), "internal");
	json_decref(j);
	ASSERT_EQ(moat_connect_code_http(MOAT_CONNECT_NOT_FOUND), 404);
	ASSERT_EQ(moat_connect_code_http(MOAT_CONNECT_UNAUTHENTICATED), 401);
	ASSERT_EQ(moat_connect_code_http(MOAT_CONNECT_INVALID_ARGUMENT), 400);
	ASSERT_EQ(moat_connect_code_http(MOAT_CONNECT_UNIMPLEMENTED), 501);
	ASSERT_EQ(moat_connect_code_from_errno(-ENOENT), MOAT_CONNECT_NOT_FOUND);
	ASSERT_EQ(moat_connect_code_from_errno(-EOPNOTSUPP), MOAT_CONNECT_UNIMPLEMENTED);
	ASSERT_TRUE(moat_connect_code_name(MOAT_CONNECT_OK) == NULL);
	ASSERT_TRUE(moat_connect_code_name(MOAT_CONNECT_CODE_MAX_) == NULL);
}

TEST(connect_content_type_and_timeout)
{
	bool st = true;
	ASSERT_EQ(moat_connect_content_type("application/json", &st), 0);
	ASSERT_TRUE(!st);
	ASSERT_EQ(moat_connect_content_type("application/connect+json", &st), 0);
	ASSERT_TRUE(st);
	ASSERT_EQ(moat_connect_content_type("application/json; charset=utf-8", &st), 0);
	ASSERT_EQ(moat_connect_content_type("application/connect+proto", &st), -EPROTONOSUPPORT);
	ASSERT_EQ(moat_connect_content_type("application/jsonx", &st), -EINVAL);
	ASSERT_EQ(moat_connect_content_type("application/json; charset=latin1", &st), -EINVAL);
	ASSERT_EQ(moat_connect_content_type(NULL, &st), -EINVAL);
	uint64_t ms;
	ASSERT_EQ(moat_connect_timeout_ms("60000", &ms), 0);
	ASSERT_EQ(ms, 60000);
	ASSERT_EQ(moat_connect_timeout_ms("", &ms), -EINVAL);
	ASSERT_EQ(moat_connect_timeout_ms("12345678901", &ms), -EINVAL);
	ASSERT_EQ(moat_connect_timeout_ms("-1", &ms), -EINVAL);
}

TEST(e2b_routes)
{
	struct moat_e2b_target t;
	ASSERT_EQ(moat_e2b_route("POST", "/v2/sandboxes", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_CREATE);
	ASSERT_TRUE(!t.envd);
	ASSERT_EQ(moat_e2b_route("DELETE", "/sandboxes/abc-123_x", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_KILL);
	ASSERT_STREQ(t.sandbox, "abc-123_x");
	ASSERT_EQ(moat_e2b_route("GET", "/sandboxes/abc", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_INFO);
	ASSERT_EQ(moat_e2b_route("POST", "/sandboxes/abc/pause", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_REST_UNSUPPORTED);
	ASSERT_EQ(moat_e2b_route("POST", "/v2/sandboxes/abc/connect", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_CONNECT);
	ASSERT_STREQ(t.sandbox, "abc");
	ASSERT_EQ(moat_e2b_route("POST", "/v2/sandboxes/abc/fork", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_REST_UNSUPPORTED);
	ASSERT_EQ(moat_e2b_route("GET", "/sandboxes/../x", &t), -EINVAL);
	ASSERT_EQ(moat_e2b_route("GET", "/sandboxes/", &t), -EINVAL);
	ASSERT_EQ(moat_e2b_route("PUT", "/sandboxes/abc", &t), -EBADRQC);
	ASSERT_EQ(moat_e2b_route("POST", "/process.Process/Start", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_PROC_START);
	ASSERT_TRUE(t.envd && t.stream && t.rpc);
	ASSERT_EQ(moat_e2b_route("POST", "/process.Process/List", &t), 0);
	ASSERT_TRUE(!t.stream);
	ASSERT_EQ(moat_e2b_route("POST", "/process.Process/StreamInput", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_RPC_UNSUPPORTED);
	ASSERT_EQ(moat_e2b_route("GET", "/process.Process/Start", &t), -EBADRQC);
	ASSERT_EQ(moat_e2b_route("POST", "/filesystem.Filesystem/ListDir", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_FS_LIST);
	ASSERT_EQ(moat_e2b_route("GET", "/files", &t), 0);
	ASSERT_EQ(t.route, MOAT_E2B_FILES_GET);
	ASSERT_EQ(moat_e2b_route("GET", "/health", &t), 0);
	ASSERT_EQ(moat_e2b_route("GET", "/v1/sandboxes", &t), -ENOENT);
	ASSERT_EQ(moat_e2b_route("GET", "/", &t), -ENOENT);
}

#define S(x) x, strlen(x)

TEST(e2b_create_strict)
{
	struct moat_e2b_create c;
	struct moat_e2b_bad b;
	ASSERT_EQ(moat_e2b_parse_create(
			  S("{\"templateID\":\"base\",\"timeout\":300,\"envVars\":{\"A\":\"1\"},"
			    "\"metadata\":{\"k\":\"v\"},\"allow_internet_access\":false}"),
			  &c, &b),
		  0);
	ASSERT_EQ(c.timeout_s, 300);
	ASSERT_EQ(c.internet, 0);
	ASSERT_EQ(c.n_env, 1);
	ASSERT_STREQ(c.env[0], "A=1");
	moat_e2b_create_done(&c);
	ASSERT_EQ(moat_e2b_parse_create(S("{}"), &c, &b), 0);
	ASSERT_EQ(c.internet, -1);
	moat_e2b_create_done(&c);
	/* each refused, with the field named */
	ASSERT_EQ(moat_e2b_parse_create(S("{\"templateID\":\"python\"}"), &c, &b), -EOPNOTSUPP);
	ASSERT_CONTAINS(b.msg, "template");
	ASSERT_EQ(moat_e2b_parse_create(S("{\"autoPause\":true}"), &c, &b), -EOPNOTSUPP);
	ASSERT_CONTAINS(b.msg, "autoPause");
	ASSERT_EQ(moat_e2b_parse_create(S("{\"network\":{\"allowOut\":[\"x\"]}}"), &c, &b),
		  -EOPNOTSUPP);
	ASSERT_CONTAINS(b.msg, "network");
	ASSERT_EQ(moat_e2b_parse_create(S("{\"volumeMounts\":[]}"), &c, &b), -EOPNOTSUPP);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"policy\":{}}"), &c, &b), -EINVAL);
	ASSERT_CONTAINS(b.msg, "policy");
	ASSERT_EQ(moat_e2b_parse_create(S("{\"timeout\":-1}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"timeout\":86401}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"timeout\":\"1\"}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"envVars\":{\"A=B\":\"1\"}}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"envVars\":{\"A\":1}}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"envVars\":{\"A\":\"x\\u0000y\"}}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{\"timeout\":1,\"timeout\":2}"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("[]"), &c, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_create(S("{"), &c, &b), -EINVAL);
}

TEST(e2b_start_strict)
{
	struct moat_e2b_start s;
	struct moat_e2b_bad b;
	ASSERT_EQ(
		moat_e2b_parse_start(
			S("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"],"
			  "\"envs\":{\"X\":\"y\"},\"cwd\":\"/tmp\"},\"stdin\":false,\"tag\":\"t1\"}"),
			&s, &b),
		0);
	ASSERT_EQ(s.n_args, 4);
	ASSERT_STREQ(s.argv[0], "/bin/bash");
	ASSERT_STREQ(s.argv[3], "echo hi");
	ASSERT_TRUE(s.argv[4] == NULL);
	ASSERT_STREQ(s.env[0], "X=y");
	ASSERT_STREQ(s.cwd, "/tmp");
	ASSERT_STREQ(s.tag, "t1");
	ASSERT_TRUE(!s.stdin_open);
	moat_e2b_start_done(&s);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"true\"}}"), &s, &b), 0);
	ASSERT_TRUE(s.cwd == NULL);
	moat_e2b_start_done(&s);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\"},\"pty\":{\"size\":{}}}"),
				       &s, &b),
		  -EOPNOTSUPP);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{}}"), &s, &b), -EINVAL);
	ASSERT_EQ(
		moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\",\"user\":\"root\"}}"), &s, &b),
		-EINVAL);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\",\"cwd\":\"tmp\"}}"), &s, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\",\"cwd\":\"/a/../b\"}}"), &s,
				       &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\",\"args\":[1]}}"), &s, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"sh\",\"args\":\"x\"}}"), &s, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_start(S("{\"process\":{\"cmd\":\"s\\u0000h\"}}"), &s, &b),
		  -EINVAL);
	/* 257 arguments */
	char big[2048] = "{\"process\":{\"cmd\":\"sh\",\"args\":[";
	for (int i = 0; i < 257; i++)
		strcat(big, i ? ",\"\"" : "\"\"");
	strcat(big, "]}}");
	ASSERT_EQ(moat_e2b_parse_start(S(big), &s, &b), -EINVAL);
}

TEST(e2b_proc_calls)
{
	struct moat_e2b_proc_call p;
	struct moat_e2b_bad b;
	ASSERT_EQ(moat_e2b_parse_proc_call(
			  MOAT_E2B_PROC_SIGNAL,
			  S("{\"process\":{\"pid\":7},\"signal\":\"SIGNAL_SIGKILL\"}"), &p, &b),
		  0);
	ASSERT_EQ(p.pid, 7);
	ASSERT_EQ(p.signal, SIGKILL);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_SIGNAL,
					   S("{\"process\":{\"pid\":7},\"signal\":15}"), &p, &b),
		  0);
	ASSERT_EQ(p.signal, SIGTERM);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_SIGNAL,
					   S("{\"process\":{\"pid\":7},\"signal\":1}"), &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT,
					   S("{\"process\":{\"tag\":\"x\"}}"), &p, &b),
		  0);
	ASSERT_STREQ(p.tag, "x");
	ASSERT_EQ(p.pid, 0);
	/* both, neither, pid 0, a negative pid */
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT,
					   S("{\"process\":{\"tag\":\"x\",\"pid\":1}}"), &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT, S("{\"process\":{}}"), &p, &b),
		  -EINVAL);
	/* an empty tag names no process (found by fuzz_e2b_request) */
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT, S("{\"process\":{\"tag\":\"\"}}"),
					   &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT, S("{\"process\":{\"pid\":0}}"),
					   &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(MOAT_E2B_PROC_CONNECT, S("{\"process\":{\"pid\":-3}}"),
					   &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(
			  MOAT_E2B_PROC_INPUT,
			  S("{\"process\":{\"pid\":2},\"input\":{\"stdin\":\"aGk=\"}}"), &p, &b),
		  0);
	ASSERT_EQ(p.input_len, 2);
	ASSERT_TRUE(memcmp(p.input, "hi", 2) == 0);
	moat_e2b_proc_call_done(&p);
	ASSERT_EQ(moat_e2b_parse_proc_call(
			  MOAT_E2B_PROC_INPUT,
			  S("{\"process\":{\"pid\":2},\"input\":{\"stdin\":\"a!\"}}"), &p, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_proc_call(
			  MOAT_E2B_PROC_INPUT,
			  S("{\"process\":{\"pid\":2},\"input\":{\"pty\":\"aGk=\"}}"), &p, &b),
		  -EOPNOTSUPP);
	ASSERT_EQ(moat_e2b_parse_empty(S("{}"), &b), 0);
	ASSERT_EQ(moat_e2b_parse_empty(S("{\"x\":1}"), &b), -EINVAL);
}

TEST(e2b_fs_calls_and_paths)
{
	struct moat_e2b_fs_call f;
	struct moat_e2b_bad b;
	ASSERT_EQ(moat_e2b_parse_fs_call(MOAT_E2B_FS_LIST, S("{\"path\":\"/tmp\",\"depth\":1}"), &f,
					 &b),
		  0);
	ASSERT_STREQ(f.path, "/tmp");
	ASSERT_EQ(moat_e2b_parse_fs_call(MOAT_E2B_FS_LIST, S("{\"path\":\"/tmp\",\"depth\":2}"), &f,
					 &b),
		  -EOPNOTSUPP);
	ASSERT_EQ(moat_e2b_parse_fs_call(MOAT_E2B_FS_MOVE,
					 S("{\"source\":\"/a\",\"destination\":\"/b\"}"), &f, &b),
		  0);
	ASSERT_STREQ(f.dest, "/b");
	ASSERT_EQ(moat_e2b_parse_fs_call(MOAT_E2B_FS_STAT, S("{\"path\":\"etc\"}"), &f, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_fs_call(MOAT_E2B_FS_STAT, S("{}"), &f, &b), -EINVAL);
	ASSERT_TRUE(moat_e2b_path_ok("/"));
	ASSERT_TRUE(moat_e2b_path_ok("/tmp/a.txt"));
	ASSERT_TRUE(moat_e2b_path_ok("/tmp/..a"));
	ASSERT_TRUE(!moat_e2b_path_ok(""));
	ASSERT_TRUE(!moat_e2b_path_ok("tmp"));
	ASSERT_TRUE(!moat_e2b_path_ok("/tmp/"));
	ASSERT_TRUE(!moat_e2b_path_ok("/tmp//a"));
	ASSERT_TRUE(!moat_e2b_path_ok("/tmp/./a"));
	ASSERT_TRUE(!moat_e2b_path_ok("/tmp/.."));
	ASSERT_TRUE(!moat_e2b_path_ok("/tmp/a\nb"));
	char path[MOAT_E2B_MAX_PATH + 1];
	ASSERT_EQ(moat_e2b_parse_files_query("path=%2Ftmp%2Fa%20b.txt&username=user", path, &b), 0);
	ASSERT_STREQ(path, "/tmp/a b.txt");
	ASSERT_EQ(moat_e2b_parse_files_query("path=/tmp/x", path, &b), 0);
	ASSERT_EQ(moat_e2b_parse_files_query("", path, &b), 0);
	ASSERT_STREQ(path, "");
	ASSERT_EQ(moat_e2b_parse_files_query("path=/tmp/x&username=root", path, &b), -EPERM);
	ASSERT_EQ(moat_e2b_parse_files_query("path=/tmp/x&path=/etc/x", path, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_files_query("path=%2Ftmp%00x", path, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_files_query("path=%2", path, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_files_query("path=x.txt", path, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_files_query("path=/a/%2E%2E/b", path, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_files_query("path=/a&other=1", path, &b), -EINVAL);
}

TEST(e2b_upload_bodies)
{
	struct moat_e2b_part parts[4];
	size_t n;
	struct moat_e2b_bad b;
	static const char ct[] = "multipart/form-data; boundary=----x1";
	static const char one[] =
		"------x1\r\n"
		"Content-Disposition: form-data; name=\"file\"; filename=\"/tmp/a\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"hello\r\n--\r\n"
		"------x1--\r\n";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(one), "/tmp/a", parts, 4, &n, &b), 0);
	ASSERT_EQ(n, 1);
	/* the CRLF before a delimiter is the delimiter's; one before it is data */
	ASSERT_EQ(parts[0].len, 9);
	ASSERT_TRUE(memcmp(parts[0].data, "hello\r\n--", 9) == 0);
	ASSERT_STREQ(parts[0].path, "/tmp/a");
	/* without the query's path, the filename names it */
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(one), NULL, parts, 4, &n, &b), 0);
	ASSERT_STREQ(parts[0].path, "/tmp/a");
	static const char two[] =
		"------x1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/tmp/a\"\r\n\r\n"
		"A\r\n------x1\r\nContent-Disposition: form-data; name=\"file\"; "
		"filename=\"/tmp/b\"\r\n\r\nB\r\n------x1--";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(two), NULL, parts, 4, &n, &b), 0);
	ASSERT_EQ(n, 2);
	ASSERT_STREQ(parts[1].path, "/tmp/b");
	ASSERT_EQ(parts[1].len, 1);
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(two), "/tmp/a", parts, 4, &n, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(two), NULL, parts, 1, &n, &b), -EINVAL);
	/* variants refused */
	static const char rel[] =
		"------x1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n"
		"A\r\n------x1--";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(rel), NULL, parts, 4, &n, &b), -EINVAL);
	static const char noend[] =
		"------x1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/a\"\r\n\r\nA";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(noend), NULL, parts, 4, &n, &b), -EINVAL);
	static const char other[] =
		"------x1\r\nContent-Disposition: form-data; name=\"x\"; filename=\"/a\"\r\n\r\n"
		"A\r\n------x1--";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(other), NULL, parts, 4, &n, &b), -EINVAL);
	static const char hdr[] = "------x1\r\nContent-Disposition: form-data; name=\"file\"; "
				  "filename=\"/a\"\r\nX-Evil: 1\r\n\r\nA\r\n------x1--";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(hdr), NULL, parts, 4, &n, &b), -EINVAL);
	static const char trail[] = "------x1\r\nContent-Disposition: form-data; name=\"file\"; "
				    "filename=\"/a\"\r\n\r\nA\r\n------x1--junk";
	ASSERT_EQ(moat_e2b_parse_upload(ct, S(trail), NULL, parts, 4, &n, &b), -EINVAL);
	ASSERT_EQ(moat_e2b_parse_upload("multipart/form-data", S(one), NULL, parts, 4, &n, &b),
		  -EINVAL);
	ASSERT_EQ(moat_e2b_parse_upload("text/plain", S(one), "/a", parts, 4, &n, &b), -EOPNOTSUPP);
	/* octet-stream: the body is the file */
	ASSERT_EQ(moat_e2b_parse_upload("application/octet-stream", S("raw"), "/tmp/r", parts, 4,
					&n, &b),
		  0);
	ASSERT_EQ(parts[0].len, 3);
	ASSERT_EQ(
		moat_e2b_parse_upload("application/octet-stream", S("raw"), NULL, parts, 4, &n, &b),
		-EINVAL);
}

TEST(e2b_answers_json)
{
	_cleanup_free_ char *sb = moat_e2b_sandbox_json("abc", "tok", 0, 0, false);
	ASSERT_CONTAINS(sb, "\"sandboxID\":\"abc\"");
	ASSERT_CONTAINS(sb, "\"envdVersion\":\"" MOAT_E2B_ENVD_VERSION "\"");
	ASSERT_CONTAINS(sb, "\"envdAccessToken\":\"tok\"");
	_cleanup_free_ char *st = moat_e2b_event_start(42);
	ASSERT_STREQ(st, "{\"event\":{\"start\":{\"pid\":42}}}");
	_cleanup_free_ char *d = moat_e2b_event_data(true, "hi\n", 3);
	ASSERT_STREQ(d, "{\"event\":{\"data\":{\"stderr\":\"aGkK\"}}}");
	struct moat_proc_status ps = {.reason = MOAT_REASON_EXITED, .exit_code = 3, .status = 3};
	_cleanup_free_ char *e = moat_e2b_event_end(&ps);
	ASSERT_STREQ(e,
		     "{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,\"status\":\"exit "
		     "status 3\"}}}");
	struct moat_file_info fi[2] = {
		{.type = MOAT_FILE_REG, .size = 5, .mode = 0644, .mtime_s = 0, .name = "a\"b"},
		{.type = MOAT_FILE_DIR, .mode = 0755, .name = "bad\xff"},
	};
	_cleanup_free_ char *l = moat_e2b_list_json("/tmp", fi, 2);
	json_t *j = json_loads(l, 0, NULL);
	ASSERT_TRUE(j != NULL);
	json_t *e0 = json_array_get(json_object_get(j, "entries"), 0);
	ASSERT_STREQ(json_string_value(json_object_get(e0, "path")), "/tmp/a\"b");
	ASSERT_STREQ(json_string_value(json_object_get(e0, "type")), "FILE_TYPE_FILE");
	ASSERT_STREQ(json_string_value(json_object_get(e0, "size")), "5");
	ASSERT_STREQ(json_string_value(json_object_get(e0, "permissions")), "-rw-r--r--");
	json_t *e1 = json_array_get(json_object_get(j, "entries"), 1);
	/* a name that is not UTF-8 arrives escaped (valid JSON), not dropped */
	ASSERT_CONTAINS(json_string_value(json_object_get(e1, "name")), "bad");
	ASSERT_TRUE(strchr(json_string_value(json_object_get(e1, "name")), '\xff') == NULL);
	json_decref(j);
	struct moat_file_info self = {.type = MOAT_FILE_DIR, .mode = 0755};
	_cleanup_free_ char *s = moat_e2b_entry_json("/tmp/d", &self, "entry");
	ASSERT_CONTAINS(s, "\"name\":\"d\"");
	ASSERT_CONTAINS(s, "\"path\":\"/tmp/d\"");
	_cleanup_free_ char *re = moat_e2b_rest_error(404, "sandbox \"x\" not found");
	ASSERT_STREQ(re, "{\"code\":404,\"message\":\"sandbox \\\"x\\\" not found\"}");
}
