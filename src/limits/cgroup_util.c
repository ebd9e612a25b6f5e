/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every cgroup file shares: the controller names, bounded reads and
 * writes of cgroup files relative to a directory fd, paths and clocks. */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <time.h>

#include "limits/cgroup_int.h"
#include "shared/macro.h"

const struct moat_cgroup_ctrl_name moat_cgroup_ctrls[MOAT_CGROUP_N_CTRLS] = {
	{"memory", MOAT_CG_MEMORY},   {"pids", MOAT_CG_PIDS},	    {"cpu", MOAT_CG_CPU},
	{"cpuacct", MOAT_CG_CPUACCT}, {"freezer", MOAT_CG_FREEZER},
};

static unsigned ctrl_bit(const char *name, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(moat_cgroup_ctrls); i++)
		if (strlen(moat_cgroup_ctrls[i].name) == len &&
		    strncmp(moat_cgroup_ctrls[i].name, name, len) == 0)
			return moat_cgroup_ctrls[i].bit;
	return 0;
}

/* Bits of the known controller names in a list separated by any of seps
 * ("+memory +pids" from cgroup.subtree_control is understood too). */
unsigned moat_cgroup_ctrl_mask(const char *list, const char *seps)
{
	unsigned mask = 0;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps), wn = n;
		const char *w = p;
		if (wn > 0 && *w == '+')
			w++, wn--;
		mask |= ctrl_bit(w, wn);
		p += n;
		if (*p)
			p++;
	}
	return mask;
}

const char *moat_cgroup_ctrl_names(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;
	if (len == 0)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(moat_cgroup_ctrls); i++) {
		if (!(mask & moat_cgroup_ctrls[i].bit))
			continue;
		int n = snprintf(buf + off, len - off, "%s%s", off ? "," : "",
				 moat_cgroup_ctrls[i].name);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	return buf;
}

_printf_(3, 4) int moat_cgroup_path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Copy at most n bytes of src (distinct objects in one struct), truncating. */
void moat_cgroup_copy_str(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		n = size - 1;
	memmove(dst, src, n);
	dst[n] = 0;
}

uint64_t moat_cgroup_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void moat_cgroup_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}
/* Read up to size-1 bytes of dirfd/name, NUL-terminated. Returns length or -errno. */
int moat_cgroup_read_at(int dirfd, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negerrno();
	size_t off = 0;
	while (off + 1 < size) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = 0;
	return (int)off;
}

int moat_cgroup_write_at(int dirfd, const char *name, const char *val, bool fake)
{
	int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW;
	if (fake)
		flags |= O_CREAT | O_APPEND;
	_cleanup_close_ int fd = openat(dirfd, name, flags, 0644);
	if (fd < 0)
		return negerrno();
	size_t len = strlen(val);
	ssize_t n = write(fd, val, len);
	if (n < 0)
		return negerrno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int moat_cgroup_write_u64_at(int dirfd, const char *name, uint64_t v, bool fake)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return moat_cgroup_write_at(dirfd, name, buf, fake);
}

int moat_cgroup_put(const struct moat_cgroup_dir *d, const char *name, uint64_t v, bool fake,
		    const char **ret_file)
{
	*ret_file = name;
	return moat_cgroup_write_u64_at(d->fd, name, v, fake);
}

bool moat_cgroup_exists_at(int dirfd, const char *name)
{
	return faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A decimal number, or "max" (UINT64_MAX). */
static int parse_u64(const char *s, uint64_t *ret)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (startswith(s, "max")) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end && *end != '\n' && *end != ' ')
		return -EINVAL;
	*ret = v;
	return 0;
}

int moat_cgroup_read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
	char buf[64];
	int r = moat_cgroup_read_at(dirfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	return parse_u64(buf, ret);
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events). */
int moat_cgroup_read_key_at(int dirfd, const char *name, const char *key, uint64_t *ret)
{
	char buf[4096];
	int r = moat_cgroup_read_at(dirfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	size_t klen = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return parse_u64(line + klen + 1, ret);
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* dir and its cgroup.procs writable by us. */
bool moat_cgroup_writable_dir(const char *dir)
{
	char p[MOAT_CGROUP_PATH];
	if (access(dir, W_OK | X_OK) < 0)
		return false;
	if (moat_cgroup_path_fmt(p, sizeof(p), "%s/cgroup.procs", dir) < 0)
		return false;
	return access(p, W_OK) == 0;
}

unsigned moat_cgroup_read_ctrl_file(const char *dir, const char *name)
{
	char buf[1024];
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || moat_cgroup_read_at(fd, name, buf, sizeof(buf)) < 0)
		return 0;
	return moat_cgroup_ctrl_mask(buf, " \n") & (MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);
}
