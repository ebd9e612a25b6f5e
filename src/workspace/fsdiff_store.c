/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Manifest output (JSON, text, audit records) and save/load of the
 * manifest with the held file contents in the run directory. */
#include "workspace/fsdiff_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <sys/stat.h>

#include "audit/audit.h"
#include "shared/io.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

/* ---- JSON, text, audit ---------------------------------------------------- */

static int put_kv_str(struct moat_jbuf *b, const char *key, const char *s, bool with_hex)
{
	int r = moat_jbuf_printf(b, ",\"%s\":", key);
	if (r >= 0)
		r = moat_jbuf_put_jstr(b, s, strlen(s));
	if (r >= 0 && with_hex && !moat_json_is_clean(s, strlen(s))) {
		size_t n = strlen(s);
		_cleanup_free_ char *h = malloc(2 * n + 1);
		if (!h)
			return -ENOMEM;
		moat_fsdiff_hex((const uint8_t *)s, n, h);
		r = moat_jbuf_printf(b, ",\"%s_hex\":\"%s\"", key, h);
	}
	return r;
}

static int entry_json(struct moat_jbuf *b, const struct moat_fs_entry *e)
{
	char hx[65];
	int r = moat_jbuf_puts(b, "{\"path\":");

	if (r >= 0)
		r = moat_jbuf_put_jstr(b, e->path, strlen(e->path));
	if (r >= 0 && !moat_json_is_clean(e->path, strlen(e->path))) {
		size_t n = strlen(e->path);
		_cleanup_free_ char *h = malloc(2 * n + 1);
		if (!h)
			return -ENOMEM;
		moat_fsdiff_hex((const uint8_t *)e->path, n, h);
		r = moat_jbuf_printf(b, ",\"path_hex\":\"%s\"", h);
	}
	if (r >= 0)
		r = moat_jbuf_printf(b, ",\"change\":\"%s\",\"type\":\"%s\"",
				     moat_fs_change_name(e->change),
				     moat_fsdiff_type_name(e->type));
	if (r >= 0 && e->change != MOAT_FS_DELETED)
		r = moat_jbuf_printf(b, ",\"mode\":\"%04o\"", (unsigned)e->mode);
	if (r >= 0 && S_ISREG(e->type))
		r = moat_jbuf_printf(b, ",\"size\":%" PRIu64, e->size);
	if (r >= 0 && e->has_sha) {
		moat_fsdiff_hex(e->sha256, 32, hx);
		r = moat_jbuf_printf(b, ",\"sha256\":\"%s\"", hx);
	}
	if (r >= 0 && e->mtime_ns)
		r = moat_jbuf_printf(b, ",\"mtime_ns\":%" PRId64, e->mtime_ns);
	if (r >= 0 && e->old_type)
		r = moat_jbuf_printf(b, ",\"old_type\":\"%s\",\"old_mode\":\"%04o\"",
				     moat_fsdiff_type_name(e->old_type), (unsigned)e->old_mode);
	if (r >= 0 && S_ISREG(e->old_type))
		r = moat_jbuf_printf(b, ",\"old_size\":%" PRIu64, e->old_size);
	if (r >= 0 && e->has_old_sha) {
		moat_fsdiff_hex(e->old_sha256, 32, hx);
		r = moat_jbuf_printf(b, ",\"old_sha256\":\"%s\"", hx);
	}
	if (r >= 0 && e->opaque)
		r = moat_jbuf_puts(b, ",\"opaque\":true");
	if (r >= 0 && e->target)
		r = put_kv_str(b, "target", e->target, true);
	if (r >= 0 && e->xattrs)
		r = put_kv_str(b, "xattrs", e->xattrs, false);
	if (r >= 0 && e->xattr_diff)
		r = put_kv_str(b, "xattr_diff", e->xattr_diff, false);
	if (r >= 0 && e->flagged)
		r = put_kv_str(b, "flagged", e->flagged, false);
	if (r >= 0 && e->flagged && e->cls)
		r = moat_jbuf_printf(b, ",\"class\":\"%s\"", moat_risk_class_name(e->cls));
	if (r >= 0 && e->flagged && e->accepted)
		r = moat_jbuf_puts(b, ",\"accepted\":true");
	if (r >= 0 && e->refused)
		r = put_kv_str(b, "refused", e->refused, false);
	if (r >= 0)
		r = moat_jbuf_printf(b, ",\"state\":\"%s\"", moat_fs_state_name(e->state));
	if (r >= 0 && e->err)
		r = moat_jbuf_printf(b, ",\"error\":\"%s\"", strerrorname_np(e->err) ?: "?");
	if (r >= 0)
		r = moat_jbuf_puts(b, "}");
	return r;
}

