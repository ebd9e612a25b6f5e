/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy helper's descriptors and configuration (see supervise_net.c):
 * written by the supervisor (libmoat, and moat-net.so's creds_config for the
 * CA and the secrets), read by the helper (moat-net.so's helper_main).
 *
 * The configuration: a header (magic, version, the plugin ABI, the uid/gid
 * to become, the number of records), then records [u32 type, u32 len,
 * bytes]: one POLICY (the "network" and "secrets" sections of the effective
 * policy as JSON, parsed again by the policy parser with its limits), at most
 * one CA (moat_tls_ca_to_blob) and one SECRET per secret ([u32 index, u32
 * placeholder length, placeholder, value]). Native byte order: writer and
 * reader are the same build (the ABI string).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

#define MOAT_NET_HELPER_FD_EVENTS 3
#define MOAT_NET_HELPER_FD_CONFIG 4
#define MOAT_NET_HELPER_FD_CTL 5
#define MOAT_NET_CFG_MAGIC "moat proxy config"
#define MOAT_NET_CFG_VERSION 1u
#define MOAT_NET_CFG_MAX_BYTES (16u << 20)
#define MOAT_NET_CFG_MAX_RECORDS (2u + MOAT_MAX_SECRETS)

enum {
	MOAT_NET_CFG_POLICY = 1,
	MOAT_NET_CFG_CA = 2,
	MOAT_NET_CFG_SECRET = 3
};

struct moat_net_cfg_head {
	char magic[24];
	uint32_t version;
	char abi[64];
	uint32_t uid, gid; /* what the helper becomes when it starts as root */
	uint32_t n_records;
};

struct moat_net_cfg_rec {
	uint32_t type;
	uint32_t len;
};

/* One record ([type, len], then @a and @b) appended to @fd. */
int moat_net_cfg_put(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
