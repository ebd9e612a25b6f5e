/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whether KVM really runs a guest here, by running one: a VM with one page
 * of memory and one vCPU in real mode, whose five bytes of code write 0x42
 * to I/O port 0x10 and halt. Opening /dev/kvm or its API version says
 * nothing about whether a guest runs (a PVM host answers both); KVM_RUN
 * returning the port write and then the halt does. The guest runs in a
 * forked child, killed after 5 s, so that a vCPU that never exits cannot
 * hang the caller (the doctor, or a vm run's accelerator step).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/backend_vm.h"
#include "shared/macro.h"

/* The steps the child reports through its exit status (1..). */
enum {
	KP_OK = 0,
	KP_OPEN,
	KP_CREATE_VM,
	KP_MEMORY,
	KP_VCPU,
	KP_RUN_MAP,
	KP_SREGS,
	KP_REGS,
	KP_RUN,
	KP_NOT_IO,
	KP_WRONG_IO,
	KP_RUN2,
	KP_NOT_HLT,
	KP_N
};

static const char *const kp_step[KP_N] = {
	[KP_OPEN] = "open /dev/kvm",
	[KP_CREATE_VM] = "KVM_CREATE_VM",
	[KP_MEMORY] = "KVM_SET_USER_MEMORY_REGION",
	[KP_VCPU] = "KVM_CREATE_VCPU",
	[KP_RUN_MAP] = "mapping the vCPU's kvm_run",
	[KP_SREGS] = "KVM_SET_SREGS (real mode)",
	[KP_REGS] = "KVM_SET_REGS",
	[KP_RUN] = "KVM_RUN",
	[KP_NOT_IO] = "KVM_RUN did not exit with the guest's port write",
	[KP_WRONG_IO] = "KVM_RUN reported another port write than the guest's",
	[KP_RUN2] = "KVM_RUN after the port write",
	[KP_NOT_HLT] = "KVM_RUN did not exit with the guest's halt",
};

/* In the child: only syscalls, no allocation; returns a KP_ step. */
static int guest(void)
{
	static const unsigned char code[] = {
		0xb0, 0x42, /* mov al, 0x42 */
		0xe6, 0x10, /* out 0x10, al */
		0xf4, /* hlt */
	};
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return KP_OPEN;
	int vm = ioctl(kvm, KVM_CREATE_VM, 0UL);
	if (vm < 0)
		return KP_CREATE_VM;
	void *mem = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return KP_MEMORY;
	memcpy(mem, code, sizeof(code));
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = 0x1000,
		.userspace_addr = (unsigned long)mem,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return KP_MEMORY;
	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0UL);
	if (vcpu < 0)
		return KP_VCPU;
	int size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size < (int)sizeof(struct kvm_run))
		return KP_RUN_MAP;
	struct kvm_run *run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return KP_RUN_MAP;
	struct kvm_sregs sregs;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		return KP_SREGS;
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		return KP_SREGS;
	struct kvm_regs regs = {.rip = 0, .rflags = 0x2};
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		return KP_REGS;
	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		return KP_RUN;
	if (run->exit_reason != KVM_EXIT_IO)
		return KP_NOT_IO;
	if (run->io.direction != KVM_EXIT_IO_OUT || run->io.port != 0x10 || run->io.size != 1 ||
	    run->io.count != 1 || *((unsigned char *)run + run->io.data_offset) != 0x42)
		return KP_WRONG_IO;
	if (ioctl(vcpu, KVM_RUN, 0) < 0)
		return KP_RUN2;
	if (run->exit_reason != KVM_EXIT_HLT)
		return KP_NOT_HLT;
	return KP_OK;
}

int moat_vm_kvm_guest_probe(char *why, size_t whylen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "cannot probe KVM: %s", strerror(errno));
		return -errno;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		snprintf(why, whylen, "cannot probe KVM: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		int step = guest();
		/* the failed call's errno; 0 when KVM_RUN returned with another
		 * exit than the guest's */
		int e = step == KP_NOT_IO || step == KP_WRONG_IO || step == KP_NOT_HLT ? 0 : errno;
		(void)!write(p[1], &e, sizeof(e));
		_exit(step);
	}
	close(p[1]);
	/* the record (or the pipe's end when the child dies) wakes us: no
	 * polling interval is added to a vm run's start */
	int st = 0, e = 0;
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	int k;
	do
		k = poll(&pf, 1, 5000);
	while (k < 0 && errno == EINTR);
	if (k <= 0) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &st, 0);
		close(p[0]);
		snprintf(why, whylen,
			 "KVM did not run a minimal guest: its vCPU did not halt "
			 "within 5 s");
		return -ETIMEDOUT;
	}
	ssize_t n = read(p[0], &e, sizeof(e));
	close(p[0]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || n != (ssize_t)sizeof(e)) {
		snprintf(why, whylen,
			 "KVM did not run a minimal guest: the probe ended abnormally");
		return -EIO;
	}
	int step = WEXITSTATUS(st);
	if (step == KP_OK)
		return 0;
	const char *name = step > 0 && step < KP_N ? kp_step[step] : "?";
	if (step == KP_OPEN)
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(e));
	else if (e)
		snprintf(why, whylen, "KVM did not run a minimal guest: %s failed: %s", name,
			 strerror(e));
	else
		snprintf(why, whylen, "KVM did not run a minimal guest: %s", name);
	return step == KP_OPEN && e ? -e : -ENOTSUP;
}
