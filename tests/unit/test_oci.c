#include <signal.h>
#include <sys/wait.h>
#include <sys/syscall.h>
/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The OCI runtime's config.json translation (oci/oci_config.c) and the
 * confinement of its parser (oci/oci_load.c): fields become policy options
 * or notes, a field moat cannot honour is one error naming it, the spec's
 * seccomp allowlist becomes moat's deny list, and the confined parser can
 * open nothing. Each test runs in its own forked child. */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/tap.h"
#include "oci/oci.h"
#include "shared/macro.h"

#define BASE \
	"\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":true}," \
	"\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"sh\",\"-c\",\"x\"]," \
	"\"env\":[\"PATH=/bin\"],\"cwd\":\"/\"}"

/* Whether the records hold tag/field?/a/b (NULL: any). */
static bool has(const struct moat_oci_recs *r, const char *tag, const char *a, const char *b)
{
	size_t pos = 0;
	const char *t;
	while ((t = moat_oci_recs_next(r, &pos))) {
		moat_oci_recs_next(r, &pos);
		const char *x = moat_oci_recs_next(r, &pos), *y = moat_oci_recs_next(r, &pos);
		if (streq(t, tag) && (!a || streq(a, x)) && (!b || streq(b, y)))
			return true;
	}
	return false;
}

/* The error's field, "" if none. */
static const char *err_field(const struct moat_oci_recs *r)
{
	size_t pos = 0;
	const char *t = moat_oci_recs_next(r, &pos);
	return t && streq(t, "err") ? moat_oci_recs_next(r, &pos) : "";
}

static int parse(const char *json, struct moat_oci_recs *r)
{
	return moat_oci_parse(json, strlen(json), "/b", r);
}

TEST(oci_basic_records)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE ",\"hostname\":\"h1\",\"linux\":{\"resources\":{"
			"\"memory\":{\"limit\":67108864},\"pids\":{\"limit\":20},"
			"\"cpu\":{\"quota\":50000,\"period\":100000}}}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "opt", "--rootfs", "/b/rootfs"));
	ASSERT_TRUE(has(&r, "opt", "--uid", "1000"));
	ASSERT_TRUE(has(&r, "opt", "--hostname", "h1"));
	ASSERT_TRUE(has(&r, "opt", "--memory", "67108864"));
	ASSERT_TRUE(has(&r, "opt", "--pids", "20"));
	ASSERT_TRUE(has(&r, "opt", "--cpus", "0.500"));
	ASSERT_TRUE(has(&r, "arg", "sh", NULL));
	ASSERT_TRUE(has(&r, "env", "PATH=/bin", NULL));
	ASSERT_TRUE(has(&r, "cwd", "/", NULL));
	ASSERT_TRUE(!has(&r, "tty", NULL, NULL));
	/* noNewPrivileges absent: moat sets it anyway, said in a note */
	ASSERT_TRUE(has(&r, "note", NULL, NULL));
	moat_oci_recs_done(&r);
}

/* An engine's network namespace: a record for the loader (the egress
 * proxy's upstream), never an option that puts the container there. */
TEST(oci_network_namespace_path)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},"
			"{\"type\":\"network\",\"path\":\"/run/netns/x\"}]}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "netns", "/run/netns/x", NULL));
	ASSERT_TRUE(!has(&r, "opt", "--net", NULL));
	moat_oci_recs_done(&r);
	/* control: without a path, no record */
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"network\"}]}}", &r), 0);
	ASSERT_TRUE(!has(&r, "netns", NULL, NULL));
	moat_oci_recs_done(&r);
}

/* A pod's ipc and uts namespaces (containerd's CRI names the sandbox's for
 * every container): not joined, a note says so, no record puts the container
 * there; a pid namespace's path is still refused, and a second ipc entry. */
