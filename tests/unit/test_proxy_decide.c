/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy's decisions, without sockets: names, ports, literals, resolution. */
#include <arpa/inet.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "policy/policy.h"
#include "proxy/event.h"
#include "proxy/proxy.h"
#include "proxy/resolver.h"
#include "shared/macro.h"

static struct moat_host_rule allow[] = {
	{.pattern = (char[]){"api.example.com"}},
	{.pattern = (char[]){"*.pkgs.test"}, .ports = {8080}, .n_ports = 1},
	{.pattern = (char[]){"mirror.test"}, .ports = {8080}, .n_ports = 1},
	{.pattern = (char[]){"metadata.google.internal"}},
	{.pattern = (char[]){"evil.pkgs.test"}},
};
static struct moat_host_rule deny[] = {{.pattern = (char[]){"evil.pkgs.test"}}};
static struct moat_host_rule cidrs[] = {
	{.pattern = (char[]){"203.0.113.0/24"}, .ports = {443}, .n_ports = 1},
	{.pattern = (char[]){"169.254.0.0/16"}},
};
static struct moat_resolve resolve[] = {
	{.name = (char[]){"mirror.test"}, .addr = (char[]){"127.0.0.2"}},
};

static struct moat_proxy_config *cfg(void)
{
	struct moat_policy p = {
		.net = MOAT_NET_ALLOW,
		.allow_hosts = allow,
		.n_allow_hosts = ELEMENTSOF(allow),
		.deny_hosts = deny,
		.n_deny_hosts = ELEMENTSOF(deny),
		.allow_cidrs = cidrs,
		.n_allow_cidrs = ELEMENTSOF(cidrs),
		.resolve = resolve,
		.n_resolve = ELEMENTSOF(resolve),
	};
	struct moat_proxy_config *c = NULL;
	ASSERT_EQ(moat_proxy_config_from_policy(&p, &c), 0);
	return c;
}

static struct moat_proxy_decision decide(const char *host, uint16_t port)
{
	struct moat_proxy_config *c = cfg();
	struct moat_proxy_decision d;
	char norm[MOAT_HOST_BUFSZ];
	enum moat_host_kind kind;

	if (moat_host_parse(host, strlen(host), true, norm, sizeof(norm), &kind, NULL) < 0)
		moat_tap_fail(__FILE__, __LINE__, "cannot parse %s", host);
	moat_proxy_decide(c, kind, norm, port, &d);
	moat_proxy_config_free(c);
	return d;
}

TEST(proxy_decide_names)
{
	struct moat_proxy_decision d = decide("api.example.com", 443);
	ASSERT_TRUE(d.allow);
	ASSERT_STREQ(d.reason, "allow-host");
	ASSERT_STREQ(d.rule, "--allow-host api.example.com");
	ASSERT_EQ(d.n_addrs, 0); /* must be resolved */

	d = decide("API.Example.COM.", 80);
	ASSERT_TRUE(d.allow);

	d = decide("api.example.com", 8443);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "port-not-allowed");
	ASSERT_STREQ(d.rule, "--allow-host api.example.com:8443");

	d = decide("other.example.com", 443);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "not-allowed");
	ASSERT_STREQ(d.rule, "--allow-host other.example.com:443");

	/* wildcard: subdomains on their port only, never the apex or look-alikes */
	ASSERT_TRUE(decide("a.pkgs.test", 8080).allow);
	ASSERT_TRUE(decide("a.b.pkgs.test", 8080).allow);
	ASSERT_TRUE(!decide("a.pkgs.test", 443).allow);
	ASSERT_TRUE(!decide("pkgs.test", 8080).allow);
	ASSERT_TRUE(!decide("evil-pkgs.test", 8080).allow);
	ASSERT_TRUE(!decide("a.pkgs.test.evil.example", 8080).allow);

	/* deny wins over allow */
	d = decide("evil.pkgs.test", 443);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "deny-host");
	ASSERT_STREQ(d.rule, "");
}

TEST(proxy_decide_special_names)
{
	/* metadata names: refused before any lookup even with an allow rule */
	struct moat_proxy_decision d = decide("metadata.google.internal", 80);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "metadata");
	ASSERT_STREQ(d.rule, "");
	d = decide("localhost", 80);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "local-name");
}

