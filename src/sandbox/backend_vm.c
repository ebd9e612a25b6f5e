/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm backend (backend.h, docs/ISOLATION.md): the sandbox is a QEMU
 * guest (q35: the Debian kernel does not get past its timer calibration on
 * -M microvm under TCG, measured) with a Debian guest kernel and moat's own
 * init as PID 1 of an initramfs moat builds and caches (vm_initramfs.c).
 *
 * A "holder" process (cloned like the gVisor level's, into the run's
 * cgroup, with a new mount and network namespace, and unprivileged a user
 * namespace that maps the sandbox uid to the caller) assembles the
 * sandbox's tree on the host side: the directories, files and links of the
 * plan (the gVisor level's bundle writer), each bind source re-opened and
 * checked to be the supervisor's, the overlay workspace (its upper layer on
 * a host tmpfs handed to the supervisor for the review, exactly as at the
 * other levels) and /output. QEMU exports that tree over virtio-9p; the
 * guest mounts its own tmpfs, proc and /dev. QEMU dies with the holder
 * (PR_SET_PDEATHSIG), the holder with the supervisor. With --net none the
 * network namespace is empty and QEMU gets no network device. With --net
 * allow the holder's namespace gets the process level's listeners, DNS stub
 * and capture rules (hook_net.c, the vm variant of the ruleset: plan.h) and
 * one tap (vm_net.c) whose fd QEMU takes as the guest's only link: every
 * packet of the guest enters that namespace, where TCP is DNATed to the
 * proxy's listeners and everything else is logged and dropped.
 *
 * No descriptor crosses into a VM, so the holder is also the bridge: it
 * speaks ctl.h with the supervisor (exec requests with their blob, report
 * and stdio descriptors) and vm_proto.h frames with the guest's init over
 * a virtio-serial port, relaying each command's stdin, stdout and stderr.
 * The guest's exec records (EXECREC frames) it passes on whole, size-checked,
 * into a pipe that the supervisor reads and checks as the gVisor level's
 * receiver's (backend_gvisor_trace.c: moat_gvt_attach).
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/kvm.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/epoll.h>

#include "kernel/seccomp.h"
#include "network/netns.h"
#include "limits/supervise_limits.h"
#include "policy/errors.h"
#include "sandbox/backend.h"
#include "sandbox/backend_gvisor.h"
#include "sandbox/backend_vm.h"
#include "sandbox/ctl.h"
#include "sandbox/gvisor_trace.h"
#include "sandbox/holder_wait.h"
#include "sandbox/hooks.h"
#include "sandbox/vm_proto.h"
#include "shared/fdpass.h"
#include "shared/fdset.h"
#include "shared/macro.h"
#include "shared/openat2.h"
#include "shared/rmtree.h"
#include "supervisor/run.h"
#include "supervisor/state.h"
#include "supervisor/supervise.h"

/* How long the guest may take to serve the control port (TCG: 5-20 s). */
#define VM_START_MS 120000
#define VM_QEMU "/usr/bin/qemu-system-x86_64"

struct vm_proc {
	uint32_t id;
	bool used;
	int report;
	int std[3];
};

struct moat_vm_run {
	char dir[128]; /* the assembled tree's directory */
	int dirfd;
	char exe[MOAT_MAX_PATH];
	char kernel[MOAT_MAX_PATH];
	char kver[96];
	char initrd[MOAT_MAX_PATH];
	bool kvm;
	int srcfd[MOAT_PLAN_MAX_STEPS];
	struct moat_gv_bundle b;
	struct moat_vm_config cfg;
	struct sock_filter *insns;
	unsigned n_insns;
	int qemu_sock[2]; /* [0] the bridge's, [1] QEMU's chardev */
	int tap; /* --net allow: the tap QEMU is given, or -1 */
	int kernel_fd; /* vm_kernel: the checked file, or -1 (the holder opens kernel) */
	uint64_t ram_mib;
	unsigned cpus;
	bool initrd_built;
	int rec[2]; /* exec records: the holder's frames to the supervisor */
	struct moat_gvt_sup *trace; /* the supervisor's end (backend_gvisor_trace.c) */
	struct moat_holder_wait wait; /* for the guest's init (vm_poll) */
};

static void vm_free(struct moat_vm_run *v)
{
	if (!v)
		return;
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++)
		safe_close(v->srcfd[i]);
	safe_close(v->qemu_sock[0]);
	safe_close(v->qemu_sock[1]);
	safe_close(v->tap);
	safe_close(v->kernel_fd);
	safe_close(v->rec[0]);
	safe_close(v->rec[1]);
	moat_gvt_free(v->trace);
	free(v->insns);
	if (v->dirfd >= 0) {
		close(v->dirfd);
		char *slash = strrchr(v->dir, '/');
		if (slash) {
			*slash = '\0';
			_cleanup_close_ int parent =
				open(v->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (parent >= 0)
				(void)moat_rmtree_at(parent, slash + 1, 64);
			*slash = '/';
		}
	}
	free(v);
}

/* ---- probes ----------------------------------------------------------------- */

int moat_vm_kvm_probe(char *why, size_t whylen)
{
	_cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(e));
		return -e;
	}
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		snprintf(why, whylen, "/dev/kvm answers another API version");
		return -ENOTSUP;
	}
	/* a guest of five bytes really runs (vm_kvm.c) */
	int k = moat_vm_kvm_guest_probe(why, whylen);
	if (k < 0)
		return k;
	/* An ordinary guest needs the hardware virtualisation of kvm_intel or
	 * kvm_amd; a PVM host (kvm_pvm) boots only PVM-aware guest kernels
	 * (measured: the Debian kernel never reaches its init). */
	if (access("/sys/module/kvm_intel", F_OK) != 0 &&
	    access("/sys/module/kvm_amd", F_OK) != 0) {
		snprintf(why, whylen,
			 "KVM runs a minimal guest, but /dev/kvm has neither kvm_intel nor "
			 "kvm_amd behind it%s: ordinary "
			 "guest kernels do not boot there",
			 access("/sys/module/kvm_pvm", F_OK) == 0 ? " (a PVM host: kvm_pvm)" : "");
		return -ENOTSUP;
	}
	return 0;
}

static int vercmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

int moat_vm_find_kernel(char *ret_path, size_t len, char *ret_ver, size_t vlen)
{
	DIR *d = opendir("/boot");
	if (!d)
		return negerrno();
	char *vers[64];
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < ELEMENTSOF(vers)) {
		if (!startswith(e->d_name, "vmlinuz-"))
			continue;
		char dep[MOAT_MAX_PATH];
		snprintf(dep, sizeof(dep), "/lib/modules/%s/modules.dep", e->d_name + 8);
		if (access(dep, R_OK) == 0 && (vers[n] = strdup(e->d_name + 8)))
			n++;
	}
	closedir(d);
	if (!n)
		return -ENOENT;
	qsort(vers, n, sizeof(vers[0]), vercmp);
	snprintf(ret_ver, vlen, "%s", vers[n - 1]);
	snprintf(ret_path, len, "/boot/vmlinuz-%s", vers[n - 1]);
	for (unsigned i = 0; i < n; i++)
		free(vers[i]);
	return 0;
}

