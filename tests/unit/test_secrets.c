/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>

#include "../../fuzz/http_paths.h"
#include "harness/tap.h"
#include "http_cases.h"
#include "proxy/secrets.h"
#include "shared/macro.h"

/* ---- sources ----------------------------------------------------------------- */

static char *src_hosts[] = {(char[]){"api.example.test"}};
static char src_name[] = "TOKEN";
static char *a_hosts[] = {(char[]){"a.test"}};
static char *big_hosts[] = {(char[]){"big.test"}};

static struct moat_secret src_def(enum moat_secret_source src, const char *from)
{
	char **hosts = src_hosts;
	return (struct moat_secret){
		.name = src_name,
		.source = src,
		.from = (char *)(uintptr_t)from,
		.hosts = hosts,
		.n_hosts = 1,
	};
}

static int load(enum moat_secret_source src, const char *from, unsigned timeout_ms, char **v,
		size_t *len, struct moat_error *e)
{
	struct moat_secret d = src_def(src, from);
	*v = NULL;
	return moat_secrets_load_value(&d, timeout_ms, v, len, e);
}

TEST(secrets_placeholder_format)
{
	char a[MOAT_SECRETS_PLACEHOLDER_MAX], b[MOAT_SECRETS_PLACEHOLDER_MAX];
	ASSERT_EQ(moat_secrets_placeholder_new("GITHUB_TOKEN", a), 0);
	ASSERT_EQ(moat_secrets_placeholder_new("GITHUB_TOKEN", b), 0);
	ASSERT_TRUE(startswith(a, "moat-ph-GITHUB_TOKEN-"));
	ASSERT_EQ(strlen(a), strlen("moat-ph-GITHUB_TOKEN-") + 32);
	for (const char *p = a + strlen("moat-ph-GITHUB_TOKEN-"); *p; p++)
		ASSERT_TRUE(strchr("0123456789abcdef", *p));
	ASSERT_TRUE(strcmp(a, b) != 0);
	ASSERT_EQ(moat_secrets_placeholder_new("", a), -EINVAL);
	ASSERT_EQ(moat_secrets_placeholder_new("A-B", a), -EINVAL);
	ASSERT_EQ(moat_secrets_placeholder_new("1A", a), -EINVAL);
	char longname[80];
	memset(longname, 'A', 65);
	longname[65] = '\0';
	ASSERT_EQ(moat_secrets_placeholder_new(longname, a), -EINVAL);
	longname[64] = '\0';
	ASSERT_EQ(moat_secrets_placeholder_new(longname, a), 0);
}

TEST(secrets_source_env)
{
	struct moat_error e;
	char *v;
	size_t len;
	ASSERT_EQ(setenv("MOAT_T_SRC", "envtok-1234\n", 1), 0);
	ASSERT_EQ(load(MOAT_SECRET_ENV, "MOAT_T_SRC", 1000, &v, &len, &e), 0);
	ASSERT_STREQ(v, "envtok-1234");
	ASSERT_EQ(len, 11);
	moat_secrets_value_free(v, len);

	unsetenv("MOAT_T_MISSING");
	ASSERT_EQ(load(MOAT_SECRET_ENV, "MOAT_T_MISSING", 1000, &v, &len, &e), -ENOENT);
	ASSERT_CONTAINS(e.message, "TOKEN");
	ASSERT_CONTAINS(e.message, "MOAT_T_MISSING");
	ASSERT_CONTAINS(e.message, "not set");
	ASSERT_STREQ(e.stage, "secrets");

	ASSERT_EQ(setenv("MOAT_T_EMPTY", "", 1), 0);
	ASSERT_EQ(load(MOAT_SECRET_ENV, "MOAT_T_EMPTY", 1000, &v, &len, &e), -ENODATA);

	/* A value that would split a header: refused, and not echoed. */
	ASSERT_EQ(setenv("MOAT_T_CRLF", "sekrit-abc\r\nX-Evil: 1", 1), 0);
	ASSERT_EQ(load(MOAT_SECRET_ENV, "MOAT_T_CRLF", 1000, &v, &len, &e), -EINVAL);
	ASSERT_CONTAINS(e.message, "control character");
	ASSERT_TRUE(!strstr(e.message, "sekrit"));
}

