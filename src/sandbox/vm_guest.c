/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat's init inside the vm level's guest (vm_proto.h, docs/ISOLATION.md):
 * `moat __vm-init`, PID 1 of the initramfs moat builds (vm_initramfs.c).
 * It loads the virtio and 9p modules the initramfs carries (finit_module),
 * mounts the host's assembled root (9p, tag "root") and the guest-side
 * mounts of the plan (tmpfs, proc, a minimal /dev with no device of the
 * VM's own: the control port is never visible), moves into it, reads the
 * run's configuration from the control port and then serves it: each
 * command is forked as the sandbox user with the plan's rlimits, Landlock
 * (write only below the writable paths) and the plan's seccomp filter, its
 * stdio relayed as frames. Defence in depth: the VM is the boundary. With
 * exec records the filter sends execve/execveat to a listener, which each
 * command hands to the init before its exec; the init answers it (as the
 * process level's supervisor does) and sends every exec as an EXECREC frame
 * (a gvisor_trace.h frame, which the host checks again). A failed step is
 * reported as a FAIL frame and the guest powers off.
 */
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/reboot.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/landlock.h"
#include "moat/moat.h"
#include "network/netns.h"
#include "kernel/seccomp.h"
#include "sandbox/backend_vm.h"
#include "sandbox/ctl.h"
#include "sandbox/gvisor_trace.h"
#include "sandbox/sandbox.h"
#include "sandbox/vm_proto.h"
#include "shared/fdpass.h"
#include "shared/macro.h"

#define G_MODULES "/modules"
#define G_ROOT "/newroot"
#define G_VIEW "/hostview" /* the same tree again, for what a guest mount covers */
#define G_BLOB_MAX (MOAT_VM_PAYLOAD - 4)

static int ctl = -1;
static uint8_t buf[sizeof(struct moat_vm_hdr) + MOAT_VM_PAYLOAD];
static struct moat_vm_config cfg;
static struct sock_filter insns[BPF_MAXINSNS];
static struct moat_seccomp_prog prog;
static int ruleset = -1;
/* exec records: the listeners of the commands' filters (one per command,
 * shared by everything it starts), answered here as the process level's
 * supervisor answers its own, each exec sent to the host as a frame */
static int lsn[MOAT_MAX_PROCS];
static int lsn_root = -1;
static struct moat_seccomp_event sev;
static uint8_t recframe[MOAT_GVT_FRAME_MAX];

static int write_all(int fd, const void *p, size_t n)
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

static int read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = read(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_frame(uint16_t type, uint16_t chan, uint32_t id, const void *p, size_t n)
{
	struct moat_vm_hdr h = {.len = (uint32_t)n, .type = type, .chan = chan, .id = id};
	if (write_all(ctl, &h, sizeof(h)) < 0 || (n && write_all(ctl, p, n) < 0))
		reboot(LINUX_REBOOT_CMD_POWER_OFF); /* the host side is gone */
}

static _Noreturn _printf_(2, 3) void fail(int stage, const char *fmt, ...)
{
	struct moat_setup_error e = {.stage = stage, .err = errno ? errno : EIO, .step = -1};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	if (ctl >= 0)
		send_frame(MOAT_VM_FAIL, 0, 0, &e, sizeof(e));
	else
		(void)!write(2, e.detail, strlen(e.detail));
	sync();
	reboot(LINUX_REBOOT_CMD_POWER_OFF);
	_exit(1);
}

/* The modules in the initramfs, by name: NN-name.ko in load order. */
static void load_modules(void)
{
	struct dirent **ents = NULL;
	int n = scandir(G_MODULES, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.') {
			char p[300];
			snprintf(p, sizeof(p), G_MODULES "/%s", ents[i]->d_name);
			int fd = open(p, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST))
				fail(MOAT_STAGE_MOUNT, "cannot load the guest module %s",
				     ents[i]->d_name);
			close(fd);
		}
		free(ents[i]);
	}
	free(ents);
	if (n < 0)
		fail(MOAT_STAGE_MOUNT, "no modules in the initramfs");
}

/* The virtio-serial port named moat.ctl (no udev: by its sysfs name). */
static int open_port(void)
{
	for (int tries = 0; tries < 500; tries++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char p[300], name[64] = "";
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", e->d_name);
			int fd = open(p, O_RDONLY | O_CLOEXEC);
			ssize_t k = fd >= 0 ? read(fd, name, sizeof(name) - 1) : -1;
			if (fd >= 0)
				close(fd);
			if (k <= 0 || strncmp(name, "moat.ctl", 8) != 0)
				continue;
			snprintf(p, sizeof(p), "/dev/%s", e->d_name);
			closedir(d);
			fd = open(p, O_RDWR | O_CLOEXEC | O_NOCTTY);
			if (fd < 0)
				fail(MOAT_STAGE_SYNC, "cannot open the control port %s", p);
			return fd;
		}
		if (d)
			closedir(d);
		usleep(10000);
	}
	errno = ENODEV;
	fail(MOAT_STAGE_SYNC, "no control port moat.ctl");
}

