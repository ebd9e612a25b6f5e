/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The OCI bundle of the gVisor backend (backend_gvisor.h): the plan's steps
 * as runsc's config.json and a root directory of mount points. What the
 * process level builds in its mount namespace step by step is here the
 * same tree in three kinds of places: files, directories and symlinks in
 * root/ (read-only in the container), every bind source mounted by the
 * holder at m/<step> (so runsc is never given a user's path to resolve), and
 * gVisor's own tmpfs, proc and /dev. /dev is gVisor's (null, zero, full,
 * random, urandom, tty, pts, fd links): the plan's /dev steps are skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/backend_gvisor.h"
#include "shared/macro.h"
#include "shared/openat2.h"

/* Creates every directory of rel (relative to dfd), mode 0755 where new. */
static int mkdir_p(int dfd, const char *rel, bool last)
{
	char buf[MOAT_MAX_PATH];
	size_t n = strlen(rel);
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, rel, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (buf[i] == '\0' && !last)
			break;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdirat(dfd, buf, 0755) < 0 && errno != EEXIST)
			return negerrno();
		buf[i] = c;
	}
	return 0;
}

/* The parent directories of dest below root/, then dest's own name. */
static int parent_of(int rootfd, const char *dest)
{
	const char *slash = strrchr(dest, '/');
	if (!slash || slash == dest)
		return 0;
	char buf[MOAT_MAX_PATH];
	snprintf(buf, sizeof(buf), "%.*s", (int)(slash - dest - 1), dest + 1);
	return mkdir_p(rootfd, buf, true);
}

static bool under_dev(const char *d)
{
	return streq(d, "/dev") || startswith(d, "/dev/");
}

/* A tmpfs the process level fills and then makes read-only (/etc): here
 * simply a directory of root/, which is read-only as a whole. */
static bool assembled(const struct moat_plan *pl, unsigned i)
{
	for (unsigned j = i + 1; j < pl->n_steps; j++)
		if (pl->steps[j].op == MOAT_STEP_READONLY &&
		    streq(pl->steps[j].dest, pl->steps[i].dest))
			return true;
	return false;
}

static json_t *bind_mount(const char *dir, unsigned i, const char *dest, bool ro)
{
	char src[MOAT_MAX_PATH];
	snprintf(src, sizeof(src), "%s/" MOAT_GV_MNT "/%u", dir, i);
	return json_pack("{s:s,s:s,s:s,s:[s,s,s,s]}", "destination", dest, "type", "bind", "source",
			 src, "options", "rbind", ro ? "ro" : "rw", "nosuid", "nodev");
}