static int private_dir(char *buf)
{
	/* each directory up to it, private to the caller where new */
	for (char *s = buf + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			(void)mkdir(buf, 0700);
			*s = '/';
		}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return negerrno();
	struct stat st;
	if (lstat(buf, &st) < 0)
		return negerrno();
	/* the caller's own, written by no one else: the initramfs is the
	 * guest's init */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/* Next to moat's state directory (~/.local/state/moat/vm, /run/moat/vm as
 * root); without a home, /tmp/moat-vm-UID, if it is the caller's own. */
int moat_vm_cache_dir(char *buf, size_t len)
{
	char live[MOAT_MAX_PATH];
	int k = moat_state_default_dir(live, sizeof(live));
	char *slash = k >= 0 ? strrchr(live, '/') : NULL;
	if (slash) {
		*slash = '\0';
		if (snprintf(buf, len, "%s/vm", live) >= (int)len)
			return -ENAMETOOLONG;
		if (private_dir(buf) >= 0)
			return 0;
	}
	if (snprintf(buf, len, "/tmp/moat-vm-%u", (unsigned)geteuid()) >= (int)len)
		return -ENAMETOOLONG;
	return private_dir(buf);
}

/* Owned by root or the caller, and written by no one else. */
static bool trusted(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid() || st->st_uid == getuid()) &&
		!(st->st_mode & 022);
}

/* vm_kernel: the guest kernel the policy names. The file itself (no
 * symlink), regular, and it and its directory the caller's or root's and
 * written by no one else: whoever could replace it would choose the guest's
 * kernel. Named vmlinuz-VERSION with /lib/modules/VERSION/modules.dep, whose
 * virtio, console and 9p modules go into the initramfs. Kept open: the
 * holder hands QEMU this very file. */
static int named_kernel(struct moat_vm_run *v, const char *path, char *why, size_t whylen)
{
	const char *base = strrchr(path, '/');
	if (path[0] != '/' || !base || !startswith(base + 1, "vmlinuz-") || !base[9] ||
	    strlen(base + 9) >= sizeof(v->kver)) {
		snprintf(why, whylen, "not an absolute path to a file named vmlinuz-VERSION");
		return -EINVAL;
	}
	snprintf(v->kver, sizeof(v->kver), "%s", base + 9);
	if (strchr(v->kver, '/') || streq(v->kver, "..") || streq(v->kver, ".")) {
		snprintf(why, whylen, "not a kernel version: %s", v->kver);
		return -EINVAL;
	}
	char dir[MOAT_MAX_PATH], dep[MOAT_MAX_PATH];
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
	struct stat st, dst;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot open it: %s%s", strerror(e),
			 e == ELOOP ? " (a symlink: name the file itself)" : "");
		return -e;
	}
	v->kernel_fd = fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		return -EINVAL;
	}
	if (!trusted(&st)) {
		snprintf(why, whylen,
			 "owned by uid %u, mode %04o: must be root's or yours and writable by no "
			 "one else",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (stat(dir[0] ? dir : "/", &dst) < 0 || !trusted(&dst)) {
		snprintf(why, whylen,
			 "its directory %.160s must be root's or yours and writable by no one else",
			 dir[0] ? dir : "/");
		return -EPERM;
	}
	snprintf(dep, sizeof(dep), "/lib/modules/%s/modules.dep", v->kver);
	if (access(dep, R_OK) != 0) {
		snprintf(why, whylen,
			 "no %.160s (the guest's virtio and 9p drivers are its modules)", dep);
		return -ENOENT;
	}
	snprintf(v->kernel, sizeof(v->kernel), "%s", path);
	return 0;
}

static int vm_prepare(struct moat_run *r)
{
	char why[300];
	if (access(VM_QEMU, X_OK) != 0)
		return moat_error_set(r->err, "isolation", ENOENT,
				      "isolation vm: %s not found (Debian package qemu-system-x86)",
				      VM_QEMU);
	struct moat_vm_run *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->dirfd = v->qemu_sock[0] = v->qemu_sock[1] = v->tap = v->kernel_fd = -1;
	v->rec[0] = v->rec[1] = -1;
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++)
		v->srcfd[i] = -1;
	r->vm = v;
	if (r->p->vm_kernel) {
		if (named_kernel(v, r->p->vm_kernel, why, sizeof(why)) < 0)
			return moat_error_set(r->err, "isolation", EPERM,
					      "isolation vm: vm_kernel %s: %s", r->p->vm_kernel,
					      why);
	} else if (moat_vm_find_kernel(v->kernel, sizeof(v->kernel), v->kver, sizeof(v->kver)) < 0)
		return moat_error_set(r->err, "isolation", ENOENT,
				      "isolation vm: no guest kernel (/boot/vmlinuz-VERSION with "
				      "/lib/modules/VERSION; Debian package linux-image-amd64)");
	if (moat_vm_kvm_probe(why, sizeof(why)) == 0)
		v->kvm = true;
	else if (r->p->vm_accel != MOAT_VM_ACCEL_ANY)
		return moat_error_set(r->err, "isolation", ENOTSUP,
				      "isolation vm: accelerator step failed: vm_accel is \"kvm\" "
				      "and KVM cannot run this guest: %s (set vm_accel \"any\" "
				      "to run it under TCG, much slower)",
				      why);
	ssize_t n = readlink("/proc/self/exe", v->exe, sizeof(v->exe) - 1);
	if (n <= 0)
		return moat_error_set(r->err, "isolation", errno,
				      "isolation vm: cannot find moat's own executable");
	v->exe[n] = '\0';
	char dir[MOAT_MAX_PATH];
	int k = moat_vm_cache_dir(dir, sizeof(dir));
	if (k < 0)
		return moat_error_set(r->err, "isolation", -k,
				      "isolation vm: initramfs step failed: no private cache "
				      "directory %s: %s",
				      dir, strerror(-k));
	k = moat_vm_initramfs(dir, v->exe, v->kver, v->initrd, sizeof(v->initrd), &v->initrd_built,
			      why, sizeof(why));
	if (k < 0)
		return moat_error_set(r->err, "isolation", -k,
				      "isolation vm: initramfs step failed: %s", why);
	/* root mode: the user's directories through idmapped mounts that show
	 * them as owned by the run's own host uid, which the holder's user
	 * namespace maps to the sandbox user: QEMU holds no privilege */
	if (r->sb.root_mode && (r->p->uid == 0 || r->p->gid == 0))
		return moat_error_set(
			r->err, "isolation", EINVAL,
			"isolation vm: as root the sandbox user cannot be uid or gid 0 "
			"(QEMU runs as the sandbox user, on the run's own host uid)");
	return moat_backend_ns()->prepare(r);
}