int moat_manifest_to_json(const struct moat_manifest *m, char **ret)
{
	struct moat_jbuf b;
	unsigned cnt[5] = {0}, flagged = 0, refused = 0;
	int r;

	moat_jbuf_init(&b, MANIFEST_MAX_BYTES);
	r = moat_jbuf_printf(&b, "{\"v\":1");
	if (r >= 0 && m->workspace)
		r = put_kv_str(&b, "workspace", m->workspace, true);
	if (r >= 0)
		r = moat_jbuf_puts(&b, ",\"entries\":[");
	for (size_t i = 0; r >= 0 && i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		if (i > 0)
			r = moat_jbuf_puts(&b, ",\n");
		else
			r = moat_jbuf_puts(&b, "\n");
		if (r >= 0)
			r = entry_json(&b, e);
		cnt[e->change]++;
		flagged += !!e->flagged;
		refused += !!e->refused;
	}
	if (r >= 0)
		r = moat_jbuf_printf(
			&b,
			"],\n\"summary\":{\"created\":%u,\"modified\":%u,\"deleted\":%u,"
			"\"mode\":%u,\"xattr\":%u,\"flagged\":%u,\"refused\":%u,\"bytes\":%" PRIu64
			"}}\n",
			cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], flagged, refused, m->total_bytes);
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

static int put_display(struct moat_jbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (moat_json_is_clean(s, n) && !strchr(s, ' '))
		return moat_jbuf_putn(b, s, n);
	return moat_jbuf_put_jstr(b, s, n);
}

int moat_manifest_to_text(const struct moat_manifest *m, char **ret)
{
	static const char marks[] = "+~-mx";
	struct moat_jbuf b;
	unsigned cnt[5] = {0}, flagged = 0, refused = 0, held = 0, listed = 0;
	int r = 0;

	moat_jbuf_init(&b, MANIFEST_MAX_BYTES);
	for (size_t i = 0; r >= 0 && i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		mode_t t = e->change == MOAT_FS_DELETED ? e->old_type : e->type;
		cnt[e->change]++;
		flagged += !!e->flagged;
		refused += !!e->refused;
		held += e->state == MOAT_FS_HELD;
		listed += e->flagged && e->accepted && !e->refused;
		r = moat_jbuf_printf(&b, "%c %-8s %-7s ", marks[e->change],
				     moat_fs_change_name(e->change), moat_fsdiff_type_name(t));
		if (r >= 0)
			r = put_display(&b, e->path);
		if (r >= 0 && S_ISDIR(t))
			r = moat_jbuf_puts(&b, "/");
		if (r >= 0 && e->target) {
			r = moat_jbuf_puts(&b, " -> ");
			if (r >= 0)
				r = put_display(&b, e->target);
		}
		if (r >= 0 && S_ISREG(e->type) && e->change != MOAT_FS_MODE &&
		    e->change != MOAT_FS_XATTR)
			r = moat_jbuf_printf(&b, " (%" PRIu64 " bytes)", e->size);
		if (r >= 0 && e->xattr_diff) {
			r = moat_jbuf_puts(&b, " (xattrs ");
			if (r >= 0)
				r = put_display(&b, e->xattr_diff);
			if (r >= 0)
				r = moat_jbuf_puts(&b, ")");
		}
		if (r >= 0 && e->old_type && e->change != MOAT_FS_DELETED && e->old_mode != e->mode)
			r = moat_jbuf_printf(&b, " (mode %04o -> %04o)", (unsigned)e->old_mode,
					     (unsigned)e->mode);
		if (r >= 0 && e->old_type && e->type && e->old_type != e->type)
			r = moat_jbuf_printf(&b, " (was %s)", moat_fsdiff_type_name(e->old_type));
		if (r >= 0 && e->refused)
			r = moat_jbuf_printf(&b, "  REFUSED: %s", e->refused);
		else if (r >= 0 && e->flagged && e->accepted)
			r = moat_jbuf_printf(&b, "  LISTED: %s (class %s)", e->flagged,
					     moat_risk_class_name(e->cls));
		else if (r >= 0 && e->flagged)
			r = moat_jbuf_printf(&b, "  FLAGGED: %s (class %s)", e->flagged,
					     e->cls ? moat_risk_class_name(e->cls) : "?");
		if (r >= 0 && e->state != MOAT_FS_PENDING)
			r = moat_jbuf_printf(&b, "  [%s%s%s]", moat_fs_state_name(e->state),
					     e->err ? ": " : "", e->err ? strerror(e->err) : "");
		if (r >= 0)
			r = moat_jbuf_puts(&b, "\n");
	}
	if (r >= 0)
		r = moat_jbuf_printf(
			&b,
			"%u created, %u modified, %u deleted, %u mode changes, %u xattr changes; "
			"%u flagged (%u of them applied and listed), %u refused, %u held back\n",
			cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], flagged, listed, refused, held);
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

