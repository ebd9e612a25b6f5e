/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-user sessions directory (session.h): root's /run/moat/sessions,
 * else $XDG_RUNTIME_DIR/moat/sessions, else $XDG_STATE_HOME/moat/sessions or
 * ~/.local/state/moat/sessions. Opened once without following a symlink
 * (paths.h), then used through its fd: sockets are bound and connected as
 * /proc/self/fd/N/<id>.sock, so no later path walk can be redirected and the
 * address fits sun_path whatever the directory's length. It must be the
 * caller's own and 0700: who can reach a socket is decided here and by the
 * supervisor's SO_PEERCRED check.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "supervisor/session.h"
#include "shared/macro.h"

/* moat_session_set_dir(): this thread's (and its forks') directory instead */
static __thread char dir_override[MOAT_SESS_PATH];

int moat_session_set_dir(const char *path, struct moat_error *ret_err)
{
	if (!path) {
		dir_override[0] = 0;
		return 0;
	}
	if (path[0] != '/' || strlen(path) >= sizeof(dir_override))
		return moat_error_set(ret_err, "usage", EINVAL,
				      "a sessions directory must be an absolute path of at most "
				      "%zu bytes",
				      sizeof(dir_override) - 1);
	snprintf(dir_override, sizeof(dir_override), "%s", path);
	return 0;
}

int moat_sess_dir_path(char *buf, size_t len)
{
	int n;
	const char *x = getenv("XDG_RUNTIME_DIR"), *s = getenv("XDG_STATE_HOME");
	if (dir_override[0])
		n = snprintf(buf, len, "%s", dir_override);
	else if (moat_host_root())
		n = snprintf(buf, len, "/run/moat/sessions");
	else if (x && x[0] == '/')
		n = snprintf(buf, len, "%s/moat/sessions", x);
	else if (s && s[0] == '/')
		n = snprintf(buf, len, "%s/moat/sessions", s);
	else {
		const char *home = getenv("HOME");
		if (!home || home[0] != '/') {
			struct passwd *pw = getpwuid(geteuid());
			home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
		}
		if (!home)
			return -ENOENT;
		n = snprintf(buf, len, "%s/.local/state/moat/sessions", home);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int moat_sess_dir_open(bool mkdirs, struct moat_error *ret_err)
{
	char path[MOAT_SESS_PATH];
	struct stat st;
	int k = moat_sess_dir_path(path, sizeof(path));
	if (k < 0)
		return moat_error_set(ret_err, "session", -k,
				      "cannot find the sessions directory (no HOME)");
	_cleanup_close_ int pfd =
		moat_path_open(path, MOAT_PATH_DIR | (mkdirs ? MOAT_PATH_MKDIR : 0), 0700, NULL);
	if (pfd == -ENOENT)
		return moat_error_set(ret_err, "session", ENOENT, "no sessions (%s does not exist)",
				      path);
	if (pfd < 0)
		return moat_error_set(ret_err, "session", -pfd, "cannot open %s: %s", path,
				      strerror(-pfd));
	int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(ret_err, "session", errno, "cannot open %s: %s", path,
				      strerror(errno));
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(dfd);
		return moat_error_set(ret_err, "session", EPERM,
				      "%s must be a directory of uid %u with mode 0700 "
				      "(it is uid %u, mode %04o): refusing to use it",
				      path, (unsigned)geteuid(), (unsigned)st.st_uid,
				      (unsigned)(st.st_mode & 07777));
	}
	return dfd;
}

bool moat_sess_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > MOAT_SESSION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum =
			(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
		if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
			return false;
	}
	return true;
}

bool moat_sess_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n < 16 || n > 39)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

int moat_sess_sockaddr(int dfd, const char *name, void *ret_sun, unsigned *ret_len)
{
	struct sockaddr_un *sun = ret_sun;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	int n = snprintf(sun->sun_path, sizeof(sun->sun_path), "/proc/self/fd/%d/%s", dfd, name);
	if (n < 0 || (size_t)n >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	*ret_len = (unsigned)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	return 0;
}

/* The id a name file holds. */
static int read_name(int dfd, const char *name, char ret_id[40])
{
	char file[MOAT_SESSION_NAME_MAX + 8], buf[48];
	snprintf(file, sizeof(file), "%s.name", name);
	_cleanup_close_ int fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return negerrno();
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOENT;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ENOENT;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (!moat_sess_id_valid(buf))
		return -ENOENT;
	snprintf(ret_id, 40, "%.39s", buf);
	return 0;
}

int moat_sess_connect(int dfd, const char *id_or_name, char ret_id[40], struct moat_error *ret_err)
{
	return moat_sess_connect_within(dfd, id_or_name, ret_id, 0, ret_err);
}

int moat_sess_connect_within(int dfd, const char *id_or_name, char ret_id[40], unsigned timeout_ms,
			     struct moat_error *ret_err)
{
	char id[40] = "", sock[64];
	struct stat st;
	if (moat_sess_id_valid(id_or_name)) {
		snprintf(sock, sizeof(sock), "%s.sock", id_or_name);
		if (fstatat(dfd, sock, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
			snprintf(id, sizeof(id), "%s", id_or_name);
	}
	if (!id[0] && moat_sess_name_valid(id_or_name) && read_name(dfd, id_or_name, id) < 0)
		id[0] = 0;
	if (!id[0])
		return moat_error_set(ret_err, "session", ENOENT, "no sandbox '%s' (see moat ls)",
				      moat_sess_name_valid(id_or_name) ? id_or_name : "?");
	snprintf(sock, sizeof(sock), "%s.sock", id);
	if (fstatat(dfd, sock, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode) ||
	    st.st_uid != geteuid())
		return moat_error_set(ret_err, "session", ENOENT, "no sandbox '%s' (see moat ls)",
				      id);
	struct sockaddr_un sun;
	unsigned alen;
	int k = moat_sess_sockaddr(dfd, sock, &sun, &alen);
	if (k < 0)
		return moat_error_set(ret_err, "session", -k, "socket path too long");
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return moat_error_set(ret_err, "session", errno, "socket: %s", strerror(errno));
	if (timeout_ms) {
		/* bounds both the connect (a full accept queue) and the answer */
		struct timeval tv = {.tv_sec = timeout_ms / 1000,
				     .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
			k = errno;
			close(fd);
			return moat_error_set(ret_err, "session", k, "setsockopt: %s", strerror(k));
		}
	}
	if (connect(fd, (struct sockaddr *)&sun, alen) < 0) {
		k = errno;
		close(fd);
		if (k == EAGAIN)
			return moat_error_set(
				ret_err, "session", ETIMEDOUT,
				"sandbox %s: its supervisor did not answer within %u ms", id,
				timeout_ms);
		if (k == ECONNREFUSED || k == ENOENT)
			return moat_error_set(ret_err, "session", ECONNREFUSED,
					      "sandbox %s is gone (its supervisor died)", id);
		return moat_error_set(ret_err, "session", k, "cannot reach sandbox %s: %s", id,
				      strerror(k));
	}
	if (ret_id)
		snprintf(ret_id, 40, "%s", id);
	return fd;
}

bool moat_sess_name_taken(int dfd, const char *name)
{
	char file[MOAT_SESSION_NAME_MAX + 8];
	snprintf(file, sizeof(file), "%s.name", name);
	_cleanup_close_ int fd = openat(dfd, file, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno != ENOENT;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
		return true;
	return fl.l_type != F_UNLCK;
}