static void mkdirs(const char *path)
{
	char p[MOAT_VM_DEST + 16];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			(void)mkdir(p, 0755);
			*s = '/';
		}
	(void)mkdir(p, 0755);
}

/* A /dev with the harmless nodes only, as gVisor's. */
static void make_dev(const char *at)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = {{"null", 1, 3},   {"zero", 1, 5},	  {"full", 1, 7},
		     {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};
	char p[MOAT_VM_DEST + 32];
	if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=65536") < 0)
		fail(MOAT_STAGE_MOUNT, "cannot mount /dev");
	for (unsigned i = 0; i < ELEMENTSOF(nodes); i++) {
		snprintf(p, sizeof(p), "%s/%s", at, nodes[i].name);
		if (mknod(p, S_IFCHR | 0666, makedev(nodes[i].maj, nodes[i].min)) < 0 ||
		    chmod(p, 0666) < 0)
			fail(MOAT_STAGE_MOUNT, "cannot create /dev/%s", nodes[i].name);
	}
	static const char *const links[][2] = {{"fd", "/proc/self/fd"},
					       {"stdin", "/proc/self/fd/0"},
					       {"stdout", "/proc/self/fd/1"},
					       {"stderr", "/proc/self/fd/2"}};
	for (unsigned i = 0; i < ELEMENTSOF(links); i++) {
		snprintf(p, sizeof(p), "%s/%s", at, links[i][0]);
		(void)!symlink(links[i][1], p);
	}
	snprintf(p, sizeof(p), "%s/pts", at);
	(void)mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/shm", at);
	(void)mkdir(p, 01777);
	if (mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=16m") < 0)
		fail(MOAT_STAGE_MOUNT, "cannot mount /dev/shm");
}

static void read_config(void)
{
	struct moat_vm_hdr h;
	if (read_all(ctl, &h, sizeof(h)) < 0 || h.type != MOAT_VM_CONFIG || h.len < sizeof(cfg) ||
	    h.len > sizeof(cfg) + sizeof(insns) ||
	    (h.len - sizeof(cfg)) % sizeof(struct sock_filter) != 0 ||
	    read_all(ctl, buf, h.len) < 0) {
		errno = EPROTO;
		fail(MOAT_STAGE_SYNC, "no configuration from the host");
	}
	memcpy(&cfg, buf, sizeof(cfg));
	unsigned n = (unsigned)((h.len - sizeof(cfg)) / sizeof(struct sock_filter));
	if (cfg.magic != MOAT_VM_CONFIG_MAGIC || cfg.n_mounts > MOAT_VM_MAX_MOUNTS ||
	    cfg.n_rw > MOAT_VM_MAX_MOUNTS || n != cfg.seccomp_len) {
		errno = EPROTO;
		fail(MOAT_STAGE_SYNC, "a bad configuration from the host");
	}
	memcpy(insns, buf + sizeof(cfg), n * sizeof(struct sock_filter));
	prog = (struct moat_seccomp_prog){
		.insns = insns, .len = (unsigned short)n, .notify = n && cfg.record_exec};
	cfg.hostname[sizeof(cfg.hostname) - 1] = '\0';
	for (unsigned i = 0; i < cfg.n_mounts; i++)
		cfg.mounts[i].dest[MOAT_VM_DEST - 1] = '\0';
	for (unsigned i = 0; i < cfg.n_rw; i++)
		cfg.rw[i][MOAT_VM_DEST - 1] = '\0';
}

static void guest_mounts(void)
{
	char at[MOAT_VM_DEST + 16], opts[96];
	for (unsigned i = 0; i < cfg.n_mounts; i++) {
		const struct moat_vm_mount *m = &cfg.mounts[i];
		if (m->dest[0] != '/' || strstr(m->dest, "..")) {
			errno = EINVAL;
			fail(MOAT_STAGE_MOUNT, "a bad mount point from the host");
		}
		snprintf(at, sizeof(at), G_ROOT "%s", m->dest);
		mkdirs(at);
		switch (m->op) {
		case MOAT_VM_M_TMPFS:
			snprintf(opts, sizeof(opts), "mode=%04o,size=%llu,uid=%u,gid=%u",
				 m->mode & 07777, (unsigned long long)m->size, cfg.uid, cfg.gid);
			if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
				fail(MOAT_STAGE_MOUNT, "cannot mount a tmpfs at %s", m->dest);
			break;
		case MOAT_VM_M_PROC:
			if (mount("proc", at, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				fail(MOAT_STAGE_MOUNT, "cannot mount proc at %s", m->dest);
			break;
		case MOAT_VM_M_DEV:
			make_dev(at);
			break;
		case MOAT_VM_M_BIND: {
			char from[MOAT_VM_DEST + 16];
			struct stat st;
			snprintf(from, sizeof(from), G_VIEW "%s", m->dest);
			if (stat(from, &st) < 0)
				fail(MOAT_STAGE_MOUNT, "cannot find %s in the host's tree",
				     m->dest);
			if (!S_ISDIR(st.st_mode)) {
				(void)rmdir(at);
				int fd = open(at, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
				if (fd >= 0)
					close(fd);
			}
			if (mount(from, at, NULL, MS_BIND | MS_REC, NULL) < 0)
				fail(MOAT_STAGE_MOUNT, "cannot show %s again", m->dest);
			break;
		}
		default:
			errno = EINVAL;
			fail(MOAT_STAGE_MOUNT, "a bad mount from the host");
		}
	}
}

/* Write only below the writable paths; read and execute everywhere. */
static void prepare_landlock(void)
{
	struct moat_landlock_path paths[MOAT_VM_MAX_MOUNTS + 1];
	unsigned n = 0;
	paths[n++] = (struct moat_landlock_path){.path = "/", .fd = -1, .writable = false};
	paths[n++] = (struct moat_landlock_path){.path = "/dev", .fd = -1, .writable = true};
	for (unsigned i = 0; i < cfg.n_rw && n < ELEMENTSOF(paths); i++)
		paths[n++] =
			(struct moat_landlock_path){.path = cfg.rw[i], .fd = -1, .writable = true};
	struct moat_landlock_opts o = {.paths = paths, .n_paths = n, .min_abi = 1};
	int k = moat_landlock_prepare(&o, &ruleset, NULL);
	if (k < 0) {
		errno = -k;
		fail(MOAT_STAGE_LANDLOCK, "cannot prepare the guest's Landlock ruleset");
	}
}

/* ---- the processes -------------------------------------------------------- */

static struct {
	pid_t pid;
	uint32_t id;
	int out[3]; /* [0]: stdin's write end; [1], [2]: read ends */
	bool last, exited;
	int status;
	struct rusage ru;
} procs[MOAT_MAX_PROCS];

static _Noreturn void refuse(int report, int stage, int err, const char *what)
{
	struct moat_setup_error e = {.stage = stage, .err = err, .step = -1};
	snprintf(e.detail, sizeof(e.detail), "%s", what);
	(void)!write(report, &e, sizeof(e));
	_exit(err == ENOENT ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC);
}

/* The new process: ids, limits, layers, stdio, then exec (blob as ctl.h). */
static _Noreturn void child(const uint8_t *blob, size_t len, uint32_t flags, int std[3], int report,
			    int lsock)
{
	const struct moat_ctl_blob *h = (const void *)blob;
	const char *s = (const char *)blob + sizeof(*h), *end = (const char *)blob + len;
	if (len < sizeof(*h) || h->magic != MOAT_CTL_BLOB_MAGIC || h->len != len - sizeof(*h) ||
	    h->argc == 0 || h->argc > h->len || h->envc > h->len)
		refuse(report, MOAT_STAGE_EXEC, EINVAL, "bad request");
	char **v = calloc((size_t)h->argc + h->envc + 2, sizeof(char *));
	if (!v)
		refuse(report, MOAT_STAGE_EXEC, ENOMEM, "out of memory");
	const char *cwd = s;
	size_t k = 0;
	for (uint64_t want = 1 + (uint64_t)h->argc + h->envc; want; want--) {
		const char *z = memchr(s, 0, (size_t)(end - s));
		if (!z)
			refuse(report, MOAT_STAGE_EXEC, EINVAL, "bad request");
		if (s != cwd) {
			v[k++] = (char *)(uintptr_t)s;
			if (k == h->argc)
				v[k++] = NULL;
		}
		s = z + 1;
	}
	v[k] = NULL;
	char **argv = v, **envp = v + h->argc + 1;
	if (setsid() < 0)
		refuse(report, MOAT_STAGE_EXEC, errno, "setsid");
	for (int i = 0; i < 3; i++)
		if (dup2(std[i], i) < 0)
			refuse(report, MOAT_STAGE_STDIO, errno,
			       "cannot set up the standard streams");
	if (flags & MOAT_CTL_ERR_IS_OUT)
		(void)dup2(1, 2);
	struct {
		int res;
		uint64_t v;
	} rl[] = {{RLIMIT_NOFILE, cfg.nofile},
		  {RLIMIT_FSIZE, cfg.fsize},
		  {RLIMIT_NPROC, cfg.nproc},
		  {RLIMIT_AS, cfg.as},
		  {RLIMIT_CORE, 0}};
	for (unsigned i = 0; i < ELEMENTSOF(rl); i++) {
		struct rlimit r = {rl[i].v, rl[i].v};
		if ((rl[i].v || rl[i].res == RLIMIT_CORE) && setrlimit(rl[i].res, &r) < 0)
			refuse(report, MOAT_STAGE_RLIMIT, errno, "cannot set an rlimit");
	}
	gid_t g = cfg.gid;
	if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
	    setresuid(cfg.uid, cfg.uid, cfg.uid) < 0)
		refuse(report, MOAT_STAGE_IDENTITY, errno, "cannot become the sandbox user");
	/* uid 0 keeps no capability either */
	for (int c = 0; c <= 63; c++)
		(void)prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		refuse(report, MOAT_STAGE_SECCOMP, errno, "no_new_privs");
	if (ruleset >= 0 && moat_landlock_enforce(ruleset, true) < 0)
		refuse(report, MOAT_STAGE_LANDLOCK, errno, "cannot enforce Landlock");
	int lfd = -1;
	if (prog.len && moat_seccomp_install(&prog, &lfd) < 0)
		refuse(report, MOAT_STAGE_SECCOMP, errno, "cannot install the seccomp filter");
	if (lfd >= 0) {
		/* the listener to the init, which answers this very exec */
		int sk = moat_msg_send(lsock, "l", 1, &lfd, 1);
		if (sk < 0)
			refuse(report, MOAT_STAGE_SECCOMP, -sk,
			       "cannot hand over the seccomp listener");
		close(lfd);
	}
	if (chdir(cwd) < 0)
		refuse(report, MOAT_STAGE_CHDIR, errno, cwd);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	extern char **environ;
	environ = envp;
	execvp(argv[0], argv);
	refuse(report, MOAT_STAGE_EXEC, errno, argv[0]);
}

/* The pending notifications of listener i: each exec recorded (a step of
 * a PATH search that did not resolve is not, as at the process level) and
 * continued. A listener no process uses any more is closed. */
static void record_execs(unsigned i)
{
	while (lsn[i] >= 0) {
		int k = moat_seccomp_notify_handle_root(lsn[i], &lsn_root, &sev);
		if (k == -EAGAIN)
			return;
		if (k == -ENOENT)
			continue; /* the caller is gone: nothing happened */
		if (k < 0) {
			/* ENOTCONN, or broken: a later exec under it fails (ENOSYS) */
			lsn[i] = safe_close(lsn[i]);
			return;
		}
		if (sev.type == MOAT_SECCOMP_EVENT_EXEC && !sev.missing) {
			size_t len = moat_gvt_frame_event(&sev, recframe);
			send_frame(MOAT_VM_EXECREC, 0, 0, recframe, len);
		}
	}
}

static void on_exec(uint32_t id, const uint8_t *p, size_t n)
{
	struct moat_ctl_ev ev = {.type = MOAT_CTL_REFUSED, .id = id};
	unsigned slot = MOAT_MAX_PROCS;
	for (unsigned i = 0; i < MOAT_MAX_PROCS && slot == MOAT_MAX_PROCS; i++)
		if (procs[i].pid == 0 && procs[i].out[1] < 0 && procs[i].out[2] < 0)
			slot = i;
	unsigned ls = MOAT_MAX_PROCS;
	for (unsigned i = 0; prog.notify && i < MOAT_MAX_PROCS && ls == MOAT_MAX_PROCS; i++)
		if (lsn[i] < 0)
			ls = i;
	int in[2] = {-1, -1}, o1[2] = {-1, -1}, o2[2] = {-1, -1}, rep[2] = {-1, -1};
	int lp[2] = {-1, -1};
	uint32_t flags = 0;
	if (n < 4)
		ev.err = EPROTO;
	else if (slot == MOAT_MAX_PROCS || (prog.notify && ls == MOAT_MAX_PROCS))
		ev.err = EAGAIN;
	else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(o1, O_CLOEXEC) < 0 || pipe2(o2, O_CLOEXEC) < 0 ||
		 pipe2(rep, O_CLOEXEC) < 0 ||
		 (prog.notify && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lp) < 0))
		ev.err = errno;
	if (ev.err) {
		int *all[] = {in, o1, o2, rep, lp};
		for (unsigned i = 0; i < ELEMENTSOF(all); i++)
			for (unsigned j = 0; j < 2; j++)
				if (all[i][j] >= 0)
					close(all[i][j]);
		send_frame(MOAT_VM_EVENT, 0, id, &ev, sizeof(ev));
		return;
	}
	memcpy(&flags, p, 4);
	pid_t pid = fork();
	if (pid == 0) {
		int std[3] = {in[0], o1[1], o2[1]};
		child(p + 4, n - 4, flags, std, rep[1], lp[1]);
	}
	int e = errno;
	close(in[0]);
	close(o1[1]);
	close(o2[1]);
	close(rep[1]);
	safe_close(lp[1]);
	if (pid < 0) {
		ev.err = e;
		close(in[1]);
		close(o1[0]);
		close(o2[0]);
		close(rep[0]);
		safe_close(lp[0]);
		send_frame(MOAT_VM_EVENT, 0, id, &ev, sizeof(ev));
		return;
	}
	if (lp[0] >= 0) {
		/* the command's listener, or EOF: it failed before its filter */
		char c;
		int fd = -1;
		unsigned nf = 0;
		ssize_t k;
		while ((k = moat_msg_recv(lp[0], &c, 1, &fd, 1, &nf)) == -EINTR)
			;
		if (k == 1 && nf == 1)
			lsn[ls] = fd;
		else if (nf)
			close(fd);
		close(lp[0]);
	}
	procs[slot].pid = pid;
	procs[slot].id = id;
	procs[slot].last = flags & MOAT_CTL_LAST;
	procs[slot].exited = false;
	procs[slot].out[0] = in[1];
	procs[slot].out[1] = o1[0];
	procs[slot].out[2] = o2[0];
	fcntl(o1[0], F_SETFL, O_NONBLOCK);
	fcntl(o2[0], F_SETFL, O_NONBLOCK);
	ev.type = MOAT_CTL_STARTED;
	ev.pid = pid;
	send_frame(MOAT_VM_EVENT, 0, id, &ev, sizeof(ev));
	/* the exec's report: EOF at the exec, or why it failed; meanwhile its
	 * exec (and a PATH search's attempts) wait for the listener's answer */
	for (;;) {
		struct pollfd pf[2] = {
			{.fd = rep[0], .events = POLLIN},
			{.fd = ls < MOAT_MAX_PROCS ? lsn[ls] : -1, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			record_execs(ls);
		if (pf[0].revents)
			break;
	}
	struct moat_setup_error se;
	ssize_t r;
	while ((r = read(rep[0], &se, sizeof(se))) < 0 && errno == EINTR)
		;
	close(rep[0]);
	send_frame(MOAT_VM_REPORT, 0, id, &se, r == (ssize_t)sizeof(se) ? sizeof(se) : 0);
}

static void on_stdin(uint32_t id, const uint8_t *p, size_t n)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
		if (procs[i].id != id || procs[i].out[0] < 0)
			continue;
		if (n == 0 || write_all(procs[i].out[0], p, n) < 0)
			procs[i].out[0] = safe_close(procs[i].out[0]);
	}
}

static void on_signal(uint32_t id, const uint8_t *p, size_t n)
{
	int32_t sig;
	uint32_t flags = 0;
	if (n < 4)
		return;
	memcpy(&sig, p, 4);
	if (n >= 8)
		memcpy(&flags, p + 4, 4);
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
		if (procs[i].pid <= 0 || procs[i].id != id)
			continue;
		if (!(flags & MOAT_CTL_GROUP) || kill(-procs[i].pid, sig) < 0)
			kill(procs[i].pid, sig);
	}
}