TEST(secrets_source_file)
{
	struct moat_error e;
	char path[] = "/tmp/moat-test-secret.XXXXXX", link[64];
	char *v;
	size_t len;
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, "filetok-9876\n", 13), 13);
	close(fd);
	ASSERT_EQ(load(MOAT_SECRET_FILE, path, 1000, &v, &len, &e), 0);
	ASSERT_STREQ(v, "filetok-9876");
	moat_secrets_value_free(v, len);

	/* A symlink is not followed. */
	snprintf(link, sizeof(link), "%s.lnk", path);
	ASSERT_EQ(symlink(path, link), 0);
	ASSERT_EQ(load(MOAT_SECRET_FILE, link, 1000, &v, &len, &e), -ELOOP);
	ASSERT_CONTAINS(e.message, link);
	ASSERT_TRUE(!strstr(e.message, "filetok"));
	unlink(link);

	ASSERT_EQ(load(MOAT_SECRET_FILE, "/nonexistent/token", 1000, &v, &len, &e), -ENOENT);
	ASSERT_CONTAINS(e.message, "/nonexistent/token");
	ASSERT_EQ(load(MOAT_SECRET_FILE, "/tmp", 1000, &v, &len, &e), -EINVAL);

	/* Unreadable: only meaningful when not root. */
	if (geteuid() != 0) {
		ASSERT_EQ(chmod(path, 0), 0);
		ASSERT_EQ(load(MOAT_SECRET_FILE, path, 1000, &v, &len, &e), -EACCES);
		ASSERT_CONTAINS(e.message, "Permission denied");
		ASSERT_EQ(chmod(path, 0600), 0);
	}

	/* Two lines: refused without showing them. */
	fd = open(path, O_WRONLY | O_TRUNC);
	ASSERT_EQ(write(fd, "line-one-secret\nline2\n", 22), 22);
	close(fd);
	ASSERT_EQ(load(MOAT_SECRET_FILE, path, 1000, &v, &len, &e), -EINVAL);
	ASSERT_TRUE(!strstr(e.message, "line-one"));

	/* Larger than the cap. */
	fd = open(path, O_WRONLY | O_TRUNC);
	char big[4096];
	memset(big, 'x', sizeof(big));
	for (unsigned i = 0; i <= MOAT_SECRETS_MAX_VALUE / sizeof(big); i++)
		ASSERT_EQ(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	close(fd);
	ASSERT_EQ(load(MOAT_SECRET_FILE, path, 1000, &v, &len, &e), -EFBIG);
	unlink(path);
}

TEST(secrets_source_command)
{
	struct moat_error e;
	char *v;
	size_t len;

	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "printf 'cmdtok-%s\\n' 42", 5000, &v, &len, &e), 0);
	ASSERT_STREQ(v, "cmdtok-42");
	moat_secrets_value_free(v, len);
	/* stdin is /dev/null */
	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "cat; echo done-x", 5000, &v, &len, &e), 0);
	ASSERT_STREQ(v, "done-x");
	moat_secrets_value_free(v, len);

	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "echo leaked-value-77; exit 3", 5000, &v, &len, &e),
		  -ECHILD);
	ASSERT_CONTAINS(e.message, "status 3");
	ASSERT_TRUE(!strstr(e.message, "leaked-value"));

	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "kill -9 $$", 5000, &v, &len, &e), -ECHILD);
	ASSERT_CONTAINS(e.message, "signal 9");

	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "true", 5000, &v, &len, &e), -ENODATA);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "echo x; sleep 20", 300, &v, &len, &e), -ETIMEDOUT);
	/* A background child holding stdout open is killed too. */
	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "sleep 20 & echo y", 300, &v, &len, &e), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ASSERT_TRUE(t1.tv_sec - t0.tv_sec < 5);
	ASSERT_CONTAINS(e.message, "timed out");

	ASSERT_EQ(load(MOAT_SECRET_COMMAND, "head -c 70000 /dev/zero | tr '\\0' a", 5000, &v, &len,
		       &e),
		  -EFBIG);
}

TEST(secrets_new_fails_closed)
{
	char **hosts = a_hosts;
	struct moat_secret defs[2] = {
		{.name = (char[]){"ONE"},
		 .source = MOAT_SECRET_ENV,
		 .from = (char[]){"MOAT_T_ONE"},
		 .hosts = hosts,
		 .n_hosts = 1},
		{.name = (char[]){"TWO"},
		 .source = MOAT_SECRET_ENV,
		 .from = (char[]){"MOAT_T_TWO"},
		 .hosts = hosts,
		 .n_hosts = 1},
	};
	struct moat_secrets *s = NULL;
	struct moat_error e;

	setenv("MOAT_T_ONE", "value-one-xyz", 1);
	unsetenv("MOAT_T_TWO");
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -ENOENT);
	ASSERT_TRUE(s == NULL);
	ASSERT_CONTAINS(e.message, "TWO");
	ASSERT_TRUE(!strstr(e.message, "value-one"));

	setenv("MOAT_T_TWO", "value-two-xyz", 1);
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), 0);
	ASSERT_EQ(moat_secrets_count(s), 2);
	ASSERT_STREQ(moat_secrets_name(s, 1), "TWO");
	ASSERT_TRUE(startswith(moat_secrets_placeholder(s, 0), "moat-ph-ONE-"));
	ASSERT_TRUE(moat_secrets_host_bound(s, "A.test."));
	ASSERT_TRUE(!moat_secrets_host_bound(s, "b.test"));
	moat_secrets_free(s);

	/* Bad definitions. */
	defs[1].n_hosts = 0;
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -EINVAL);
	ASSERT_CONTAINS(e.message, "no hosts");
	defs[1].n_hosts = 1;
	defs[1].header = (char[]){"X-Key"};
	defs[1].format = (char[]){"Bearer %s %s"};
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -EINVAL);
	defs[1].format = (char[]){"%d"};
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -EINVAL);
	defs[1].format = (char[]){"Bearer %s"};
	defs[1].header = (char[]){"X Key"};
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -EINVAL);
	defs[1].header = NULL;
	defs[1].format = NULL;
	defs[1].name = (char[]){"one"};
	ASSERT_EQ(moat_secrets_new(defs, 2, &s, &e), -EEXIST);
}