int moat_manifest_audit(const struct moat_manifest *m, struct moat_audit *a)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		struct moat_audit_field f[14];
		size_t k = 0;
		char hx[65];
		int r;

		f[k++] = (struct moat_audit_field)MOAT_F_STR("path", e->path);
		f[k++] = (struct moat_audit_field)MOAT_F_STR("change",
							     moat_fs_change_name(e->change));
		f[k++] = (struct moat_audit_field)MOAT_F_STR(
			"file_type",
			moat_fsdiff_type_name(e->change == MOAT_FS_DELETED ? e->old_type
									   : e->type));
		if (S_ISREG(e->type))
			f[k++] = (struct moat_audit_field)MOAT_F_UINT("size", e->size);
		if (e->has_sha) {
			moat_fsdiff_hex(e->sha256, 32, hx);
			f[k++] = (struct moat_audit_field)MOAT_F_STR("sha256", hx);
		}
		if (e->change != MOAT_FS_DELETED)
			f[k++] = (struct moat_audit_field)MOAT_F_UINT("mode", e->mode);
		if (e->target)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("target", e->target);
		if (e->xattr_diff)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("xattrs", e->xattr_diff);
		if (e->flagged)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("flagged", e->flagged);
		if (e->flagged && e->cls)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("class",
								     moat_risk_class_name(e->cls));
		if (e->refused)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("refused", e->refused);
		f[k++] = (struct moat_audit_field)MOAT_F_STR("state", moat_fs_state_name(e->state));
		if (e->refused || e->state == MOAT_FS_HELD)
			f[k++] = (struct moat_audit_field)MOAT_F_DENIED;
		r = moat_audit_event(a, MOAT_EV_FILE, f, k);
		if (r < 0)
			return r;
		/* an accepted (listed) entry is in its file event, not an alert */
		if ((e->flagged && !(e->accepted && e->state == MOAT_FS_APPLIED)) || e->refused) {
			r = MOAT_AUDIT(
				a, MOAT_EV_ALERT,
				MOAT_F_STR("cause", e->refused ? "refused_file" : "flagged_file"),
				MOAT_F_STR("path", e->path),
				MOAT_F_STR("reason", e->refused ? e->refused : e->flagged),
				MOAT_F_STR("state", moat_fs_state_name(e->state)));
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- save / load ---------------------------------------------------------- */

int moat_fsdiff_open_store(int run_dirfd)
{
	int fd = openat(run_dirfd, "held", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? negerrno() : fd;
}

/* durable: on disk before the rename (what `moat apply` will need); an empty
 * manifest (nothing changed, nothing to apply) is only renamed into place: a
 * crash can lose it, never a change, and the fsync is the longest wait of a
 * run without changes on the benchmark machine (ext4 without a journal) */
static int write_file_atomic(int dirfd, const char *name, const char *data, size_t len,
			     bool durable)
{
	char tmp[32];
	_cleanup_close_ int fd = -1;
	int r = moat_fsdiff_tmp_name(tmp);

	if (r < 0)
		return r;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return negerrno();
	r = moat_write_all(fd, data, len);
	if (r >= 0 && durable && fsync(fd) < 0)
		r = negerrno();
	if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = negerrno();
	if (r < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return r;
}

static bool keeps_content(const struct moat_fs_entry *e)
{
	return S_ISREG(e->type) && e->has_sha && !e->refused && e->state != MOAT_FS_APPLIED &&
		e->state != MOAT_FS_DROPPED && e->change != MOAT_FS_MODE &&
		e->change != MOAT_FS_DELETED;
}

int moat_fsdiff_save(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes)
{
	return moat_fsdiff_save_ex(m, upper_dirfd, run_dirfd, max_bytes, NULL);
}

int moat_fsdiff_save_ex(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes,
			uint64_t *ret_need)
{
	_cleanup_free_ char *json = NULL;
	uint64_t need = 0;
	int r, first_err = 0;

	if (upper_dirfd >= 0) {
		/* all or nothing: a partial store would let `moat apply` build half a tree */
		for (size_t i = 0; i < m->n; i++)
			if (keeps_content(&m->entries[i]))
				need += m->entries[i].size;
		if (ret_need)
			*ret_need = need;
		if (max_bytes && need > max_bytes) {
			for (size_t i = 0; i < m->n; i++) {
				struct moat_fs_entry *e = &m->entries[i];
				if (!e->refused && e->state != MOAT_FS_APPLIED)
					e->state = MOAT_FS_DROPPED;
			}
			first_err = -EFBIG;
			upper_dirfd = -1;
		}
	}
	if (upper_dirfd >= 0) {
		if (mkdirat(run_dirfd, "held", 0700) < 0 && errno != EEXIST)
			return negerrno();
		_cleanup_close_ int store =
			openat(run_dirfd, "held", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (store < 0)
			return negerrno();
		for (size_t i = 0; i < m->n; i++) {
			const struct moat_fs_entry *e = &m->entries[i];
			struct stat st;
			char hx[65], tmp[32];

			if (!keeps_content(e))
				continue;
			moat_fsdiff_hex(e->sha256, 32, hx);
			if (fstatat(store, hx, &st, AT_SYMLINK_NOFOLLOW) == 0)
				continue; /* same content already held */
			r = moat_fsdiff_tmp_name(tmp);
			if (r >= 0)
				r = moat_fsdiff_write_file_tmp(&(struct moat_manifest){0}, e,
							       upper_dirfd, store, tmp, false);
			/* held copies stay readable whatever mode they will get */
			if (r >= 0 && fchmodat(store, tmp, 0400, 0) < 0)
				r = negerrno();
			if (r >= 0 && renameat(store, tmp, store, hx) < 0)
				r = negerrno();
			if (r < 0) {
				(void)unlinkat(store, tmp, 0);
				first_err = first_err ?: r;
			}
		}
	}
	/* the manifest is written even when some copies failed: `moat diff`
	 * shows everything, `moat apply` fails only those entries */
	r = moat_manifest_to_json(m, &json);
	if (r >= 0)
		r = write_file_atomic(run_dirfd, "manifest.json", json, strlen(json), m->n > 0);
	return r < 0 ? r : first_err;
}

static bool rel_path_ok(const char *p)
{
	if (!*p || *p == '/' || strlen(p) > PATH_MAX_BYTES)
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (*s == '/')
			s++;
		if (!*s && s[-1] == '/')
			return false;
	}
	return true;
}

static int get_str_hex(json_t *o, const char *key, char **ret)
{
	char hk[32];
	json_t *h, *v;

	snprintf(hk, sizeof(hk), "%s_hex", key);
	h = json_object_get(o, hk);
	v = json_object_get(o, key);
	*ret = NULL;
	if (json_is_string(h)) {
		size_t n = json_string_length(h);
		if (n % 2 || n == 0)
			return -EINVAL;
		char *s = calloc(n / 2 + 1, 1);
		if (!s)
			return -ENOMEM;
		if (moat_fsdiff_unhex(json_string_value(h), (uint8_t *)s, n / 2) < 0 ||
		    strlen(s) != n / 2) {
			free(s);
			return -EINVAL;
		}
		*ret = s;
		return 0;
	}
	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int get_mode(json_t *o, const char *key, mode_t *ret)
{
	json_t *v = json_object_get(o, key);
	char *end;
	unsigned long m;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	errno = 0;
	m = strtoul(json_string_value(v), &end, 8);
	if (errno || *end || m > 07777)
		return -EINVAL;
	*ret = (mode_t)m;
	return 0;
}

static int load_entry(json_t *o, struct moat_fs_entry *e)
{
	const char *s;
	json_t *v;
	int r;

	if (!json_is_object(o))
		return -EINVAL;
	r = get_str_hex(o, "path", &e->path);
	if (r < 0 || !e->path || !rel_path_ok(e->path))
		return -EINVAL;
	s = json_string_value(json_object_get(o, "change"));
	e->change = (enum moat_fs_change) - 1;
	for (unsigned c = 0; s && c <= MOAT_FS_XATTR; c++)
		if (streq(s, moat_fs_change_name(c)))
			e->change = c;
	if ((unsigned)e->change > MOAT_FS_XATTR)
		return -EINVAL;
	e->type = moat_fsdiff_type_from_name(json_string_value(json_object_get(o, "type")));
	e->old_type = json_object_get(o, "old_type")
		? moat_fsdiff_type_from_name(json_string_value(json_object_get(o, "old_type")))
		: 0;
	if (e->type == (mode_t)-1 || e->old_type == (mode_t)-1)
		return -EINVAL;
	if (get_mode(o, "mode", &e->mode) < 0 || get_mode(o, "old_mode", &e->old_mode) < 0)
		return -EINVAL;
	if ((v = json_object_get(o, "size")))
		e->size = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(o, "old_size")))
		e->old_size = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(o, "mtime_ns")))
		e->mtime_ns = json_integer_value(v);
	if ((v = json_object_get(o, "sha256"))) {
		if (!json_is_string(v) ||
		    moat_fsdiff_unhex(json_string_value(v), e->sha256, 32) < 0)
			return -EINVAL;
		e->has_sha = true;
	}
	if ((v = json_object_get(o, "old_sha256"))) {
		if (!json_is_string(v) ||
		    moat_fsdiff_unhex(json_string_value(v), e->old_sha256, 32) < 0)
			return -EINVAL;
		e->has_old_sha = true;
	}
	e->opaque = json_is_true(json_object_get(o, "opaque"));
	if (get_str_hex(o, "xattrs", &e->xattrs) < 0 ||
	    get_str_hex(o, "xattr_diff", &e->xattr_diff) < 0 ||
	    get_str_hex(o, "target", &e->target) < 0 ||
	    get_str_hex(o, "flagged", &e->flagged) < 0 ||
	    get_str_hex(o, "refused", &e->refused) < 0)
		return -EINVAL;
	if (S_ISLNK(e->type) && e->change != MOAT_FS_DELETED && !e->target)
		return -EINVAL;
	if ((v = json_object_get(o, "class"))) {
		int c = json_is_string(v) ? moat_risk_class_from_name(json_string_value(v)) : -1;
		if (c < 0)
			return -EINVAL;
		e->cls = (enum moat_risk_class)c;
	}
	e->accepted = e->flagged && json_is_true(json_object_get(o, "accepted"));
	s = json_string_value(json_object_get(o, "state"));
	e->state = (enum moat_fs_state) - 1;
	for (unsigned c = 0; s && c <= MOAT_FS_DROPPED; c++)
		if (streq(s, moat_fs_state_name(c)))
			e->state = c;
	if ((unsigned)e->state > MOAT_FS_DROPPED)
		return -EINVAL;
	/* a failed or conflicting entry may be retried */
	if (e->state == MOAT_FS_FAILED || e->state == MOAT_FS_CONFLICT)
		e->state = MOAT_FS_PENDING;
	/* refusals are recomputed from the data, not trusted from the file */
	if (!e->refused && e->change != MOAT_FS_DELETED)
		return moat_fsdiff_refuse_entry(e);
	return 0;
}