TEST(oci_pod_ipc_uts_namespace_paths)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"pid\"},"
			"{\"type\":\"ipc\",\"path\":\"/proc/9/ns/ipc\"},"
			"{\"type\":\"uts\",\"path\":\"/proc/9/ns/uts\"}]}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "note",
			"path not joined: the container has moat's own ipc namespace (no System V "
			"IPC or message queue shared with the pod)",
			NULL));
	ASSERT_TRUE(has(&r, "note",
			"path not joined: the container has moat's own uts namespace (its "
			"hostname is the spec's)",
			NULL));
	/* not joined, but the runtime checks each is of its kind */
	ASSERT_TRUE(has(&r, "nspath", "/proc/9/ns/ipc", "ipc"));
	ASSERT_TRUE(has(&r, "nspath", "/proc/9/ns/uts", "uts"));
	ASSERT_TRUE(!has(&r, "netns", NULL, NULL));
	moat_oci_recs_done(&r);
	/* control: the kinds that stay refused */
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"mount\","
			"\"path\":\"/proc/9/ns/mnt\"}]}}",
			&r),
		  -EINVAL);
	ASSERT_STREQ(err_field(&r), "linux.namespaces[0]");
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"ipc\","
			"\"path\":\"/a\"},{\"type\":\"ipc\",\"path\":\"/b\"}]}}",
			&r),
		  -EINVAL);
	ASSERT_STREQ(err_field(&r), "linux.namespaces[1]");
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"namespaces\":[{\"type\":\"uts\","
			"\"path\":\"rel\"}]}}",
			&r),
		  -EINVAL);
	ASSERT_STREQ(err_field(&r), "linux.namespaces[0]");
	moat_oci_recs_done(&r);
}

TEST(oci_refused_fields_are_named)
{
	static const struct {
		const char *extra, *field;
	} cases[] = {
		{",\"hooks\":{\"prestart\":[{\"path\":\"/x\"}]}", "hooks"},
		{",\"linux\":{\"sysctl\":{\"a\":\"1\"}}", "linux.sysctl"},
		{",\"linux\":{\"namespaces\":[{\"type\":\"pid\",\"path\":\"/x\"}]}",
		 "linux.namespaces[0]"},
		{",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"rel\"}]}",
		 "linux.namespaces[0]"},
		{",\"linux\":{\"namespaces\":[{\"type\":\"network\",\"path\":\"/a\"},"
		 "{\"type\":\"network\",\"path\":\"/b\"}]}",
		 "linux.namespaces[1]"},
		{",\"linux\":{\"namespaces\":[{\"type\":\"bogus\"}]}", "linux.namespaces[0]"},
		{",\"linux\":{\"uidMappings\":[{\"hostID\":0,\"containerID\":0,\"size\":1}]}",
		 "linux.uidMappings"},
		{",\"mounts\":[{\"destination\":\"/x\",\"type\":\"nfs\",\"source\":\"h\"}]",
		 "mounts[0]"},
		{",\"mounts\":[{\"destination\":\"rel\",\"type\":\"bind\",\"source\":\"/h\"}]",
		 "mounts[0]"},
		{",\"domainname\":\"d\"", "domainname"},
		{",\"bogus\":1", "bogus"},
		{",\"annotations\":{\"run.moat.no-seccomp\":\"1\"}",
		 "annotations.run.moat.no-seccomp"},
		{",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_NOTIFY\"}}",
		 "linux.seccomp.defaultAction"},
		{",\"linux\":{\"resources\":{\"cpu\":{\"cpus\":\"0-1\"}}}",
		 "linux.resources.cpu.cpus"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char json[1024];
		struct moat_oci_recs r;
		snprintf(json, sizeof(json), "{" BASE "%s}", cases[i].extra);
		ASSERT_EQ(parse(json, &r), -EINVAL);
		ASSERT_EQ(r.n, 1);
		if (!streq(err_field(&r), cases[i].field))
			moat_tap_fail(__FILE__, __LINE__, "case %zu: field '%s', want '%s'", i,
				      err_field(&r), cases[i].field);
		moat_oci_recs_done(&r);
	}
	/* positive control: BASE alone is accepted */
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE "}", &r), 0);
	moat_oci_recs_done(&r);
}

