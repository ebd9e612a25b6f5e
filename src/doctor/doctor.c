/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Probes the running kernel for every feature moat uses. Each probe tries the
 * feature (in a short-lived child where it changes state), never reads a
 * kernel version string.
 */
#include <fcntl.h>
#include <jansson.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "doctor/doctor.h"
#include "network/net_plugin.h"
#include "moat/moat.h"
#include "shared/macro.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

/* Runs fn in a forked child; returns its exit status (0 = feature works). */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(fn() == 0 ? 0 : 1);
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int enter_userns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	write_str("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_str("/proc/self/uid_map", map) < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	return write_str("/proc/self/gid_map", map);
}

static int probe_userns(void)
{
	return enter_userns();
}

static int probe_overlay(void)
{
	char dir[] = "/tmp/moat-doctor.XXXXXX";
	if (enter_userns() < 0)
		return -1;
	if (mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") < 0 || !mkdtemp(dir))
		return -1;
	char l[128], u[128], w[128], m[128], opts[512];
	snprintf(l, sizeof(l), "%s/l", dir);
	snprintf(u, sizeof(u), "%s/u", dir);
	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(m, sizeof(m), "%s/m", dir);
	if (mkdir(l, 0755) || mkdir(u, 0755) || mkdir(w, 0755) || mkdir(m, 0755))
		return -1;
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s,userxattr", l, u, w);
	return mount("overlay", m, "overlay", 0, opts);
}

static int probe_netns(void)
{
	if (enter_userns() < 0)
		return -1;
	return unshare(CLONE_NEWNET);
}

static int landlock_abi(void)
{
	/* landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) */
	long v = syscall(444, NULL, 0, 1u << 0);
	return v < 0 ? 0 : (int)v;
}

static const char *cgroup_version(char *detail, size_t len)
{
	struct statfs sf;
	if (statfs("/sys/fs/cgroup", &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(detail, len, "unified (v2) at /sys/fs/cgroup");
		return "v2";
	}
	if (statfs("/sys/fs/cgroup/unified", &sf) == 0 &&
	    (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC) {
		_cleanup_fclose_ FILE *f = fopen("/sys/fs/cgroup/unified/cgroup.controllers", "re");
		char buf[256] = "";
		if (f && fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = 0;
		snprintf(
			detail, len,
			"hybrid: v1 controllers, v2 at /sys/fs/cgroup/unified with controllers [%s]",
			buf);
		return "hybrid";
	}
	snprintf(detail, len, "v1 only");
	return "v1";
}

/* Both network plugins found, checked and loaded (what --net allow and
 * --secret need), in a child: the doctor itself loads nothing. */
static int probe_plugins(void)
{
	struct moat_error err;

	return moat_net_plugin_load(&err) && moat_nft_plugin_load(&err) ? 0 : 1;
}

int moat_doctor(char **ret_json, char **ret_text)
{
	json_t *o = json_object();
	char *text = NULL;
	size_t tlen = 0;
	FILE *t = open_memstream(&text, &tlen);
	int problems = 0;
	if (!o || !t)
		return -ENOMEM;

	bool userns = in_child(probe_userns) == 0;
	bool overlay = userns && in_child(probe_overlay) == 0;
	bool netns = userns && in_child(probe_netns) == 0;
	int ll = landlock_abi();
	bool seccomp = prctl(PR_GET_SECCOMP) >= 0;
	uint32_t act = SECCOMP_RET_USER_NOTIF;
	bool notify = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0;
	int pfd = pidfd_open(getpid(), 0);
	bool pidfd = pfd >= 0;
	safe_close(pfd);
	bool clone3 = !(syscall(SYS_clone3, NULL, 0) < 0 && errno == ENOSYS);
	char cgdetail[512];
	const char *cg = cgroup_version(cgdetail, sizeof(cgdetail));
	struct moat_error perr = {0};
	bool present = moat_net_plugins_present(&perr) >= 0;
	bool plugins = present && in_child(probe_plugins) == 0;

	json_object_set_new(o, "user_namespaces", json_boolean(userns));
	json_object_set_new(o, "overlayfs_in_userns", json_boolean(overlay));
	json_object_set_new(o, "network_namespaces", json_boolean(netns));
	json_object_set_new(o, "landlock_abi", json_integer(ll));
	json_object_set_new(o, "seccomp", json_boolean(seccomp));
	json_object_set_new(o, "seccomp_user_notif", json_boolean(notify));
	json_object_set_new(o, "pidfd", json_boolean(pidfd));
	json_object_set_new(o, "clone3", json_boolean(clone3));
	json_object_set_new(o, "cgroup", json_string(cg));
	json_object_set_new(o, "cgroup_detail", json_string(cgdetail));
	json_object_set_new(o, "root", json_boolean(geteuid() == 0));
	json_object_set_new(o, "network_plugins", json_boolean(plugins));
	if (!plugins)
		json_object_set_new(o, "network_plugins_error",
				    json_string(present ? "the plugins are there but do not load"
							: perr.message));
	moat_doctor_extra(o);
	moat_doctor_isolation(o);

	fprintf(t, "moat %s doctor (%s)\n\n", MOAT_VERSION,
		geteuid() == 0 ? "as root" : "unprivileged");
#define ROW(ok, name, what) fprintf(t, "  [%s] %-26s %s\n", (ok) ? " ok " : "FAIL", name, what)
	ROW(userns, "user namespaces",
	    userns ? "sandboxes can start" : "moat run will refuse (exit 125)");
	ROW(netns, "network namespaces",
	    netns ? "--net none isolates the network" : "moat run will refuse");
	ROW(overlay, "overlayfs in userns",
	    overlay ? "--workspace DIR:overlay available" : "overlay workspaces refused");
	ROW(pidfd, "pidfd", pidfd ? "race-free process handling" : "moat run will refuse");
	ROW(clone3, "clone3", clone3 ? "used" : "clone() fallback");
	ROW(seccomp, "seccomp", seccomp ? "syscall filter enforced" : "moat run will refuse");
	ROW(notify, "seccomp user notification",
	    notify ? "denials and execs recorded" : "records unavailable");
	ROW(ll > 0, "landlock", ll > 0 ? "" : "refused unless --allow-degraded landlock");
	if (ll > 0)
		fprintf(t, "  %34s ABI %d: filesystem%s%s%s\n", "", ll, ll >= 2 ? " +refer" : "",
			ll >= 4 ? " +tcp" : "", ll >= 6 ? " +scoping" : "");
	fprintf(t, "  [info] %-26s %s\n", "cgroups", cgdetail);
	ROW(plugins, "network plugins",
	    plugins ? "--net allow and --secret available"
		    : "--net allow and --secret will refuse (exit 125)");
	if (!plugins)
		fprintf(t, "  %34s %s\n", "",
			present ? "the plugins are there but do not load" : perr.message);
	moat_doctor_extra_text(t, o);
	moat_doctor_isolation_text(t, o);
	problems = !userns || !netns || !pidfd || !seccomp;
	fprintf(t, "\n%s\n",
		problems ? "some required features are missing: moat run will refuse to start"
			: !plugins ? "the network plugins are missing or broken: reinstall moat"
				   : "all required features are present");
	problems |= !plugins;
	fclose(t);
	char *j = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!j) {
		free(text);
		return -ENOMEM;
	}
	*ret_json = j;
	*ret_text = text;
	return problems;
}