TEST(secrets_harden_process)
{
	ASSERT_EQ(moat_secrets_harden_process(), 0);
	ASSERT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
}

/* ---- rewriting ----------------------------------------------------------------- */

#define GH_REAL "ghp_REALvalue0123456789"
#define API_REAL "apikey_REALvalue42"
#define ORG_REAL "org_REALvalue77"

static char *gh_hosts[] = {(char[]){"api.github.test"}, (char[]){"uploads.github.test"}};
static char *api_hosts[] = {(char[]){"*.api.test"}};
static char *org_hosts[] = {(char[]){"git.test"}};
static char *org_methods[] = {(char[]){"GET"}, (char[]){"HEAD"}};
static char *org_paths[] = {(char[]){"/repos/acme/"}};
static struct moat_secret defs[] = {
	{.name = (char[]){"GH_TOKEN"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"MOAT_T_GH"},
	 .hosts = gh_hosts,
	 .n_hosts = 2},
	{.name = (char[]){"API_KEY"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"MOAT_T_API"},
	 .hosts = api_hosts,
	 .n_hosts = 1,
	 .header = (char[]){"X-Api-Key"},
	 .format = (char[]){"key=%s;v=1"}},
	{.name = (char[]){"ORG"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"MOAT_T_ORG"},
	 .hosts = org_hosts,
	 .n_hosts = 1,
	 .methods = org_methods,
	 .n_methods = 2,
	 .paths = org_paths,
	 .n_paths = 1},
};

static struct moat_secrets *setup(void)
{
	struct moat_secrets *s = NULL;
	struct moat_error e;
	setenv("MOAT_T_GH", GH_REAL, 1);
	setenv("MOAT_T_API", API_REAL, 1);
	setenv("MOAT_T_ORG", ORG_REAL, 1);
	ASSERT_EQ(moat_secrets_new(defs, ELEMENTSOF(defs), &s, &e), 0);
	return s;
}

static void no_values(const struct moat_secrets_result *r)
{
	static const char *const vals[] = {GH_REAL, API_REAL, ORG_REAL};
	for (size_t i = 0; i < ELEMENTSOF(vals); i++) {
		ASSERT_TRUE(!strstr(r->reason, vals[i]));
		ASSERT_TRUE(!strstr(r->warning, vals[i]));
	}
}

/* The last head run() parsed (its slices point into run()'s buffer). */
static struct moat_http1_request parsed;
static char run_buf[8192];

/* Parse (moat_http1_parse_request, as every proxy path does) and rewrite a
 * head built from fmt, where every "@GH@", "@API@", "@ORG@" is that secret's
 * placeholder. -EBADMSG when the parser refuses it or it is incomplete. */
static int run(struct moat_secrets *s, const char *host, bool tls, const char *head,
	       const char *body, struct moat_secrets_result *res)
{
	char *buf = run_buf;
	size_t o = 0;
	for (const char *p = head; *p && o < sizeof(run_buf) - 200;) {
		const char *tags[] = {"@GH@", "@API@", "@ORG@"};
		bool done = false;
		for (unsigned i = 0; i < 3; i++)
			if (startswith(p, tags[i])) {
				o += (size_t)snprintf(buf + o, sizeof(run_buf) - o, "%s",
						      moat_secrets_placeholder(s, i));
				p += strlen(tags[i]);
				done = true;
			}
		if (!done)
			buf[o++] = *p++;
	}
	buf[o] = '\0';
	/* HTTP/1.1 needs a Host (RFC 9112 3.2): one naming the destination goes
	 * after an origin-form request line unless the case brings its own. */
	const char *eol = strstr(buf, "\r\n");
	if (eol && buf[0] != '\r' && !strcasestr(buf, "\r\nhost:") && strchr(buf, ' ') &&
	    strchr(buf, ' ')[1] == '/' && eol - buf >= 8 && memcmp(eol - 8, "HTTP/1.1", 8) == 0) {
		char line[300];
		int k = snprintf(line, sizeof(line),
				 strchr(host, ':') ? "Host: [%s]\r\n" : "Host: %s\r\n", host);
		size_t at = (size_t)(eol - buf) + 2;
		if (k > 0 && o + (size_t)k < sizeof(run_buf)) {
			memmove(buf + at + k, buf + at, o - at);
			memcpy(buf + at, line, (size_t)k);
			o += (size_t)k;
		}
	}
	*res = (struct moat_secrets_result){.verdict = MOAT_SECRETS_REFUSED, .secret = -1};
	if (moat_http1_parse_request(buf, o, NULL, &parsed) <= 0)
		return -EBADMSG;
	struct moat_secrets_request rq = {.host = host,
					  .tls = tls,
					  .http = &parsed,
					  .body = body,
					  .body_len = body ? strlen(body) : 0};
	int r = moat_secrets_rewrite(s, &rq, res);
	no_values(res);
	return r;
}