/* Relays what a process wrote; at EOF of both streams of an exited
 * process, its EXITED record (after all of its output). */
static void drain(unsigned i)
{
	for (int c = 1; c <= 2; c++) {
		while (procs[i].out[c] >= 0) {
			ssize_t r = read(procs[i].out[c], buf, 65536);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && errno == EAGAIN)
				break;
			if (r <= 0) {
				procs[i].out[c] = safe_close(procs[i].out[c]);
				send_frame(MOAT_VM_OUT, (uint16_t)c, procs[i].id, NULL, 0);
				break;
			}
			send_frame(MOAT_VM_OUT, (uint16_t)c, procs[i].id, buf, (size_t)r);
		}
	}
}

static void report_exit(unsigned i)
{
	struct moat_ctl_ev ev = {
		.type = MOAT_CTL_EXITED,
		.id = procs[i].id,
		.pid = procs[i].pid,
		.status = procs[i].status,
		.utime_us = (uint64_t)procs[i].ru.ru_utime.tv_sec * 1000000u +
			(uint64_t)procs[i].ru.ru_utime.tv_usec,
		.stime_us = (uint64_t)procs[i].ru.ru_stime.tv_sec * 1000000u +
			(uint64_t)procs[i].ru.ru_stime.tv_usec,
		.maxrss_kb = (uint64_t)procs[i].ru.ru_maxrss,
	};
	/* what is left in the pipes (a background child may hold them: not
	 * waited for, as at the process level's relays) */
	drain(i);
	for (int c = 0; c < 3; c++)
		if (procs[i].out[c] >= 0) {
			procs[i].out[c] = safe_close(procs[i].out[c]);
			if (c)
				send_frame(MOAT_VM_OUT, (uint16_t)c, procs[i].id, NULL, 0);
		}
	send_frame(MOAT_VM_EVENT, 0, procs[i].id, &ev, sizeof(ev));
	bool last = procs[i].last;
	procs[i].pid = 0;
	procs[i].exited = false;
	if (last) {
		sync();
		reboot(LINUX_REBOOT_CMD_POWER_OFF);
	}
}

