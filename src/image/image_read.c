/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The confined reader (image.h). An image's JSON is hostile bytes and
 * jansson a parser: index.json, the manifest, the config (and a
 * docker-archive's manifest.json) are read and parsed by a child that
 *   - holds the layout directory as its root (chroot; fd 3 is closed once
 *     there) and the result pipe (fd 4), nothing else;
 *   - unprivileged: in a user namespace of its own mapping only the caller;
 *   - has no capability, no_new_privs, and a seccomp filter that allows
 *     openat for reading only (no O_WRONLY/O_RDWR/O_CREAT/O_TRUNC/O_APPEND),
 *     fstat, lseek, pread: no write to any file, no socket, no exec;
 * and checks the digest and size of every blob it reads. It sends the
 * parent a plan in a fixed format: records of a tag byte, a 32-bit length
 * (little-endian) and that many bytes, "X" last. The parent decodes it
 * (moat_image_plan_decode) with every rule of the JSON parsers checked
 * again (digests, names, counts, lengths, NAME=VALUE, an absolute
 * WorkingDir), so that a child that was taken over can send nothing the
 * parent would not have accepted from the parsers themselves; what it can
 * still choose (which layers, which config) the parent checks by hashing
 * the files, and the cache is keyed by what the parent computed, not by
 * what the child said (image_cache.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/image.h"
#include "kernel/confine.h"
#include "shared/macro.h"

/* the child's descriptors, in moat_image_spawn_child's order */
#define ROOT_FD 3
#define OUT_FD 4

/* ---- the encoding (both sides) ---- */

struct out {
	char *buf;
	size_t len, cap;
	bool full;
};

static void put(struct out *o, char tag, const void *p, size_t n)
{
	if (o->full || n > MOAT_IMAGE_PLAN_MAX || o->len + 5 + n > MOAT_IMAGE_PLAN_MAX) {
		o->full = true;
		return;
	}
	if (o->len + 5 + n > o->cap) {
		size_t cap = MAX(o->cap * 2, o->len + 5 + n + 4096);
		char *b = realloc(o->buf, cap);
		if (!b) {
			o->full = true;
			return;
		}
		o->buf = b;
		o->cap = cap;
	}
	uint32_t l = (uint32_t)n;
	o->buf[o->len] = tag;
	for (int i = 0; i < 4; i++)
		o->buf[o->len + 1 + (size_t)i] = (char)(l >> (8 * i) & 0xff);
	if (n)
		memcpy(o->buf + o->len + 5, p, n);
	o->len += 5 + n;
}

static void put_s(struct out *o, char tag, const char *s)
{
	put(o, tag, s, strlen(s));
}

static void put_u64(char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (char)(v >> (8 * i) & 0xff);
}

static uint64_t get_u64(const char *b)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)(unsigned char)b[i] << (8 * i);
	return v;
}

_printf_(3, 4) static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

void moat_image_plan_done(struct moat_image_plan *p)
{
	for (unsigned i = 0; i < MOAT_IMAGE_LAYERS_MAX; i++) {
		free(p->names[i]);
		p->names[i] = NULL;
	}
	moat_image_config_done(&p->cfg);
	p->n_layers = 0;
}