TEST(secrets_rewrite_bearer_and_custom)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET /user HTTP/1.1\r\nHost: api.github.test\r\n"
		      "Authorization: Bearer @GH@\r\nX-Other:  keep me \r\nX-Token: t=@GH@;@GH@\r\n"
		      "\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_EQ(r.secret, 0);
	ASSERT_STREQ(r.head,
		     "GET /user HTTP/1.1\r\nHost: api.github.test\r\n"
		     "Authorization: Bearer " GH_REAL "\r\n"
		     "X-Other:  keep me \r\n"
		     "X-Token: t=" GH_REAL ";" GH_REAL "\r\n\r\n");
	ASSERT_EQ(r.head_len, strlen(r.head));
	ASSERT_TRUE(!strstr(r.head, "moat-ph-"));
	moat_secrets_result_clear(&r);
	ASSERT_TRUE(r.head == NULL);

	/* The second host of the secret, a case-different name. */
	ASSERT_EQ(run(s, "Uploads.GitHub.test.", true,
		      "POST /x HTTP/1.1\r\nAuthorization: token @GH@\r\n\r\n", "data", &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_CONTAINS(r.head, "Authorization: token " GH_REAL "\r\n");
	moat_secrets_result_clear(&r);
	moat_secrets_free(s);
}

static char *b64(const char *s)
{
	static char out[400];
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)strlen(s));
	return out;
}