static void reap(void)
{
	int st;
	struct rusage ru;
	pid_t w;
	while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0)
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
			if (procs[i].pid == w) {
				procs[i].status = st;
				procs[i].ru = ru;
				procs[i].exited = true;
				report_exit(i);
			}
}

static _Noreturn void serve(void)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	int sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		fail(MOAT_STAGE_SYNC, "signalfd");
	send_frame(MOAT_VM_READY, 0, 0, NULL, 0);
	for (;;) {
		struct pollfd pf[2 + 3 * MOAT_MAX_PROCS];
		unsigned np = 0, who[2 * MOAT_MAX_PROCS], nl = 0, lw[MOAT_MAX_PROCS];
		pf[np++] = (struct pollfd){.fd = ctl, .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
			for (int c = 1; c <= 2; c++)
				if (procs[i].out[c] >= 0) {
					who[np - 2] = i;
					pf[np++] = (struct pollfd){.fd = procs[i].out[c],
								   .events = POLLIN};
				}
		unsigned l0 = np;
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
			if (lsn[i] >= 0) {
				lw[nl++] = i;
				pf[np++] = (struct pollfd){.fd = lsn[i], .events = POLLIN};
			}
		if (poll(pf, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(MOAT_STAGE_SYNC, "poll");
		}
		for (unsigned k = 2; k < l0; k++)
			if (pf[k].revents)
				drain(who[k - 2]);
		for (unsigned k = 0; k < nl; k++)
			if (pf[l0 + k].revents)
				record_execs(lw[k]);
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				;
			reap();
		}
		if (!pf[0].revents)
			continue;
		struct moat_vm_hdr h;
		if (read_all(ctl, &h, sizeof(h)) < 0 || h.len > MOAT_VM_PAYLOAD ||
		    read_all(ctl, buf, h.len) < 0)
			fail(MOAT_STAGE_SYNC, "the control stream broke");
		switch (h.type) {
		case MOAT_VM_EXEC:
			on_exec(h.id, buf, h.len);
			break;
		case MOAT_VM_STDIN:
			on_stdin(h.id, buf, h.len);
			break;
		case MOAT_VM_SIGNAL:
			on_signal(h.id, buf, h.len);
			break;
		case MOAT_VM_SIGNAL_ALL:
			if (h.len >= 4) {
				int32_t sig;
				memcpy(&sig, buf, 4);
				kill(-1, sig);
			}
			break;
		default:
			break;
		}
	}
}

