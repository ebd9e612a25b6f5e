/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm level's initramfs (backend_vm.h): moat's own executable as /init
 * (it links only the C library: the static archives of the Makefile), the C
 * library and its loader, and the guest kernel's modules the init loads
 * (virtio PCI, console, 9p, in dependency order from modules.dep). Built
 * once per content: the name of the cached file is the SHA-256 of every
 * entry (name, mode, bytes), so a new moat, kernel or library builds a new
 * one. The archive is the kernel's "newc" cpio format, written here (a
 * header of hexadecimal fields per entry, 4-byte aligned): the unit test
 * reads it back with libarchive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "moat/moat.h"
#include "policy/errors.h"
#include "policy/policy.h"
#include "sandbox/backend_vm.h"
#include "shared/macro.h"

#define IR_MAX_FILE (64u << 20)
#define IR_MAX_MODULES 32

/* ---- the newc writer ------------------------------------------------------ */

static int put(struct moat_cpio *c, const void *p, size_t n)
{
	const char *b = p;
	while (n) {
		ssize_t w = write(c->fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? negerrno() : -EIO;
		b += w;
		n -= (size_t)w;
		c->off += (uint64_t)w;
	}
	return 0;
}

static int pad4(struct moat_cpio *c)
{
	static const char z[4];
	size_t n = (4 - (c->off & 3)) & 3;
	return n ? put(c, z, n) : 0;
}

int moat_cpio_add(struct moat_cpio *c, const char *name, uint32_t mode, uint32_t rdev,
		  const void *data, size_t len)
{
	char h[111];
	size_t nlen = strlen(name) + 1;
	if (nlen > 4096 || len > 0xffffffffu || name[0] == '/' || strstr(name, ".."))
		return -EINVAL;
	c->ino++;
	int n = snprintf(h, sizeof(h),
			 "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", c->ino,
			 mode, 0u, 0u, S_ISDIR(mode) ? 2u : 1u, 0u, len, 0u, 0u, major(rdev),
			 minor(rdev), nlen, 0u);
	if (n != 110)
		return -EINVAL;
	int k;
	if ((k = put(c, h, 110)) < 0 || (k = put(c, name, nlen)) < 0 || (k = pad4(c)) < 0)
		return k;
	if (len && ((k = put(c, data, len)) < 0 || (k = pad4(c)) < 0))
		return k;
	return 0;
}

int moat_cpio_finish(struct moat_cpio *c)
{
	return moat_cpio_add(c, "TRAILER!!!", 0, 0, NULL, 0);
}

/* ---- what goes in ---------------------------------------------------------- */

struct ir_entry {
	char name[96];
	uint32_t mode;
	uint32_t rdev;
	char *data;
	size_t len;
};

struct ir {
	struct ir_entry e[16 + IR_MAX_MODULES];
	unsigned n;
	char mods[IR_MAX_MODULES][128]; /* relative to /lib/modules/<kver>/ */
	unsigned n_mods;
};

static void ir_done(struct ir *ir)
{
	for (unsigned i = 0; i < ir->n; i++)
		free(ir->e[i].data);
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > IR_MAX_FILE)
		return -EFBIG;
	char *b = malloc((size_t)st.st_size + 1);
	if (!b)
		return -ENOMEM;
	size_t off = 0;
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, b + off, (size_t)st.st_size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(b);
			return r < 0 ? negerrno() : -EIO;
		}
		off += (size_t)r;
	}
	b[off] = '\0';
	*ret = b;
	*ret_len = off;
	return 0;
}

static int add(struct ir *ir, const char *name, uint32_t mode, uint32_t rdev, const char *path)
{
	if (ir->n >= ELEMENTSOF(ir->e))
		return -E2BIG;
	struct ir_entry *e = &ir->e[ir->n];
	*e = (struct ir_entry){.mode = mode, .rdev = rdev};
	snprintf(e->name, sizeof(e->name), "%s", name);
	if (path) {
		int k = read_file(path, &e->data, &e->len);
		if (k < 0)
			return k;
	}
	ir->n++;
	return 0;
}

/* modules.dep: "kernel/x/a.ko: kernel/y/b.ko kernel/z/c.ko" (all of a's
 * dependencies, the last to be loaded first). */
