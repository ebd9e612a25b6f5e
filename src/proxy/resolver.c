/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "proxy/resolver.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "shared/macro.h"

#define HELPER_FD 3

static sem_t slots;

static void *resolve_one(void *arg)
{
	struct moat_resolver_req *req = arg;
	struct moat_resolver_reply rep = {.id = req->id};
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;

	rep.err = getaddrinfo(req->name, NULL, &hints, &res);
	for (struct addrinfo *a = res; a && rep.n < MOAT_RESOLVER_MAX_ADDRS; a = a->ai_next) {
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    a->ai_addrlen > sizeof(struct sockaddr_storage))
			continue;
		memcpy(&rep.addrs[rep.n++], a->ai_addr, a->ai_addrlen);
	}
	if (res)
		freeaddrinfo(res);
	(void)!send(HELPER_FD, &rep, sizeof(rep), MSG_NOSIGNAL);
	free(req);
	sem_post(&slots);
	return NULL;
}

_noreturn_ static void helper_main(void)
{
	pthread_attr_t attr;

	if (sem_init(&slots, 0, MOAT_RESOLVER_THREADS) < 0 || pthread_attr_init(&attr) != 0 ||
	    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0)
		_exit(1);
	(void)pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		struct moat_resolver_req *req = calloc(1, sizeof(*req));
		pthread_t t;
		ssize_t n;

		if (!req)
			_exit(1);
		n = recv(HELPER_FD, req, sizeof(*req), 0);
		if (n < 0 && errno == EINTR) {
			free(req);
			continue;
		}
		if (n != (ssize_t)sizeof(*req))
			_exit(0); /* the worker is gone (or spoke nonsense) */
		req->name[sizeof(req->name) - 1] = 0;
		while (sem_wait(&slots) < 0 && errno == EINTR)
			;
		if (pthread_create(&t, &attr, resolve_one, req) != 0) {
			sem_post(&slots);
			free(req);
		}
	}
}

int moat_resolver_start(pid_t *ret_pid, int *ret_fd)
{
	int sp[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return negerrno();
	pid = fork();
	if (pid < 0) {
		int r = negerrno();
		close(sp[0]);
		close(sp[1]);
		return r;
	}
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() == 1)
			_exit(1);
		if (dup2(sp[1], HELPER_FD) < 0)
			_exit(1);
		/* Drop the listeners and everything else the worker holds. */
		if (close_range(HELPER_FD + 1, ~0u, 0) < 0)
			_exit(1);
		helper_main();
	}
	close(sp[1]);
	if (fcntl(sp[0], F_SETFL, O_NONBLOCK) < 0) {
		int r = negerrno();
		close(sp[0]);
		return r;
	}
	*ret_pid = pid;
	*ret_fd = sp[0];
	return 0;
}

int moat_resolver_send(int fd, uint32_t id, const char *name)
{
	struct moat_resolver_req req = {.id = id};

	if (strlen(name) >= sizeof(req.name))
		return -ENAMETOOLONG;
	strcpy(req.name, name);
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		return negerrno();
	return 0;
}

int moat_resolver_recv(int fd, struct moat_resolver_reply *ret)
{
	ssize_t n = recv(fd, ret, sizeof(*ret), MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN ? 0 : negerrno();
	if (n == 0)
		return -EPIPE;
	if (n != (ssize_t)sizeof(*ret) || ret->n > MOAT_RESOLVER_MAX_ADDRS)
		return -EBADMSG;
	return 1;
}
