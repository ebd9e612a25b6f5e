/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-027/RT-028 unix sockets and loopback listeners of the host. Options, each
 * repeatable: --abstract NAME (connects to "\0NAME"), --path PATH (pathname
 * socket), --tcp PORT (127.0.0.1), --tcp6 PORT (::1). The runner's listeners
 * count accepts; a connect that succeeds is FAIL. Well-known host sockets
 * (Docker, D-Bus, systemd) are tried too.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "probe.h"

#define SAFE PROBE_ERRS(ECONNREFUSED, ENOENT, EACCES, EPERM, ENETUNREACH, ENOTDIR, EADDRNOTAVAIL)

static void unix_connect(const char *id, const char *name, bool abstract)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		INCONCL(id, "socket(AF_UNIX) errno=%s", probe_errname(errno));
		return;
	}
	if (abstract) {
		strncpy(a.sun_path + 1, name, sizeof a.sun_path - 2);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	} else {
		strncpy(a.sun_path, name, sizeof a.sun_path - 1);
		len = sizeof a;
	}
	errno = 0;
	int r = connect(fd, (struct sockaddr *)&a, len);
	probe_classify(id, name, r, errno, SAFE);
	close(fd);
}

static void abstract_one(const char *name)
{
	char id[200];
	snprintf(id, sizeof id, "RT-027/abstract:%s", name);
	unix_connect(id, name, true);
}

static void path_one(const char *path)
{
	char id[200];
	snprintf(id, sizeof id, "RT-028/path:%s", path);
	unix_connect(id, path, false);
}

static void tcp_one(const char *port, int family)
{
	char id[64];
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(id, sizeof id, "RT-027/tcp%s:%s", family == AF_INET6 ? "6" : "", port);
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;
		s->sin_family = AF_INET;
		s->sin_port = htons((uint16_t)atoi(port));
		s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *s;
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
		s->sin6_family = AF_INET6;
		s->sin6_port = htons((uint16_t)atoi(port));
		s->sin6_addr = in6addr_loopback;
		len = sizeof *s;
	}
	if (fd < 0) {
		BLOCKED(id, "socket errno=%s", probe_errname(errno));
		return;
	}
	errno = 0;
	int r = connect(fd, (struct sockaddr *)&ss, len);
	probe_classify(id, "connect(loopback)", r, errno, SAFE);
	close(fd);
}

static void tcp4(const char *p)
{
	tcp_one(p, AF_INET);
}

static void tcp6(const char *p)
{
	tcp_one(p, AF_INET6);
}

int main(int argc, char **argv)
{
	static const char *const known[] = {"/run/docker.sock",
					    "/var/run/docker.sock",
					    "/run/podman/podman.sock",
					    "/run/containerd/containerd.sock",
					    "/run/dbus/system_bus_socket",
					    "/run/systemd/private",
					    "/run/snapd.socket"};

	probe_init(argc, argv);
	probe_each_opt("--abstract", abstract_one);
	probe_each_opt("--path", path_one);
	probe_each_opt("--tcp", tcp4);
	probe_each_opt("--tcp6", tcp6);
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		if (!probe_control() || access(known[i], F_OK) == 0)
			path_one(known[i]);
	}
	return probe_done();
}
