/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat doctor --boot LEVEL`: proves an isolation level by booting it. The
 * plain doctor probes the parts (runsc runs a container, QEMU and a guest
 * kernel are there, KVM runs a minimal guest); only a real sandbox shows the
 * whole level works: `moat run --isolation LEVEL -- /bin/echo MARKER` of
 * this very program (/proc/self/exe), whose output must be the marker and
 * whose exit status must be 0. Nothing is weakened to make it boot: the
 * accelerator is the policy's (vm_accel "kvm" unless the caller says "any"),
 * so on a host without a usable KVM the proof fails with the run's own
 * message unless TCG was asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "moat/moat.h"
#include "sandbox/backend_vm.h"
#include "shared/macro.h"

#define BOOT_MARKER "moat-doctor-boot-ok"
/* TCG boots in ~10 s here; a loaded machine takes several times that */
#define BOOT_TIMEOUT_S 180

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv (this program) with stdout and stderr into out (the last
 * outlen-1 bytes, control bytes as spaces except newlines); its wait status,
 * or -errno; *ret_timeout when it was killed after BOOT_TIMEOUT_S. */
static int run_self(const char *const *argv, char *out, size_t outlen, bool *ret_timeout)
{
	int p[2];
	out[0] = '\0';
	*ret_timeout = false;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 ||
		    syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
			_exit(127);
		execv("/proc/self/exe", (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	close(p[1]);
	size_t used = 0;
	char buf[512];
	double end = now_s() + BOOT_TIMEOUT_S;
	for (;;) {
		int left = (int)((end - now_s()) * 1000);
		if (left <= 0) {
			*ret_timeout = true;
			break;
		}
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int k = poll(&pf, 1, left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0)
			continue;
		ssize_t n = k > 0 ? read(p[0], buf, sizeof(buf)) : -1;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (used + 1 >= outlen) {
				memmove(out, out + outlen / 2, used - outlen / 2);
				used -= outlen / 2;
			}
			unsigned char c = (unsigned char)buf[i];
			out[used++] = c == '\n' ? '\n' : c < 0x20 || c > 0x7e ? ' ' : (char)c;
		}
	}
	out[used] = '\0';
	close(p[0]);
	if (*ret_timeout)
		kill(pid, SIGKILL);
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return st;
}

/* The output's last line that is not the marker (the run's message). */
static void last_message(const char *out, char *msg, size_t len)
{
	msg[0] = '\0';
	const char *p = out;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l && !(l == strlen(BOOT_MARKER) && strncmp(p, BOOT_MARKER, l) == 0))
			snprintf(msg, len, "%.*s", (int)l, p);
		p += l + (nl ? 1 : 0);
	}
}

static bool has_marker_line(const char *out)
{
	for (const char *p = out; (p = strstr(p, BOOT_MARKER)); p += strlen(BOOT_MARKER))
		if ((p == out || p[-1] == '\n') &&
		    (p[strlen(BOOT_MARKER)] == '\n' || p[strlen(BOOT_MARKER)] == '\0'))
			return true;
	return false;
}

int moat_doctor_boot(const char *level, const char *vm_accel, char **ret_json, char **ret_text)
{
	if (!level ||
	    (strcmp(level, "process") != 0 && strcmp(level, "gvisor") != 0 &&
	     strcmp(level, "vm") != 0))
		return -EINVAL;
	if (vm_accel && strcmp(vm_accel, "kvm") != 0 && strcmp(vm_accel, "any") != 0)
		return -EINVAL;
	bool vm = strcmp(level, "vm") == 0;
	const char *argv[16];
	unsigned a = 0;
	argv[a++] = "moat";
	argv[a++] = "run";
	argv[a++] = "--quiet";
	argv[a++] = "--isolation";
	argv[a++] = level;
	if (vm_accel) {
		argv[a++] = "--vm-accel";
		argv[a++] = vm_accel;
	}
	argv[a++] = "--";
	argv[a++] = "/bin/echo";
	argv[a++] = BOOT_MARKER;
	argv[a] = NULL;

	/* which accelerator a vm boot gets: KVM when it runs a guest here, TCG
	 * only when asked for (the run refuses otherwise) */
	char kvm_why[256] = "";
	const char *accel = "";
	if (vm)
		accel = moat_vm_kvm_probe(kvm_why, sizeof(kvm_why)) == 0 ? "kvm"
			: vm_accel && strcmp(vm_accel, "any") == 0	 ? "tcg"
									 : "none";

	char out[2048], msg[400];
	bool timeout = false;
	double t0 = now_s();
	int st = run_self(argv, out, sizeof(out), &timeout);
	double secs = now_s() - t0;
	if (st < 0)
		return st;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	bool booted = !timeout && WIFEXITED(st) && code == 0 && has_marker_line(out);
	last_message(out, msg, sizeof(msg));
	if (timeout)
		snprintf(msg, sizeof(msg), "no answer within %d s", BOOT_TIMEOUT_S);
	else if (!booted && !msg[0])
		snprintf(msg, sizeof(msg), "%s",
			 code == 0 ? "the command's output never came back" : "no message");

	json_t *o = json_pack("{s:s,s:s,s:b,s:i,s:b,s:f,s:s}", "level", level, "vm_accel",
			      vm_accel ? vm_accel : "", "booted", booted, "exit", code, "timed_out",
			      timeout, "seconds", secs, "message", booted ? "" : msg);
	if (!o)
		return -ENOMEM;
	if (vm)
		json_object_set_new(o, "accel", json_string(accel));
	char *j = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	char *text = NULL;
	size_t tlen = 0;
	FILE *t = open_memstream(&text, &tlen);
	if (!j || !t) {
		free(j);
		if (t)
			fclose(t);
		free(text);
		return -ENOMEM;
	}
	char how[96] = "";
	if (vm)
		snprintf(how, sizeof(how), " under %s",
			 strcmp(accel, "kvm") == 0	     ? "KVM"
				 : strcmp(accel, "tcg") == 0 ? "TCG"
							     : "no accelerator");
	if (booted)
		fprintf(t,
			"moat doctor --boot %s: booted%s in %.1f s: a sandbox at --isolation %s ran "
			"/bin/echo and its output came back\n",
			level, how, secs, level);
	else
		fprintf(t, "moat doctor --boot %s: did not boot (exit %d, %.1f s): %s\n", level,
			code, secs, msg);
	if (!booted && vm && strcmp(accel, "none") == 0)
		fprintf(t,
			"  KVM cannot run this guest (%s); --vm-accel any boots it under TCG "
			"(slow)\n",
			kvm_why);
	fclose(t);
	*ret_json = j;
	*ret_text = text;
	return booted ? 0 : 1;
}
