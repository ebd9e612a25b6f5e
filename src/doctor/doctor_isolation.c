/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat doctor`: which isolation levels work on this machine, and why not
 * (docs/ISOLATION.md). gvisor: runsc is found and really starts a container
 * here, with the options moat uses (platform ptrace, --network=none, as
 * root or --rootless), from a throw-away bundle. vm: QEMU and a guest
 * kernel are there, and KVM really runs a guest (vm_kvm.c); with only TCG
 * the level is "available under TCG only", never "works". A level is proved
 * by booting it: moat_doctor_boot (doctor_boot.c).
 */
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "sandbox/backend_vm.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

static const char *runsc_path(void)
{
	static const char *const where[] = {"/usr/bin/runsc", "/usr/sbin/runsc",
					    "/usr/local/bin/runsc"};
	for (unsigned i = 0; i < ELEMENTSOF(where); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* Runs runsc with argv; its output (last 255 bytes) in out; exit status or
 * -errno; killed after 30 s. */
static int run_runsc(const char *const *argv, char *out, size_t outlen)
{
	int p[2];
	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 ||
		    syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
			_exit(127);
		static const char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		execve(argv[0], (char *const *)(uintptr_t)argv, (char *const *)(uintptr_t)envp);
		_exit(127);
	}
	close(p[1]);
	size_t used = 0;
	char buf[256];
	for (int waited = 0; waited < 300;) {
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int k = poll(&pf, 1, 100);
		if (k == 0) {
			waited++;
			continue;
		}
		ssize_t n = k > 0 ? read(p[0], buf, sizeof(buf)) : -1;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (used + 1 >= outlen) {
				memmove(out, out + outlen / 2, used - outlen / 2);
				used -= outlen / 2;
			}
			out[used++] = buf[i] == '\n' || (unsigned char)buf[i] < 0x20 ? ' ' : buf[i];
		}
	}
	out[used] = '\0';
	close(p[0]);
	kill(pid, SIGKILL); /* no-op when it ended */
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char probe_config[] =
	"{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
	"\"args\":[\"/bin/true\"],\"env\":[\"PATH=/usr/bin:/bin\"],\"cwd\":\"/\"},"
	"\"root\":{\"path\":\"/\",\"readonly\":true},\"hostname\":\"moat-doctor\","
	"\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"}],"
	"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"mount\"},{\"type\":\"ipc\"},"
	"{\"type\":\"uts\"}]}}";

/* A container of /bin/true with moat's options; NULL or why not. */
static void probe_gvisor(const char *runsc, char *why, size_t whylen)
{
	char dir[] = "/tmp/moat-doctor-gvisor-XXXXXX", state[64], cfg[64], out[256];
	why[0] = '\0';
	if (!mkdtemp(dir)) {
		snprintf(why, whylen, "cannot create a probe bundle: %s", strerror(errno));
		return;
	}
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
	FILE *f = fopen(cfg, "we");
	if (!f || fputs(probe_config, f) < 0 || fclose(f) != 0) {
		snprintf(why, whylen, "cannot write the probe bundle");
	} else {
		char id[48];
		snprintf(id, sizeof(id), "moat-doctor-%d", (int)getpid());
		const char *argv[16];
		unsigned a = 0;
		argv[a++] = runsc;
		argv[a++] = "--root";
		argv[a++] = state;
		argv[a++] = "--platform";
		argv[a++] = "ptrace";
		argv[a++] = "--network";
		argv[a++] = "none";
		argv[a++] = "--ignore-cgroups";
		if (geteuid() != 0)
			argv[a++] = "--rootless";
		argv[a++] = "run";
		argv[a++] = "--bundle";
		argv[a++] = dir;
		argv[a++] = id;
		argv[a] = NULL;
		int k = run_runsc(argv, out, sizeof(out));
		if (k != 0)
			snprintf(why, whylen,
				 "it does not start a container of /bin/true here (exit %d): %s", k,
				 out[0] ? out : "no message");
	}
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	int parent = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent >= 0) {
		(void)moat_rmtree_at(parent, slash + 1, 16);
		close(parent);
	}
}

void moat_doctor_isolation(json_t *o)
{
	json_t *iso = json_object();
	bool process = json_is_true(json_object_get(o, "user_namespaces")) &&
		json_is_true(json_object_get(o, "network_namespaces")) &&
		json_is_true(json_object_get(o, "pidfd")) &&
		json_is_true(json_object_get(o, "seccomp"));
	json_object_set_new(
		iso, "process",
		json_pack("{s:b,s:s}", "works", process, "why",
			  process ? "" : "a required kernel feature is missing (above)"));
	const char *runsc = runsc_path();
	char why[400] = "", version[256] = "";
	if (!runsc)
		snprintf(why, sizeof(why), "runsc not found (Debian package runsc)");
	else {
		const char *argv[] = {runsc, "--version", NULL};
		if (run_runsc(argv, version, sizeof(version)) != 0)
			snprintf(why, sizeof(why), "runsc --version failed: %s", version);
		else
			probe_gvisor(runsc, why, sizeof(why));
	}
	json_object_set_new(iso, "gvisor",
			    json_pack("{s:b,s:b,s:s,s:s,s:s}", "works", !why[0], "present",
				      runsc != NULL, "why", why, "runsc", runsc ? runsc : "",
				      "version", version));
	/* vm: QEMU and a guest kernel; KVM (a guest really run, vm_kvm.c), or
	 * only TCG, which a run uses only when the policy says vm_accel "any" */
	char kernel[256] = "", kver[96] = "", kvm_why[256] = "", vm_why[512] = "";
	bool kvm = moat_vm_kvm_probe(kvm_why, sizeof(kvm_why)) == 0;
	bool qemu = access("/usr/bin/qemu-system-x86_64", X_OK) == 0;
	bool have_kernel = moat_vm_find_kernel(kernel, sizeof(kernel), kver, sizeof(kver)) == 0;
	if (!qemu)
		snprintf(vm_why, sizeof(vm_why),
			 "/usr/bin/qemu-system-x86_64 not found (Debian package qemu-system-x86)");
	else if (!have_kernel)
		snprintf(vm_why, sizeof(vm_why),
			 "no guest kernel /boot/vmlinuz-VER with /lib/modules/VER "
			 "(linux-image-amd64)");
	else if (!kvm)
		snprintf(vm_why, sizeof(vm_why),
			 "available under TCG emulation only (slow: ~10 s to boot), requires "
			 "vm_accel any; KVM: %s",
			 kvm_why);
	const char *accel = !qemu || !have_kernel ? "none" : kvm ? "kvm" : "tcg";
	json_object_set_new(iso, "vm",
			    json_pack("{s:b,s:b,s:s,s:s,s:s,s:b,s:s}", "works",
				      qemu && have_kernel && kvm, "tcg_only",
				      qemu && have_kernel && !kvm, "accel", accel, "why", vm_why,
				      "kernel", kernel, "kvm", kvm, "kvm_why", kvm ? "" : kvm_why));
	json_object_set_new(o, "isolation", iso);
}

void moat_doctor_isolation_text(FILE *t, json_t *o)
{
	json_t *iso = json_object_get(o, "isolation");
	static const char *const levels[] = {"process", "gvisor", "vm"};
	for (unsigned i = 0; iso && i < ELEMENTSOF(levels); i++) {
		json_t *l = json_object_get(iso, levels[i]);
		bool ok = json_is_true(json_object_get(l, "works"));
		bool tcg = json_is_true(json_object_get(l, "tcg_only"));
		bool present = json_is_true(json_object_get(l, "present"));
		const char *why = json_string_value(json_object_get(l, "why"));
		const char *ver = json_string_value(json_object_get(l, "version"));
		char name[40];
		snprintf(name, sizeof(name), "--isolation %s", levels[i]);
		if (ok)
			fprintf(t, "  [ ok ] %-26s works here%s%s\n", name,
				ver && *ver	 ? ": "
					: i == 2 ? " (KVM)"
						 : "",
				ver ? ver : "");
		else
			fprintf(t, "  [%s] %-26s %s%s\n", tcg ? "TCG " : "FAIL", name,
				present ? "runsc present, but " : "", why ? why : "");
	}
	fprintf(t, "  %34s prove a level by booting it: moat doctor --boot LEVEL\n", "");
}
