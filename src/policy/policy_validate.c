/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Checks across keys, once the whole policy is read (moat_policy_validate):
 * what no single setter can see, e.g. two mounts at one place. */
#include "policy/errors.h"
#include "policy/policy.h"
#include "kernel/seccomp.h"
#include "proxy/hostmatch.h"
#include "shared/macro.h"
#include "workspace/fsdiff.h"

/* Could some name match both host patterns? (normalized: "a.b" or "*.a.b") */
static bool patterns_overlap(const char *a, const char *b)
{
	char na[256], nb[256];
	bool wa, wb;
	size_t la, lb;

	if (moat_host_pattern_normalize(a, na, sizeof(na)) < 0 ||
	    moat_host_pattern_normalize(b, nb, sizeof(nb)) < 0)
		return true; /* in doubt: overlap (refused below) */
	wa = na[0] == '*';
	wb = nb[0] == '*';
	if (!wa && !wb)
		return streq(na, nb);
	if (wa && !wb)
		return moat_host_pattern_match(na, nb);
	if (!wa && wb)
		return moat_host_pattern_match(nb, na);
	/* "*.x" and "*.y" overlap when one suffix is the other or under it */
	la = strlen(na + 1);
	lb = strlen(nb + 1);
	return la >= lb ? streq(na + 1 + la - lb, nb + 1) : streq(nb + 1 + lb - la, na + 1);
}

/* --no-inspect only narrows --inspect-tls all, and never a host whose
 * secret or http rules need interception: pass-through there would make
 * placeholders and method/path rules invisible, so the run is refused. */
static int validate_inspect(const struct moat_policy *p, struct moat_error *ret_err)
{
	if (p->n_no_inspect && !p->inspect_tls_all)
		return moat_error_set(ret_err, "policy", EINVAL,
				      "--no-inspect %s needs --inspect-tls all", p->no_inspect[0]);
	for (unsigned i = 0; i < p->n_no_inspect; i++) {
		const char *ni = p->no_inspect[i];
		for (unsigned j = 0; j < p->n_secrets; j++)
			for (unsigned k = 0; k < p->secrets[j].n_hosts; k++)
				if (patterns_overlap(ni, p->secrets[j].hosts[k]))
					return moat_error_set(
						ret_err, "policy", EINVAL,
						"--no-inspect %s covers %s, a host of secret %s: "
						"its placeholder would travel unchecked",
						ni, p->secrets[j].hosts[k], p->secrets[j].name);
		for (unsigned j = 0; j < p->n_http_rules; j++)
			if (patterns_overlap(ni, p->http_rules[j].host))
				return moat_error_set(
					ret_err, "policy", EINVAL,
					"--no-inspect %s covers %s, which has http rules", ni,
					p->http_rules[j].host);
	}
	return 0;
}

int moat_policy_validate(const struct moat_policy *p, struct moat_error *ret_err)
{
	for (unsigned i = 0; i < p->n_review_accept; i++) {
		char why[1400];
		int r = moat_review_item_check(p->review_accept[i], true, p->accept_automatic, why,
					       sizeof(why));
		if (r < 0)
			return moat_error_set(ret_err, "policy", -r, "--accept %s: %s",
					      p->review_accept[i], why);
	}
	for (unsigned i = 0; i < p->n_mounts; i++)
		for (unsigned j = i + 1; j < p->n_mounts; j++)
			if (streq(p->mounts[i].dest, p->mounts[j].dest))
				return moat_error_set(ret_err, "policy", EINVAL, "two mounts at %s",
						      p->mounts[i].dest);
	if (p->workspace) {
		static const char *const bad[] = {"/usr",   "/bin",    "/sbin", "/lib",
						  "/lib64", "/etc",    "/proc", "/dev",
						  "/tmp",   "/output", "/data"};
		for (size_t i = 0; i < ELEMENTSOF(bad); i++)
			if (streq(p->workspace, bad[i]))
				return moat_error_set(
					ret_err, "policy", EINVAL,
					"--workspace %s would replace a system directory",
					p->workspace);
	}
	if (p->image && p->rootfs)
		return moat_error_set(ret_err, "policy", EINVAL,
				      "--image and --rootfs both name the system: give one");
	if (p->image_allow_setid && !p->image)
		return moat_error_set(ret_err, "policy", EINVAL,
				      "--image-allow-setid without --image");
	if (p->net != MOAT_NET_ALLOW && (p->n_allow_hosts || p->n_allow_cidrs || p->n_secrets))
		return moat_error_set(
			ret_err, "policy", EINVAL,
			"allow rules and secrets need network mode \"allow\" (mode is %s)",
			p->net == MOAT_NET_HOST ? "host" : "none");
	for (unsigned i = 0; i < p->n_allow_syscalls; i++)
		if (moat_seccomp_validate_name(p->allow_syscalls[i]) < 0)
			return moat_error_set(
				ret_err, "policy", EINVAL,
				"--allow-syscall %s: not a syscall of this architecture",
				p->allow_syscalls[i]);
	/* The sandbox's init lives under the same filter as everything it
	 * starts (init_serve.c): what it needs to start, signal and reap
	 * processes cannot be denied, or a time limit could not be enforced
	 * (prctl: the init's dumpable flag around the listener's hand-over;
	 * sendmsg: its records; setrlimit/prlimit64, ioctl, rt_sigaction: each
	 * new process's set-up before exec; munmap: what a vforked process
	 * mapped in the init's memory, which would otherwise pile up). */
	static const char *const init_needs[] = {
		"read",	     "write", "recvmsg",      "poll",		"ppoll",      "wait4",
		"waitid",    "clone", "clone3",	      "fork",		"vfork",      "execve",
		"execveat",  "kill",  "signalfd4",    "rt_sigprocmask", "close",      "mmap",
		"dup2",	     "dup3",  "setsid",	      "exit",		"exit_group", "chdir",
		"fcntl",     "fstat", "newfstatat",   "prctl",		"sendmsg",    "setrlimit",
		"prlimit64", "ioctl", "rt_sigaction", "munmap",
	};
	for (unsigned i = 0; i < p->n_deny_syscalls; i++) {
		if (moat_seccomp_validate_name(p->deny_syscalls[i]) < 0)
			return moat_error_set(
				ret_err, "policy", EINVAL,
				"--deny-syscall %s: not a syscall of this architecture",
				p->deny_syscalls[i]);
		for (unsigned j = 0; j < ELEMENTSOF(init_needs); j++)
			if (streq(p->deny_syscalls[i], init_needs[j]))
				return moat_error_set(
					ret_err, "policy", EINVAL,
					"--deny-syscall %s: the sandbox's init needs it to start, "
					"signal and reap processes (it runs under the same filter)",
					p->deny_syscalls[i]);
	}
	for (unsigned i = 0; i < p->n_allow_syscalls; i++)
		for (unsigned j = 0; j < p->n_deny_syscalls; j++)
			if (streq(p->allow_syscalls[i], p->deny_syscalls[j]))
				return moat_error_set(ret_err, "policy", EINVAL,
						      "syscall %s is both allowed and denied",
						      p->allow_syscalls[i]);
	for (unsigned i = 0; i < p->n_secrets; i++)
		for (unsigned j = i + 1; j < p->n_secrets; j++)
			if (streq(p->secrets[i].name, p->secrets[j].name))
				return moat_error_set(ret_err, "policy", EINVAL,
						      "secret %s given twice", p->secrets[i].name);
	return validate_inspect(p, ret_err);
}