TEST(oci_process_user_and_caps)
{
	struct moat_oci_recs r;
	const char *root_user =
		"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\",\"readonly\":"
		"true},\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"a\"],"
		"\"cwd\":\"/\"}}";
	/* uid 0 is the container's own root (mapped, no capability) */
	ASSERT_EQ(parse(root_user, &r), 0);
	moat_oci_recs_done(&r);
	const char *caps = "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"r\",\"readonly\":true},"
			   "\"process\":{\"user\":{\"uid\":1,\"gid\":1},\"args\":[\"a\"],\"cwd\":"
			   "\"/\",\"capabilities\":{\"permitted\":[\"CAP_KILL\",\"CAP_SYS_"
			   "PTRACE\"]}}}";
	ASSERT_EQ(parse(caps, &r), -EINVAL);
	ASSERT_TRUE(streq(err_field(&r), "process.capabilities.permitted"));
	moat_oci_recs_done(&r);
}

TEST(oci_seccomp_allowlist_becomes_denials)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\","
			"\"syscalls\":[{\"names\":[\"read\",\"write\",\"exit_group\"],"
			"\"action\":\"SCMP_ACT_ALLOW\"}]}}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "opt", "--deny-syscall", "mkdir"));
	ASSERT_TRUE(has(&r, "opt", "--deny-syscall", "openat"));
	ASSERT_TRUE(!has(&r, "opt", "--deny-syscall", "read"));
	ASSERT_TRUE(!has(&r, "opt", "--deny-syscall", "exit_group"));
	moat_oci_recs_done(&r);
	/* a denylist: exactly its names */
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\","
			"\"syscalls\":[{\"names\":[\"mkdir\"],\"action\":\"SCMP_ACT_ERRNO\"}]}}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "opt", "--deny-syscall", "mkdir"));
	ASSERT_TRUE(!has(&r, "opt", "--deny-syscall", "openat"));
	moat_oci_recs_done(&r);
}

TEST(oci_annotations_add_rules_only)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{" BASE ",\"annotations\":{\"run.moat.allow-hosts\":\"a.example:443,b."
			"example\",\"run.moat.log\":\"c1.jsonl\",\"other\":\"v\"}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "opt", "--net", "allow"));
	ASSERT_TRUE(has(&r, "opt", "--allow-host", "a.example:443"));
	ASSERT_TRUE(has(&r, "opt", "--allow-host", "b.example"));
	ASSERT_TRUE(has(&r, "log", "c1.jsonl", NULL));
	ASSERT_TRUE(has(&r, "ann", "other", "v"));
	moat_oci_recs_done(&r);
	/* whoever writes annotations picks no secret, no address, no path */
	static const char *const bad[] = {
		"{" BASE ",\"annotations\":{\"run.moat.secrets\":\"AWS_KEY@evil.example\"}}",
		"{" BASE ",\"annotations\":{\"run.moat.resolve\":\"a.example=127.0.0.1\"}}",
		"{" BASE ",\"annotations\":{\"run.moat.log\":\"/etc/ld.so.preload\"}}",
		"{" BASE ",\"annotations\":{\"run.moat.log\":\"../x\"}}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		ASSERT_EQ(parse(bad[i], &r), -EINVAL);
		ASSERT_TRUE(!strncmp(err_field(&r), "annotations.run.moat.", 21));
		moat_oci_recs_done(&r);
	}
}

TEST(oci_parser_confinement)
{
	/* control: before, a file opens */
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	close(fd);
	/* The confinement is for good: in a child of its own, which ends with
	 * _exit (a sanitizer's exit-time work is not the parser's), each
	 * check its own exit code. */
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (moat_oci_confine() != 0)
			_exit(10);
		errno = 0;
		if (open("/proc/self/status", O_RDONLY | O_CLOEXEC) != -1 || errno != EPERM)
			_exit(11);
		if (socket(AF_UNIX, SOCK_STREAM, 0) != -1)
			_exit(12);
		if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) != -1)
			_exit(13);
		/* what it needs still works: memory and the parse itself */
		struct moat_oci_recs r;
		if (parse("{" BASE "}", &r) != 0)
			_exit(14);
		moat_oci_recs_done(&r);
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

