/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The network plugins' loader and ops tables (src/network/net_plugin.h): the
 * unit-test binary sits next to this build's plugins, so it loads them the
 * way moat does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness/tap.h"
#include "network/net_config.h"
#include "network/net_plugin.h"
#include "shared/macro.h"

TEST(net_plugins_of_this_build_load)
{
	struct moat_error e = {0};
	const struct moat_net_plugin_ops *net;
	const struct moat_nft_plugin_ops *nft;

	ASSERT_EQ(moat_net_plugins_present(&e), 0);
	net = moat_net_plugin_load(&e);
	ASSERT_TRUE(net != NULL);
	ASSERT_EQ(net->abi_version, MOAT_NET_PLUGIN_ABI_VERSION);
	ASSERT_EQ(net->size, (uint32_t)sizeof(*net));
	ASSERT_STREQ(net->abi, MOAT_NET_PLUGIN_ABI);
	/* once per process */
	ASSERT_TRUE(moat_net_plugin_load(&e) == net);
	nft = moat_nft_plugin_load(&e);
	if (!nft)
		fprintf(stderr, "# %s\n", e.message);
	ASSERT_TRUE(nft != NULL);
	ASSERT_STREQ(nft->abi, MOAT_NET_PLUGIN_ABI);
	/* the plugin's own code, not this binary's: its table is not ours */
	ASSERT_TRUE(net != moat_net_plugin_v2());
}

/* The credential proxy through the table, with only serialized policy and
 * opaque handles: placeholders at once, no value before creds_load (the
 * configuration refuses, -ENOKEY), the values after it. */
TEST(net_plugin_creds_through_the_table)
{
	static const char policy[] =
		"{\"version\":1,\"network\":{\"mode\":\"allow\"},\"secrets\":[{\"name\":"
		"\"MOAT_UT_TOKEN\",\"from_env\":\"MOAT_UT_TOKEN_SRC\",\"hosts\":[\"api.example.test\"]}]}";
	struct moat_error e = {0};
	const struct moat_net_plugin_ops *net = moat_net_plugin_load(&e);
	struct moat_net_creds *c = NULL;
	uint32_t n = 0;
	int fd;

	ASSERT_TRUE(net != NULL);
	ASSERT_EQ(net->creds_new(policy, strlen(policy), "0123456789abcdef", &c, &e), 0);
	ASSERT_EQ(net->creds_count(c), 1u);
	ASSERT_STREQ(net->creds_name(c, 0), "MOAT_UT_TOKEN");
	ASSERT_CONTAINS(net->creds_placeholder(c, 0), "moat-ph-MOAT_UT_TOKEN-");
	fd = memfd_create("ut", MFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(net->creds_config(c, fd, &n), -ENOKEY);
	/* the control: with the value loaded, the CA and the secret go in */
	ASSERT_EQ(setenv("MOAT_UT_TOKEN_SRC", "s3cr3t-value", 1), 0);
	ASSERT_EQ(net->creds_load(c, &e), 0);
	ASSERT_EQ(ftruncate(fd, 0), 0);
	ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
	ASSERT_EQ(net->creds_config(c, fd, &n), 0);
	ASSERT_EQ(n, 2u);
	/* dropped: the source variable is scrubbed, no value is left */
	net->creds_drop(c);
	ASSERT_TRUE(getenv("MOAT_UT_TOKEN_SRC") == NULL);
	ASSERT_EQ(ftruncate(fd, 0), 0);
	ASSERT_EQ(net->creds_config(c, fd, &n), -ENOKEY);
	close(fd);
	ASSERT_TRUE(net->creds_free(c) == NULL);
}

/* A bad policy is refused by the plugin's own parser, with the message. */
TEST(net_plugin_creds_bad_policy)
{
	static const char policy[] = "{\"version\":1,\"secrets\":[{\"name\":\"X\"}]}";
	struct moat_error e = {0};
	const struct moat_net_plugin_ops *net = moat_net_plugin_load(&e);
	struct moat_net_creds *c = NULL;

	ASSERT_TRUE(net != NULL);
	ASSERT_TRUE(net->creds_new(policy, strlen(policy), "0123456789abcdef", &c, &e) < 0);
	ASSERT_TRUE(c == NULL);
	ASSERT_TRUE(e.message[0] != '\0');
}
