/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm backend's parts (backend_vm.c, docs/ISOLATION.md): the initramfs
 * with moat's guest init (vm_initramfs.c), the accelerator probe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A "newc" cpio archive written to fd (the kernel's initramfs format). */
struct moat_cpio {
	int fd;
	uint64_t off;
	uint32_t ino;
};
/* One entry: name relative (no leading '/', no ".."), mode with its type
 * bits, rdev for a device node, data of a regular file. 0 or -errno. */
int moat_cpio_add(struct moat_cpio *c, const char *name, uint32_t mode, uint32_t rdev,
		  const void *data, size_t len);
/* The trailer entry; the caller closes fd. */
int moat_cpio_finish(struct moat_cpio *c);

/* The initramfs for guest kernel version kver with exe as /init, in
 * cache_dir (named by its content's digest; built when missing, then
 * *ret_built). ret_path gets its path. -errno with why filled. */
int moat_vm_initramfs(const char *cache_dir, const char *exe, const char *kver, char *ret_path,
		      size_t len, bool *ret_built, char *why, size_t whylen);

/* Whether KVM can run an ordinary guest here: 0, or -errno with why. It
 * runs the minimal guest below, then refuses a host whose KVM is not the
 * hardware virtualisation of kvm_intel/kvm_amd (a PVM host runs only
 * PVM-aware kernels). */
int moat_vm_kvm_probe(char *why, size_t whylen);
/* Whether KVM runs a minimal real-mode guest (one port write, then a halt),
 * in a child killed after 5 s (vm_kvm.c): 0, or -errno with why naming the
 * step that failed. */
int moat_vm_kvm_guest_probe(char *why, size_t whylen);

/* The initramfs cache: next to moat's state directory, or /tmp/moat-vm-UID;
 * created private, and refused (-EPERM) unless the caller's own and written
 * by no one else. */
int moat_vm_cache_dir(char *buf, size_t len);

/* The guest kernel: the newest /boot/vmlinuz-VER with /lib/modules/VER. */
int moat_vm_find_kernel(char *ret_path, size_t len, char *ret_ver, size_t vlen);

/* --net allow (vm_net.c). The holder: a tap NAME in the caller's network
 * namespace, IPv6 off and route_localnet on, returned as the fd QEMU takes
 * (owned by the caller), or -errno with why. */
int moat_vm_net_tap(const char *name, char *why, size_t whylen);
/* Bring up lo and IFNAME with ADDR/PREFIX and, with GW, a default route
 * through it on-link. 0 or -errno. */
int moat_vm_net_up(const char *ifname, const char *addr, unsigned prefix, const char *gw);
/* The first link that is not lo (the guest's virtio-net device). */
int moat_vm_net_first_link(char *ret_name, size_t len);
