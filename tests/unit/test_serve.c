/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat serve`: the front's route table and validation (a bad request is
 * answered without a forward, naming the field; a good one forwards
 * exactly its fields), the narrowing of the operator's policy (each field
 * that asks for more is refused with its name; narrower values are
 * applied), the tokens file and the constant-time lookup. */
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/tap.h"
#include "policy/policy.h"
#include "api/serve_int.h"
#include "api/serve_route.h"
#include "shared/macro.h"

static void dispatch(const char *method, const char *path, const char *query, const char *body,
		     struct moat_serve_out *out)
{
	struct moat_serve_http_req rq = {.method = method,
					 .path = path,
					 .query = query,
					 .body = body,
					 .body_len = strlen(body)};
	moat_serve_dispatch(&rq, "tok", out, NULL);
}

static const char *err_field(const struct moat_serve_out *out, char *buf, size_t len)
{
	json_t *j = json_loadb(out->body, out->body_len, 0, NULL);
	const char *f = json_string_value(json_object_get(json_object_get(j, "error"), "field"));
	snprintf(buf, len, "%s", f ? f : "");
	json_decref(j);
	return buf;
}

TEST(serve_route_forwards_checked_fields)
{
	struct moat_serve_out out;
	dispatch("POST", "/v1/sandboxes/sb-1/exec", "",
		 "{\"argv\":[\"echo\",\"hi\"],\"cwd\":\"/tmp\"}", &out);
	ASSERT_EQ(0, out.status);
	ASSERT_TRUE(out.fwd != NULL);
	ASSERT_STREQ("exec", json_string_value(json_object_get(out.fwd, "op")));
	ASSERT_STREQ("sb-1", json_string_value(json_object_get(out.fwd, "sandbox")));
	ASSERT_STREQ("tok", json_string_value(json_object_get(out.fwd, "token")));
	json_t *a = json_object_get(out.fwd, "args");
	ASSERT_EQ(2, (int)json_array_size(json_object_get(a, "argv")));
	moat_serve_out_clear(&out);

	dispatch("GET", "/v1/sandboxes/x/files", "path=%2Ftmp%2Fa%20b&x=1", "", &out);
	ASSERT_STREQ("/tmp/a b",
		     json_string_value(json_object_get(json_object_get(out.fwd, "args"), "path")));
	moat_serve_out_clear(&out);

	dispatch("GET", "/v1/version", "", "", &out);
	ASSERT_EQ(200, out.status);
	ASSERT_CONTAINS(out.body, "\"api\":\"v1\"");
	moat_serve_out_clear(&out);
}

TEST(serve_route_refuses_naming_the_field)
{
	static const struct {
		const char *method, *path, *query, *body, *field;
		int status;
	} cases[] = {
		{"POST", "/v1/sandboxes", "", "{\"uid\":0}", "uid", 400},
		{"POST", "/v1/sandboxes", "", "{\"memory\":[1]}", "memory", 400},
		{"POST", "/v1/sandboxes", "", "{\"memory\":-1}", "memory", 400},
		{"POST", "/v1/sandboxes", "", "{\"env\":{\"1X\":\"v\"}}", "env", 400},
		{"POST", "/v1/sandboxes/a/exec", "", "{}", "argv", 400},
		{"POST", "/v1/sandboxes/a/exec", "", "{\"argv\":[]}", "argv", 400},
		{"POST", "/v1/sandboxes/a/exec", "", "{\"argv\":[1]}", "argv", 400},
		{"POST", "/v1/sandboxes/a/exec", "", "{\"argv\":[\"a\"],\"cwd\":\"rel\"}", "cwd",
		 400},
		{"POST", "/v1/sandboxes/a/exec", "", "{\"argv\":[\"a\"],\"timeout_ms\":-5}",
		 "timeout_ms", 400},
		{"GET", "/v1/sandboxes/a/files", "", "", "path", 400},
		{"GET", "/v1/sandboxes/a/files", "path=rel", "", "path", 400},
		{"GET", "/v1/sandboxes/a/files", "path=/a%00b", "", "path", 400},
		{"GET", "/v1/sandboxes/a/files", "path=/a%zz", "", "path", 400},
		{"DELETE", "/v1/sandboxes/a/files", "path=/a&recursive=yes", "", "recursive", 400},
		{"POST", "/v1/sandboxes/a/restore", "", "{}", "snapshot", 400},
		{"GET", "/v1/sandboxes/a/events", "follow=2", "", "follow", 400},
	};
	char f[64];
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct moat_serve_out out;
		dispatch(cases[i].method, cases[i].path, cases[i].query, cases[i].body, &out);
		ASSERT_TRUE(out.fwd == NULL);
		ASSERT_EQ(cases[i].status, out.status);
		ASSERT_STREQ(cases[i].field, err_field(&out, f, sizeof(f)));
		moat_serve_out_clear(&out);
	}
	/* paths and methods */
	struct moat_serve_out out;
	dispatch("GET", "/v1/sandboxes/../x", "", "", &out);
	ASSERT_EQ(404, out.status);
	moat_serve_out_clear(&out);
	dispatch("GET", "/v1/sandboxes/a%2fb", "", "", &out);
	ASSERT_EQ(404, out.status);
	moat_serve_out_clear(&out);
	dispatch("PATCH", "/v1/sandboxes", "", "", &out);
	ASSERT_EQ(405, out.status);
	moat_serve_out_clear(&out);
	dispatch("POST", "/v1/sandboxes", "", "{\"a\":1,\"a\":2}", &out);
	ASSERT_EQ(400, out.status);
	moat_serve_out_clear(&out);
	dispatch("GET", "/v1/sandboxes", "", "x", &out);
	ASSERT_EQ(400, out.status);
	moat_serve_out_clear(&out);
}

static int narrow(const struct moat_policy *ceil, const char *json, char *field, size_t flen,
		  struct moat_policy **ret)
{
	char msg[600];
	json_t *a = json_loads(json, 0, NULL);
	struct moat_policy *p = moat_serve_policy_copy(ceil, NULL);
	int k = p ? moat_serve_narrow(p, ceil, a, field, flen, msg, sizeof(msg)) : -ENOMEM;
	json_decref(a);
	if (ret && k == 0)
		*ret = p;
	else
		moat_policy_free(p);
	return k;
}

TEST(serve_narrow_never_widens)
{
	struct moat_policy *c = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_EQ(0, moat_policy_set_option(c, "--memory", "1G", &e));
	ASSERT_EQ(0, moat_policy_set_option(c, "--cpus", "1", &e));
	ASSERT_EQ(0, moat_policy_set_option(c, "--timeout", "10m", &e));
	ASSERT_EQ(0, moat_policy_set_option(c, "--pids", "100", &e));
	static const struct {
		const char *json, *field;
		int k;
	} cases[] = {
		{"{\"memory\":\"2G\"}", "memory", -EPERM},
		{"{\"memory\":2147483648}", "memory", -EPERM},
		{"{\"cpus\":\"1.5\"}", "cpus", -EPERM},
		{"{\"cpus\":2}", "cpus", -EPERM},
		{"{\"timeout\":\"1h\"}", "timeout", -EPERM},
		{"{\"pids\":101}", "pids", -EPERM},
		{"{\"net\":\"allow\"}", "net", -EPERM},
		{"{\"net\":\"host\"}", "net", -EPERM},
		{"{\"net\":\"wide\"}", "net", -EINVAL},
		{"{\"memory\":\"lots\"}", "memory", -EINVAL},
		{"{\"workspace_mode\":\"ro\"}", "workspace_mode", -EINVAL}, /* no workspace */
		{"{\"allow_hosts\":[\"x.example\"]}", "allow_hosts", -EINVAL}, /* net none */
	};
	char f[64];
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		f[0] = '\0';
		ASSERT_EQ(cases[i].k, narrow(c, cases[i].json, f, sizeof(f), NULL));
		ASSERT_STREQ(cases[i].field, f);
	}
	/* positive control: narrower values are accepted and applied */
	struct moat_policy *p = NULL;
	ASSERT_EQ(0,
		  narrow(c,
			 "{\"memory\":\"64M\",\"cpus\":\"0.5\",\"timeout\":\"30s\",\"pids\":50,"
			 "\"net\":\"none\",\"env\":{\"A\":\"b\"}}",
			 f, sizeof(f), &p));
	ASSERT_EQ(64ull << 20, p->memory);
	ASSERT_EQ(500, (int)p->cpus_milli);
	ASSERT_EQ(30000, (int)p->timeout_ms);
	ASSERT_EQ(50, (int)p->pids);
	moat_policy_free(p);
	/* nothing given: the ceiling itself (limits asked for stay asked) */
	ASSERT_EQ(0, narrow(c, "{}", f, sizeof(f), &p));
	ASSERT_EQ(c->memory, p->memory);
	ASSERT_EQ(c->limits_set, p->limits_set);
	moat_policy_free(p);
	moat_policy_free(c);

	/* an allowlist: only the operator's patterns, never another */
	c = moat_policy_new();
	ASSERT_EQ(0, moat_policy_set_option(c, "--net", "allow", &e));
	ASSERT_EQ(0, moat_policy_set_option(c, "--allow-host", "a.example", &e));
	ASSERT_EQ(0, moat_policy_set_option(c, "--allow-host", "b.example", &e));
	ASSERT_EQ(-EPERM,
		  narrow(c, "{\"allow_hosts\":[\"a.example\",\"evil.example\"]}", f, sizeof(f),
			 NULL));
	ASSERT_STREQ("allow_hosts", f);
	ASSERT_EQ(-EPERM, narrow(c, "{\"allow_hosts\":[\"*.example\"]}", f, sizeof(f), NULL));
	ASSERT_EQ(0, narrow(c, "{\"allow_hosts\":[\"b.example\"]}", f, sizeof(f), &p));
	ASSERT_EQ(1, (int)p->n_allow_hosts);
	ASSERT_STREQ("b.example", p->allow_hosts[0].pattern);
	moat_policy_free(p);
	ASSERT_EQ(0, narrow(c, "{\"net\":\"none\"}", f, sizeof(f), &p));
	ASSERT_EQ(MOAT_NET_NONE, p->net);
	moat_policy_free(p);
	moat_policy_free(c);

	/* an unlimited ceiling accepts any limit (control for the comparisons) */
	c = moat_policy_new();
	ASSERT_EQ(0, narrow(c, "{\"memory\":\"2G\",\"cpus\":8}", f, sizeof(f), NULL));
	moat_policy_free(c);
}

static void write_file(const char *path, const char *s, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ((ssize_t)strlen(s), write(fd, s, strlen(s)));
	close(fd);
	chmod(path, mode);
}

TEST(serve_tokens_file)
{
	char dir[] = "/tmp/moat-serve-XXXXXX", path[64];
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/t", dir);
	struct moat_serve_tenants ts;
	struct moat_error e = {0};

	write_file(
		path,
		"{\"tenants\":[{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"a\",\"max_sandboxes\":2,"
		"\"max_memory\":\"1G\"},{\"token\":\"bbbbbbbbbbbbbbbb2\",\"name\":\"b\"}]}",
		0600);
	ASSERT_EQ(0, moat_serve_tenants_load(path, &ts, &e));
	ASSERT_EQ(2, (int)ts.n);
	struct moat_serve_tenant *t = moat_serve_tenant_find(&ts, "aaaaaaaaaaaaaaaa1");
	ASSERT_TRUE(t != NULL);
	ASSERT_STREQ("a", t->name);
	ASSERT_EQ(2, (int)t->max_sandboxes);
	ASSERT_EQ(1ull << 30, t->max_memory);
	ASSERT_STREQ("b", moat_serve_tenant_find(&ts, "bbbbbbbbbbbbbbbb2")->name);
	ASSERT_TRUE(moat_serve_tenant_find(&ts, "aaaaaaaaaaaaaaaa") == NULL); /* a prefix */
	ASSERT_TRUE(moat_serve_tenant_find(&ts, "aaaaaaaaaaaaaaaa12") == NULL);
	ASSERT_TRUE(moat_serve_tenant_find(&ts, "") == NULL);
	ASSERT_TRUE(moat_serve_tenant_find(&ts, NULL) == NULL);
	moat_serve_tenants_free(&ts);

	/* refused: readable by others, short tokens, duplicates, unknown keys */
	write_file(path, "{\"tenants\":[{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"a\"}]}", 0644);
	ASSERT_EQ(-EPERM, moat_serve_tenants_load(path, &ts, &e));
	static const char *const bad[] = {
		"{\"tenants\":[{\"token\":\"short\",\"name\":\"a\"}]}",
		"{\"tenants\":[{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"a\"},"
		"{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"b\"}]}",
		"{\"tenants\":[{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"a\",\"admin\":true}]}",
		"{\"tenants\":[{\"token\":\"aaaaaaaaaaaaaaaa1\",\"name\":\"a b\"}]}",
		"{\"tenants\":[]}",
		"short\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		write_file(path, bad[i], 0600);
		ASSERT_TRUE(moat_serve_tenants_load(path, &ts, &e) < 0);
	}
	/* one token on a line: tenant "default" */
	write_file(path, "0123456789abcdef0123\n", 0600);
	ASSERT_EQ(0, moat_serve_tenants_load(path, &ts, &e));
	ASSERT_STREQ("default", moat_serve_tenant_find(&ts, "0123456789abcdef0123")->name);
	moat_serve_tenants_free(&ts);
	unlink(path);
	rmdir(dir);
}