TEST(proxy_decide_resolve_pins)
{
	struct moat_proxy_decision d = decide("mirror.test", 8080);
	char s[MOAT_ADDR_STRLEN];
	ASSERT_TRUE(d.allow);
	ASSERT_EQ(d.n_addrs, 1);
	moat_addr_format((struct sockaddr *)&d.addrs[0], true, s, sizeof(s));
	ASSERT_STREQ(s, "127.0.0.2:8080");
	/* the mapped address itself is not allowed as a literal */
	d = decide("127.0.0.2", 8080);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "loopback");
}

TEST(proxy_decide_literals)
{
	static const char *const loop[] = {"127.0.0.1",		 "127.1",      "2130706433",
					   "0x7f000001",	 "0177.0.0.1", "[::1]",
					   "[::ffff:127.0.0.1]", "0.0.0.0",    "[::]"};
	static const char *const meta[] = {"169.254.169.254",
					   "0xa9fea9fe",
					   "2852039166",
					   "0251.0376.0251.0376",
					   "[::ffff:169.254.169.254]",
					   "[fd00:ec2::254]",
					   "100.100.100.200",
					   "168.63.129.16",
					   "[64:ff9b::a9fe:a9fe]"};
	struct moat_proxy_decision d;

	for (size_t i = 0; i < ELEMENTSOF(loop); i++) {
		d = decide(loop[i], 80);
		if (d.allow)
			moat_tap_fail(__FILE__, __LINE__, "%s allowed", loop[i]);
	}
	/* 169.254/16 is CIDR-allowed in this config, but metadata addresses need
	 * a rule naming exactly them. */
	for (size_t i = 0; i < ELEMENTSOF(meta); i++) {
		d = decide(meta[i], 80);
		if (d.allow)
			moat_tap_fail(__FILE__, __LINE__, "%s allowed", meta[i]);
		ASSERT_STREQ(d.rule, "");
	}
	ASSERT_TRUE(decide("169.254.1.1", 80).allow);

	d = decide("203.0.113.7", 443);
	ASSERT_TRUE(d.allow);
	ASSERT_STREQ(d.rule, "--allow-cidr 203.0.113.0/24");
	ASSERT_EQ(d.n_addrs, 1);
	d = decide("203.0.113.7", 80);
	ASSERT_TRUE(!d.allow);
	d = decide("198.51.100.1", 443);
	ASSERT_TRUE(!d.allow);
	d = decide("8.8.8.8", 443);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "ip-literal");
	ASSERT_STREQ(d.rule, "--allow-cidr 8.8.8.8/32:443");
}

static struct sockaddr_storage sa(const char *s)
{
	struct sockaddr_storage ss;
	if (moat_addr_parse(s, &ss) < 0)
		moat_tap_fail(__FILE__, __LINE__, "parse %s", s);
	return ss;
}

TEST(proxy_check_resolved_addresses)
{
	struct moat_proxy_config *c = cfg();
	struct moat_proxy_decision d;
	struct sockaddr_storage good[2] = {sa("8.8.4.4"), sa("2001:4860::8888")};
	struct sockaddr_storage rebind[2] = {sa("8.8.4.4"), sa("127.0.0.1")};
	struct sockaddr_storage meta[1] = {sa("::ffff:169.254.169.254")};
	struct sockaddr_storage cidr[1] = {sa("169.254.1.1")};

	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, good, 2, &d);
	ASSERT_TRUE(d.allow);
	ASSERT_EQ(d.n_addrs, 2);
	ASSERT_TRUE(moat_proxy_decision_has_addr(&d, (struct sockaddr *)&good[1]));

	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, rebind, 2, &d);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "resolved-loopback");
	ASSERT_STREQ(d.rule, "--resolve api.example.com=ADDR");

	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, meta, 1, &d);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "resolved-metadata");
	ASSERT_STREQ(d.rule, "");

	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, cidr, 1, &d);
	ASSERT_TRUE(d.allow);

	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, cidr, 0, &d);
	ASSERT_TRUE(!d.allow);
	moat_proxy_config_free(c);
}

