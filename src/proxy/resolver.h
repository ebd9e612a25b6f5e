/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Name resolution for the proxy worker. getaddrinfo() blocks and reads /etc
 * (resolv.conf, hosts, nsswitch modules), so it runs in a helper process the
 * worker forks before it drops its filesystem and syscall rights. The helper
 * answers each request in its own thread (at most MOAT_RESOLVER_THREADS at
 * once; further requests wait in the socket) and dies with the worker.
 * Messages travel over a SOCK_SEQPACKET socketpair, one struct per message.
 */
#pragma once

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "proxy/hostmatch.h"

#define MOAT_RESOLVER_MAX_ADDRS 16
#define MOAT_RESOLVER_THREADS 16

struct moat_resolver_req {
	uint32_t id;
	char name[MOAT_HOST_BUFSZ]; /* normalized name, already allowed by policy */
};

struct moat_resolver_reply {
	uint32_t id;
	int32_t err; /* 0 or an EAI_* code */
	uint32_t n;
	struct sockaddr_storage addrs[MOAT_RESOLVER_MAX_ADDRS];
};

/* Fork the helper. *ret_fd is the worker's end (non-blocking, CLOEXEC). The
 * helper closes every other descriptor it inherited. Returns 0 or -errno. */
int moat_resolver_start(pid_t *ret_pid, int *ret_fd);

/* Queue one request (non-blocking): 0, -EAGAIN when the socket is full. */
int moat_resolver_send(int fd, uint32_t id, const char *name);
/* Read one reply: 1 if read, 0 if none pending, -errno (EOF: -EPIPE). */
int moat_resolver_recv(int fd, struct moat_resolver_reply *ret);