/* process.oomScoreAdj: a record the runtime compares with its own value;
 * out of range is the field's error. clone3, refused by moat's baseline
 * already, is no --deny-syscall (which would break the sandbox's init).
 * runtime-spec 1.3: accepted, its new fields unknown and so refused. */
TEST(oci_oom_score_adj_clone3_spec_1_3)
{
	struct moat_oci_recs r;
	ASSERT_EQ(parse("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":"
			"true},\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"x\"],"
			"\"cwd\":\"/\",\"oomScoreAdj\":1000}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "oom", "1000", NULL));
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":"
			"true},\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"x\"],"
			"\"cwd\":\"/\",\"oomScoreAdj\":1001}}",
			&r),
		  -EINVAL);
	ASSERT_STREQ(err_field(&r), "process.oomScoreAdj");
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{" BASE ",\"linux\":{\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\","
			"\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\"}]}}}",
			&r),
		  0);
	ASSERT_TRUE(has(&r, "opt", "--deny-syscall", "openat"));
	ASSERT_TRUE(!has(&r, "opt", "--deny-syscall", "clone3"));
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{\"ociVersion\":\"1.3.0\",\"root\":{\"path\":\"rootfs\",\"readonly\":"
			"true},\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"x\"],"
			"\"cwd\":\"/\"}}",
			&r),
		  0);
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{\"ociVersion\":\"1.3.0\",\"root\":{\"path\":\"rootfs\",\"readonly\":"
			"true},\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"x\"],"
			"\"cwd\":\"/\"},\"linux\":{\"netDevices\":{\"eth0\":{}}}}",
			&r),
		  -EINVAL);
	ASSERT_STREQ(err_field(&r), "linux.netDevices");
	moat_oci_recs_done(&r);
}

/* root.readonly false: a record for a writable root with the annotation's
 * size (or none: --disk); a bad size, or a size with a read-only root, is
 * an error naming the annotation; run.moat.root-readonly keeps a read-only
 * root (a note, no record). */
TEST(oci_root_writable)
{
	struct moat_oci_recs r;
#define RW_BASE \
	"\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\",\"readonly\":false}," \
	"\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},\"args\":[\"sh\"],\"cwd\":\"/\"}"
	ASSERT_EQ(parse("{" RW_BASE "}", &r), 0);
	ASSERT_TRUE(has(&r, "rrw", "", NULL));
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{" RW_BASE ",\"annotations\":{\"run.moat.root-size\":\"64M\"}}", &r), 0);
	ASSERT_TRUE(has(&r, "rrw", "64M", NULL));
	moat_oci_recs_done(&r);
	static const char *const bad[] = {"512K", "1x", "", "17T"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char js[512];
		snprintf(js, sizeof(js),
			 "{" RW_BASE ",\"annotations\":{\"run.moat.root-size\":\"%s\"}}", bad[i]);
		ASSERT_EQ(parse(js, &r), -EINVAL);
		ASSERT_STREQ(err_field(&r), "annotations.run.moat.root-size");
		moat_oci_recs_done(&r);
	}
	ASSERT_EQ(parse("{" BASE ",\"annotations\":{\"run.moat.root-size\":\"2M\"}}", &r), -EINVAL);
	ASSERT_STREQ(err_field(&r), "annotations.run.moat.root-size");
	moat_oci_recs_done(&r);
	ASSERT_EQ(parse("{" RW_BASE ",\"annotations\":{\"run.moat.root-readonly\":\"true\"}}", &r),
		  0);
	ASSERT_TRUE(!has(&r, "rrw", NULL, NULL));
	moat_oci_recs_done(&r);
#undef RW_BASE
}
