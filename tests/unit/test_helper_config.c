/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the supervisor hands to the exec'd proxy helper (supervise_net.c): the
 * per-run CA as bytes and the secrets' placeholders and values, parsed back
 * defensively (each with a control that a damaged or foreign input is
 * refused). */
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <string.h>

#include "harness/tap.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "shared/macro.h"

TEST(helper_ca_blob_round_trip)
{
	struct moat_tls_ca *ca = NULL, *back = NULL, *other = NULL;
	unsigned char *blob;
	size_t len;
	SSL_CTX *leaf = NULL;

	ASSERT_EQ(moat_tls_ca_new("t", &ca), 0);
	ASSERT_EQ(moat_tls_ca_to_blob(ca, &blob, &len), 0);
	ASSERT_EQ(moat_tls_ca_from_blob(blob, len, &back), 0);
	/* the same certificate, and the key still signs leaves */
	ASSERT_EQ(X509_cmp(moat_tls_ca_cert(ca), moat_tls_ca_cert(back)), 0);
	ASSERT_EQ(moat_tls_leaf_ctx(back, "api.test", &leaf), 0);
	SSL_CTX_free(leaf);
	/* truncated, trailing bytes, a length past the end: refused */
	ASSERT_EQ(moat_tls_ca_from_blob(blob, len - 1, &other), -EBADMSG);
	ASSERT_EQ(moat_tls_ca_from_blob(blob, 3, &other), -EBADMSG);
	unsigned char *big = malloc(len + 1);
	memcpy(big, blob, len);
	big[len] = 0;
	ASSERT_EQ(moat_tls_ca_from_blob(big, len + 1, &other), -EBADMSG);
	uint32_t huge = 0x7fffffff;
	memcpy(big, &huge, sizeof(huge));
	ASSERT_EQ(moat_tls_ca_from_blob(big, len, &other), -EBADMSG);
	free(big);
	/* a CA key that does not belong to the certificate: refused */
	struct moat_tls_ca *ca2 = NULL;
	unsigned char *blob2;
	size_t len2;
	uint32_t k1, k2;
	ASSERT_EQ(moat_tls_ca_new("u", &ca2), 0);
	ASSERT_EQ(moat_tls_ca_to_blob(ca2, &blob2, &len2), 0);
	memcpy(&k1, blob, 4);
	memcpy(&k2, blob2, 4);
	if (k1 == k2) { /* same key size: swap the CA keys */
		memcpy(blob + 4, blob2 + 4, k1);
		ASSERT_EQ(moat_tls_ca_from_blob(blob, len, &other), -EBADMSG);
	}
	ASSERT_TRUE(other == NULL);
	moat_tls_ca_blob_free(blob, len);
	moat_tls_ca_blob_free(blob2, len2);
	moat_tls_ca_free(ca);
	moat_tls_ca_free(ca2);
	moat_tls_ca_free(back);
}

TEST(helper_secrets_adopt)
{
	char host[] = "api.test", name[] = "GH_TOKEN", from[] = "GH_TOKEN";
	char *hosts[] = {host};
	struct moat_secret def = {.name = name,
				  .source = MOAT_SECRET_ENV,
				  .from = from,
				  .hosts = hosts,
				  .n_hosts = 1};
	struct moat_secrets *s = NULL;
	char ph[MOAT_SECRETS_PLACEHOLDER_MAX];
	const char *v;
	size_t len;

	ASSERT_EQ(moat_secrets_new_placeholders(&def, 1, &s, NULL), 0);
	ASSERT_EQ(moat_secrets_placeholder_new("GH_TOKEN", ph), 0);
	ASSERT_EQ(moat_secrets_adopt(s, 0, ph, strlen(ph), "tok-1", 5), 0);
	ASSERT_STREQ(moat_secrets_placeholder(s, 0), ph);
	ASSERT_EQ(moat_secrets_value(s, 0, &v, &len), 0);
	ASSERT_EQ(len, 5);
	ASSERT_EQ(memcmp(v, "tok-1", 5), 0);
	/* the placeholder is what this secret's must look like, nothing else */
	char bad[MOAT_SECRETS_PLACEHOLDER_MAX];
	ASSERT_EQ(moat_secrets_placeholder_new("OTHER", bad), 0);
	ASSERT_EQ(moat_secrets_adopt(s, 0, bad, strlen(bad), "x", 1), -EINVAL);
	snprintf(bad, sizeof(bad), "%s", ph);
	bad[strlen(bad) - 1] = 'G';
	ASSERT_EQ(moat_secrets_adopt(s, 0, bad, strlen(bad), "x", 1), -EINVAL);
	ASSERT_EQ(moat_secrets_adopt(s, 0, ph, strlen(ph) - 1, "x", 1), -EINVAL);
	ASSERT_EQ(moat_secrets_adopt(s, 1, ph, strlen(ph), "x", 1), -EINVAL);
	ASSERT_EQ(moat_secrets_adopt(s, 0, ph, strlen(ph), "x", MOAT_SECRETS_MAX_VALUE + 1),
		  -EINVAL);
	/* the earlier value stays */
	ASSERT_EQ(moat_secrets_value(s, 0, &v, &len), 0);
	ASSERT_EQ(memcmp(v, "tok-1", 5), 0);
	moat_secrets_free(s);
}
