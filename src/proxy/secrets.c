/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Secret values, placeholders and request-head rewriting. See secrets.h. */
#include "proxy/secrets.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "lib/paths.h"
#include "proxy/tls.h"
#include "shared/macro.h"

extern char **environ;

#define PH_PREFIX "moat-ph-"
#define HEX_LEN 32
#define SECURE_HEAP (1u << 20)

struct secret {
	const struct moat_secret *def;
	char placeholder[MOAT_SECRETS_PLACEHOLDER_MAX];
	size_t ph_len;
	char lower[MOAT_SECRETS_PLACEHOLDER_MAX]; /* lowercase placeholder, for detection */
	const char *hex; /* the random part, inside lower */
	char *value;
	size_t value_len;
};

struct moat_secrets {
	struct secret *v;
	unsigned n;
};

/* ---- errors -------------------------------------------------------------- */

_printf_(3, 4) static int fail(struct moat_error *e, int r, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "secrets");
		e->err = -r;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return r;
}

/* ---- locked memory -------------------------------------------------------- */

/* Values live in OpenSSL's secure heap when it is set up (mlock'ed, excluded
 * from core dumps), else in their own mapping, locked when RLIMIT_MEMLOCK
 * allows and excluded from core dumps. Always wiped before release. */
static size_t map_size(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

static char *secure_alloc(size_t n)
{
	if (CRYPTO_secure_malloc_initialized()) {
		char *p = OPENSSL_secure_zalloc(n);
		if (p && CRYPTO_secure_allocated(p))
			return p;
		OPENSSL_secure_clear_free(p, n);
	}
	void *m =
		mmap(NULL, map_size(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	(void)madvise(m, map_size(n), MADV_DONTDUMP);
	(void)mlock(m, map_size(n));
	return m;
}

static void secure_free(char *p, size_t n)
{
	if (!p)
		return;
	if (CRYPTO_secure_malloc_initialized() && CRYPTO_secure_allocated(p)) {
		OPENSSL_secure_clear_free(p, n);
		return;
	}
	OPENSSL_cleanse(p, n);
	(void)munlock(p, map_size(n));
	munmap(p, map_size(n));
}

/* The scratch buffer sources are read into. */
#define VALUE_CAP (MOAT_SECRETS_MAX_VALUE + 1)

void moat_secrets_value_free(char *value, size_t len)
{
	secure_free(value, len + 1);
}

int moat_secrets_harden_process(void)
{
	struct rlimit rl = {0, 0};

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	if (setrlimit(RLIMIT_CORE, &rl) < 0)
		return negerrno();
	/* Returns 2 when the heap works but could not be locked: still fine. */
	if (!CRYPTO_secure_malloc_initialized())
		(void)CRYPTO_secure_malloc_init(SECURE_HEAP, 32);
	return 0;
}

/* ---- loading --------------------------------------------------------------- */

static bool valid_name(const char *n)
{
	size_t len = n ? strlen(n) : 0;
	if (len == 0 || len > MOAT_SECRETS_MAX_NAME || isdigit((unsigned char)n[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(isascii((unsigned char)n[i]) &&
		      (isalnum((unsigned char)n[i]) || n[i] == '_')))
			return false;
	return true;
}

static bool is_tchar(char c)
{
	return isascii((unsigned char)c) &&
		(isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c)));
}

static bool valid_token(const char *t, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_tchar(t[i]))
			return false;
	return true;
}

/* A value must be usable inside a header: no control characters at all. */
static bool valid_header_text(const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

static const char *source_name(enum moat_secret_source src)
{
	switch (src) {
	case MOAT_SECRET_ENV:
		return "environment variable";
	case MOAT_SECRET_FILE:
		return "file";
	case MOAT_SECRET_COMMAND:
		return "command";
	}
	return "source";
}

static int read_file_value(const struct moat_secret *def, char *buf, size_t *ret_len,
			   struct moat_error *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t total = 0;

	/* never through a symlink a sandbox could have planted (lib/paths.h) */
	fd = moat_path_read_file(def->from, NULL);
	if (fd < 0)
		return fail(e, fd, "secret %s: cannot open file %s: %s%s", def->name, def->from,
			    strerror(-fd),
			    fd == -ELOOP ? " (a symlink: pass the resolved path)" : "");
	if (fstat(fd, &st) < 0)
		return fail(e, negerrno(), "secret %s: cannot stat file %s: %s", def->name,
			    def->from, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(e, -EINVAL, "secret %s: %s is not a regular file", def->name,
			    def->from);
	if ((uint64_t)st.st_size > MOAT_SECRETS_MAX_VALUE)
		return fail(e, -EFBIG, "secret %s: file %s is larger than %u bytes", def->name,
			    def->from, MOAT_SECRETS_MAX_VALUE);
	for (;;) {
		ssize_t n = read(fd, buf + total, VALUE_CAP - total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail(e, negerrno(), "secret %s: cannot read file %s: %s", def->name,
				    def->from, strerror(errno));
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > MOAT_SECRETS_MAX_VALUE)
			return fail(e, -EFBIG, "secret %s: file %s is larger than %u bytes",
				    def->name, def->from, MOAT_SECRETS_MAX_VALUE);
	}
	*ret_len = total;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_group(pid_t pid)
{
	/* The command runs in its own process group, so its children go too. */
	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int run_command_value(const struct moat_secret *def, unsigned timeout_ms, char *buf,
			     size_t *ret_len, struct moat_error *e)
{
	_cleanup_close_ int rfd = -1, wfd = -1, pidfd = -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char arg0[] = "sh", arg1[] = "-c";
	char *argv[] = {arg0, arg1, def->from, NULL};
	long long deadline = now_ms() + timeout_ms;
	size_t total = 0;
	bool eof = false, exited = false;
	int p[2], status = 0, r;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return fail(e, negerrno(), "secret %s: pipe: %s", def->name, strerror(errno));
	rfd = p[0];
	wfd = p[1];
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	/* 0, 1 and stderr only: also nothing the caller leaked to moat */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setflags(
		&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	r = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0)
		return fail(e, -r, "secret %s: cannot run command: %s", def->name, strerror(r));
	wfd = safe_close(wfd);
	pidfd = pidfd_open_(pid);
	if (fcntl(rfd, F_SETFL, O_NONBLOCK) < 0) {
		kill_group(pid);
		return fail(e, negerrno(), "secret %s: fcntl: %s", def->name, strerror(errno));
	}

	while (!eof || !exited) {
		struct pollfd pf[2];
		nfds_t n = 0;
		long long left = deadline - now_ms();
		if (left <= 0) {
			kill_group(pid);
			return fail(e, -ETIMEDOUT, "secret %s: command timed out after %u ms",
				    def->name, timeout_ms);
		}
		if (!eof)
			pf[n++] = (struct pollfd){.fd = rfd, .events = POLLIN};
		if (!exited && pidfd >= 0)
			pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (n == 0) {
			/* No pidfd: poll for the exit every 10 ms. */
			struct timespec ts = {0, 10 * 1000000};
			nanosleep(&ts, NULL);
		} else if (poll(pf, n, (int)MIN(left, 1000)) < 0 && errno != EINTR) {
			kill_group(pid);
			return fail(e, negerrno(), "secret %s: poll: %s", def->name,
				    strerror(errno));
		}
		if (!eof) {
			ssize_t got = read(rfd, buf + total, VALUE_CAP - total);
			if (got == 0)
				eof = true;
			else if (got > 0) {
				total += (size_t)got;
				if (total > MOAT_SECRETS_MAX_VALUE) {
					kill_group(pid);
					return fail(e, -EFBIG,
						    "secret %s: command printed more than %u bytes",
						    def->name, MOAT_SECRETS_MAX_VALUE);
				}
			} else if (errno != EAGAIN && errno != EINTR) {
				kill_group(pid);
				return fail(e, negerrno(), "secret %s: reading command output: %s",
					    def->name, strerror(errno));
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid)
				exited = true;
			else if (w < 0 && errno != EINTR)
				return fail(e, negerrno(), "secret %s: waitpid: %s", def->name,
					    strerror(errno));
		}
	}
	/* Leftover children of the command: nothing may outlive loading. */
	(void)kill(-pid, SIGKILL);

	if (WIFSIGNALED(status))
		return fail(e, -ECHILD, "secret %s: command killed by signal %d", def->name,
			    WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return fail(e, -ECHILD, "secret %s: command exited with status %d", def->name,
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	*ret_len = total;
	return 0;
}

int moat_secrets_load_value(const struct moat_secret *def, unsigned timeout_ms, char **ret_value,
			    size_t *ret_len, struct moat_error *ret_err)
{
	char *buf;
	size_t len = 0;
	int r = 0;

	if (!def || !valid_name(def->name))
		return fail(ret_err, -EINVAL, "secret %s: invalid name",
			    def && def->name ? def->name : "(null)");
	if (!def->from || !*def->from)
		return fail(ret_err, -EINVAL, "secret %s: no source given", def->name);

	buf = secure_alloc(VALUE_CAP);
	if (!buf)
		return fail(ret_err, -ENOMEM, "secret %s: out of memory", def->name);

	switch (def->source) {
	case MOAT_SECRET_ENV: {
		const char *v = getenv(def->from);
		if (!v) {
			r = fail(ret_err, -ENOENT, "secret %s: environment variable %s is not set",
				 def->name, def->from);
			break;
		}
		len = strlen(v);
		if (len > MOAT_SECRETS_MAX_VALUE) {
			r = fail(ret_err, -EFBIG,
				 "secret %s: environment variable %s is longer than %u bytes",
				 def->name, def->from, MOAT_SECRETS_MAX_VALUE);
			break;
		}
		memcpy(buf, v, len);
		break;
	}
	case MOAT_SECRET_FILE:
		r = read_file_value(def, buf, &len, ret_err);
		break;
	case MOAT_SECRET_COMMAND:
		r = run_command_value(def, timeout_ms, buf, &len, ret_err);
		break;
	default:
		r = fail(ret_err, -EINVAL, "secret %s: unknown source", def->name);
	}
	if (r >= 0) {
		/* One trailing newline (as `echo` and most token files have). */
		if (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (len > 0 && buf[len - 1] == '\r')
			buf[--len] = '\0';
		buf[len] = '\0';
		if (len == 0)
			r = fail(ret_err, -ENODATA, "secret %s: the %s %s gave an empty value",
				 def->name, source_name(def->source), def->from);
		else if (!valid_header_text(buf, len))
			r = fail(ret_err, -EINVAL,
				 "secret %s: the value from %s %s contains a control character "
				 "(newline, NUL...) and cannot be sent in a header",
				 def->name, source_name(def->source), def->from);
	}
	if (r >= 0) {
		/* Keep only what is needed in locked memory. */
		char *v = secure_alloc(len + 1);
		if (v) {
			memcpy(v, buf, len + 1);
			*ret_value = v;
			*ret_len = len;
		} else
			r = fail(ret_err, -ENOMEM, "secret %s: out of memory", def->name);
	}
	secure_free(buf, VALUE_CAP);
	return r < 0 ? r : 0;
}

int moat_secrets_placeholder_new(const char *name, char out[static MOAT_SECRETS_PLACEHOLDER_MAX])
{
	unsigned char rnd[HEX_LEN / 2];
	char hex[HEX_LEN + 1];

	if (!valid_name(name))
		return -EINVAL;
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	snprintf(out, MOAT_SECRETS_PLACEHOLDER_MAX, PH_PREFIX "%s-%s", name, hex);
	return 0;
}

static int check_def(const struct moat_secret *d, struct moat_error *e)
{
	if (!valid_name(d->name))
		return fail(e, -EINVAL,
			    "secret %s: the name must be [A-Za-z_][A-Za-z0-9_]*, "
			    "at most %d characters",
			    d->name ? d->name : "(null)", MOAT_SECRETS_MAX_NAME);
	if (d->n_hosts == 0 || !d->hosts)
		return fail(e, -EINVAL, "secret %s: no hosts it may be sent to", d->name);
	for (unsigned i = 0; i < d->n_hosts; i++) {
		char norm[MOAT_TLS_MAX_NAME + 1];
		const char *h = d->hosts[i];
		bool ip;
		if (h && startswith(h, "*."))
			h += 2;
		if (!h || moat_tls_normalize_host(h, norm, &ip) < 0)
			return fail(e, -EINVAL, "secret %s: invalid host \"%s\"", d->name,
				    d->hosts[i] ? d->hosts[i] : "(null)");
	}
	for (unsigned i = 0; i < d->n_methods; i++)
		if (!d->methods[i] || !valid_token(d->methods[i], strlen(d->methods[i])))
			return fail(e, -EINVAL, "secret %s: invalid method", d->name);
	for (unsigned i = 0; i < d->n_paths; i++)
		if (!d->paths[i] || d->paths[i][0] != '/')
			return fail(e, -EINVAL, "secret %s: a path prefix must start with /",
				    d->name);
	if (d->header) {
		const char *f = d->format ? d->format : "%s", *pct = strstr(f, "%s");
		if (!valid_token(d->header, strlen(d->header)))
			return fail(e, -EINVAL, "secret %s: invalid header name \"%s\"", d->name,
				    d->header);
		if (!pct || strchr(pct + 2, '%') || memchr(f, '%', (size_t)(pct - f)) ||
		    !valid_header_text(f, strlen(f)) || strlen(f) > 1024)
			return fail(
				e, -EINVAL,
				"secret %s: the format must contain exactly one %%s and no other %%",
				d->name);
	} else if (d->format)
		return fail(e, -EINVAL, "secret %s: a format needs a header", d->name);
	return 0;
}

int moat_secrets_new_placeholders(const struct moat_secret *defs, unsigned n_defs,
				  struct moat_secrets **ret, struct moat_error *ret_err)
{
	struct moat_secrets *s;
	int r;

	if (n_defs > MOAT_MAX_SECRETS)
		return fail(ret_err, -E2BIG, "too many secrets (at most %d)", MOAT_MAX_SECRETS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return fail(ret_err, -ENOMEM, "out of memory");
	s->v = calloc(n_defs ? n_defs : 1, sizeof(*s->v));
	if (!s->v) {
		free(s);
		return fail(ret_err, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < n_defs; i++) {
		struct secret *x = &s->v[i];
		r = check_def(&defs[i], ret_err);
		if (r < 0)
			goto fail;
		for (unsigned j = 0; j < i; j++)
			if (strcasecmp(defs[j].name, defs[i].name) == 0) {
				r = fail(ret_err, -EEXIST, "secret %s: defined twice",
					 defs[i].name);
				goto fail;
			}
		x->def = &defs[i];
		r = moat_secrets_placeholder_new(defs[i].name, x->placeholder);
		if (r < 0) {
			fail(ret_err, r, "secret %s: no randomness for the placeholder",
			     defs[i].name);
			goto fail;
		}
		x->ph_len = strlen(x->placeholder);
		for (size_t k = 0; k <= x->ph_len; k++)
			x->lower[k] = (char)tolower((unsigned char)x->placeholder[k]);
		x->hex = x->lower + x->ph_len - HEX_LEN;
		s->n = i + 1;
	}
	s->n = n_defs;
	*ret = s;
	return 0;
fail:
	moat_secrets_free(s);
	return r;
}

int moat_secrets_load(struct moat_secrets *s, struct moat_error *ret_err)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct secret *x = &s->v[i];
		int r;
		if (x->value)
			continue;
		r = moat_secrets_load_value(x->def, MOAT_SECRETS_CMD_TIMEOUT_MS, &x->value,
					    &x->value_len, ret_err);
		if (r < 0) {
			moat_secrets_drop_values(s);
			return r;
		}
	}
	return 0;
}

int moat_secrets_new(const struct moat_secret *defs, unsigned n_defs, struct moat_secrets **ret,
		     struct moat_error *ret_err)
{
	struct moat_secrets *s = NULL;
	int r = moat_secrets_new_placeholders(defs, n_defs, &s, ret_err);

	if (r < 0)
		return r;
	r = moat_secrets_load(s, ret_err);
	if (r < 0) {
		moat_secrets_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

struct moat_secrets *moat_secrets_free(struct moat_secrets *s)
{
	if (!s)
		return NULL;
	for (unsigned i = 0; i < s->n; i++)
		moat_secrets_value_free(s->v[i].value, s->v[i].value_len);
	OPENSSL_cleanse(s->v, sizeof(*s->v) * (s->n ? s->n : 1));
	free(s->v);
	free(s);
	return NULL;
}

void moat_secrets_drop_values(struct moat_secrets *s)
{
	for (unsigned i = 0; s && i < s->n; i++) {
		moat_secrets_value_free(s->v[i].value, s->v[i].value_len);
		s->v[i].value = NULL;
		s->v[i].value_len = 0;
	}
}

unsigned moat_secrets_scrub_environ(const struct moat_secrets *s)
{
	unsigned count = 0;

	for (unsigned i = 0; s && i < s->n; i++) {
		const struct moat_secret *d = s->v[i].def;
		size_t nlen;
		if (d->source != MOAT_SECRET_ENV)
			continue;
		nlen = strlen(d->from);
		for (char **e = environ; e && *e; e++)
			if (strncmp(*e, d->from, nlen) == 0 && (*e)[nlen] == '=') {
				/* Overwrite in place: the initial environment block
				 * cannot be freed and would be copied into every
				 * process forked later. */
				OPENSSL_cleanse(*e + nlen + 1, strlen(*e + nlen + 1));
				count++;
			}
		(void)unsetenv(d->from);
	}
	return count;
}

int moat_secrets_value(const struct moat_secrets *s, unsigned i, const char **ret_value,
		       size_t *ret_len)
{
	if (!s || i >= s->n)
		return -EINVAL;
	*ret_value = s->v[i].value;
	*ret_len = s->v[i].value_len;
	return 0;
}

int moat_secrets_adopt(struct moat_secrets *s, unsigned i, const char *placeholder,
		       size_t placeholder_len, const void *value, size_t len)
{
	struct secret *x;
	size_t nlen;
	char *v;

	if (!s || i >= s->n || !value || len > MOAT_SECRETS_MAX_VALUE)
		return -EINVAL;
	x = &s->v[i];
	nlen = strlen(x->def->name);
	/* exactly PH_PREFIX NAME "-" HEX_LEN lowercase hex digits */
	if (placeholder_len != strlen(PH_PREFIX) + nlen + 1 + HEX_LEN ||
	    memcmp(placeholder, PH_PREFIX, strlen(PH_PREFIX)) != 0 ||
	    memcmp(placeholder + strlen(PH_PREFIX), x->def->name, nlen) != 0 ||
	    placeholder[strlen(PH_PREFIX) + nlen] != '-')
		return -EINVAL;
	for (size_t k = placeholder_len - HEX_LEN; k < placeholder_len; k++)
		if (!isxdigit((unsigned char)placeholder[k]) ||
		    isupper((unsigned char)placeholder[k]))
			return -EINVAL;
	v = secure_alloc(len + 1);
	if (!v)
		return -ENOMEM;
	memcpy(v, value, len);
	v[len] = 0;
	moat_secrets_value_free(x->value, x->value_len);
	x->value = v;
	x->value_len = len;
	memcpy(x->placeholder, placeholder, placeholder_len);
	x->placeholder[placeholder_len] = 0;
	x->ph_len = placeholder_len;
	for (size_t k = 0; k <= x->ph_len; k++)
		x->lower[k] = (char)tolower((unsigned char)x->placeholder[k]);
	x->hex = x->lower + x->ph_len - HEX_LEN;
	return 0;
}

unsigned moat_secrets_count(const struct moat_secrets *s)
{
	return s ? s->n : 0;
}

const char *moat_secrets_name(const struct moat_secrets *s, unsigned i)
{
	return i < s->n ? s->v[i].def->name : NULL;
}

const char *moat_secrets_placeholder(const struct moat_secrets *s, unsigned i)
{
	return i < s->n ? s->v[i].placeholder : NULL;
}

/* ---- matching -------------------------------------------------------------- */

bool moat_secrets_host_match(const char *pattern, const char *host)
{
	char h[MOAT_TLS_MAX_NAME + 1], p[MOAT_TLS_MAX_NAME + 1];
	bool hip, pip, wild = false;

	if (!pattern || !host)
		return false;
	if (startswith(pattern, "*.")) {
		wild = true;
		pattern += 2;
	}
	if (moat_tls_normalize_host(host, h, &hip) < 0 ||
	    moat_tls_normalize_host(pattern, p, &pip) < 0)
		return false;
	if (!wild)
		return streq(h, p);
	if (hip || pip)
		return false;
	size_t hl = strlen(h), pl = strlen(p);
	return hl > pl + 1 && h[hl - pl - 1] == '.' && streq(h + hl - pl, p);
}

static bool method_ok(char *const *methods, unsigned n, const char *m, size_t mlen)
{
	if (n == 0)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (strlen(methods[i]) == mlen && memcmp(methods[i], m, mlen) == 0)
			return true;
	return false;
}

/* Dot segments and encoded separators make prefix matching meaningless
 * ("/repos/acme/../evil", "/repos/acme/%2e%2e/evil", "..;"): such paths never
 * match a prefix rule. */
static bool path_is_plain(const char *p, size_t len)
{
	if (len == 0 || p[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\\')
			return false;
		if (p[i] == '%' && i + 2 < len) {
			char a = p[i + 1], b = (char)tolower((unsigned char)p[i + 2]);
			if ((a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c'))
				return false;
		}
		if (p[i] == '/') {
			size_t j = i + 1, k = j;
			while (k < len && p[k] == '.')
				k++;
			if ((k - j == 1 || k - j == 2) && (k == len || p[k] == '/' || p[k] == ';'))
				return false;
		}
	}
	return true;
}

static bool path_ok(char *const *paths, unsigned n, const char *p, size_t plen)
{
	if (n == 0)
		return true;
	if (!path_is_plain(p, plen))
		return false;
	for (unsigned i = 0; i < n; i++) {
		size_t l = strlen(paths[i]);
		if (plen >= l && memcmp(paths[i], p, l) == 0)
			return true;
	}
	return false;
}

int moat_secrets_http_allowed(const struct moat_http_rule *rules, unsigned n_rules,
			      const char *host, const char *method, const char *path)
{
	bool named = false;
	size_t plen = strcspn(path, "?#");

	for (unsigned i = 0; i < n_rules; i++) {
		if (!moat_secrets_host_match(rules[i].host, host))
			continue;
		named = true;
		if (method_ok(rules[i].methods, rules[i].n_methods, method, strlen(method)) &&
		    path_ok(rules[i].paths, rules[i].n_paths, path, plen))
			return 1;
	}
	return named ? 0 : 1;
}

bool moat_secrets_host_bound(const struct moat_secrets *s, const char *host)
{
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned j = 0; j < s->v[i].def->n_hosts; j++)
			if (moat_secrets_host_match(s->v[i].def->hosts[j], host))
				return true;
	return false;
}

/* ---- detection -------------------------------------------------------------- */

/* lower is data lowercased. A placeholder, or any MOAT_SECRETS_FRAGMENT
 * consecutive characters of its random part. */
static int detect_lower(const struct moat_secrets *s, const char *lower, size_t len)
{
	for (unsigned i = 0; i < s->n; i++) {
		const struct secret *x = &s->v[i];
		if (memmem(lower, len, x->lower, x->ph_len))
			return (int)i;
		for (size_t k = 0; k + MOAT_SECRETS_FRAGMENT <= HEX_LEN; k++)
			if (memmem(lower, len, x->hex + k, MOAT_SECRETS_FRAGMENT))
				return (int)i;
	}
	return -ENOENT;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Scan data as is and, when it has '%' escapes, percent-decoded. */
static int detect(const struct moat_secrets *s, const void *data, size_t len, bool pct)
{
	const char *p = data;
	char *low;
	int r;

	if (s->n == 0 || len == 0)
		return -ENOENT;
	low = malloc(len);
	if (!low)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)p[i]);
	r = detect_lower(s, low, len);
	if (r == -ENOENT && pct && memchr(p, '%', len)) {
		size_t o = 0;
		for (size_t i = 0; i < len; i++) {
			int a, b;
			if (p[i] == '%' && i + 2 < len && (a = hexval(p[i + 1])) >= 0 &&
			    (b = hexval(p[i + 2])) >= 0) {
				low[o++] = (char)tolower(a << 4 | b);
				i += 2;
			} else
				low[o++] = (char)tolower((unsigned char)p[i]);
		}
		r = detect_lower(s, low, o);
	}
	/* The scanned bytes may hold a real value (after replacement). */
	OPENSSL_cleanse(low, len);
	free(low);
	return r;
}

int moat_secrets_scan(const struct moat_secrets *s, const void *data, size_t len)
{
	return detect(s, data, len, true);
}

int moat_secrets_scan_dns(const struct moat_secrets *s, const char *qname)
{
	char joined[1024];
	size_t o = 0;

	/* Labels are joined so a placeholder split across labels is seen; the
	 * name is scanned as sent as well (dots are not in placeholders). */
	for (const char *p = qname; *p && o < sizeof(joined); p++)
		if (*p != '.')
			joined[o++] = *p;
	return detect(s, joined, o, false);
}

unsigned moat_secrets_scrub(const struct moat_secrets *s, char *buf, size_t len)
{
	unsigned count = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct secret *x = &s->v[i];
		char *p = buf, *end = buf + len;
		if (!x->value)
			continue;
		while ((p = memmem(p, (size_t)(end - p), x->value, x->value_len))) {
			memset(p, '*', x->value_len);
			p += x->value_len;
			count++;
		}
	}
	return count;
}

size_t moat_secrets_scrub_hold(const struct moat_secrets *s, const char *buf, size_t len)
{
	size_t hold = 0;

	for (unsigned i = 0; s && i < s->n; i++) {
		const struct secret *x = &s->v[i];
		size_t max;
		if (!x->value || x->value_len < 2)
			continue;
		max = MIN(MIN(x->value_len - 1, len), (size_t)MOAT_SECRETS_SCRUB_HOLD_MAX);
		for (size_t k = max; k > hold; k--)
			if (buf[len - k] == x->value[0] &&
			    memcmp(buf + len - k, x->value, k) == 0) {
				hold = k;
				break;
			}
	}
	return hold;
}

/* ---- output buffer (wiped, never realloc'ed with a copy left behind) ------- */

struct obuf {
	char *p;
	size_t len, cap;
	bool too_big;
};

static void obuf_wipe(struct obuf *b)
{
	if (b->p) {
		OPENSSL_cleanse(b->p, b->cap);
		free(b->p);
	}
	*b = (struct obuf){0};
}

static int obuf_add(struct obuf *b, const void *data, size_t n)
{
	if (b->len + n > MOAT_SECRETS_MAX_OUT) {
		b->too_big = true;
		return -E2BIG;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = MAX(b->cap * 2, b->len + n + 1);
		cap = MIN(cap, (size_t)MOAT_SECRETS_MAX_OUT + 1);
		char *np = malloc(cap);
		if (!np)
			return -ENOMEM;
		if (b->p) {
			memcpy(np, b->p, b->len);
			OPENSSL_cleanse(b->p, b->cap);
			free(b->p);
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int obuf_adds(struct obuf *b, const char *s)
{
	return obuf_add(b, s, strlen(s));
}

/* ---- base64 (strict, standard alphabet, padded) ---------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* Decode into out (at least len/4*3 bytes). -EINVAL if not strict base64. */
static int b64_decode(const char *in, size_t len, unsigned char *out, size_t *ret_len)
{
	size_t o = 0;

	if (len == 0 || len % 4 != 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		bool last = i + 4 == len;
		for (int k = 0; k < 4; k++) {
			if (in[i + k] == '=' && last && k >= 2)
				v[k] = -2;
			else if ((v[k] = b64val(in[i + k])) < 0)
				return -EINVAL;
		}
		if (v[0] < 0 || v[1] < 0 || (v[2] == -2 && v[3] != -2))
			return -EINVAL;
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (v[2] >= 0)
			out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (v[3] >= 0)
			out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	*ret_len = o;
	return 0;
}

static int b64_encode(struct obuf *b, const unsigned char *in, size_t len)
{
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;
		char q[4];
		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		q[3] = i + 2 < len ? b64[v & 63] : '=';
		int r = obuf_add(b, q, 4);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- rewriting ------------------------------------------------------------- */

typedef struct moat_http1_header hdr_t;

static bool name_is(const hdr_t *h, const char *name)
{
	return moat_http1_slice_eq(h->name, name);
}

/* The destination the head names (Host or the absolute-form authority, which
 * the parser checked agree) against the one the proxy resolved/verified. */
static bool same_host(const char *parsed, const char *host)
{
	char a[MOAT_TLS_MAX_NAME + 1], b[MOAT_TLS_MAX_NAME + 1];
	bool ip;

	return moat_tls_normalize_host(parsed, a, &ip) == 0 &&
		moat_tls_normalize_host(host, b, &ip) == 0 && streq(a, b);
}

/* The origin-form path without query: origin_prefix + path up to '?'. */
static void request_path(const struct moat_http1_request *r, const char **ret_p, size_t *ret_len)
{
	const char *q = r->path.p ? memchr(r->path.p, '?', r->path.len) : NULL;
	size_t n = !r->path.p ? 0 : q ? (size_t)(q - r->path.p) : r->path.len;

	if (r->is_connect) {
		*ret_p = "";
		*ret_len = 0;
	} else if (n == 0) {
		*ret_p = "/";
		*ret_len = 1;
	} else {
		*ret_p = r->path.p;
		*ret_len = n;
	}
}

enum why {
	WHY_HOST,
	WHY_PLAIN,
	WHY_METHOD,
	WHY_PATH,
};

struct ctx {
	const struct moat_secrets *s;
	const struct moat_secrets_request *rq;
	const struct moat_http1_request *q;
	const char *path; /* request_path() */
	size_t plen;
	bool *bound, *approved;
	enum why *why;
	struct moat_secrets_result *res;
};

_printf_(3, 4) static int refuse(struct ctx *c, int secret, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	c->res->verdict = MOAT_SECRETS_REFUSED;
	c->res->secret = secret;
	if (secret >= 0)
		snprintf(c->res->reason, sizeof(c->res->reason), "secret %s: %s (destination %s)",
			 c->s->v[secret].def->name, what, c->rq->host);
	else
		snprintf(c->res->reason, sizeof(c->res->reason), "%s (destination %s)", what,
			 c->rq->host);
	return 0;
}

static const char *why_text(enum why w)
{
	switch (w) {
	case WHY_HOST:
		return "placeholder sent to a host it is not approved for";
	case WHY_PLAIN:
		return "placeholder sent over plain HTTP; only verified HTTPS carries it";
	case WHY_METHOD:
		return "placeholder sent with a method it is not approved for";
	case WHY_PATH:
		return "placeholder sent to a path it is not approved for";
	}
	return "refused";
}

/* Replace approved placeholders in text into out. *ret_refused set when a
 * placeholder is not approved here; *ret_changed when something was
 * replaced; *ret_found when any placeholder was present. */
static int substitute(struct ctx *c, const char *text, size_t len, struct obuf *out,
		      bool *ret_changed, bool *ret_found)
{
	const struct moat_secrets *s = c->s;
	size_t i = 0;
	int r;

	while (i < len) {
		int hit = -1;
		for (unsigned k = 0; k < s->n; k++)
			if (len - i >= s->v[k].ph_len &&
			    memcmp(text + i, s->v[k].placeholder, s->v[k].ph_len) == 0) {
				hit = (int)k;
				break;
			}
		if (hit < 0) {
			const char *next =
				memmem(text + i + 1, len - i - 1, PH_PREFIX, sizeof(PH_PREFIX) - 1);
			size_t stop = next ? (size_t)(next - text) : len;
			r = obuf_add(out, text + i, stop - i);
			if (r < 0)
				return r;
			i = stop;
			continue;
		}
		*ret_found = true;
		if (!c->approved[hit])
			return refuse(c, hit, "%s", why_text(c->why[hit])), 1;
		r = obuf_add(out, s->v[hit].value, s->v[hit].value_len);
		if (r < 0)
			return r;
		*ret_changed = true;
		c->res->secret = hit;
		i += s->v[hit].ph_len;
	}
	/* Whatever is left that still looks like a placeholder (another case,
	 * a fragment) was not replaced: it goes nowhere. */
	int left = detect(s, out->p ? out->p : "", out->len, true);
	if (left >= 0)
		return refuse(c, left, "a mangled or partial placeholder in a header"), 1;
	if (left != -ENOENT)
		return left;
	return 0;
}

/* One header's value: Basic credentials are decoded, substituted and
 * re-encoded; everything else is substituted as text. Writes the value into
 * out. */
static int rewrite_value(struct ctx *c, const hdr_t *hd, struct obuf *out, bool *ret_changed,
			 bool *ret_found)
{
	static const char basic[] = "Basic ";
	const char *value = hd->value.p;
	size_t vlen = hd->value.len;
	int r;

	if ((name_is(hd, "Authorization") || name_is(hd, "Proxy-Authorization")) &&
	    vlen > sizeof(basic) - 1 && strncasecmp(value, basic, sizeof(basic) - 1) == 0) {
		const char *enc = value + sizeof(basic) - 1;
		size_t elen = vlen - (sizeof(basic) - 1), dlen = 0;
		unsigned char *dec = malloc(elen / 4 * 3 + 1);
		struct obuf plain = {0};
		bool changed = false;

		if (!dec)
			return -ENOMEM;
		if (b64_decode(enc, elen, dec, &dlen) == 0) {
			r = substitute(c, (const char *)dec, dlen, &plain, &changed, ret_found);
			if (r == 0 && changed) {
				r = obuf_add(out, value, sizeof(basic) - 1);
				if (r == 0)
					r = b64_encode(out, (unsigned char *)plain.p, plain.len);
				*ret_changed = true;
			} else if (r == 0)
				r = obuf_add(out, value, vlen);
			OPENSSL_cleanse(dec, elen / 4 * 3 + 1);
			free(dec);
			obuf_wipe(&plain);
			if (r != 0 || changed)
				return r;
			/* Nothing inside: the encoded text itself must be clean too. */
			int i = detect(c->s, value, vlen, true);
			if (i >= 0)
				return refuse(c, i, "a mangled or partial placeholder in a header"),
				       1;
			return i == -ENOENT ? 0 : i;
		}
		free(dec);
	}
	return substitute(c, value, vlen, out, ret_changed, ret_found);
}

static int do_rewrite(struct ctx *c, struct obuf *out)
{
	const struct moat_secrets *s = c->s;
	const struct moat_http1_request *q = c->q;
	const char *method = q->method.p;
	size_t mlen = q->method.len;
	bool any_bound = false, any_mp_ok = false, changed = false, host_seen = false;
	int first_bound = -1, i, r;

	/* Where a secret may go for this request. */
	for (unsigned k = 0; k < s->n; k++) {
		const struct moat_secret *d = s->v[k].def;
		bool m, p;
		c->bound[k] = false;
		for (unsigned j = 0; j < d->n_hosts && !c->bound[k]; j++)
			c->bound[k] = moat_secrets_host_match(d->hosts[j], c->rq->host);
		m = method_ok(d->methods, d->n_methods, method, mlen);
		p = c->plen > 0 && path_ok(d->paths, d->n_paths, c->path, c->plen);
		c->why[k] = !c->bound[k] ? WHY_HOST
			: !c->rq->tls	 ? WHY_PLAIN
			: !m		 ? WHY_METHOD
			: !p		 ? WHY_PATH
					 : WHY_HOST;
		c->approved[k] = c->bound[k] && c->rq->tls && m && p && s->v[k].value;
		if (c->bound[k]) {
			any_bound = true;
			if (first_bound < 0)
				first_bound = (int)k;
			if (m && p)
				any_mp_ok = true;
		}
	}

	/* A CONNECT inside a request stream would turn the rest of it into a
	 * tunnel the proxy no longer frames. */
	if (q->is_connect)
		return refuse(c, -1, "CONNECT inside a proxied request stream");
	/* One authority per request: the one the proxy resolved and verified
	 * (RT-062 b, c). The parser already refused a Host that differs from
	 * an absolute-form target. */
	if (q->has_host && !same_host(q->host, c->rq->host))
		return refuse(c, -1, "the Host header names another host");

	/* Never in the URL, never in the body, whatever the host. */
	i = detect(s, q->target.p, q->target.len, true);
	if (i >= 0)
		return refuse(c, i, "placeholder in the request URL");
	if (i != -ENOENT)
		return i;
	if (c->rq->body && c->rq->body_len) {
		i = detect(s, c->rq->body, MIN(c->rq->body_len, (size_t)MOAT_SECRETS_BODY_WINDOW),
			   true);
		if (i >= 0)
			return refuse(c, i, "placeholder in the request body");
		if (i != -ENOENT)
			return i;
	}
	for (unsigned k = 0; k < q->n_headers; k++) {
		i = detect(s, q->headers[k].name.p, q->headers[k].name.len, false);
		if (i >= 0)
			return refuse(c, i, "placeholder in a header name");
	}

	if (any_bound) {
		if ((mlen == 5 && memcmp(method, "TRACE", 5) == 0) ||
		    (mlen == 5 && memcmp(method, "TRACK", 5) == 0))
			return refuse(c, first_bound, "TRACE/TRACK to a credential host");
		if (!any_mp_ok)
			return refuse(c, first_bound,
				      "method %.*s or path not allowed on the credential host",
				      (int)MIN(mlen, (size_t)16), method);
	}

	/* The request line: as sent in origin-form; an absolute-form target
	 * goes on in origin-form (the upstream is the origin server). */
	if (q->form == MOAT_HTTP1_FORM_ORIGIN) {
		r = obuf_add(out, q->request_line.p, q->request_line.len);
	} else {
		char ver[16];
		snprintf(ver, sizeof(ver), " HTTP/1.%u", q->version_minor);
		r = obuf_add(out, method, mlen);
		if (r == 0)
			r = obuf_adds(out, " ");
		if (r == 0)
			r = obuf_adds(out, q->origin_prefix);
		if (r == 0)
			r = obuf_add(out, q->path.p, q->path.len);
		if (r == 0)
			r = obuf_adds(out, ver);
		changed = true;
	}
	if (r == 0)
		r = obuf_adds(out, "\r\n");
	if (r < 0)
		return r;

	for (unsigned k = 0; k < q->n_headers; k++) {
		const hdr_t *h = &q->headers[k];
		bool hchanged = false, found = false, dropped = false;
		size_t mark;

		if (name_is(h, "Host"))
			host_seen = true;
		/* A header moat adds itself replaces the client's. */
		for (unsigned x = 0; x < s->n; x++) {
			const struct moat_secret *d = s->v[x].def;
			if (d->header && c->bound[x] && name_is(h, d->header)) {
				dropped = true;
				if (!c->approved[x])
					return refuse(c, (int)x, "%s", why_text(c->why[x]));
				if (detect(s, h->value.p, h->value.len, true) >= 0)
					break;
				snprintf(c->res->warning, sizeof(c->res->warning),
					 "secret %s: the client's own %s header was replaced "
					 "(destination %s)",
					 d->name, d->header, c->rq->host);
				break;
			}
		}
		if (dropped) {
			changed = true;
			continue;
		}

		mark = out->len;
		r = obuf_add(out, h->name.p, h->name.len);
		if (r == 0)
			r = obuf_adds(out, ": ");
		if (r < 0)
			return r;
		struct obuf val = {0};
		r = rewrite_value(c, h, &val, &hchanged, &found);
		if (r == 0 && c->res->verdict != MOAT_SECRETS_REFUSED)
			r = obuf_add(out, val.p ? val.p : "", val.len);
		obuf_wipe(&val);
		if (r != 0 || c->res->verdict == MOAT_SECRETS_REFUSED)
			return r < 0 ? r : 0;

		/* RT-063: on a credential host in placeholder mode, the client may
		 * not bring its own Authorization. */
		if (!found && name_is(h, "Authorization"))
			for (unsigned x = 0; x < s->n; x++)
				if (c->bound[x] && !s->v[x].def->header)
					return refuse(
						c, (int)x,
						"client-supplied Authorization to a credential "
						"host (use the placeholder)");

		if (hchanged) {
			changed = true;
			r = obuf_adds(out, "\r\n");
		} else {
			/* Unchanged: the original line, byte for byte. */
			out->len = mark;
			r = obuf_add(out, h->line.p, h->line.len);
			if (r == 0)
				r = obuf_adds(out, "\r\n");
		}
		if (r < 0)
			return r;
	}
	/* An absolute-form request without Host keeps its authority. */
	if (q->form != MOAT_HTTP1_FORM_ORIGIN && !host_seen) {
		r = obuf_adds(out, "Host: ");
		if (r == 0)
			r = obuf_add(out, q->authority.p, q->authority.len);
		if (r == 0)
			r = obuf_adds(out, "\r\n");
		if (r < 0)
			return r;
	}

	/* Headers moat adds. */
	for (unsigned x = 0; x < s->n; x++) {
		const struct moat_secret *d = s->v[x].def;
		const char *f, *pct;
		if (!d->header || !c->bound[x])
			continue;
		if (!c->approved[x]) {
			if (c->why[x] == WHY_PLAIN)
				return refuse(c, (int)x, "%s", why_text(WHY_PLAIN));
			continue; /* another secret of this host approves the request */
		}
		f = d->format ? d->format : "%s";
		pct = strstr(f, "%s");
		r = obuf_adds(out, d->header);
		if (r == 0)
			r = obuf_adds(out, ": ");
		if (r == 0)
			r = obuf_add(out, f, (size_t)(pct - f));
		if (r == 0)
			r = obuf_add(out, s->v[x].value, s->v[x].value_len);
		if (r == 0)
			r = obuf_adds(out, pct + 2);
		if (r == 0)
			r = obuf_adds(out, "\r\n");
		if (r < 0)
			return r;
		changed = true;
		c->res->secret = (int)x;
	}
	r = obuf_adds(out, "\r\n");
	if (r < 0)
		return r;
	c->res->verdict = changed ? MOAT_SECRETS_REWRITTEN : MOAT_SECRETS_PASS;
	return 0;
}

int moat_secrets_rewrite(const struct moat_secrets *s, const struct moat_secrets_request *req,
			 struct moat_secrets_result *ret)
{
	struct obuf out = {0};
	struct ctx c;
	bool bound[MOAT_MAX_SECRETS], approved[MOAT_MAX_SECRETS];
	enum why why[MOAT_MAX_SECRETS];
	char norm[MOAT_TLS_MAX_NAME + 1];
	bool ip;
	int r;

	*ret = (struct moat_secrets_result){.verdict = MOAT_SECRETS_REFUSED, .secret = -1};
	if (!s) {
		static const struct moat_secrets none = {0};
		s = &none;
	}
	if (!req || !req->host || !req->http || !req->http->method.p ||
	    moat_tls_normalize_host(req->host, norm, &ip) < 0)
		return -EINVAL;
	if (s->n > MOAT_MAX_SECRETS)
		return -E2BIG;
	ret->verdict = MOAT_SECRETS_PASS;
	c = (struct ctx){.s = s,
			 .rq = req,
			 .q = req->http,
			 .bound = bound,
			 .approved = approved,
			 .why = why,
			 .res = ret};
	request_path(req->http, &c.path, &c.plen);
	r = do_rewrite(&c, &out);
	if (r < 0 || ret->verdict != MOAT_SECRETS_REWRITTEN) {
		obuf_wipe(&out);
		if (r < 0) {
			ret->verdict = MOAT_SECRETS_REFUSED;
			return r;
		}
		if (ret->verdict == MOAT_SECRETS_PASS)
			ret->secret = -1;
		return 0;
	}
	ret->head = out.p;
	ret->head_len = out.len;
	return 0;
}

int moat_secrets_http_allowed_request(const struct moat_http_rule *rules, unsigned n_rules,
				      const char *host, const struct moat_http1_request *r)
{
	char method[33], *path;
	const char *p;
	size_t plen;
	int ok;

	if (!r || !r->method.p)
		return 0;
	if (n_rules == 0)
		return 1;
	request_path(r, &p, &plen);
	moat_http1_slice_copy(r->method, method, sizeof(method));
	if (r->method.len >= sizeof(method))
		return 0;
	path = strndup(p, plen);
	if (!path)
		return -ENOMEM;
	ok = moat_secrets_http_allowed(rules, n_rules, host, method, path);
	free(path);
	return ok;
}

void moat_secrets_result_clear(struct moat_secrets_result *r)
{
	if (!r)
		return;
	if (r->head) {
		OPENSSL_cleanse(r->head, r->head_len);
		free(r->head);
	}
	*r = (struct moat_secrets_result){.secret = -1};
}
