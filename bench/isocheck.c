/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/isocheck: run inside a sandbox, prints what the sandbox lets a process
 * see and do, one fact a line, so that two sandboxes can be compared with
 * diff (bench/startup.sh: moat against the bubblewrap command of the same
 * isolation, and the minimal bubblewrap as the positive control that the
 * comparison sees a difference).
 *
 *   isocheck
 *
 * Lines: "id", "status" (capabilities, no_new_privs, seccomp mode from
 * /proc/self/status), "syscall NAME RESULT" (a call of moat's seccomp table,
 * each made in a forked child so that one that succeeds changes nothing for
 * the next), "proc NAME ..." (the /proc files moat masks or makes read-only),
 * "etc NAME TYPE" and "dev NAME TYPE" (the names of /etc and /dev), "fs PATH
 * ro|rw". Lines starting with "info" describe how, not what (the mount
 * count): they are printed, not compared. Exit status 0 unless the probe
 * itself failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_NAMES 512

/* One call of the seccomp table; returns 0 or an errno. */
static int call(const char *name)
{
	long r = -1;
	if (!strcmp(name, "unshare(CLONE_NEWUSER)"))
		r = unshare(CLONE_NEWUSER);
	else if (!strcmp(name, "setns"))
		r = setns(-1, 0);
	else if (!strcmp(name, "keyctl"))
		r = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
	else if (!strcmp(name, "bpf"))
		r = syscall(SYS_bpf, 0, NULL, 0);
	else if (!strcmp(name, "perf_event_open"))
		r = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	else if (!strcmp(name, "ptrace"))
		r = syscall(SYS_ptrace, 3 /* PTRACE_PEEKUSER */, getppid(), 0, 0);
	else if (!strcmp(name, "clone3"))
		r = syscall(SYS_clone3, NULL, 0);
	else if (!strcmp(name, "io_uring_setup"))
		r = syscall(SYS_io_uring_setup, 1, NULL);
	else if (!strcmp(name, "open_tree"))
		r = syscall(SYS_open_tree, AT_FDCWD, "/", 0);
	else if (!strcmp(name, "personality(ADDR_NO_RANDOMIZE)"))
		r = personality(ADDR_NO_RANDOMIZE) == -1 ? -1 : 0;
	else if (!strcmp(name, "ioctl(TIOCSTI)")) {
		char c = 'x';
		r = ioctl(0, TIOCSTI, &c);
	} else if (!strcmp(name, "socket(AF_ALG)"))
		r = socket(38 /* AF_ALG */, SOCK_SEQPACKET, 0);
	else if (!strcmp(name, "chmod(S_ISUID)")) {
		char p[] = "/tmp/isocheck.XXXXXX";
		int fd = mkstemp(p);
		if (fd < 0)
			return errno;
		r = chmod(p, 04755);
		int e = errno;
		unlink(p);
		errno = e;
	} else if (!strcmp(name, "getpid"))
		r = getpid() > 0 ? 0 : -1;
	return r < 0 ? errno : 0;
}

static void syscalls(void)
{
	static const char *const names[] = {
		"getpid",
		"unshare(CLONE_NEWUSER)",
		"setns",
		"keyctl",
		"bpf",
		"perf_event_open",
		"ptrace",
		"clone3",
		"io_uring_setup",
		"open_tree",
		"personality(ADDR_NO_RANDOMIZE)",
		"ioctl(TIOCSTI)",
		"socket(AF_ALG)",
		"chmod(S_ISUID)",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("isocheck: fork");
			exit(1);
		}
		if (pid == 0)
			_exit(call(names[i]) & 0xff);
		int st;
		if (waitpid(pid, &st, 0) < 0) {
			perror("isocheck: waitpid");
			exit(1);
		}
		if (WIFSIGNALED(st))
			printf("syscall %s killed by signal %d\n", names[i], WTERMSIG(st));
		else if (WEXITSTATUS(st) == 0)
			printf("syscall %s ok\n", names[i]);
		else
			printf("syscall %s %s\n", names[i], strerrorname_np(WEXITSTATUS(st)));
	}
}