static const char *dep_line(const char *dep, const char *mod, size_t *ret_len)
{
	size_t n = strlen(mod);
	for (const char *l = dep; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		if (ll > n && memcmp(l, mod, n) == 0 && l[n] == ':') {
			*ret_len = ll - n - 1;
			return l + n + 1;
		}
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static int want(struct ir *ir, const char *dep, const char *mod, unsigned depth)
{
	for (unsigned i = 0; i < ir->n_mods; i++)
		if (streq(ir->mods[i], mod))
			return 0;
	size_t len;
	const char *deps = dep_line(dep, mod, &len);
	if (!deps || depth > 8)
		return -ENOENT;
	/* its dependencies first, from the end of the list */
	char list[1024];
	if (len >= sizeof(list))
		return -E2BIG;
	memcpy(list, deps, len);
	list[len] = '\0';
	char *words[32] = {0};
	unsigned nw = 0;
	char *save = NULL;
	for (char *s = strtok_r(list, " \t", &save); s && nw < ELEMENTSOF(words);
	     s = strtok_r(NULL, " \t", &save))
		words[nw++] = s;
	for (unsigned i = nw; i-- > 0;) {
		char d[128];
		snprintf(d, sizeof(d), "%s", words[i]);
		int k = want(ir, dep, d, depth + 1);
		if (k < 0)
			return k;
	}
	if (ir->n_mods >= IR_MAX_MODULES || strlen(mod) >= sizeof(ir->mods[0]))
		return -E2BIG;
	snprintf(ir->mods[ir->n_mods++], sizeof(ir->mods[0]), "%s", mod);
	return 0;
}

static const char *const guest_modules[] = {
	"kernel/drivers/virtio/virtio_pci.ko",
	"kernel/drivers/char/virtio_console.ko",
	"kernel/net/9p/9pnet_virtio.ko",
	"kernel/fs/9p/9p.ko",
	"kernel/drivers/char/hw_random/virtio-rng.ko",
	/* --net allow: the link to the holder's tap (a device only then) */
	"kernel/drivers/net/virtio_net.ko",
};

static int collect(struct ir *ir, const char *exe, const char *kver, char *why, size_t whylen)
{
	char p[512];
	int k;
	static const char *const dirs[] = {"dev",      "proc",	  "sys", "newroot",
					   "hostview", "modules", "lib", "lib/x86_64-linux-gnu",
					   "lib64"};
	for (unsigned i = 0; i < ELEMENTSOF(dirs); i++)
		if ((k = add(ir, dirs[i], S_IFDIR | 0755, 0, NULL)) < 0)
			return k;
	if ((k = add(ir, "dev/console", S_IFCHR | 0600, makedev(5, 1), NULL)) < 0)
		return k;
	if ((k = add(ir, "init", S_IFREG | 0755, 0, exe)) < 0) {
		snprintf(why, whylen, "cannot read moat's executable %s: %s", exe, strerror(-k));
		return k;
	}
	/* the C library and its loader: the only libraries moat links */
	static const char *const libs[][2] = {
		{"lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"},
		{"lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"}};
	for (unsigned i = 0; i < ELEMENTSOF(libs); i++)
		if ((k = add(ir, libs[i][0], S_IFREG | 0755, 0, libs[i][1])) < 0) {
			snprintf(why, whylen, "cannot read %s: %s", libs[i][1], strerror(-k));
			return k;
		}
	_cleanup_free_ char *dep = NULL;
	size_t dl;
	snprintf(p, sizeof(p), "/lib/modules/%s/modules.dep", kver);
	if ((k = read_file(p, &dep, &dl)) < 0) {
		snprintf(why, whylen, "cannot read %s: %s", p, strerror(-k));
		return k;
	}
	for (unsigned i = 0; i < ELEMENTSOF(guest_modules); i++)
		if ((k = want(ir, dep, guest_modules[i], 0)) < 0) {
			snprintf(why, whylen,
				 "the guest kernel %s has no module %s (or its "
				 "dependencies): %s",
				 kver, guest_modules[i], strerror(-k));
			return k;
		}
	for (unsigned i = 0; i < ir->n_mods; i++) {
		const char *base = strrchr(ir->mods[i], '/');
		base = base ? base + 1 : ir->mods[i];
		size_t bl = strlen(base);
		if (bl < 4 || !streq(base + bl - 3, ".ko")) {
			snprintf(why, whylen, "module %s is compressed: not supported", base);
			return -EOPNOTSUPP;
		}
		char name[96];
		snprintf(name, sizeof(name), "modules/%02u-%s", i, base);
		snprintf(p, sizeof(p), "/lib/modules/%s/%s", kver, ir->mods[i]);
		if ((k = add(ir, name, S_IFREG | 0644, 0, p)) < 0) {
			snprintf(why, whylen, "cannot read %s: %s", p, strerror(-k));
			return k;
		}
	}
	return 0;
}

static void digest(const struct ir *ir, char hex[65])
{
	struct sha256_ctx c;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&c);
	for (unsigned i = 0; i < ir->n; i++) {
		const struct ir_entry *e = &ir->e[i];
		uint64_t meta[3] = {e->mode, e->rdev, e->len};
		sha256_update(&c, strlen(e->name) + 1, (const uint8_t *)e->name);
		sha256_update(&c, sizeof(meta), (const uint8_t *)meta);
		if (e->len)
			sha256_update(&c, e->len, (const uint8_t *)e->data);
	}
	sha256_digest(&c, sizeof(d), d);
	for (unsigned i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

int moat_vm_initramfs(const char *cache_dir, const char *exe, const char *kver, char *ret_path,
		      size_t len, bool *ret_built, char *why, size_t whylen)
{
	struct ir *ir = calloc(1, sizeof(*ir));
	if (!ir)
		return -ENOMEM;
	int k = collect(ir, exe, kver, why, whylen);
	if (k < 0)
		goto out;
	char hex[65];
	digest(ir, hex);
	*ret_built = false;
	if (snprintf(ret_path, len, "%s/initramfs-%.32s.cpio", cache_dir, hex) >= (int)len) {
		k = -ENAMETOOLONG;
		goto out;
	}
	struct stat st;
	if (lstat(ret_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		/* used now: moat gc keeps what was used recently (moat_vm_gc) */
		(void)utimensat(AT_FDCWD, ret_path, NULL, AT_SYMLINK_NOFOLLOW);
		k = 0;
		goto out;
	}
	char tmp[MOAT_MAX_PATH];
	snprintf(tmp, sizeof(tmp), "%s/.initramfs-XXXXXX", cache_dir);
	struct moat_cpio c = {.fd = mkostemp(tmp, O_CLOEXEC)};
	if (c.fd < 0) {
		k = negerrno();
		snprintf(why, whylen, "cannot create %s: %s", tmp, strerror(-k));
		goto out;
	}
	for (unsigned i = 0; i < ir->n && k >= 0; i++)
		k = moat_cpio_add(&c, ir->e[i].name, ir->e[i].mode, ir->e[i].rdev, ir->e[i].data,
				  ir->e[i].len);
	if (k >= 0)
		k = moat_cpio_finish(&c);
	if (k >= 0 && (fchmod(c.fd, 0644) < 0 || fsync(c.fd) < 0))
		k = negerrno();
	close(c.fd);
	if (k >= 0 && rename(tmp, ret_path) < 0)
		k = negerrno();
	if (k < 0) {
		unlink(tmp);
		snprintf(why, whylen, "cannot write the initramfs %s: %s", ret_path, strerror(-k));
	} else
		*ret_built = true;
out:
	ir_done(ir);
	free(ir);
	return k;
}

/* moat gc (moat.h): by name only (initramfs-<32 hex>.cpio, .initramfs-*),
 * regular files of the caller's own, in the private cache directory. A
 * run's holder opens its copy before QEMU starts and QEMU reads it at once,
 * so a removal can only make a later run build it again. */
int moat_vm_gc(unsigned max_age_s, struct moat_vm_gc_result *ret, struct moat_error *err)
{
	char dir[MOAT_MAX_PATH];
	memset(ret, 0, sizeof(*ret));
	int k = moat_vm_cache_dir(dir, sizeof(dir));
	if (k < 0)
		return k == -ENOENT ? 0
				    : moat_error_set(err, "vm", -k, "the initramfs cache %s: %s",
						     dir, strerror(-k));
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int d2 = dfd >= 0 ? fcntl(dfd, F_DUPFD_CLOEXEC, 3) : -1;
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d) {
		k = negerrno();
		safe_close(d2);
		return moat_error_set(err, "vm", -k, "the initramfs cache %s: %s", dir,
				      strerror(-k));
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		bool cached = len == 10 + 32 + 5 && startswith(n, "initramfs-") &&
			strspn(n + 10, "0123456789abcdef") == 32 && streq(n + 42, ".cpio");
		bool partial = startswith(n, ".initramfs-");
		struct stat st;
		if ((!cached && !partial) || fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		/* a partial one is a build in progress for an hour */
		time_t age = now.tv_sec - st.st_mtim.tv_sec;
		if (age < (time_t)(cached ? max_age_s : 3600)) {
			ret->kept++;
			continue;
		}
		if (unlinkat(dfd, n, 0) < 0)
			ret->failed++;
		else
			ret->removed++;
	}
	closedir(d);
	return 0;
}
