/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The content part of `moat diff RUN`: for each created or modified regular
 * file whose new content the run still holds (held/<sha256>), a unified diff
 * against the workspace's current file (empty when created). Binary files
 * (a NUL in the first 8 KiB) are only marked. Every byte that would reach the
 * terminal is escaped as the audit log escapes (jsonesc.h; tabs kept): the
 * content was written inside the sandbox.
 *
 * Bounded: files over DIFF_MAX_FILE, more than DIFF_MAX_LINES lines, or a
 * changed middle (after the common head and tail) larger than DIFF_MAX_MID
 * lines on both sides are summarized instead of diffed (the middle as all
 * removed/all added, said so); the whole output stops at DIFF_MAX_OUT bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workspace/fsdiff.h"
#include "workspace/review_diff.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define DIFF_MAX_FILE (1u << 20)
#define DIFF_MAX_LINES 20000u
#define DIFF_MAX_MID 1500u
#define DIFF_MAX_OUT (4u << 20)
#define DIFF_CONTEXT 3u

struct text {
	char *buf;
	size_t len;
	const char **line;
	size_t *llen;
	size_t n;
};

static void text_free(struct text *t)
{
	free(t->buf);
	free(t->line);
	free(t->llen);
}

/* Reads at most DIFF_MAX_FILE+1 bytes of @fd. */
static int slurp(int fd, struct text *t)
{
	size_t cap = 0;
	ssize_t k;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return 0; /* no such file: empty */
	for (;;) {
		if (t->len == cap) {
			if (cap > DIFF_MAX_FILE)
				return -EFBIG;
			cap = cap ? 2 * cap : 8192;
			char *nb = realloc(t->buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			t->buf = nb;
		}
		k = read(fd, t->buf + t->len, cap - t->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return negerrno();
		if (k == 0)
			break;
		t->len += (size_t)k;
	}
	return t->len > DIFF_MAX_FILE ? -EFBIG : 0;
}

static bool binary(const struct text *t)
{
	return t->len && memchr(t->buf, '\0', t->len < 8192 ? t->len : 8192);
}

static int split(struct text *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->len; i++)
		n += t->buf[i] == '\n';
	n += t->len && t->buf[t->len - 1] != '\n';
	if (n > DIFF_MAX_LINES)
		return -E2BIG;
	t->line = calloc(n + 1, sizeof(*t->line));
	t->llen = calloc(n + 1, sizeof(*t->llen));
	if (!t->line || !t->llen)
		return -ENOMEM;
	for (size_t s = 0; s < t->len;) {
		const char *nl = memchr(t->buf + s, '\n', t->len - s);
		size_t e = nl ? (size_t)(nl - t->buf) : t->len;
		t->line[t->n] = t->buf + s;
		t->llen[t->n++] = e - s;
		s = e + 1;
	}
	return 0;
}

/* Tabs as they are; every run of other bytes printed as is when it is clean
 * UTF-8 without controls, else escaped as the audit log escapes (C0, DEL,
 * C1, bidi and line-separator characters, invalid UTF-8: jsonesc.h). */
static void put_escaped(FILE *f, const char *s, size_t n)
{
	while (n) {
		const char *tab = memchr(s, '\t', n);
		size_t seg = tab ? (size_t)(tab - s) : n;
		if (moat_json_is_clean(s, seg)) {
			fwrite(s, 1, seg, f);
		} else {
			size_t need = moat_json_escape(s, seg, NULL, 0) + 1;
			char *e = malloc(need);
			if (e) {
				moat_json_escape(s, seg, e, need);
				fputs(e, f);
				free(e);
			} else
				fputs("(unprintable)", f);
		}
		if (tab) {
			fputc('\t', f);
			seg++;
		}
		s += seg;
		n -= seg;
	}
}

static bool same(const struct text *a, size_t i, const struct text *b, size_t j)
{
	return a->llen[i] == b->llen[j] && memcmp(a->line[i], b->line[j], a->llen[i]) == 0;
}

/* op per aligned line: ' ' kept, '-' only in a, '+' only in b */
struct op {
	char kind;
	size_t i, j;
};

/* The edit script of a -> b: common head and tail, LCS of the middle when
 * it is small enough (else the middle as all removed, all added). */
static int script(const struct text *a, const struct text *b, struct op **ret, size_t *ret_n,
		  bool *ret_coarse)
{
	size_t h = 0, t = 0, n = 0;
	struct op *ops = calloc(a->n + b->n + 1, sizeof(*ops));

	if (!ops)
		return -ENOMEM;
	*ret_coarse = false;
	while (h < a->n && h < b->n && same(a, h, b, h))
		h++;
	while (t < a->n - h && t < b->n - h && same(a, a->n - 1 - t, b, b->n - 1 - t))
		t++;
	for (size_t k = 0; k < h; k++)
		ops[n++] = (struct op){' ', k, k};
	size_t ma = a->n - h - t, mb = b->n - h - t;
	if (ma > DIFF_MAX_MID && mb > DIFF_MAX_MID) {
		*ret_coarse = true;
		for (size_t k = 0; k < ma; k++)
			ops[n++] = (struct op){'-', h + k, 0};
		for (size_t k = 0; k < mb; k++)
			ops[n++] = (struct op){'+', 0, h + k};
	} else if (ma || mb) {
		/* L[i][j]: LCS length of a[h+i..] and b[h+j..] */
		size_t w = mb + 1;
		uint16_t *L = calloc((ma + 1) * w, sizeof(*L));
		if (!L) {
			free(ops);
			return -ENOMEM;
		}
		for (size_t i = ma; i-- > 0;)
			for (size_t j = mb; j-- > 0;)
				L[i * w + j] = same(a, h + i, b, h + j) ? L[(i + 1) * w + j + 1] + 1
					: L[(i + 1) * w + j] >= L[i * w + j + 1]
					? L[(i + 1) * w + j]
					: L[i * w + j + 1];
		size_t i = 0, j = 0;
		while (i < ma || j < mb) {
			if (i < ma && j < mb && same(a, h + i, b, h + j)) {
				ops[n++] = (struct op){' ', h + i, h + j};
				i++, j++;
			} else if (i < ma && (j == mb || L[(i + 1) * w + j] >= L[i * w + j + 1])) {
				ops[n++] = (struct op){'-', h + i, 0};
				i++;
			} else {
				ops[n++] = (struct op){'+', 0, h + j};
				j++;
			}
		}
		free(L);
	}
	for (size_t k = 0; k < t; k++)
		ops[n++] = (struct op){' ', a->n - t + k, b->n - t + k};
	*ret = ops;
	*ret_n = n;
	return 0;
}

static void hunks(FILE *f, const struct text *a, const struct text *b, const struct op *ops,
		  size_t n)
{
	for (size_t k = 0; k < n;) {
		if (ops[k].kind == ' ') {
			k++;
			continue;
		}
		/* a hunk: from DIFF_CONTEXT before the change to DIFF_CONTEXT after
		 * the last change that is at most 2*DIFF_CONTEXT from the next */
		size_t s = k >= DIFF_CONTEXT ? k - DIFF_CONTEXT : 0, e = k;
		for (size_t q = k; q < n; q++)
			if (ops[q].kind != ' ') {
				if (q > e + 2 * DIFF_CONTEXT)
					break;
				e = q;
			}
		e = e + DIFF_CONTEXT + 1 < n ? e + DIFF_CONTEXT + 1 : n;
		size_t a0 = 0, b0 = 0, an = 0, bn = 0;
		bool sa = false, sb = false;
		for (size_t q = s; q < e; q++) {
			if (ops[q].kind != '+') {
				if (!sa)
					a0 = ops[q].i, sa = true;
				an++;
			}
			if (ops[q].kind != '-') {
				if (!sb)
					b0 = ops[q].j, sb = true;
				bn++;
			}
		}
		fprintf(f, "@@ -%zu,%zu +%zu,%zu @@\n", an ? a0 + 1 : a0, an, bn ? b0 + 1 : b0, bn);
		for (size_t q = s; q < e; q++) {
			const struct text *src = ops[q].kind == '+' ? b : a;
			size_t idx = ops[q].kind == '+' ? ops[q].j : ops[q].i;
			fputc(ops[q].kind, f);
			put_escaped(f, src->line[idx], src->llen[idx]);
			fputc('\n', f);
		}
		k = e;
	}
	(void)b;
}

/* The workspace's file @path, never through a symlink, NULL-equivalent -1. */
static int open_old(int ws_fd, const char *path)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
				       RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd = (int)syscall(SYS_openat2, ws_fd, path, &how, sizeof(how));
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		return -EINVAL;
	}
	return fd < 0 ? negerrno() : fd;
}