TEST(proxy_dns_names)
{
	struct moat_proxy_config *c = cfg();
	ASSERT_TRUE(moat_proxy_name_refused(c, "api.example.com") == NULL);
	ASSERT_TRUE(moat_proxy_name_refused(c, "x.pkgs.test") == NULL);
	ASSERT_STREQ(moat_proxy_name_refused(c, "exfil.test"), "not-allowed");
	ASSERT_STREQ(moat_proxy_name_refused(c, "evil.pkgs.test"), "deny-host");
	ASSERT_STREQ(moat_proxy_name_refused(c, "metadata.google.internal"), "metadata");
	moat_proxy_config_free(c);
}

TEST(proxy_config_refuses_bad_rules)
{
	struct moat_host_rule bad[] = {{.pattern = (char[]){"*.com"}}};
	struct moat_host_rule badcidr[] = {{.pattern = (char[]){"10.0.0.1/8"}}};
	struct moat_resolve badres[] = {{.name = (char[]){"a.test"}, .addr = (char[]){"127.1"}}};
	struct moat_policy p = {.allow_hosts = bad, .n_allow_hosts = 1};
	struct moat_proxy_config *c = NULL;

	ASSERT_EQ(moat_proxy_config_from_policy(&p, &c), -EINVAL);
	p = (struct moat_policy){.allow_cidrs = badcidr, .n_allow_cidrs = 1};
	ASSERT_EQ(moat_proxy_config_from_policy(&p, &c), -EINVAL);
	p = (struct moat_policy){.resolve = badres, .n_resolve = 1};
	ASSERT_EQ(moat_proxy_config_from_policy(&p, &c), -EINVAL);
}

TEST(proxy_event_json)
{
	char buf[MOAT_PROXY_EVENT_MAX];
	char big[2000];
	struct moat_proxy_event e = {.proto = "http",
				     .name = "a.test",
				     .raw = "a\"b\\c\n\x01\xff",
				     .port = 80,
				     .allow = false,
				     .reason = "not-allowed",
				     .rule = "--allow-host a.test:80"};
	size_t n = moat_proxy_event_format(&e, buf, sizeof(buf));
	ASSERT_TRUE(n > 0 && buf[n - 1] == '\n');
	ASSERT_CONTAINS(buf, "\"raw\":\"a\\\"b\\\\c\\u000a\\u0001\\u00ff\"");
	ASSERT_CONTAINS(buf, "\"decision\":\"deny\"");
	ASSERT_CONTAINS(buf, "\"port\":80");
	/* huge fields are capped, the line still closes */
	memset(big, '\x01', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	e.raw = e.name = e.rule = e.reason = e.method = e.sni = e.addr = big;
	n = moat_proxy_event_format(&e, buf, sizeof(buf));
	ASSERT_TRUE(n < sizeof(buf));
	ASSERT_TRUE(buf[n - 2] == '}' && buf[n - 1] == '\n');
}

TEST(proxy_resolver_helper)
{
	struct moat_resolver_reply rep;
	struct pollfd pf;
	pid_t pid;
	int fd, r;
	struct moat_proxy_config *c = cfg();
	struct moat_proxy_decision d;

	/* "localhost" comes from /etc/hosts: no packet leaves the machine */
	ASSERT_EQ(moat_resolver_start(&pid, &fd), 0);
	ASSERT_EQ(moat_resolver_send(fd, 42, "localhost"), 0);
	pf = (struct pollfd){.fd = fd, .events = POLLIN};
	ASSERT_EQ(poll(&pf, 1, 5000), 1);
	r = moat_resolver_recv(fd, &rep);
	ASSERT_EQ(r, 1);
	ASSERT_EQ(rep.id, 42);
	ASSERT_EQ(rep.err, 0);
	ASSERT_TRUE(rep.n >= 1);
	/* an allowed name that resolves to loopback is refused (rebinding) */
	moat_proxy_decide(c, MOAT_HOST_NAME, "api.example.com", 443, &d);
	moat_proxy_check_addrs(c, "api.example.com", 443, rep.addrs, rep.n, &d);
	ASSERT_TRUE(!d.allow);
	ASSERT_STREQ(d.reason, "resolved-loopback");
	/* the helper exits when the worker's end closes */
	close(fd);
	ASSERT_EQ(waitpid(pid, &r, 0), pid);
	ASSERT_TRUE(WIFEXITED(r));
	moat_proxy_config_free(c);
}