TEST(secrets_rewrite_basic_auth)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;
	char head[1024], plain[256];

	snprintf(plain, sizeof(plain), "x-access-token:%s", moat_secrets_placeholder(s, 0));
	snprintf(head, sizeof(head), "GET /info/refs HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n",
		 b64(plain));
	ASSERT_EQ(run(s, "api.github.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	char want[1024];
	snprintf(want, sizeof(want), "Authorization: Basic %s\r\n", b64("x-access-token:" GH_REAL));
	ASSERT_CONTAINS(r.head, want);
	moat_secrets_result_clear(&r);

	/* As user name, with a password; with padding of every length. */
	for (int pad = 0; pad < 3; pad++) {
		snprintf(plain, sizeof(plain), "%s:%.*s", moat_secrets_placeholder(s, 0), pad,
			 "xyz");
		snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nauthorization: basic %s\r\n\r\n",
			 b64(plain));
		ASSERT_EQ(run(s, "api.github.test", true, head, NULL, &r), 0);
		ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
		char exp[128];
		snprintf(exp, sizeof(exp), GH_REAL ":%.*s", pad, "xyz");
		snprintf(want, sizeof(want), "authorization: basic %s\r\n", b64(exp));
		ASSERT_CONTAINS(r.head, want);
		moat_secrets_result_clear(&r);
	}

	/* Basic auth carrying the placeholder to another host: refused. */
	snprintf(plain, sizeof(plain), "u:%s", moat_secrets_placeholder(s, 0));
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Basic %s\r\n\r\n",
		 b64(plain));
	ASSERT_EQ(run(s, "evil.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "GH_TOKEN");
	moat_secrets_result_clear(&r);
	moat_secrets_free(s);
}

TEST(secrets_refuse_wrong_host)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "evil.test", true, "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_EQ(r.secret, 0);
	ASSERT_CONTAINS(r.reason, "GH_TOKEN");
	ASSERT_CONTAINS(r.reason, "evil.test");
	ASSERT_CONTAINS(r.reason, "not approved");
	ASSERT_TRUE(r.head == NULL);

	/* Cross-provider: GH's placeholder to API's host (RT-062 d). */
	ASSERT_EQ(run(s, "x.api.test", true, "GET / HTTP/1.1\r\nX-Gh: @GH@\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "GH_TOKEN");
	/* Lookalike hosts. */
	const char *bad[] = {"api.github.test.evil.test", "evilapi.github.test", "github.test",
			     "api-github.test"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		ASSERT_EQ(run(s, bad[i], true, "GET / HTTP/1.1\r\nA: @GH@\r\n\r\n", NULL, &r), 0);
		ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	}
	/* Mangled placeholders to another host: upper case, a fragment. */
	char head[512];
	const char *ph = moat_secrets_placeholder(s, 0);
	char upper[MOAT_SECRETS_PLACEHOLDER_MAX];
	for (size_t i = 0; i <= strlen(ph); i++)
		upper[i] = (char)toupper((unsigned char)ph[i]);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nX: %s\r\n\r\n", upper);
	ASSERT_EQ(run(s, "evil.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nX: zz%.14szz\r\n\r\n",
		 ph + strlen(ph) - 20);
	ASSERT_EQ(run(s, "evil.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	/* Even to the right host, a mangled one is refused, not forwarded. */
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n", upper);
	ASSERT_EQ(run(s, "api.github.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	moat_secrets_free(s);
}

TEST(secrets_refuse_url_body_plain)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;
	char head[512];

	ASSERT_EQ(run(s, "api.github.test", true, "GET /search?q=@GH@ HTTP/1.1\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "URL");
	ASSERT_CONTAINS(r.reason, "GH_TOKEN");
	/* Percent-encoded in the URL. */
	const char *ph = moat_secrets_placeholder(s, 0);
	size_t o = (size_t)snprintf(head, sizeof(head), "GET /?t=");
	for (const char *p = ph; *p; p++)
		o += (size_t)snprintf(head + o, sizeof(head) - o, "%%%02X", (unsigned char)*p);
	snprintf(head + o, sizeof(head) - o, " HTTP/1.1\r\n\r\n");
	ASSERT_EQ(run(s, "evil.test", true, head, NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	/* Absolute-form URL. */
	ASSERT_EQ(
		run(s, "evil.test", false, "GET http://evil.test/@GH@ HTTP/1.1\r\n\r\n", NULL, &r),
		0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);

	/* In the body window, even to the approved host. */
	char body[600];
	snprintf(body, sizeof(body), "{\"token\":\"%s\"}", ph);
	ASSERT_EQ(run(s, "api.github.test", true, "POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
		      body, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "body");

	/* Plain HTTP to the right host (RT-062 e). */
	ASSERT_EQ(run(s, "api.github.test", false,
		      "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "plain HTTP");
	/* Plain HTTP to an add-header host: refused rather than sent bare. */
	ASSERT_EQ(run(s, "x.api.test", false, "GET / HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "API_KEY");
	/* Placeholder in a header name. */
	ASSERT_EQ(run(s, "api.github.test", true, "GET / HTTP/1.1\r\n@GH@: 1\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	moat_secrets_free(s);
}

TEST(secrets_method_path_rules)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "git.test", true,
		      "GET /repos/acme/x?ref=main HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_CONTAINS(r.head, "Bearer " ORG_REAL);
	moat_secrets_result_clear(&r);

	const char *bad[] = {
		"POST /repos/acme/x HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"GET /repos/other/x HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"GET /repos/acme/../other HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"GET /repos/acme/%2e%2e/other HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"GET /repos/acme/..;/other HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"GET /repos/acme HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		"get /repos/acme/x HTTP/1.1\r\nAuthorization: Bearer @ORG@\r\n\r\n",
		/* Without a placeholder, the host's rules still apply. */
		"DELETE /repos/acme/x HTTP/1.1\r\n\r\n",
		"GET /admin HTTP/1.1\r\n\r\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		ASSERT_EQ(run(s, "git.test", true, bad[i], NULL, &r), 0);
		if (r.verdict != MOAT_SECRETS_REFUSED)
			moat_tap_fail(__FILE__, __LINE__, "not refused: %s", bad[i]);
		ASSERT_CONTAINS(r.reason, "ORG");
	}
	/* An anonymous allowed request passes untouched. */
	ASSERT_EQ(run(s, "git.test", true, "HEAD /repos/acme/ HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);
	ASSERT_TRUE(r.head == NULL);
	moat_secrets_free(s);
}

TEST(secrets_add_header_mode)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "eu.api.test", true, "GET /v1 HTTP/1.1\r\nHost: eu.api.test\r\n\r\n", NULL,
		      &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_EQ(r.secret, 1);
	ASSERT_STREQ(r.head,
		     "GET /v1 HTTP/1.1\r\nHost: eu.api.test\r\n"
		     "X-Api-Key: key=" API_REAL ";v=1\r\n\r\n");
	ASSERT_STREQ(r.warning, "");
	moat_secrets_result_clear(&r);

	/* The client's own header is replaced, with a warning (RT-063). */
	ASSERT_EQ(run(s, "eu.api.test", true, "GET /v1 HTTP/1.1\r\nx-api-key: mine\r\n\r\n", NULL,
		      &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_TRUE(!strstr(r.head, "mine"));
	ASSERT_CONTAINS(r.warning, "replaced");
	moat_secrets_result_clear(&r);
	/* The placeholder in that header: replaced silently. */
	ASSERT_EQ(run(s, "eu.api.test", true, "GET /v1 HTTP/1.1\r\nX-Api-Key: @API@\r\n\r\n", NULL,
		      &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_STREQ(r.warning, "");
	ASSERT_TRUE(!strstr(r.head, "moat-ph"));
	moat_secrets_result_clear(&r);

	/* "*.api.test" does not cover api.test itself. */
	ASSERT_EQ(run(s, "api.test", true, "GET /v1 HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);
	moat_secrets_free(s);
}

TEST(secrets_client_credentials_and_trace)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	/* RT-063: the client's own token to the credential host. */
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: token ghp_ATTACKER\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "client-supplied Authorization");
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	/* No credentials at all: forwarded as is. */
	ASSERT_EQ(
		run(s, "api.github.test", true, "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", NULL, &r),
		0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);
	/* Elsewhere the client's Authorization is none of our business. */
	ASSERT_EQ(run(s, "other.test", true, "GET / HTTP/1.1\r\nAuthorization: token x\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);

	ASSERT_EQ(run(s, "api.github.test", true, "TRACE / HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "TRACE");
	ASSERT_EQ(run(s, "x.api.test", true, "TRACK / HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	moat_secrets_free(s);
}

TEST(secrets_rewrite_malformed)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;
	const char *bad[] = {
		"GET / HTTP/1.1\nA: b\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n",
		"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"GET  / HTTP/1.1\r\n\r\n",
		"GET / HTTP/2\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",
		"GET /\x01 HTTP/1.1\r\n\r\n",
		"",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		if (run(s, "api.github.test", true, bad[i], NULL, &r) != -EBADMSG)
			moat_tap_fail(__FILE__, __LINE__, "accepted: %zu", i);
		ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	}
	/* No parsed head, or a bad destination: refused, never guessed. */
	struct moat_secrets_request rq = {.host = "a.test", .tls = true};
	ASSERT_EQ(moat_secrets_rewrite(s, &rq, &r), -EINVAL);
	ASSERT_EQ(run(s, "api.github.test", true, "GET / HTTP/1.1\r\n\r\n", NULL, &r), 0);
	rq.http = &parsed;
	rq.host = "bad host";
	ASSERT_EQ(moat_secrets_rewrite(s, &rq, &r), -EINVAL);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	moat_secrets_free(s);
}

TEST(secrets_rewrite_output_bounded)
{
	/* A 60 KiB value replaced 8 times would exceed the output cap. */
	char **hosts = big_hosts;
	struct moat_secret d = {.name = (char[]){"BIG"},
				.source = MOAT_SECRET_ENV,
				.from = (char[]){"MOAT_T_BIG"},
				.hosts = hosts,
				.n_hosts = 1};
	struct moat_secrets *s = NULL;
	struct moat_secrets_result r;
	struct moat_error e;
	char *v = malloc(60 * 1024 + 1);
	memset(v, 'v', 60 * 1024);
	v[60 * 1024] = '\0';
	setenv("MOAT_T_BIG", v, 1);
	free(v);
	ASSERT_EQ(moat_secrets_new(&d, 1, &s, &e), 0);
	char head[2048];
	size_t o = (size_t)snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: big.test\r\n");
	for (int i = 0; i < 8; i++)
		o += (size_t)snprintf(head + o, sizeof(head) - o, "X%d: %s\r\n", i,
				      moat_secrets_placeholder(s, 0));
	o += (size_t)snprintf(head + o, sizeof(head) - o, "\r\n");
	struct moat_http1_request *hr = malloc(sizeof(*hr));
	ASSERT_TRUE(hr != NULL);
	ASSERT_EQ(moat_http1_parse_request(head, o, NULL, hr), (int)o);
	struct moat_secrets_request rq = {.host = "big.test", .tls = true, .http = hr};
	ASSERT_EQ(moat_secrets_rewrite(s, &rq, &r), -E2BIG);
	free(hr);
	ASSERT_TRUE(r.head == NULL);
	moat_secrets_free(s);
}

TEST(secrets_scan_dns_and_scrub)
{
	struct moat_secrets *s = setup();
	const char *ph = moat_secrets_placeholder(s, 2);
	const char *hex = ph + strlen(ph) - 32;
	char q[512];

	snprintf(q, sizeof(q), "%s.evil.test", ph);
	ASSERT_EQ(moat_secrets_scan_dns(s, q), 2);
	/* Split across labels, upper case. */
	snprintf(q, sizeof(q), "%.10s.%.10s.%.12s.evil.test", hex, hex + 10, hex + 20);
	for (char *p = q; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	ASSERT_EQ(moat_secrets_scan_dns(s, q), 2);
	/* A 12-character fragment alone. */
	snprintf(q, sizeof(q), "x%.12s.evil.test", hex + 5);
	ASSERT_EQ(moat_secrets_scan_dns(s, q), 2);
	ASSERT_EQ(moat_secrets_scan_dns(s, "www.example.test"), -ENOENT);
	snprintf(q, sizeof(q), "%.11s.zz.test", hex);
	ASSERT_EQ(moat_secrets_scan_dns(s, q), -ENOENT);
	ASSERT_EQ(moat_secrets_scan(s, "abc", 3), -ENOENT);

	char resp[] =
		"HTTP/1.1 200 OK\r\n\r\n{\"auth\":\"Bearer " GH_REAL "\",\"k\":\"" API_REAL "\"}";
	size_t len = strlen(resp);
	ASSERT_EQ(moat_secrets_scrub(s, resp, len), 2);
	ASSERT_EQ(strlen(resp), len);
	ASSERT_TRUE(!strstr(resp, "REAL"));
	ASSERT_CONTAINS(resp, "Bearer ****");
	moat_secrets_free(s);
}

TEST(secrets_host_match_and_http_rules)
{
	ASSERT_TRUE(moat_secrets_host_match("*.example.com", "a.example.com"));
	ASSERT_TRUE(moat_secrets_host_match("*.example.com", "A.b.Example.com."));
	ASSERT_TRUE(!moat_secrets_host_match("*.example.com", "example.com"));
	ASSERT_TRUE(!moat_secrets_host_match("*.example.com", "evil-example.com"));
	ASSERT_TRUE(!moat_secrets_host_match("*.example.com", "a.example.com.evil"));
	ASSERT_TRUE(moat_secrets_host_match("example.com", "EXAMPLE.com"));
	ASSERT_TRUE(moat_secrets_host_match("127.0.0.1", "127.0.0.1"));
	ASSERT_TRUE(!moat_secrets_host_match("*.0.0.1", "127.0.0.1"));

	char *m[] = {(char[]){"GET"}};
	char *p[] = {(char[]){"/repos/acme/"}};
	struct moat_http_rule rules[] = {
		{.host = (char[]){"api.test"},
		 .methods = m,
		 .n_methods = 1,
		 .paths = p,
		 .n_paths = 1},
	};
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "api.test", "GET", "/repos/acme/x?y=1"), 1);
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "api.test", "POST", "/repos/acme/x"), 0);
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "api.test", "GET", "/repos/x"), 0);
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "api.test", "GET", "/repos/acme/./x"), 0);
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "api.test", "GET", "/repos/acme/%2F../x"), 0);
	ASSERT_EQ(moat_secrets_http_allowed(rules, 1, "other.test", "DELETE", "/"), 1);
}

TEST(secrets_rewrite_framing_and_host)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "other.test", true,
		      "POST /x?y HTTP/1.1\r\nHost: other.test:8443\r\nContent-Length: 12\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);
	ASSERT_EQ(parsed.content_length, 12);
	ASSERT_TRUE(!parsed.chunked);
	ASSERT_EQ(run(s, "other.test", true,
		      "POST / HTTP/1.1\r\nHost: other.test\r\nTransfer-Encoding: Chunked\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);
	ASSERT_TRUE(parsed.chunked);
	ASSERT_EQ(parsed.content_length, -1);
	ASSERT_EQ(run(s, "::1", true, "GET / HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", NULL, &r), 0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_PASS);

	const char *smuggle[] = {
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: other.test\r\nHost: other.test\r\n\r\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(smuggle); i++)
		if (run(s, "other.test", true, smuggle[i], NULL, &r) != -EBADMSG)
			moat_tap_fail(__FILE__, __LINE__, "accepted: %s", smuggle[i]);

	/* Host names another host than the one the proxy verified (RT-062 b, c). */
	const char *hosts[] = {"evil.test",	   "api.github.test:x@evil.test",
			       "api.github.test.", "[::1]",
			       "api.github.test:", "api.github.test:44x"};
	const int ok[] = {0, 0, 1, 0, 0, 0};
	for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
		char head[256];
		snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", hosts[i]);
		int rr = run(s, "api.github.test", true, head, NULL, &r);
		if (rr == -EBADMSG && !ok[i])
			continue; /* the parser already refuses it (userinfo, bad port) */
		ASSERT_EQ(rr, 0);
		if ((r.verdict != MOAT_SECRETS_REFUSED) != ok[i])
			moat_tap_fail(__FILE__, __LINE__, "Host: %s: verdict %d", hosts[i],
				      r.verdict);
		if (!ok[i])
			ASSERT_CONTAINS(r.reason, "Host header");
	}
	moat_secrets_free(s);
}

TEST(secrets_drop_values_and_scrub_environ)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;
	char *env_entry = NULL;
	extern char **environ;

	for (char **e = environ; *e; e++)
		if (startswith(*e, "MOAT_T_GH="))
			env_entry = *e;
	ASSERT_TRUE(env_entry != NULL);
	/* Three env-sourced secrets. */
	ASSERT_EQ(moat_secrets_scrub_environ(s), 3);
	ASSERT_TRUE(getenv("MOAT_T_GH") == NULL);
	/* The bytes of the old entry are gone too (setenv's copy, here). */
	ASSERT_TRUE(!strstr(env_entry, "REAL"));

	/* Values are still loaded: injection works until they are dropped. */
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	moat_secrets_result_clear(&r);
	moat_secrets_drop_values(s);
	ASSERT_TRUE(startswith(moat_secrets_placeholder(s, 0), "moat-ph-GH_TOKEN-"));
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	moat_secrets_free(s);
}

TEST(secrets_scrub_hold)
{
	struct moat_secrets *s = setup();
	char a[] = "xx ghp_REALval";
	ASSERT_EQ(moat_secrets_scrub_hold(s, a, strlen(a)), strlen("ghp_REALval"));
	char b[] = "xx g";
	ASSERT_EQ(moat_secrets_scrub_hold(s, b, strlen(b)), 1);
	char c[] = "nothing here";
	ASSERT_EQ(moat_secrets_scrub_hold(s, c, strlen(c)), 0);
	/* A complete value is scrubbed, not held. */
	char d[] = "x " GH_REAL;
	ASSERT_EQ(moat_secrets_scrub(s, d, strlen(d)), 1);
	ASSERT_EQ(moat_secrets_scrub_hold(s, d, strlen(d)), 0);
	moat_secrets_free(s);
}

TEST(secrets_placeholders_first_values_later)
{
	struct moat_secrets *s = NULL;
	struct moat_secrets_result r;
	struct moat_error e;

	unsetenv("MOAT_T_GH");
	unsetenv("MOAT_T_API");
	unsetenv("MOAT_T_ORG");
	ASSERT_EQ(moat_secrets_new_placeholders(defs, ELEMENTSOF(defs), &s, &e), 0);
	ASSERT_TRUE(startswith(moat_secrets_placeholder(s, 1), "moat-ph-API_KEY-"));
	/* Nothing loaded: nothing injected. */
	ASSERT_EQ(run(s, "x.api.test", true, "GET / HTTP/1.1\r\n\r\n", NULL, &r), 0);
	ASSERT_TRUE(r.verdict != MOAT_SECRETS_REWRITTEN);
	/* Loading fails closed, and keeps nothing. */
	setenv("MOAT_T_GH", GH_REAL, 1);
	ASSERT_EQ(moat_secrets_load(s, &e), -ENOENT);
	ASSERT_CONTAINS(e.message, "MOAT_T_API");
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	setenv("MOAT_T_API", API_REAL, 1);
	setenv("MOAT_T_ORG", ORG_REAL, 1);
	ASSERT_EQ(moat_secrets_load(s, &e), 0);
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET / HTTP/1.1\r\nAuthorization: Bearer @GH@\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_CONTAINS(r.head, GH_REAL);
	moat_secrets_result_clear(&r);
	moat_secrets_free(s);
}

/* The rewriter has no grammar of its own: with a secret injected into every
 * request of the host (so every head is rebuilt), each smuggling case gets
 * the verdict the plain path gives, and what it forwards frames exactly as
 * what it was given. */
TEST(secrets_rewrite_same_verdict_as_plain)
{
	char *h[] = {(char[]){"h.test"}};
	struct moat_secret d = {.name = (char[]){"HK"},
				.source = MOAT_SECRET_ENV,
				.from = (char[]){"MOAT_T_HK"},
				.hosts = h,
				.n_hosts = 1,
				.header = (char[]){"X-Key"}};
	struct moat_secrets *s = NULL;
	struct moat_error e;

	setenv("MOAT_T_HK", "REALhk0123456789", 1);
	ASSERT_EQ(moat_secrets_new(&d, 1, &s, &e), 0);
	for (size_t i = 0; i < ELEMENTSOF(http_cases); i++) {
		const struct http_case *c = &http_cases[i];
		struct path_run plain = {0}, rw = {0};
		path_plain(c->in, http_case_len(c), &plain);
		path_rewriter(s, c->in, http_case_len(c), "h.test", &rw);
		if (rw.n != c->accepted || rw.refused != (c->reason != NULL) ||
		    (c->reason && strcmp(rw.reason, c->reason) != 0))
			moat_tap_fail(__FILE__, __LINE__, "%s: %u accepted, refused=%d (%s)",
				      c->name, rw.n, rw.refused, rw.reason);
		if (!path_agree(&plain, &rw) || !path_agree(&rw, &plain) || !path_fwd_reframes(&rw))
			moat_tap_fail(__FILE__, __LINE__, "%s: rewriter and plain path disagree",
				      c->name);
		/* Every accepted head went on with the value, in origin-form. */
		if (rw.n &&
		    (!rw.fwd || !memmem(rw.fwd, rw.fwd_len, "X-Key: REALhk0123456789\r\n", 25) ||
		     memmem(rw.fwd, rw.fwd_len, "http://", 7)))
			moat_tap_fail(__FILE__, __LINE__, "%s: not rewritten: %.*s", c->name,
				      (int)rw.fwd_len, rw.fwd ? rw.fwd : "");
		path_run_free(&plain);
		path_run_free(&rw);
	}
	moat_secrets_free(s);
}

/* http_rules and placeholder paths read the parsed path: "http://h?/v1/x"
 * has path "/" (the "/v1/x" is in the query), not "/v1/x". */
TEST(secrets_rules_read_the_parsed_path)
{
	char *m[] = {(char[]){"GET"}};
	char *p[] = {(char[]){"/v1/"}};
	struct moat_http_rule rules[] = {
		{.host = (char[]){"h.test"},
		 .methods = m,
		 .n_methods = 1,
		 .paths = p,
		 .n_paths = 1},
	};
	static struct moat_http1_request q;
	const char *a = "GET http://h.test?/v1/x HTTP/1.1\r\n\r\n";
	ASSERT_GE(moat_http1_parse_request(a, strlen(a), NULL, &q), 1);
	ASSERT_EQ(moat_secrets_http_allowed_request(rules, 1, "h.test", &q), 0);
	const char *b = "GET http://h.test/v1/x?y HTTP/1.1\r\n\r\n";
	ASSERT_GE(moat_http1_parse_request(b, strlen(b), NULL, &q), 1);
	ASSERT_EQ(moat_secrets_http_allowed_request(rules, 1, "h.test", &q), 1);
	const char *c = "GET /v1/x HTTP/1.1\r\nHost: h.test\r\n\r\n";
	ASSERT_GE(moat_http1_parse_request(c, strlen(c), NULL, &q), 1);
	ASSERT_EQ(moat_secrets_http_allowed_request(rules, 1, "h.test", &q), 1);
	ASSERT_EQ(moat_secrets_http_allowed_request(rules, 1, "other.test", &q), 1);
}

/* The destination is the parsed one, Host or absolute-form authority: an
 * absolute-form target naming another host is refused even without Host. */
TEST(secrets_rewrite_checks_the_authority)
{
	struct moat_secrets *s = setup();
	struct moat_secrets_result r;

	ASSERT_EQ(run(s, "api.github.test", true, "GET http://evil.test/x HTTP/1.1\r\n\r\n", NULL,
		      &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "another host");
	ASSERT_EQ(run(s, "api.github.test", true, "CONNECT api.github.test:443 HTTP/1.1\r\n\r\n",
		      NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REFUSED);
	ASSERT_CONTAINS(r.reason, "CONNECT");
	/* Absolute-form to the right host goes on in origin-form, Host added. */
	ASSERT_EQ(run(s, "api.github.test", true,
		      "GET http://api.github.test?q=1 HTTP/1.1\r\nAccept: */*\r\n\r\n", NULL, &r),
		  0);
	ASSERT_EQ(r.verdict, MOAT_SECRETS_REWRITTEN);
	ASSERT_STREQ(r.head, "GET /?q=1 HTTP/1.1\r\nAccept: */*\r\nHost: api.github.test\r\n\r\n");
	moat_secrets_result_clear(&r);
	moat_secrets_free(s);
}