_Noreturn void moat_vm_init_main(void)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
		procs[i].out[0] = procs[i].out[1] = procs[i].out[2] = -1;
		lsn[i] = -1;
	}
	if (getpid() != 1) {
		fputs("moat: __vm-init is internal to moat run --isolation vm\n", stderr);
		_exit(MOAT_EXIT_USAGE);
	}
	(void)mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	(void)mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, NULL) < 0)
		fail(MOAT_STAGE_MOUNT, "cannot mount the guest's devtmpfs");
	load_modules();
	ctl = open_port();
	read_config();
	if (cfg.net) {
		/* the one link, to the holder's tap: everything through the
		 * gateway, where moat's capture rules are (docs/ISOLATION.md) */
		char link[IF_NAMESIZE];
		int k = moat_vm_net_first_link(link, sizeof(link));
		if (k >= 0)
			k = moat_vm_net_up(link, MOAT_NETNS_VM_GUEST4, 32, MOAT_NETNS_VM_HOST4);
		if (k < 0) {
			errno = -k;
			fail(MOAT_STAGE_NETWORK, "cannot configure the guest's network link");
		}
	}
	if (mount("root", G_ROOT, "9p", MS_NOSUID | MS_NODEV,
		  "trans=virtio,version=9p2000.L,msize=262144,cache=mmap") < 0 &&
	    mount("root", G_ROOT, "9p", MS_NOSUID | MS_NODEV, "trans=virtio,version=9p2000.L") < 0)
		fail(MOAT_STAGE_MOUNT, "cannot mount the host's tree (9p)");
	if (mount("hostview", G_VIEW, "9p", MS_NOSUID | MS_NODEV,
		  "trans=virtio,version=9p2000.L,msize=262144,cache=mmap") < 0)
		fail(MOAT_STAGE_MOUNT, "cannot mount the host's tree (9p, second view)");
	guest_mounts();
	/* into the tree; the initramfs (and the devtmpfs with the control
	 * port's node) stays below, unreachable */
	if (chdir(G_ROOT) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0 ||
	    chdir("/") < 0)
		fail(MOAT_STAGE_MOUNT, "cannot move into the host's tree");
	if (cfg.hostname[0])
		(void)!sethostname(cfg.hostname, strlen(cfg.hostname));
	if (cfg.landlock)
		prepare_landlock();
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd >= 0) {
		for (int i = 0; i < 3; i++)
			if (i != ctl)
				(void)dup2(null_fd, i);
		close(null_fd);
	}
	serve();
}