/* One more string into a NULL-terminated vector of at most max. */
static int strv_add(char ***v, size_t *n, size_t max, const char *s, size_t len)
{
	if (*n >= max)
		return -E2BIG;
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strndup(s, len)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

/* Printable ASCII of a message the child sent, '?' for the rest. */
static void show(char *why, size_t whylen, const char *p, size_t n)
{
	size_t i = 0;
	for (; i < n && i + 1 < whylen; i++)
		why[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	if (whylen)
		why[MIN(i, whylen - 1)] = 0;
}

int moat_image_plan_decode(const char *buf, size_t len, struct moat_image_plan *ret, char *why,
			   size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	bool have_digest = false, have_cfg = false, end = false;
	unsigned n_names = 0, n_oci = 0;
	int k = 0;
	if (len > MOAT_IMAGE_PLAN_MAX)
		return bad(why, whylen, "the reader's result: over %u bytes", MOAT_IMAGE_PLAN_MAX);
	for (size_t off = 0; off < len && k >= 0;) {
		if (end) {
			k = bad(why, whylen, "the reader's result: bytes after its end");
			break;
		}
		if (len - off < 5) {
			k = bad(why, whylen, "the reader's result: truncated");
			break;
		}
		char tag = buf[off];
		uint32_t n = 0;
		for (int i = 0; i < 4; i++)
			n |= (uint32_t)(unsigned char)buf[off + 1 + (size_t)i] << (8 * i);
		off += 5;
		if (n > len - off) {
			k = bad(why, whylen, "the reader's result: truncated");
			break;
		}
		const char *p = buf + off;
		off += n;
		/* every string: no NUL in it, bounded */
		bool str_ok = n <= MOAT_IMAGE_STR_MAX && !memchr(p, 0, n);
		char s[MOAT_IMAGE_STR_MAX + 1] = "";
		if (str_ok) {
			memcpy(s, p, n);
			s[n] = 0;
		}
		switch (tag) {
		case 'R': { /* a refusal: errno (4 bytes) and a message */
			if (n < 4) {
				k = bad(why, whylen, "the reader's result: a short refusal");
				break;
			}
			uint32_t e = 0;
			for (int i = 0; i < 4; i++)
				e |= (uint32_t)(unsigned char)p[i] << (8 * i);
			/* named: the refusal came from the confined reader */
			int m = snprintf(why, whylen, "the confined reader: ");
			if (m > 0 && (size_t)m < whylen)
				show(why + m, whylen - (size_t)m, p + 4, n - 4);
			k = e > 0 && e < 4096 ? -(int)e : -EINVAL;
			break;
		}
		case 'D':
			if (have_digest || !str_ok || moat_image_digest_check(s) < 0)
				k = bad(why, whylen, "the reader's result: the image digest");
			else {
				memcpy(ret->digest, s, sizeof(ret->digest));
				have_digest = true;
			}
			break;
		case 'F': /* the config: a digest, a size, a name */
			if (have_cfg || n < MOAT_IMAGE_DIGEST_LEN + 8 + 1 ||
			    n > MOAT_IMAGE_DIGEST_LEN + 8 + MOAT_IMAGE_PATH_MAX ||
			    memchr(p, 0, MOAT_IMAGE_DIGEST_LEN) ||
			    memchr(p + MOAT_IMAGE_DIGEST_LEN + 8, 0,
				   n - MOAT_IMAGE_DIGEST_LEN - 8)) {
				k = bad(why, whylen, "the reader's result: the config");
				break;
			}
			memcpy(ret->config_digest, p, MOAT_IMAGE_DIGEST_LEN);
			ret->config_digest[MOAT_IMAGE_DIGEST_LEN] = 0;
			ret->config_size = get_u64(p + MOAT_IMAGE_DIGEST_LEN);
			memcpy(ret->config_name, p + MOAT_IMAGE_DIGEST_LEN + 8,
			       n - MOAT_IMAGE_DIGEST_LEN - 8);
			ret->config_name[n - MOAT_IMAGE_DIGEST_LEN - 8] = 0;
			if (moat_image_digest_check(ret->config_digest) < 0 ||
			    ret->config_size > MOAT_IMAGE_JSON_MAX ||
			    moat_image_rel_check(ret->config_name) < 0)
				k = bad(why, whylen, "the reader's result: the config");
			have_cfg = true;
			break;
		case 'L': { /* an OCI layer: digest, size, compression */
			if (n != MOAT_IMAGE_DIGEST_LEN + 9 || n_names ||
			    ret->n_layers >= MOAT_IMAGE_LAYERS_MAX) {
				k = bad(why, whylen, "the reader's result: a layer");
				break;
			}
			struct moat_image_desc *d = &ret->layers[ret->n_layers];
			memcpy(d->digest, p, MOAT_IMAGE_DIGEST_LEN);
			d->digest[MOAT_IMAGE_DIGEST_LEN] = 0;
			d->size = get_u64(p + MOAT_IMAGE_DIGEST_LEN);
			unsigned char c = (unsigned char)p[MOAT_IMAGE_DIGEST_LEN + 8];
			if (moat_image_digest_check(d->digest) < 0 ||
			    d->size > MOAT_IMAGE_BLOB_MAX || c > MOAT_IMAGE_COMP_ZSTD) {
				k = bad(why, whylen, "the reader's result: a layer");
				break;
			}
			d->comp = (enum moat_image_comp)c;
			ret->n_layers++;
			n_oci++;
			break;
		}
		case 'N': /* a docker-archive layer: its name, then 'I' its diff_id */
			if (n_oci || !str_ok || n > MOAT_IMAGE_PATH_MAX ||
			    moat_image_rel_check(s) < 0 || ret->n_layers >= MOAT_IMAGE_LAYERS_MAX) {
				k = bad(why, whylen, "the reader's result: a layer name");
				break;
			}
			if (!(ret->names[ret->n_layers] = strdup(s))) {
				k = -ENOMEM;
				break;
			}
			ret->n_layers++;
			n_names++;
			ret->docker = true;
			break;
		case 'I':
			if (!str_ok || moat_image_digest_check(s) < 0 ||
			    ret->cfg.n_diff_ids >= MOAT_IMAGE_LAYERS_MAX)
				k = bad(why, whylen, "the reader's result: a diff_id");
			else
				memcpy(ret->cfg.diff_ids[ret->cfg.n_diff_ids++], s,
				       MOAT_IMAGE_DIGEST_LEN + 1);
			break;
		case 'E':
			if (!str_ok || !moat_image_env_ok(s) ||
			    strv_add(&ret->cfg.env, &ret->cfg.n_env, MOAT_IMAGE_ENV_MAX, s, n) < 0)
				k = bad(why, whylen, "the reader's result: Env");
			break;
		case 'P':
			if (!str_ok ||
			    strv_add(&ret->cfg.entrypoint, &ret->cfg.n_entrypoint,
				     MOAT_IMAGE_ARGS_MAX, s, n) < 0)
				k = bad(why, whylen, "the reader's result: Entrypoint");
			break;
		case 'C':
			if (!str_ok ||
			    strv_add(&ret->cfg.cmd, &ret->cfg.n_cmd, MOAT_IMAGE_ARGS_MAX, s, n) < 0)
				k = bad(why, whylen, "the reader's result: Cmd");
			break;
		case 'W':
			if (!str_ok || !n || s[0] != '/' || ret->cfg.workdir ||
			    !(ret->cfg.workdir = strdup(s)))
				k = bad(why, whylen, "the reader's result: WorkingDir");
			break;
		case 'U':
			if (!str_ok || !n || ret->cfg.user || !(ret->cfg.user = strdup(s)))
				k = bad(why, whylen, "the reader's result: User");
			break;
		case 'X':
			end = n == 0;
			if (!end)
				k = bad(why, whylen, "the reader's result: its end");
			break;
		default:
			k = bad(why, whylen, "the reader's result: an unknown record");
		}
	}
	if (k >= 0 &&
	    (!end || !have_digest || !have_cfg || !ret->n_layers ||
	     ret->cfg.n_diff_ids != ret->n_layers))
		k = bad(why, whylen,
			"the reader's result: incomplete (digest, config, one diff_id per layer, "
			"end)");
	if (k >= 0 && !ret->docker &&
	    (strncmp(ret->config_name, "blobs/sha256/", 13) != 0 ||
	     !streq(ret->config_name + 13, ret->config_digest + 7)))
		k = bad(why, whylen,
			"the reader's result: the config is not the blob of its digest");
	if (k < 0)
		moat_image_plan_done(ret);
	return k;
}

/* ---- the child ---- */

struct reader {
	struct out o;
	char why[600];
};

_printf_(3, 4) static int refuse(struct reader *r, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -e;
}

/* A file of the layout of at most max bytes; with digest set, it must hash
 * to it and be size bytes long. */
static int slurp(struct reader *r, const char *name, size_t max, const char *digest, uint64_t size,
		 const char *what, char **ret, size_t *ret_len)
{
	/* inside the chroot: "/" is the layout, nothing above it */
	int fd = openat(AT_FDCWD, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return refuse(r, e, "%s: %s", what, strerror(e));
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		return refuse(r, EFBIG, "%s: not a file of at most %zu bytes", what, max);
	}
	char *b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return refuse(r, ENOMEM, "out of memory");
	}
	size_t len = 0;
	while (len <= (size_t)st.st_size) {
		ssize_t n = pread(fd, b + len, (size_t)st.st_size + 1 - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len != (size_t)st.st_size) {
		free(b);
		return refuse(r, EIO, "%s: changed while read", what);
	}
	b[len] = 0;
	if (digest) {
		struct sha256_ctx sha;
		unsigned char md[SHA256_DIGEST_SIZE];
		char got[MOAT_IMAGE_DIGEST_LEN + 1] = "sha256:";
		sha256_init(&sha);
		sha256_update(&sha, len, (const uint8_t *)b);
		sha256_digest(&sha, sizeof(md), md);
		for (int i = 0; i < 32; i++)
			snprintf(got + 7 + 2 * i, 3, "%02x", md[i]);
		if (!streq(got, digest) || len != size) {
			free(b);
			return refuse(r, EBADMSG,
				      "%s: blob %s: digest mismatch (the file is %s, %zu bytes; "
				      "%llu expected): refused",
				      what, digest, got, len, (unsigned long long)size);
		}
	}
	*ret = b;
	*ret_len = len;
	return 0;
}

static int read_blob(struct reader *r, const struct moat_image_desc *d, const char *what,
		     char **ret, size_t *ret_len)
{
	char name[96];
	if (d->size > MOAT_IMAGE_JSON_MAX)
		return refuse(r, EFBIG, "%s: over %u bytes", what, MOAT_IMAGE_JSON_MAX);
	snprintf(name, sizeof(name), "blobs/sha256/%s", d->digest + 7);
	return slurp(r, name, MOAT_IMAGE_JSON_MAX, d->digest, d->size, what, ret, ret_len);
}

static void put_config(struct reader *r, const struct moat_image_config *c)
{
	for (unsigned i = 0; i < c->n_diff_ids; i++)
		put_s(&r->o, 'I', c->diff_ids[i]);
	for (size_t i = 0; i < c->n_env; i++)
		put_s(&r->o, 'E', c->env[i]);
	for (size_t i = 0; i < c->n_entrypoint; i++)
		put_s(&r->o, 'P', c->entrypoint[i]);
	for (size_t i = 0; i < c->n_cmd; i++)
		put_s(&r->o, 'C', c->cmd[i]);
	if (c->workdir)
		put_s(&r->o, 'W', c->workdir);
	if (c->user)
		put_s(&r->o, 'U', c->user);
}

static void put_cfgref(struct reader *r, const char *digest, uint64_t size, const char *name)
{
	char b[MOAT_IMAGE_DIGEST_LEN + 8 + MOAT_IMAGE_PATH_MAX];
	size_t n = strlen(name);
	if (n > MOAT_IMAGE_PATH_MAX)
		n = MOAT_IMAGE_PATH_MAX;
	memcpy(b, digest, MOAT_IMAGE_DIGEST_LEN);
	put_u64(b + MOAT_IMAGE_DIGEST_LEN, size);
	memcpy(b + MOAT_IMAGE_DIGEST_LEN + 8, name, n);
	put(&r->o, 'F', b, MOAT_IMAGE_DIGEST_LEN + 8 + n);
}

static int read_oci(struct reader *r)
{
	_cleanup_free_ char *json = NULL, *cfgj = NULL;
	size_t len, clen;
	char why[400];
	struct moat_image_desc d;
	struct moat_image_config cfg = {0};
	int k = slurp(r, "index.json", MOAT_IMAGE_JSON_MAX, NULL, 0, "index.json", &json, &len);
	if (k < 0)
		return k;
	if ((k = moat_image_parse_index(json, len, &d, why, sizeof(why))) < 0)
		return refuse(r, -k, "%s", why);
	if (d.is_index) { /* one level down, no further */
		free(json);
		json = NULL;
		if ((k = read_blob(r, &d, "index", &json, &len)) < 0)
			return k;
		if ((k = moat_image_parse_index(json, len, &d, why, sizeof(why))) < 0)
			return refuse(r, -k, "nested %s", why);
		if (d.is_index)
			return refuse(r, EINVAL,
				      "index: an index in an index in index.json: refused");
	}
	free(json);
	json = NULL;
	struct moat_image_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return refuse(r, ENOMEM, "out of memory");
	if ((k = read_blob(r, &d, "manifest", &json, &len)) < 0)
		goto out;
	if ((k = moat_image_parse_manifest(json, len, m, why, sizeof(why))) < 0) {
		k = refuse(r, -k, "%s", why);
		goto out;
	}
	if ((k = read_blob(r, &m->config, "config", &cfgj, &clen)) < 0)
		goto out;
	if ((k = moat_image_parse_config(cfgj, clen, &cfg, why, sizeof(why))) < 0) {
		k = refuse(r, -k, "%s", why);
		goto out;
	}
	if (cfg.n_diff_ids != m->n_layers) {
		k = refuse(r, EINVAL, "config: %u diff_ids for %u layers in the manifest",
			   cfg.n_diff_ids, m->n_layers);
		goto out;
	}
	char name[96];
	snprintf(name, sizeof(name), "blobs/sha256/%s", m->config.digest + 7);
	put_s(&r->o, 'D', d.digest);
	put_cfgref(r, m->config.digest, m->config.size, name);
	for (unsigned i = 0; i < m->n_layers; i++) {
		char b[MOAT_IMAGE_DIGEST_LEN + 9];
		memcpy(b, m->layers[i].digest, MOAT_IMAGE_DIGEST_LEN);
		put_u64(b + MOAT_IMAGE_DIGEST_LEN, m->layers[i].size);
		b[MOAT_IMAGE_DIGEST_LEN + 8] = (char)m->layers[i].comp;
		put(&r->o, 'L', b, sizeof(b));
	}
	put_config(r, &cfg);
out:
	moat_image_config_done(&cfg);
	free(m);
	return k;
}

static int read_docker(struct reader *r)
{
	_cleanup_free_ char *json = NULL, *cfgj = NULL;
	size_t len, clen;
	char why[400], key[MOAT_IMAGE_DIGEST_LEN + 1] = "sha256:";
	struct moat_image_docker dk;
	struct moat_image_config cfg = {0};
	int k = slurp(r, "manifest.json", MOAT_IMAGE_JSON_MAX, NULL, 0, "manifest.json", &json,
		      &len);
	if (k < 0)
		return k;
	if ((k = moat_image_parse_docker(json, len, &dk, why, sizeof(why))) < 0)
		return refuse(r, -k, "%s", why);
	if ((k = slurp(r, dk.config, MOAT_IMAGE_JSON_MAX, NULL, 0, dk.config, &cfgj, &clen)) < 0)
		goto out;
	/* the config's own digest names the image; its diff_ids pin the layers */
	{
		struct sha256_ctx sha;
		unsigned char md[SHA256_DIGEST_SIZE];
		sha256_init(&sha);
		sha256_update(&sha, clen, (const uint8_t *)cfgj);
		sha256_digest(&sha, sizeof(md), md);
		for (int i = 0; i < 32; i++)
			snprintf(key + 7 + 2 * i, 3, "%02x", md[i]);
	}
	if ((k = moat_image_parse_config(cfgj, clen, &cfg, why, sizeof(why))) < 0) {
		k = refuse(r, -k, "%s", why);
		goto out;
	}
	if (cfg.n_diff_ids != dk.n_layers) {
		k = refuse(r, EINVAL, "config: %u diff_ids for %u layers in manifest.json",
			   cfg.n_diff_ids, dk.n_layers);
		goto out;
	}
	put_s(&r->o, 'D', key);
	put_cfgref(r, key, clen, dk.config);
	for (unsigned i = 0; i < dk.n_layers; i++)
		put_s(&r->o, 'N', dk.layers[i]);
	put_config(r, &cfg);
out:
	moat_image_config_done(&cfg);
	moat_image_docker_done(&dk);
	return k;
}

static int rules(scmp_filter_ctx ctx, void *userdata)
{
	(void)userdata;
	/* open for reading only: nothing in the layout can be changed */
	return seccomp_rule_add(
		ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND, 0));
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t m = write(OUT_FD, p, n);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			_exit(4);
		p += m;
		n -= (size_t)m;
	}
}