int moat_fsdiff_load(int run_dirfd, struct moat_manifest **ret)
{
	_cleanup_close_ int fd =
		openat(run_dirfd, "manifest.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct moat_manifest *m = NULL;
	json_error_t err;
	json_t *root, *ents;
	struct stat st;
	ssize_t n;
	int r = 0;

	if (fd < 0)
		return negerrno();
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > MANIFEST_MAX_BYTES)
		return -EINVAL;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	n = read(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return negerrno();
	root = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return -EBADMSG;
	ents = json_object_get(root, "entries");
	if (json_integer_value(json_object_get(root, "v")) != 1 || !json_is_array(ents) ||
	    json_array_size(ents) > 1000000) {
		json_decref(root);
		return -EBADMSG;
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->entries = calloc(json_array_size(ents) + 1, sizeof(*m->entries));
	if (!m || !m->entries) {
		json_decref(root);
		moat_manifest_free(m);
		return -ENOMEM;
	}
	m->cap = json_array_size(ents) + 1;
	m->from_store = true;
	r = get_str_hex(root, "workspace", &m->workspace);
	for (size_t i = 0; r >= 0 && i < json_array_size(ents); i++) {
		r = load_entry(json_array_get(ents, i), &m->entries[i]);
		m->n = i + 1;
		if (r >= 0 && S_ISREG(m->entries[i].type) &&
		    m->entries[i].change != MOAT_FS_DELETED &&
		    m->entries[i].change != MOAT_FS_MODE && m->entries[i].change != MOAT_FS_XATTR)
			m->total_bytes += m->entries[i].size;
	}
	json_decref(root);
	if (r < 0) {
		moat_manifest_free(m);
		return r == -ENOMEM ? r : -EBADMSG;
	}
	*ret = m;
	return 0;
}