/* ---- the holder: the assembled tree, QEMU, then the bridge -------------- */

static _Noreturn _printf_(4, 5) void hold_die(int fd, int stage, int step, const char *fmt, ...)
{
	struct moat_setup_error e = {.stage = stage, .err = errno ? errno : EIO, .step = step};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	(void)!write(fd, &e, sizeof(e));
	_exit(MOAT_EXIT_SETUP);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
		sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int hold_tree(struct moat_run *r, unsigned i, bool recursive)
{
	const struct moat_step *s = &r->plan->steps[i];
	int w = r->sb.setup_w;
	if (r->sb.premounted[i] >= 0)
		return r->sb.premounted[i];
	int fd = moat_sandbox_open_source(s, r->sb.user_path[i], r->sb.rootfs_fd, r->plan->sysroot);
	if (fd < 0 || !same_file(fd, r->vm->srcfd[i])) {
		errno = fd < 0 ? -fd : EXDEV;
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "%s changed since moat resolved it", s->src);
	}
	int tree = (int)open_tree(fd, "",
				  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					  (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot clone the mount of %s", s->src);
	close(fd);
	return tree;
}

static void attach_at(struct moat_run *r, unsigned i, int tree, bool ro, bool recursive)
{
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					(ro ? MOUNT_ATTR_RDONLY : 0)};
	char at[MOAT_MAX_PATH];
	snprintf(at, sizeof(at), "%s/" MOAT_GV_ROOT "%s", r->vm->dir, r->plan->steps[i].dest);
	if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &ma,
			  sizeof(ma)) < 0 ||
	    move_mount(tree, "", AT_FDCWD, at, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		hold_die(r->sb.setup_w, MOAT_STAGE_MOUNT, (int)i, "cannot mount %s in the tree",
			 r->plan->steps[i].dest);
	close(tree);
}

static void hold_overlay(struct moat_run *r, unsigned i)
{
	const struct moat_step *s = &r->plan->steps[i];
	struct moat_vm_run *v = r->vm;
	int w = r->sb.setup_w;
	char base[192], opts[640], sz[96], at[MOAT_MAX_PATH];
	snprintf(base, sizeof(base), "%s/" MOAT_GV_OVL, v->dir);
	uid_t u = r->plan->id.uid;
	gid_t g = r->plan->id.gid;
	snprintf(sz, sizeof(sz), "mode=0755,size=%llu,uid=%u,gid=%u", (unsigned long long)s->size,
		 (unsigned)u, (unsigned)g);
	if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, sz) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot mount the overlay's tmpfs");
	int ovl = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ovl < 0 || mkdirat(ovl, "upper", 0755) < 0 || mkdirat(ovl, "work", 0755) < 0 ||
	    mkdirat(ovl, "lower", 0755) < 0 || fchownat(ovl, "upper", u, g, 0) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot create the overlay's directories");
	int tree = hold_tree(r, i, false);
	struct mount_attr ma = {.attr_set =
					MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0 ||
	    move_mount(tree, "", ovl, "lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot attach the overlay's lower layer %s",
			 s->src);
	close(tree);
	snprintf(opts, sizeof(opts),
		 "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,userxattr", base, base, base);
	snprintf(at, sizeof(at), "%s/" MOAT_GV_ROOT "%s", v->dir, s->dest);
	if (mount("overlay", at, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot mount the overlay over %s", s->dest);
	int up = openat(ovl, "upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (up < 0 || moat_sandbox_send_fd(r->sb.sock_child, MOAT_FD_UPPER, up) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i,
			 "cannot hand the overlay's upper layer to moat");
	close(up);
	close(ovl);
}

static void hold_output(struct moat_run *r, unsigned i)
{
	const struct moat_step *s = &r->plan->steps[i];
	char at[MOAT_MAX_PATH], sz[96];
	snprintf(at, sizeof(at), "%s/" MOAT_GV_ROOT "%s", r->vm->dir, s->dest);
	snprintf(sz, sizeof(sz), "mode=%04o,size=%llu,uid=%u,gid=%u", s->mode & 07777,
		 (unsigned long long)s->size, (unsigned)r->plan->id.uid, (unsigned)r->plan->id.gid);
	if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, sz) < 0)
		hold_die(r->sb.setup_w, MOAT_STAGE_MOUNT, (int)i, "cannot mount %s", s->dest);
	int fd = open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || moat_sandbox_send_fd(r->sb.sock_child, MOAT_FD_OUTPUT, fd) < 0)
		hold_die(r->sb.setup_w, MOAT_STAGE_MOUNT, (int)i, "cannot hand /output to moat");
	close(fd);
}