_Noreturn static void child(void *userdata)
{
	static struct reader r;
	(void)userdata;
	const char *step = "confine";
	int k = moat_image_confine_child(ROOT_FD, &step);
	if (k >= 0) {
		static const int extra[] = {
			SCMP_SYS(fstat),   SCMP_SYS(newfstatat), SCMP_SYS(lseek),
			SCMP_SYS(pread64), SCMP_SYS(fcntl),
		};
		step = "seccomp";
		k = moat_confine_seccomp(extra, ELEMENTSOF(extra), rules, NULL);
	}
	if (k < 0) {
		refuse(&r, -k, "the image reader's %s step: %s", step, strerror(-k));
	} else {
		struct stat st;
		if (fstatat(AT_FDCWD, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    fstatat(AT_FDCWD, "oci-layout", &st, AT_SYMLINK_NOFOLLOW) == 0)
			k = read_oci(&r);
		else if (fstatat(AT_FDCWD, "manifest.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
			k = read_docker(&r);
		else
			k = refuse(&r, EINVAL,
				   "neither an OCI layout (oci-layout, index.json) nor a "
				   "docker-archive (manifest.json)");
		if (k >= 0 && r.o.full)
			k = refuse(&r, E2BIG, "the image's plan exceeds %u bytes",
				   MOAT_IMAGE_PLAN_MAX);
	}
	if (k < 0) {
		char b[4 + sizeof(r.why)];
		uint32_t e = (uint32_t)-k;
		size_t n = strlen(r.why);
		for (int i = 0; i < 4; i++)
			b[i] = (char)(e >> (8 * i) & 0xff);
		memcpy(b + 4, r.why, n);
		r.o.len = 0;
		r.o.full = false;
		put(&r.o, 'R', b, 4 + n);
	} else
		put(&r.o, 'X', NULL, 0);
	if (r.o.full)
		_exit(5);
	write_all(r.o.buf, r.o.len);
	_exit(k < 0 ? 1 : 0);
}

int moat_image_read(int layout_fd, struct moat_image_plan *ret, char *why, size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	pid_t pid;
	int out;
	int k = moat_image_spawn_child(&layout_fd, 1, child, NULL, &pid, &out);
	if (k < 0)
		return k;
	/* read it all (the child blocks on a full pipe), at most the cap */
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap);
	bool over = false;
	while (buf) {
		if (n == cap) {
			if (cap > MOAT_IMAGE_PLAN_MAX) {
				over = true;
				break;
			}
			char *b = realloc(buf, cap * 2);
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t m = read(out, buf + n, cap - n);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		n += (size_t)m;
	}
	close(out);
	if (over || !buf)
		(void)kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!buf)
		k = -ENOMEM;
	else if (over)
		k = bad(why, whylen, "the image reader sent more than %u bytes",
			MOAT_IMAGE_PLAN_MAX);
	else {
		k = moat_image_plan_decode(buf, n, ret, why, whylen);
		/* a plan counts only from a child that exited 0; a refusal
		 * says why whatever the status */
		if (k >= 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			moat_image_plan_done(ret);
			k = bad(why, whylen, "the image reader failed (status 0x%x)", (unsigned)st);
		} else if (k == -EBADMSG && n == 0)
			snprintf(why, whylen, "the image reader failed (status 0x%x)",
				 (unsigned)st);
	}
	free(buf);
	return k;
}
