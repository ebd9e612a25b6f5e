/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "proxy/event.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shared/macro.h"

#define FIELD_MAX 300 /* input bytes per string field */

struct out {
	char *p;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n >= o->cap)
		n = o->cap - o->len - 1;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = 0;
}

static void put_str(struct out *o, const char *key, const char *v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[FIELD_MAX * 6 + 8];
	size_t k = 0;

	if (!v || !*v)
		return;
	put(o, ",\"", 2);
	put(o, key, strlen(key));
	put(o, "\":\"", 3);
	for (size_t i = 0; v[i] && i < FIELD_MAX; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c == '"' || c == '\\') {
			tmp[k++] = '\\';
			tmp[k++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			/* Bytes, not characters: the log never holds raw
			 * control or non-ASCII bytes from the sandbox. */
			memcpy(tmp + k, "\\u00", 4);
			tmp[k + 4] = hex[c >> 4];
			tmp[k + 5] = hex[c & 15];
			k += 6;
		} else {
			tmp[k++] = (char)c;
		}
	}
	put(o, tmp, k);
	put(o, "\"", 1);
}

static void put_num(struct out *o, const char *key, uint64_t v)
{
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%llu", key, (unsigned long long)v);
	if (n > 0)
		put(o, tmp, (size_t)n);
}

size_t moat_proxy_event_format(const struct moat_proxy_event *e, char *buf, size_t len)
{
	struct out o = {.p = buf, .cap = len - 3};
	struct timespec ts;
	struct tm tm;
	char t[64];
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(t, sizeof(t),
		     "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"type\":\"net\"",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000);
	buf[0] = 0;
	put(&o, t, n > 0 ? (size_t)n : 0);
	put_str(&o, "proto", e->proto);
	put_str(&o, "name", e->name);
	put_str(&o, "raw", e->raw);
	put_str(&o, "addr", e->addr);
	if (e->port)
		put_num(&o, "port", e->port);
	put_str(&o, "method", e->method);
	put_str(&o, "sni", e->sni);
	put_str(&o, "decision", e->allow ? "allow" : "deny");
	put_str(&o, "reason", e->reason);
	put_str(&o, "rule", e->rule);
	put_num(&o, "bytes_up", e->bytes_up);
	put_num(&o, "bytes_down", e->bytes_down);
	put_num(&o, "duration_ms", e->duration_ms);
	o.cap = len; /* the reserve below is for the closing bytes */
	put(&o, "}\n", 2);
	return o.len;
}

int moat_proxy_event_write(int fd, const struct moat_proxy_event *e)
{
	char buf[MOAT_PROXY_EVENT_MAX];
	size_t n;

	if (fd < 0)
		return 0;
	n = moat_proxy_event_format(e, buf, sizeof(buf));
	for (;;) {
		ssize_t w = write(fd, buf, n);
		if (w >= 0)
			return (size_t)w == n ? 0 : -EIO;
		if (errno != EINTR)
			return negerrno();
	}
}