static void one(FILE *f, int store, int ws_fd, const struct moat_fs_entry *e)
{
	char hex[65];
	struct text a, b;
	struct op *ops = NULL;
	size_t n = 0;
	bool coarse;
	int k;

	for (size_t i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", e->sha256[i]);
	fputs("--- a/", f);
	put_escaped(f, e->path, strlen(e->path));
	fputs(e->change == MOAT_FS_CREATED ? " (did not exist)\n+++ b/" : "\n+++ b/", f);
	put_escaped(f, e->path, strlen(e->path));
	fputc('\n', f);
	_cleanup_close_ int nfd = openat(store, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int ofd =
		e->change == MOAT_FS_CREATED || ws_fd < 0 ? -1 : open_old(ws_fd, e->path);
	if (nfd < 0) {
		fputs("(the new content is not kept: applied, or over the held-data cap)\n", f);
		return;
	}
	if (e->change == MOAT_FS_MODIFIED && ofd < 0)
		fputs("(the workspace's file cannot be read now: diff against empty)\n", f);
	if ((k = slurp(ofd, &a)) < 0 || (k = slurp(nfd, &b)) < 0) {
		fprintf(f, "(%s: not diffed)\n", k == -EFBIG ? "over 1 MiB" : strerror(-k));
		goto out;
	}
	if (binary(&a) || binary(&b)) {
		fprintf(f, "Binary file differs (%zu -> %zu bytes)\n", a.len, b.len);
		goto out;
	}
	if ((k = split(&a)) < 0 || (k = split(&b)) < 0 ||
	    (k = script(&a, &b, &ops, &n, &coarse)) < 0) {
		fprintf(f, "(%s: not diffed)\n", k == -E2BIG ? "too many lines" : strerror(-k));
		goto out;
	}
	if (coarse)
		fputs("(large change: shown as removed and added, not aligned)\n", f);
	hunks(f, &a, &b, ops, n);
	if (a.len && a.buf[a.len - 1] != '\n')
		fputs("\\ No newline at end of the old file\n", f);
	if (b.len && b.buf[b.len - 1] != '\n')
		fputs("\\ No newline at end of the new file\n", f);
out:
	free(ops);
	text_free(&a);
	text_free(&b);
}

int moat_review_content_diff(int run_dirfd, int ws_fd, const struct moat_manifest *m,
			     char **ret_text)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	_cleanup_close_ int store = moat_fsdiff_open_store(run_dirfd);
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		if (!S_ISREG(e->type) || !e->has_sha ||
		    (e->change != MOAT_FS_CREATED && e->change != MOAT_FS_MODIFIED))
			continue;
		if (store < 0) {
			fputs("(no held content in this run)\n", f);
			break;
		}
		fflush(f);
		if (len > DIFF_MAX_OUT) {
			fputs("(diff output truncated at 4 MiB)\n", f);
			break;
		}
		one(f, store, ws_fd, e);
	}
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret_text = text;
	return 0;
}