static _Noreturn void run_qemu(struct moat_run *r, int kfd, int ifd, int cfd)
{
	struct moat_vm_run *v = r->vm;
	char mem[32], smp[32], con[256], fs1[320], fs2[320], append[160];
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)v->ram_mib);
	snprintf(smp, sizeof(smp), "%u", v->cpus);
	/* QEMU runs unprivileged: what only moat may open, it gets opened */
	snprintf(con, sizeof(con), "file,id=con,path=/proc/self/fd/6");
	snprintf(fs1, sizeof(fs1),
		 "local,id=r,path=%s/" MOAT_GV_ROOT ",security_model=none,multidevs=remap", v->dir);
	snprintf(fs2, sizeof(fs2),
		 "local,id=h,path=%s/" MOAT_GV_ROOT ",security_model=none,multidevs=remap", v->dir);
	snprintf(append, sizeof(append), "console=ttyS0 quiet panic=-1 rdinit=/init -- __vm-init");
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[8] = {null_fd, null_fd, null_fd, v->qemu_sock[1], kfd, ifd, cfd, v->tap};
	if (null_fd < 0 || moat_fdset_compact(fds, v->tap >= 0 ? 8 : 7) < 0)
		_exit(127);
	const char *argv[64];
	unsigned a = 0;
	argv[a++] = VM_QEMU;
	argv[a++] = "-M";
	argv[a++] = "q35";
	argv[a++] = "-accel";
	argv[a++] = v->kvm ? "kvm" : "tcg";
	argv[a++] = "-cpu";
	argv[a++] = v->kvm ? "host" : "max";
	argv[a++] = "-m";
	argv[a++] = mem;
	argv[a++] = "-smp";
	argv[a++] = smp;
	argv[a++] = "-nodefaults";
	argv[a++] = "-no-user-config";
	argv[a++] = "-nographic";
	argv[a++] = "-no-reboot";
	if (v->tap >= 0) {
		/* the guest's one link: the holder's tap (fd 7); no option ROM */
		argv[a++] = "-netdev";
		argv[a++] = "tap,id=n0,fd=7";
		argv[a++] = "-device";
		argv[a++] = "virtio-net-pci,netdev=n0,romfile=";
	} else {
		argv[a++] = "-nic";
		argv[a++] = "none";
	}
	argv[a++] = "-sandbox";
	argv[a++] = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny";
	argv[a++] = "-kernel";
	argv[a++] = "/proc/self/fd/4";
	argv[a++] = "-initrd";
	argv[a++] = "/proc/self/fd/5";
	argv[a++] = "-append";
	argv[a++] = append;
	argv[a++] = "-chardev";
	argv[a++] = con;
	argv[a++] = "-serial";
	argv[a++] = "chardev:con";
	argv[a++] = "-device";
	argv[a++] = "virtio-serial-pci";
	argv[a++] = "-chardev";
	argv[a++] = "socket,id=ctl,fd=3";
	argv[a++] = "-device";
	argv[a++] = "virtserialport,chardev=ctl,name=moat.ctl";
	argv[a++] = "-fsdev";
	argv[a++] = fs1;
	argv[a++] = "-device";
	argv[a++] = "virtio-9p-pci,fsdev=r,mount_tag=root";
	argv[a++] = "-fsdev";
	argv[a++] = fs2;
	argv[a++] = "-device";
	argv[a++] = "virtio-9p-pci,fsdev=h,mount_tag=hostview";
	argv[a++] = "-device";
	argv[a++] = "virtio-rng-pci";
	argv[a] = NULL;
	static const char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	execve(VM_QEMU, (char *const *)(uintptr_t)argv, (char *const *)(uintptr_t)envp);
	_exit(127);
}

/* ---- the bridge -------------------------------------------------------------- */

static int wr_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static int rd_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = read(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int frame(int fd, uint16_t type, uint16_t chan, uint32_t id, const void *a, size_t an,
		 const void *b, size_t bn)
{
	struct moat_vm_hdr h = {.len = (uint32_t)(an + bn), .type = type, .chan = chan, .id = id};
	if (an + bn > MOAT_VM_PAYLOAD)
		return -1;
	if (wr_all(fd, &h, sizeof(h)) < 0 || (an && wr_all(fd, a, an) < 0) ||
	    (bn && wr_all(fd, b, bn) < 0))
		return -1;
	return 0;
}

static struct vm_proc bprocs[MOAT_MAX_PROCS];
static uint8_t bbuf[MOAT_VM_PAYLOAD];
static int brec = -1; /* exec records: the pipe to the supervisor, or -1 */
static uint32_t brec_malformed; /* exec frames of the guest refused here */

/* The bridge ends (with the VM): the exec records' counts last, then EOF. */
static _Noreturn void bridge_exit(void)
{
	if (brec >= 0) {
		struct moat_gvt_frame c = {.len = sizeof(c),
					   .kind = MOAT_GVT_FRAME_COUNTS,
					   .malformed = brec_malformed};
		(void)wr_all(brec, &c, sizeof(c));
	}
	_exit(0);
}

/* An exec record of the guest: passed on whole if it is one frame of the
 * right size (the supervisor checks it again: moat_gvt_frame_parse),
 * otherwise counted and dropped, so the stream stays in step. */
static void bridge_execrec(uint32_t len)
{
	struct moat_gvt_frame f;
	if (brec < 0)
		return;
	if (len < sizeof(f) || len > MOAT_GVT_FRAME_MAX) {
		brec_malformed++;
		return;
	}
	memcpy(&f, bbuf, sizeof(f));
	if (f.len != len || f.kind != MOAT_GVT_FRAME_EXEC) {
		brec_malformed++;
		return;
	}
	if (wr_all(brec, bbuf, len) < 0)
		brec = safe_close(brec);
}

static struct vm_proc *bproc(uint32_t id)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		if (bprocs[i].used && bprocs[i].id == id)
			return &bprocs[i];
	return NULL;
}

static void bproc_done(struct vm_proc *p)
{
	p->report = safe_close(p->report);
	for (int i = 0; i < 3; i++)
		p->std[i] = safe_close(p->std[i]);
	p->used = false;
}

/* An exec request from the supervisor: its blob into one frame. */
static void bridge_exec(int q, int sock, const struct moat_ctl_req *rq, int *fds, unsigned nfds)
{
	struct moat_ctl_ev ev = {.type = MOAT_CTL_REFUSED, .id = rq->id, .err = EPROTO};
	struct vm_proc *p = NULL;
	for (unsigned i = 0; i < MOAT_MAX_PROCS && !p; i++)
		if (!bprocs[i].used)
			p = &bprocs[i];
	struct stat st;
	if (nfds < 2 || !p || fstat(fds[0], &st) < 0 || st.st_size < 16 ||
	    (uint64_t)st.st_size > MOAT_VM_PAYLOAD - 4 ||
	    pread(fds[0], bbuf, (size_t)st.st_size, 0) != st.st_size) {
		ev.err = !p ? EAGAIN : nfds < 2 ? EPROTO : E2BIG;
		(void)moat_msg_send(sock, &ev, sizeof(ev), NULL, 0);
		return;
	}
	*p = (struct vm_proc){.id = rq->id, .used = true, .report = -1, .std = {-1, -1, -1}};
	p->report = fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
	unsigned at = 2;
	for (int i = 0; i < 3; i++)
		if ((rq->flags & MOAT_CTL_HAS_FD(i)) && at < nfds)
			p->std[i] = fcntl(fds[at++], F_DUPFD_CLOEXEC, 3);
	if (rq->flags & MOAT_CTL_ERR_IS_OUT)
		p->std[2] = safe_close(p->std[2]);
	uint32_t flags = rq->flags;
	if (frame(q, MOAT_VM_EXEC, 0, rq->id, &flags, 4, bbuf, (size_t)st.st_size) < 0)
		bridge_exit();
	if (p->std[0] < 0 && frame(q, MOAT_VM_STDIN, 0, rq->id, NULL, 0, NULL, 0) < 0)
		bridge_exit();
}