static void status(void)
{
	static const char *const keys[] = {
		"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:"};
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	if (!f) {
		printf("status unreadable %s\n", strerrorname_np(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strncmp(line, keys[i], strlen(keys[i]))) {
				char *v = line + strlen(keys[i]);
				v += strspn(v, " \t");
				printf("status %s %s", keys[i], v);
			}
	fclose(f);
}

static const char *ro(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return strerrorname_np(errno);
	return sv.f_flag & ST_RDONLY ? "ro" : "rw";
}

static char type_of(mode_t m)
{
	return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISCHR(m) ? 'c' : S_ISREG(m) ? 'f' : '?';
}

static void proc(void)
{
	/* moat's lists (src/sandbox/sandbox.c, do_proc) */
	static const char *const ro_names[] = {"sys", "sysrq-trigger", "irq", "bus",
					       "fs",  "asound"};
	static const char *const masked[] = {
		"kcore",      "keys",	 "timer_list", "sched_debug",	"kallsyms",    "kpagecount",
		"kpageflags", "sysvipc", "acpi",       "latency_stats", "timer_stats", "scsi"};
	char p[64];
	for (size_t i = 0; i < sizeof(ro_names) / sizeof(ro_names[0]); i++) {
		snprintf(p, sizeof(p), "/proc/%s", ro_names[i]);
		printf("proc %s %s\n", ro_names[i], access(p, F_OK) ? "missing" : ro(p));
	}
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
		struct stat st;
		snprintf(p, sizeof(p), "/proc/%s", masked[i]);
		if (lstat(p, &st) < 0) {
			printf("proc %s missing\n", masked[i]);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int n = 0;
			DIR *d = opendir(p);
			for (struct dirent *e; d && (e = readdir(d));)
				n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
			if (d)
				closedir(d);
			printf("proc %s dir %d entries %s\n", masked[i], n, ro(p));
		} else if (S_ISCHR(st.st_mode)) {
			printf("proc %s chr %u:%u\n", masked[i], major(st.st_rdev),
			       minor(st.st_rdev));
		} else {
			/* not masked: readable? (kcore: only with CAP_SYS_RAWIO) */
			int fd = open(p, O_RDONLY | O_CLOEXEC);
			printf("proc %s %c open %s\n", masked[i], type_of(st.st_mode),
			       fd < 0 ? strerrorname_np(errno) : "ok");
			if (fd >= 0)
				close(fd);
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names(const char *dir, const char *tag)
{
	char *v[MAX_NAMES];
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		printf("%s unreadable %s\n", tag, strerrorname_np(errno));
		return;
	}
	for (struct dirent *e; n < MAX_NAMES && (e = readdir(d));) {
		struct stat st;
		char line[512];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			st.st_mode = 0;
		snprintf(line, sizeof(line), "%s %s %c", tag, e->d_name, type_of(st.st_mode));
		v[n++] = strdup(line);
	}
	closedir(d);
	qsort(v, n, sizeof(v[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n", v[i]);
		free(v[i]);
	}
}

static void mounts(void)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	printf("info mounts %d\n", n);
}

int main(void)
{
	char host[256] = "", cwd[4096] = "";
	gethostname(host, sizeof(host) - 1);
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "%s", strerrorname_np(errno));
	printf("id uid %u gid %u groups %d\n", getuid(), getgid(), getgroups(0, NULL));
	printf("id hostname %s\n", host);
	printf("id cwd %s\n", cwd);
	status();
	syscalls();
	proc();
	names("/etc", "etc");
	names("/dev", "dev");
	static const char *const fs[] = {"/", "/etc", "/usr", "/tmp", "/dev", "/dev/shm", "/home"};
	for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		printf("fs %s %s\n", fs[i], ro(fs[i]));
	mounts();
	return fflush(stdout) ? 1 : 0;
}