static int mountpoint(int rootfd, const char *dest, bool dir)
{
	int k = parent_of(rootfd, dest);
	if (k < 0)
		return k;
	if (dir)
		return mkdirat(rootfd, dest + 1, 0755) < 0 && errno != EEXIST ? negerrno() : 0;
	int fd = openat(rootfd, dest + 1, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return negerrno();
	close(fd);
	return 0;
}

static int write_file(int rootfd, const struct moat_step *s)
{
	int k = parent_of(rootfd, s->dest);
	if (k < 0)
		return k;
	_cleanup_close_ int fd =
		openat(rootfd, s->dest + 1, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		       s->mode & 07777);
	if (fd < 0)
		return negerrno();
	size_t off = 0;
	while (off < s->data_len) {
		ssize_t n = write(fd, s->data + off, s->data_len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? negerrno() : -EIO;
		off += (size_t)n;
	}
	return fchmod(fd, s->mode & 07777) < 0 ? negerrno() : 0;
}

/* One step into root/, b and the mounts array. */
static int one_step(int rootfd, const char *dir, const struct moat_plan *pl, unsigned i,
		    const int *srcfd, struct moat_gv_bundle *b, json_t *mounts, char *why,
		    size_t whylen)
{
	const struct moat_step *s = &pl->steps[i];
	struct stat st;
	int k = 0;
	if (under_dev(s->dest) || s->op == MOAT_STEP_DEVPTS || s->op == MOAT_STEP_MQUEUE ||
	    s->op == MOAT_STEP_READONLY)
		return 0;
	switch (s->op) {
	case MOAT_STEP_PROC:
		if ((k = mountpoint(rootfd, s->dest, true)) < 0)
			break;
		json_array_append_new(mounts,
				      json_pack("{s:s,s:s,s:s}", "destination", s->dest, "type",
						"proc", "source", "proc"));
		break;
	case MOAT_STEP_TMPFS:
		if (streq(s->dest, "/"))
			break;
		if ((k = mountpoint(rootfd, s->dest, true)) < 0)
			break;
		if (assembled(pl, i)) {
			k = fchmodat(rootfd, s->dest + 1, s->mode & 07777, 0) < 0 ? negerrno() : 0;
			break;
		}
		if (s->flags & MOAT_STEPF_OUTPUT) {
			b->src[i] = MOAT_GV_OUTPUT;
			b->type[i] = S_IFDIR;
			json_array_append_new(mounts, bind_mount(dir, i, s->dest, false));
			break;
		}
		char mode[64];
		/* owned by the sandbox user (the home, mode 0700) as at process
		 * level; gVisor's tmpfs honours size= (measured) */
		snprintf(mode, sizeof(mode), "mode=%04o", s->mode & 07777);
		char uid[32], gid[32], size[48];
		snprintf(uid, sizeof(uid), "uid=%u", (unsigned)pl->id.uid);
		snprintf(gid, sizeof(gid), "gid=%u", (unsigned)pl->id.gid);
		snprintf(size, sizeof(size), "size=%llu", (unsigned long long)s->size);
		json_array_append_new(mounts,
				      json_pack("{s:s,s:s,s:s,s:[s,s,s,s,s,s]}", "destination",
						s->dest, "type", "tmpfs", "source", "tmpfs",
						"options", "nosuid", "nodev", mode, uid, gid,
						size));
		break;
	case MOAT_STEP_BIND:
		if (srcfd[i] < 0)
			break; /* optional and missing */
		if (fstat(srcfd[i], &st) < 0) {
			k = negerrno();
			break;
		}
		if ((s->flags & MOAT_STEPF_MIRROR_LINK) && S_ISLNK(st.st_mode)) {
			char target[MOAT_MAX_PATH];
			ssize_t n = readlinkat(srcfd[i], "", target, sizeof(target) - 1);
			if (n < 0) {
				k = negerrno();
				break;
			}
			target[n] = '\0';
			if ((k = parent_of(rootfd, s->dest)) >= 0 &&
			    symlinkat(target, rootfd, s->dest + 1) < 0 && errno != EEXIST)
				k = negerrno();
			break;
		}
		b->type[i] = S_ISDIR(st.st_mode) ? S_IFDIR : S_IFREG;
		b->src[i] = MOAT_GV_BIND;
		if ((k = mountpoint(rootfd, s->dest, S_ISDIR(st.st_mode))) < 0)
			break;
		/* a read-only system bind whose mount point is reached without a
		 * symlink: the holder mounts it onto root/<dest> (no mount of its
		 * own for gVisor's gofer: start-up, bench/FINDINGS.md) */
		if (b->rootbind_ok[i] && (s->flags & MOAT_STEPF_RO)) {
			int mp = (int)moat_openat2(rootfd, s->dest + 1, O_PATH | O_CLOEXEC, 0,
						   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
							   RESOLVE_NO_MAGICLINKS);
			if (mp >= 0) {
				close(mp);
				b->src[i] = MOAT_GV_ROOTBIND;
				break;
			}
		}
		json_array_append_new(mounts,
				      bind_mount(dir, i, s->dest, (s->flags & MOAT_STEPF_RO) != 0));
		break;
	case MOAT_STEP_OVERLAY:
		b->src[i] = MOAT_GV_OVERLAY;
		b->type[i] = S_IFDIR;
		if ((k = mountpoint(rootfd, s->dest, true)) < 0)
			break;
		json_array_append_new(mounts, bind_mount(dir, i, s->dest, false));
		break;
	case MOAT_STEP_SYMLINK:
		if ((k = parent_of(rootfd, s->dest)) >= 0 &&
		    symlinkat(s->src, rootfd, s->dest + 1) < 0 && errno != EEXIST)
			k = negerrno();
		break;
	case MOAT_STEP_MKDIR:
		if ((k = mountpoint(rootfd, s->dest, true)) >= 0 &&
		    fchmodat(rootfd, s->dest + 1, s->mode & 07777, 0) < 0)
			k = negerrno();
		break;
	case MOAT_STEP_FILE:
		k = write_file(rootfd, s);
		break;
	case MOAT_STEP_HIDE:
		snprintf(why, whylen, "hide %s: not available at the gvisor level", s->dest);
		return -EOPNOTSUPP;
	default:
		break;
	}
	if (k < 0)
		snprintf(why, whylen, "cannot prepare %s in the bundle: %s", s->dest, strerror(-k));
	return k;
}

static void add_rlimit(json_t *a, const char *name, uint64_t v)
{
	if (v)
		json_array_append_new(a,
				      json_pack("{s:s,s:I,s:I}", "type", name, "hard",
						(json_int_t)v, "soft", (json_int_t)v));
}

int moat_gv_bundle_write(int dirfd, const char *dir, const struct moat_plan *pl, const int *srcfd,
			 const struct moat_rlimit_opts *rl, struct moat_gv_bundle *b, int *ret_step,
			 char *why, size_t whylen)
{
	int k;
	*ret_step = -1;
	memset(b->src, 0, sizeof(b->src));
	memset(b->type, 0, sizeof(b->type));
	/* moat's executable: onto root/.moat/init by the holder (a directory
	 * moat makes below: no symlink on the way) */
	b->exe_rootbind = true;
	if ((mkdirat(dirfd, MOAT_GV_ROOT, 0755) < 0 && errno != EEXIST) ||
	    (mkdirat(dirfd, MOAT_GV_MNT, 0711) < 0 && errno != EEXIST)) {
		snprintf(why, whylen, "cannot create the bundle's directories: %s",
			 strerror(errno));
		return negerrno();
	}
	_cleanup_close_ int rootfd =
		openat(dirfd, MOAT_GV_ROOT, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0)
		return negerrno();
	/* mode 0755 whatever the umask: the sandbox user reads the tree */
	if (fchmod(rootfd, 0755) < 0)
		return negerrno();
	json_t *mounts = json_array();
	if (!mounts)
		return -ENOMEM;
	if (mkdirat(dirfd, MOAT_GV_MNT, 0711) < 0 && errno != EEXIST)
		return negerrno();
	for (unsigned i = 0; i < pl->n_steps; i++) {
		if ((k = one_step(rootfd, dir, pl, i, srcfd, b, mounts, why, whylen)) < 0) {
			*ret_step = (int)i;
			json_decref(mounts);
			return k;
		}
	}
	/* the holder's mount points m/<step> */
	for (unsigned i = 0; i <= MOAT_GV_EXE_STEP; i++) {
		char m[32];
		bool exe = i == MOAT_GV_EXE_STEP;
		if (exe ? b->exe_rootbind
			: (i >= pl->n_steps || b->src[i] == MOAT_GV_NONE ||
			   b->src[i] == MOAT_GV_ROOTBIND))
			continue;
		snprintf(m, sizeof(m), MOAT_GV_MNT "/%u", i);
		int fd = -1;
		if (!exe && b->type[i] == S_IFDIR)
			k = mkdirat(dirfd, m, 0755) < 0 ? negerrno() : 0;
		else
			k = (fd = openat(dirfd, m,
					 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					 0644)) < 0
				? negerrno()
				: 0;
		safe_close(fd);
		if (k < 0) {
			json_decref(mounts);
			snprintf(why, whylen, "cannot create %s: %s", m, strerror(-k));
			return k;
		}
	}
	/* moat's own executable: the init that serves the control channel */
	if ((k = mountpoint(rootfd, MOAT_GV_INIT, false)) < 0 ||
	    (b->loader[0] && (k = mountpoint(rootfd, MOAT_GV_LIB, true)) < 0)) {
		json_decref(mounts);
		snprintf(why, whylen, "cannot prepare %s: %s", MOAT_GV_INIT, strerror(-k));
		return k;
	}
	/* a system tree of its own: the init through the host's loader */
	char loader[MOAT_MAX_PATH];
	snprintf(loader, sizeof(loader), MOAT_GV_LIB "/%s", b->loader);
	json_t *args = b->loader[0] ? json_pack("[s,s,s,s,s]", loader, "--library-path",
						MOAT_GV_LIB, MOAT_GV_INIT, "__gvisor-init")
				    : json_pack("[s,s]", MOAT_GV_INIT, "__gvisor-init");
	char rootpath[MOAT_MAX_PATH];
	snprintf(rootpath, sizeof(rootpath), "%s/" MOAT_GV_ROOT, dir);
	/* The init runs as the sandbox user with no capability and the plan's
	 * rlimits; every process it starts inherits them (init_serve.c). */
	json_t *rlimits = json_array();
	add_rlimit(rlimits, "RLIMIT_NOFILE", rl->nofile);
	add_rlimit(rlimits, "RLIMIT_FSIZE", rl->fsize);
	add_rlimit(rlimits, "RLIMIT_AS", rl->as);
	add_rlimit(rlimits, "RLIMIT_NPROC", rl->nproc);
	json_array_append_new(
		rlimits, json_pack("{s:s,s:i,s:i}", "type", "RLIMIT_CORE", "hard", 0, "soft", 0));
	json_t *caps = json_pack("{s:[],s:[],s:[],s:[],s:[]}", "bounding", "effective",
				 "inheritable", "permitted", "ambient");
	json_t *cfg = json_pack("{s:s,s:{s:b,s:{s:I,s:I},s:o,s:[s],s:s,s:o,s:o,s:b},"
				"s:{s:s,s:b},s:s,s:o,s:{s:[{s:s},{s:s},{s:s},{s:s}]}}",
				"ociVersion", "1.0.2", "process", "terminal", 0, "user", "uid",
				(json_int_t)pl->id.uid, "gid", (json_int_t)pl->id.gid, "args", args,
				"env", "PATH=/usr/local/bin:/usr/bin:/bin", "cwd", "/",
				"capabilities", caps, "rlimits", rlimits, "noNewPrivileges", 1,
				"root", "path", rootpath, "readonly", 1, "hostname",
				pl->id.hostname, "mounts", mounts, "linux", "namespaces", "type",
				"pid", "type", "mount", "type", "ipc", "type", "uts");
	if (!cfg)
		return -ENOMEM;
	char *text = json_dumps(cfg, JSON_INDENT(1));
	json_decref(cfg);
	if (!text)
		return -ENOMEM;
	_cleanup_close_ int fd = openat(dirfd, "config.json",
					O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t len = strlen(text), off = 0;
	k = fd < 0 ? negerrno() : 0;
	while (k == 0 && off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			k = n < 0 ? negerrno() : -EIO;
		else
			off += (size_t)n;
	}
	free(text);
	if (k < 0)
		snprintf(why, whylen, "cannot write config.json: %s", strerror(-k));
	return k;
}