static void bridge_guest(int q, int sock)
{
	struct moat_vm_hdr h;
	if (rd_all(q, &h, sizeof(h)) < 0 || h.len > MOAT_VM_PAYLOAD || rd_all(q, bbuf, h.len) < 0)
		bridge_exit(); /* the guest is gone */
	struct vm_proc *p = bproc(h.id);
	switch (h.type) {
	case MOAT_VM_EVENT: {
		struct moat_ctl_ev ev;
		if (h.len != sizeof(ev))
			return;
		memcpy(&ev, bbuf, sizeof(ev));
		ev.id = h.id;
		if (ev.type != MOAT_CTL_STARTED && ev.type != MOAT_CTL_EXITED &&
		    ev.type != MOAT_CTL_REFUSED)
			return;
		if (p && ev.type != MOAT_CTL_STARTED)
			bproc_done(p);
		(void)moat_msg_send(sock, &ev, sizeof(ev), NULL, 0);
		break;
	}
	case MOAT_VM_REPORT:
		if (p && h.len == sizeof(struct moat_setup_error) && p->report >= 0)
			(void)wr_all(p->report, bbuf, h.len);
		if (p)
			p->report = safe_close(p->report);
		break;
	case MOAT_VM_EXECREC:
		bridge_execrec(h.len);
		break;
	case MOAT_VM_OUT:
		if (!p || (h.chan != 1 && h.chan != 2))
			return;
		if (h.len == 0)
			p->std[h.chan] = safe_close(p->std[h.chan]);
		else if (p->std[h.chan] >= 0 && wr_all(p->std[h.chan], bbuf, h.len) < 0)
			p->std[h.chan] = safe_close(p->std[h.chan]);
		break;
	default:
		break;
	}
}

