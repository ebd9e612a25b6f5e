/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One JSON line per proxy decision, written to the event fd the supervisor
 * reads. A deliberately simple writer; the audit module's writer may replace
 * it at integration (the fields are the same).
 *
 * {"time":"2026-11-29T15:04:05.123Z","type":"net","proto":"connect",
 *  "name":"api.example.com","raw":"api.example.com:443","addr":"203.0.113.7",
 *  "port":443,"method":"CONNECT","sni":"api.example.com","decision":"allow",
 *  "reason":"allow-host","rule":"--allow-host api.example.com:443",
 *  "bytes_up":517,"bytes_down":4096,"duration_ms":120}
 * Empty strings and absent numbers (port 0) are left out.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct moat_proxy_event {
	const char *proto; /* http, connect, socks, transparent, dns, udp, icmp, ip */
	const char *name; /* normalized host name, or "" */
	const char *raw; /* the destination as the client wrote it (escaped) */
	const char *addr; /* address dialed (allow) or looked at (deny) */
	uint16_t port;
	const char *method; /* HTTP method, DNS qtype */
	const char *sni;
	bool allow;
	const char *reason;
	const char *rule;
	uint64_t bytes_up, bytes_down, duration_ms;
};

#define MOAT_PROXY_EVENT_MAX 4000 /* < PIPE_BUF: one write() stays atomic */

/* Format as one line ending in '\n'. Strings are JSON-escaped and capped, so
 * the line always fits MOAT_PROXY_EVENT_MAX. Returns the length. */
size_t moat_proxy_event_format(const struct moat_proxy_event *e, char *buf, size_t len);
/* Format and write to fd (ignored if fd < 0). Returns 0 or -errno. */
int moat_proxy_event_write(int fd, const struct moat_proxy_event *e);