static _Noreturn void bridge(struct moat_run *r, int q, pid_t qemu)
{
	int sock = r->sb.sock_child;
	brec = r->vm->rec[1];
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		bprocs[i] = (struct vm_proc){.report = -1, .std = {-1, -1, -1}};
	for (;;) {
		struct pollfd pf[2 + MOAT_MAX_PROCS];
		unsigned np = 0, who[MOAT_MAX_PROCS];
		pf[np++] = (struct pollfd){.fd = sock, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = q, .events = POLLIN};
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
			if (bprocs[i].used && bprocs[i].std[0] >= 0) {
				who[np - 2] = i;
				pf[np++] =
					(struct pollfd){.fd = bprocs[i].std[0], .events = POLLIN};
			}
		if (poll(pf, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			bridge_guest(q, sock);
		for (unsigned k = 2; k < np; k++) {
			if (!pf[k].revents)
				continue;
			struct vm_proc *p = &bprocs[who[k - 2]];
			ssize_t n = read(p->std[0], bbuf, 65536);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				p->std[0] = safe_close(p->std[0]);
			if (frame(q, MOAT_VM_STDIN, 0, p->id, bbuf, n > 0 ? (size_t)n : 0, NULL,
				  0) < 0)
				bridge_exit();
		}
		if (!pf[0].revents)
			continue;
		struct moat_ctl_req rq;
		int fds[5];
		unsigned nfds = 0;
		ssize_t n = moat_msg_recv(sock, &rq, sizeof(rq), fds, 5, &nfds);
		if (n == -EINTR || n == -EBADMSG)
			continue;
		if (n <= 0)
			break; /* the supervisor is gone: so is the VM */
		if (n == (ssize_t)sizeof(rq)) {
			int32_t sg[2] = {rq.sig, (int32_t)rq.flags};
			if (rq.type == MOAT_CTL_EXEC)
				bridge_exec(q, sock, &rq, fds, nfds);
			else if (rq.type == MOAT_CTL_SIGNAL &&
				 frame(q, MOAT_VM_SIGNAL, 0, rq.id, sg, sizeof(sg), NULL, 0) < 0)
				bridge_exit();
			else if (rq.type == MOAT_CTL_SIGNAL_ALL &&
				 frame(q, MOAT_VM_SIGNAL_ALL, 0, 0, sg, 4, NULL, 0) < 0)
				bridge_exit();
		}
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
	}
	kill(qemu, SIGKILL);
	bridge_exit();
}

static _Noreturn void holder(struct moat_run *r)
{
	struct moat_vm_run *v = r->vm;
	struct moat_init *sb = &r->sb;
	int w = sb->setup_w;
	char go;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(MOAT_EXIT_SETUP);
	ssize_t n;
	while ((n = read(sb->go_r, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(MOAT_EXIT_SETUP);
	for (unsigned i = 0; i < sb->n_cgroup_self; i++)
		if (write(sb->cgroup_self[i], "0", 1) != 1)
			hold_die(w, MOAT_STAGE_CGROUP, -1, "cannot join the run's cgroup");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, -1, "cannot make mounts private");
	int dirfd = open(v->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || !same_file(dirfd, v->dirfd))
		hold_die(w, MOAT_STAGE_MOUNT, -1, "the tree %s changed", v->dir);
	close(v->dirfd);
	v->dirfd = dirfd;
	v->rec[0] = safe_close(v->rec[0]);
	/* --rootfs / --image: sources beneath it as this namespace sees them */
	int rk = moat_sandbox_rootfs_here(sb);
	if (rk < 0) {
		errno = -rk;
		hold_die(w, MOAT_STAGE_MOUNT, -1, "--rootfs %s: %s", sb->rootfs_path,
			 rk == -EXDEV ? "changed while moat started (refused)" : "cannot open it");
	}
	if (r->plan->net.mode == MOAT_NET_ALLOW) {
		/* the tap first (its rules name it), then the listeners and the
		 * capture rules of the process level, in this namespace */
		char why[160];
		int k = v->tap = moat_vm_net_tap(MOAT_NETNS_VM_TAP, why, sizeof(why));
		if (k >= 0)
			k = moat_vm_net_up(MOAT_NETNS_VM_TAP, MOAT_NETNS_VM_HOST4, 24, NULL);
		if (k < 0) {
			errno = -k;
			hold_die(w, MOAT_STAGE_NETWORK, -1, "the guest's link: %s",
				 v->tap < 0 ? why : "cannot configure the tap");
		}
		if (moat_hook_network(sb) < 0 || moat_hook_network_join(sb) < 0)
			hold_die(w, MOAT_STAGE_NETWORK, -1, "network setup failed");
	}
	for (unsigned i = 0; i < r->plan->n_steps; i++) {
		switch (v->b.src[i]) {
		case MOAT_GV_BIND:
			attach_at(r, i, hold_tree(r, i, true),
				  (r->plan->steps[i].flags & MOAT_STEPF_RO) != 0, true);
			break;
		case MOAT_GV_OVERLAY:
			hold_overlay(r, i);
			break;
		case MOAT_GV_OUTPUT:
			hold_output(r, i);
			break;
		default:
			break;
		}
	}
	/* the tree's own directories read-only (what is not a mount in it) */
	char root[MOAT_MAX_PATH];
	snprintf(root, sizeof(root), "%s/" MOAT_GV_ROOT, v->dir);
	if (mount(root, root, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, root, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
		    0)
		hold_die(w, MOAT_STAGE_MOUNT, -1, "cannot make the tree read-only");
	int kfd = v->kernel_fd >= 0 ? fcntl(v->kernel_fd, F_DUPFD_CLOEXEC, 3)
				    : open(v->kernel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int ifd = open(v->initrd, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int cfd = openat(v->dirfd, "console.log",
			 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (kfd < 0 || ifd < 0 || cfd < 0 || fchown(cfd, r->plan->id.uid, r->plan->id.gid) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, -1,
			 "cannot open the guest's kernel, initramfs or console log");
	pid_t qemu = fork();
	if (qemu < 0)
		hold_die(w, MOAT_STAGE_FORK, -1, "cannot start QEMU");
	if (qemu == 0) {
		/* QEMU as the sandbox user of the holder's namespace: the caller,
		 * or as root the run's own host uid, with no group of root's and
		 * no capability (the exec of a non-root uid drops them) */
		uid_t u = r->plan->id.uid;
		gid_t g = r->plan->id.gid;
		if ((r->sb.root_mode && setgroups(0, NULL) < 0) || setresgid(g, g, g) < 0 ||
		    setresuid(u, u, u) < 0)
			_exit(127);
		/* after the change of credentials, which clears it */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(127);
		run_qemu(r, kfd, ifd, cfd);
	}
	v->qemu_sock[1] = safe_close(v->qemu_sock[1]);
	close(kfd);
	close(ifd);
	close(cfd);
	v->tap = safe_close(v->tap);
	int q = v->qemu_sock[0];
	size_t clen = sizeof(v->cfg) + v->n_insns * sizeof(struct sock_filter);
	uint8_t *cbuf = malloc(clen);
	if (!cbuf)
		hold_die(w, MOAT_STAGE_SYNC, -1, "out of memory");
	memcpy(cbuf, &v->cfg, sizeof(v->cfg));
	if (v->n_insns)
		memcpy(cbuf + sizeof(v->cfg), v->insns, v->n_insns * sizeof(struct sock_filter));
	if (frame(q, MOAT_VM_CONFIG, 0, 0, cbuf, clen, NULL, 0) < 0)
		hold_die(w, MOAT_STAGE_SYNC, -1,
			 "QEMU ended before the guest started (see %s/console.log)", v->dir);
	free(cbuf);
	struct moat_vm_hdr h;
	for (;;) {
		if (rd_all(q, &h, sizeof(h)) < 0) {
			errno = EPROTO;
			hold_die(w, MOAT_STAGE_SYNC, -1,
				 "the guest ended before its init served the control port");
		}
		if (h.len > MOAT_VM_PAYLOAD || rd_all(q, bbuf, h.len) < 0)
			hold_die(w, MOAT_STAGE_SYNC, -1, "a broken frame from the guest");
		if (h.type == MOAT_VM_READY)
			break;
		if (h.type == MOAT_VM_FAIL && h.len == sizeof(struct moat_setup_error)) {
			struct moat_setup_error e;
			memcpy(&e, bbuf, sizeof(e));
			e.detail[sizeof(e.detail) - 1] = '\0';
			errno = e.err;
			hold_die(w, e.stage, -1, "in the guest: %s", e.detail);
		}
	}
	if (moat_sandbox_send_fd(sb->sock_child, MOAT_FD_DONE, -1) < 0)
		_exit(MOAT_EXIT_SETUP);
	sb->setup_w = safe_close(sb->setup_w);
	bridge(r, q, qemu);
}

/* ---- the supervisor's side ------------------------------------------------ */

/* in_uid -> uid (and the gids); with root, also 0 -> 0: the holder stays
 * root for its mounts, QEMU drops to in_uid before its exec. */
static int write_maps(pid_t pid, uid_t in_uid, gid_t in_gid, uid_t uid, gid_t gid, bool root)
{
	char path[64], map[96];
	const char *what[3] = {"setgroups", "uid_map", "gid_map"};
	for (unsigned i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what[i]);
		if (i == 0)
			snprintf(map, sizeof(map), root ? "allow" : "deny");
		else
			snprintf(map, sizeof(map), "%s%u %u 1\n", root ? "0 0 1\n" : "",
				 i == 1 ? (unsigned)in_uid : (unsigned)in_gid,
				 i == 1 ? (unsigned)uid : (unsigned)gid);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
			return negerrno();
	}
	return 0;
}

/* One step of the wait for the guest's init (holder_wait.h): never blocks,
 * so a server holding other sandboxes goes on while a guest boots (under
 * TCG that takes seconds). */
static int vm_poll(struct moat_run *r)
{
	return moat_holder_wait_poll(r, &r->vm->wait);
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return streq(dir, "/") || (strncmp(path, dir, n) == 0 && (path[n] == '/' || !path[n]));
}

/* The guest's part of the plan: its own tmpfs, proc and /dev, the paths
 * it may write below, and the host mounts a guest mount would cover. */
static int guest_config(struct moat_run *r, char *why, size_t whylen)
{
	struct moat_vm_run *v = r->vm;
	const struct moat_plan *pl = r->plan;
	struct moat_vm_config *c = &v->cfg;
	*c = (struct moat_vm_config){.magic = MOAT_VM_CONFIG_MAGIC,
				     .uid = pl->id.uid,
				     .gid = pl->id.gid,
				     .landlock = 1,
				     .net = pl->net.mode == MOAT_NET_ALLOW,
				     .record_exec = pl->seccomp.record_exec};
	snprintf(c->hostname, sizeof(c->hostname), "%s", pl->id.hostname ? pl->id.hostname : "");
	bool dev = false;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		struct moat_vm_mount m = {0};
		if (strlen(s->dest) >= MOAT_VM_DEST) {
			snprintf(why, whylen, "%s: a path too long for the guest", s->dest);
			return -ENAMETOOLONG;
		}
		bool guest_mount = false, rw = false;
		if (streq(s->dest, "/dev") || startswith(s->dest, "/dev/")) {
			if (!dev) {
				m = (struct moat_vm_mount){.op = MOAT_VM_M_DEV};
				snprintf(m.dest, sizeof(m.dest), "/dev");
				guest_mount = dev = true;
			}
		} else if (s->op == MOAT_STEP_PROC) {
			m = (struct moat_vm_mount){.op = MOAT_VM_M_PROC};
			guest_mount = true;
		} else if (s->op == MOAT_STEP_TMPFS && !streq(s->dest, "/") &&
			   v->b.src[i] != MOAT_GV_OUTPUT) {
			bool assembled = false;
			for (unsigned j = i + 1; j < pl->n_steps; j++)
				if (pl->steps[j].op == MOAT_STEP_READONLY &&
				    streq(pl->steps[j].dest, s->dest))
					assembled = true;
			if (!assembled) {
				m = (struct moat_vm_mount){
					.op = MOAT_VM_M_TMPFS, .mode = s->mode, .size = s->size};
				guest_mount = rw = true;
			}
		} else if (v->b.src[i] == MOAT_GV_OVERLAY || v->b.src[i] == MOAT_GV_OUTPUT ||
			   (v->b.src[i] == MOAT_GV_BIND && !(s->flags & MOAT_STEPF_RO)))
			rw = true;
		if (guest_mount) {
			if (m.op != MOAT_VM_M_DEV)
				snprintf(m.dest, sizeof(m.dest), "%s", s->dest);
			if (c->n_mounts >= MOAT_VM_MAX_MOUNTS) {
				snprintf(why, whylen, "more guest mounts than %d",
					 MOAT_VM_MAX_MOUNTS);
				return -E2BIG;
			}
			c->mounts[c->n_mounts++] = m;
		} else if (v->b.src[i] != MOAT_GV_NONE) {
			/* a host mount below an earlier guest mount: shown again
			 * there from the second view of the tree */
			for (unsigned j = 0; j < c->n_mounts; j++)
				if (c->mounts[j].op != MOAT_VM_M_PROC &&
				    under(s->dest, c->mounts[j].dest)) {
					if (c->n_mounts >= MOAT_VM_MAX_MOUNTS) {
						snprintf(why, whylen, "more guest mounts than %d",
							 MOAT_VM_MAX_MOUNTS);
						return -E2BIG;
					}
					m = (struct moat_vm_mount){.op = MOAT_VM_M_BIND};
					snprintf(m.dest, sizeof(m.dest), "%s", s->dest);
					c->mounts[c->n_mounts++] = m;
					break;
				}
		}
		if (rw && c->n_rw < MOAT_VM_MAX_MOUNTS)
			snprintf(c->rw[c->n_rw++], MOAT_VM_DEST, "%s", s->dest);
	}
	const struct moat_rlimit_opts *rl = &pl->limits.rl;
	c->nofile = rl->nofile;
	c->fsize = rl->fsize;
	c->nproc = pl->limits.cg.pids ? pl->limits.cg.pids : r->sb.rlimit_nproc;
	c->as = r->sb.rlimit_as;
	/* the plan's filter, without what needs a listener on the host; the
	 * execs go to the guest init's listener (exec records) */
	struct moat_seccomp_opts o;
	moat_plan_seccomp_opts(pl, false, &o);
	o.notify = o.record_net = false;
	o.record_exec = c->record_exec;
	const struct moat_seccomp_baked *bk = moat_seccomp_baked_find(&o);
	if (bk) {
		v->insns = calloc(bk->len, sizeof(struct sock_filter));
		if (!v->insns)
			return -ENOMEM;
		memcpy(v->insns, bk->insns, bk->len * sizeof(struct sock_filter));
		v->n_insns = bk->len;
	} else {
		scmp_filter_ctx ctx = NULL;
		struct moat_seccomp_prog prog = {0};
		int k = moat_seccomp_build(&o, &ctx);
		if (k >= 0) {
			k = moat_seccomp_export(ctx, o.record_exec, &prog);
			seccomp_release(ctx);
		}
		if (k >= 0 && prog.len > BPF_MAXINSNS)
			k = -E2BIG;
		if (k >= 0 && !(v->insns = calloc(prog.len, sizeof(struct sock_filter))))
			k = -ENOMEM;
		if (k < 0) {
			moat_seccomp_prog_done(&prog);
			snprintf(why, whylen, "cannot compile the guest's seccomp filter: %s",
				 strerror(-k));
			return k;
		}
		memcpy(v->insns, prog.insns, prog.len * sizeof(struct sock_filter));
		v->n_insns = prog.len;
		moat_seccomp_prog_done(&prog);
	}
	c->seccomp_len = v->n_insns;
	/* guest RAM: the memory limit less QEMU's own (both count in the run's
	 * cgroup); vCPUs: --cpus rounded up */
	uint64_t mem = pl->limits.cg.memory;
	v->ram_mib = mem ? mem / (1u << 20) : 512;
	if (mem)
		v->ram_mib = v->ram_mib > 320 ? v->ram_mib - 128 : 192;
	if (v->ram_mib > 16384)
		v->ram_mib = 16384;
	v->cpus =
		pl->limits.cg.cpus_milli ? (unsigned)((pl->limits.cg.cpus_milli + 999) / 1000) : 1;
	if (v->cpus > 16)
		v->cpus = 16;
	return 0;
}

/* The tree's own files (the generated /etc entries and the plan's files)
 * without write bits. Unprivileged they belong to the caller, whom the
 * holder's namespace shows as the sandbox user: the guest's kernel would
 * then grant access(W_OK) by their mode, though the read-only tree and
 * Landlock refuse the write itself (RT-033). Nothing is mounted in the tree
 * yet; symlinks are not followed. */
static int tree_readonly(int dfd, unsigned depth)
{
	_cleanup_close_ int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int k = 0;
	if (!d)
		return negerrno();
	fd = -1; /* the DIR's */
	while (k >= 0 && (e = readdir(d))) {
		struct stat st;
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			k = negerrno();
		else if (S_ISREG(st.st_mode) && (st.st_mode & 0222) &&
			 fchmodat(dirfd(d), e->d_name, st.st_mode & 07555, 0) < 0)
			k = negerrno();
		else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub =
				openat(dirfd(d), e->d_name,
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			k = sub < 0	      ? negerrno()
				: depth >= 32 ? -ELOOP
					      : tree_readonly(sub, depth + 1);
		}
	}
	closedir(d);
	return k;
}

static int vm_start(struct moat_run *r)
{
	struct moat_vm_run *v = r->vm;
	const struct moat_plan *pl = r->plan;
	int k, step;
	char why[256];
	if (moat_plan_check_runtime(pl) < 0)
		return moat_error_set(r->err, "plan", EPROTO,
				      "a plan step's source was not made before clone");
	if (r->sb.root_mode && (k = moat_backend_ns_idmapped(r)) < 0)
		return k;
	snprintf(v->dir, sizeof(v->dir), "/tmp/moat-vm-%s-XXXXXX", r->run_id);
	/* named in the run's state record before it exists: after a SIGKILL
	 * of the supervisor, moat gc or the next run removes it */
	if ((k = moat_supervise_state_mkdtemp(r, "isolation", v->dir)) < 0)
		return k;
	v->dirfd = open(v->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (v->dirfd < 0) {
		k = -errno;
		(void)rmdir(v->dir);
		return moat_error_set(r->err, "isolation", -k, "cannot open the tree %s: %s",
				      v->dir, strerror(-k));
	}
	if (mkdirat(v->dirfd, MOAT_GV_OVL, 0700) < 0 || fchmod(v->dirfd, 0711) < 0)
		return moat_error_set(r->err, "isolation", errno, "cannot prepare the tree %s",
				      v->dir);
	int srcfd[MOAT_PLAN_MAX_STEPS + 1];
	for (unsigned i = 0; i <= MOAT_PLAN_MAX_STEPS; i++)
		srcfd[i] = -1;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->op != MOAT_STEP_BIND && s->op != MOAT_STEP_OVERLAY)
			continue;
		int fd = r->sb.premounted[i] >= 0
			? (int)fcntl(r->sb.premounted[i], F_DUPFD_CLOEXEC, 3)
			: moat_sandbox_open_source(s, r->sb.user_path[i], r->sb.rootfs_fd,
						   pl->sysroot);
		if (fd == -ENOENT && (s->flags & MOAT_STEPF_OPTIONAL))
			continue;
		if (fd < 0)
			return moat_error_set(
				r->err, "mount", -fd,
				"mount step failed (plan step %u): cannot open %s: %s", i + 1,
				s->src, strerror(-fd));
		v->srcfd[i] = srcfd[i] = fd;
	}
	struct moat_rlimit_opts rl = pl->limits.rl;
	k = moat_gv_bundle_write(v->dirfd, v->dir, pl, srcfd, &rl, &v->b, &step, why, sizeof(why));
	if (k < 0) {
		char at[32] = "";
		if (step >= 0)
			snprintf(at, sizeof(at), " (plan step %d)", step + 1);
		return moat_error_set(r->err, "isolation", -k, "tree%s: %s", at, why);
	}
	_cleanup_close_ int rootfd =
		openat(v->dirfd, MOAT_GV_ROOT, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0 || (mkdirat(rootfd, "dev", 0755) < 0 && errno != EEXIST))
		return moat_error_set(r->err, "isolation", errno, "cannot prepare the tree's /dev");
	if ((k = tree_readonly(rootfd, 0)) < 0)
		return moat_error_set(r->err, "isolation", -k,
				      "cannot make the tree's files read-only: %s", strerror(-k));
	if ((k = guest_config(r, why, sizeof(why))) < 0)
		return moat_error_set(r->err, "isolation", -k, "guest configuration: %s", why);

	int sp[2], p1[2], p2[2];
	if (pipe2(p1, O_CLOEXEC) < 0)
		return negerrno();
	r->sb.setup_r = p1[0];
	r->sb.setup_w = p1[1];
	if (pipe2(p2, O_CLOEXEC) < 0)
		return negerrno();
	r->sb.go_r = p2[0];
	r->sb.go_w = p2[1];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return negerrno();
	r->sb.sock_sup = sp[0];
	r->sb.sock_child = sp[1];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, v->qemu_sock) < 0)
		return negerrno();
	if (v->cfg.record_exec) {
		if (pipe2(v->rec, O_CLOEXEC) < 0 || moat_gvt_attach(v->rec[0], &v->trace) < 0)
			return moat_error_set(r->err, "isolation", errno ? errno : ENOMEM,
					      "cannot prepare the exec records");
		v->rec[0] = -1; /* the trace's now */
	}

	uint64_t flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_PIDFD | CLONE_NEWUSER;
	struct clone_args ca = {
		.flags = flags, .pidfd = (uint64_t)(uintptr_t)&r->pidfd, .exit_signal = SIGCHLD};
	moat_supervise_clone_args(r, &ca);
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		holder(r);
	}
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return moat_error_set(r->err, "namespaces", e,
				      "cannot create the VM holder's namespaces: %s", strerror(e));
	r->init_pid = (pid_t)pid;
	r->sb.setup_w = safe_close(r->sb.setup_w);
	r->sb.go_r = safe_close(r->sb.go_r);
	r->sb.sock_child = safe_close(r->sb.sock_child);
	v->qemu_sock[1] = safe_close(v->qemu_sock[1]);
	v->rec[1] = safe_close(v->rec[1]);
	/* the sandbox user is the caller (as root: the run's own host uid), so
	 * the guest sees the user's files as the sandbox user's, and QEMU holds
	 * no privilege on the host */
	uid_t hu = r->sb.root_mode ? r->sb.host_uid : geteuid();
	gid_t hg = r->sb.root_mode ? r->sb.host_gid : getegid();
	if ((k = write_maps(r->init_pid, pl->id.uid, pl->id.gid, hu, hg, r->sb.root_mode)) < 0)
		return moat_error_set(r->err, "identity", -k,
				      "cannot map the holder's user namespace: %s", strerror(-k));
	if ((k = moat_supervise_child(r)) < 0 || (k = moat_supervise_started(r)) < 0)
		return k;
	if (write(r->sb.go_w, "g", 1) != 1)
		return moat_error_set(r->err, "sync", errno, "the holder vanished during setup");
	r->sb.go_w = safe_close(r->sb.go_w);
	/* the guest boots from here: vm_poll() waits for its init's report */
	v->wait = (struct moat_holder_wait){.ended = "the VM's holder ended during set-up",
					    .trace = v->trace};
	return moat_holder_wait_start(r, &v->wait);
}

/* The guest powers off when its channel closes; the holder kills QEMU when
 * the supervisor's end closes. If it is not gone within 5 s: SIGKILL (QEMU
 * follows by PR_SET_PDEATHSIG) and the run's cgroup. */
static void vm_kill(struct moat_run *r)
{
	if (r->pidfd < 0 || r->killed)
		return;
	if (r->sb.sock_sup >= 0)
		shutdown(r->sb.sock_sup, SHUT_RDWR);
	struct pollfd pf = {.fd = r->pidfd, .events = POLLIN};
	int k;
	while ((k = poll(&pf, 1, 5000)) < 0 && errno == EINTR)
		;
	if (k <= 0) {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		moat_supervise_kill_all(r);
	}
	siginfo_t si;
	while (waitid(P_PIDFD, (id_t)r->pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	r->killed = true;
	/* the holder is gone: the rest of the guest's exec records */
	if (r->vm && r->vm->trace)
		moat_gvt_finish(r, r->vm->trace, 2000);
	moat_proc_init_died(r);
}

static void vm_dispatch(struct moat_run *r)
{
	moat_gvt_dispatch(r, r->vm ? r->vm->trace : NULL);
}

static void vm_release(struct moat_run *r)
{
	moat_backend_ns()->release(r);
	vm_free(r->vm);
	r->vm = NULL;
}

static const struct moat_backend_ops vm_ops = {
	.name = "vm",
	.prepare = vm_prepare,
	.start = vm_start,
	.poll = vm_poll,
	.ready_ms = VM_START_MS,
	.kill = vm_kill,
	.release = vm_release,
	.dispatch = vm_dispatch,
};

const struct moat_backend_ops *moat_backend_vm(void)
{
	return &vm_ops;
}
