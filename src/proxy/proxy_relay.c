/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Moving bytes once the upstream is connected: the splice relay (HTTP requests
 * fed through proxy_http.c) or TLS interception (proxy/intercept.c). */
#include "proxy/proxy_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/intercept.h"
#include "shared/macro.h"

/* ---- relaying ---------------------------------------------------------------- */

void moat_proxy_enter_relay(struct conn *c)
{
	struct proxy *p = c->p;

	c->up.src = c->cfd;
	c->up.dst = c->ufd;
	c->down.src = c->ufd;
	c->down.dst = c->cfd;
	c->down.splice = true;
	if (moat_proxy_half_open_pipe(&c->down) < 0) {
		moat_proxy_conn_close(c);
		return;
	}
	if (c->http) {
		c->down.no_shut = true;
	} else {
		c->up.splice = true;
		if (moat_proxy_half_open_pipe(&c->up) < 0 ||
		    moat_proxy_buf_add(&c->up, c->in, c->in_len) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		c->in_len = 0;
		free(c->in);
		c->in = NULL;
	}
	c->state = S_RELAY;
	moat_proxy_set_deadline(c, p->idle_ms);
	if (c->http) {
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		moat_proxy_http_process(c);
		if (!moat_proxy_alive(p, slot, gen))
			return;
	}
	moat_proxy_conn_update(c);
}

void moat_proxy_relay_pump(struct conn *c)
{
	int a = moat_proxy_half_pump(&c->up), b;

	if (a < 0) {
		moat_proxy_conn_close(c);
		return;
	}
	b = moat_proxy_half_pump(&c->down);
	if (b < 0) {
		moat_proxy_conn_close(c);
		return;
	}
	if (a > 0 || b > 0)
		moat_proxy_set_deadline(c, c->p->idle_ms);
	if (c->http) {
		/* The client finished: pass the EOF on once its bytes are out. */
		if ((c->client_eof || c->http_stop) && c->up.off == c->up.len && !c->up.dst_shut) {
			(void)shutdown(c->ufd, SHUT_WR);
			c->up.dst_shut = true;
		}
		/* The response ended: send a pending refusal, then close. */
		if (c->down.src_eof && c->down.in_pipe == 0 && c->down.off == c->down.len) {
			char *f = TAKE_PTR(c->final);
			moat_proxy_finish_with(c, f, f ? c->final_len : 0);
			free(f);
			return;
		}
	} else if (c->up.dst_shut && c->down.dst_shut) {
		moat_proxy_conn_close(c);
		return;
	}
	moat_proxy_conn_update(c);
}

/* ---- credential proxy: TLS interception --------------------------------------- */

/* One event per request inside an intercepted connection; refusals that
 * involve a secret carry "alert" in the reason's prefix. */
static void tls_report(void *userdata, const struct moat_intercept_report *r)
{
	struct conn *c = userdata;
	char reason[400];

	moat_http1_slice_copy((struct moat_http1_slice){r->method, strlen(r->method)}, c->method,
			      sizeof(c->method));
	if (r->allowed)
		snprintf(reason, sizeof(reason), "%s%s%s%s", r->secret ? "secret-injected " : "",
			 r->secret ? r->secret : "", r->warning ? "; warning: " : "",
			 r->warning ? r->warning : "");
	else
		snprintf(reason, sizeof(reason), "%s%s", r->alert ? "alert: " : "",
			 r->reason ? r->reason : "refused");
	moat_proxy_req_event(c, r->allowed,
			     r->allowed && !r->secret && !r->warning ? "intercepted" : reason);
}

void moat_proxy_tls_step(struct conn *c)
{
	struct proxy *p = c->p;
	uint32_t ce = 0, ue = 0;
	int r = moat_intercept_step(c->icpt, &ce, &ue);

	if (r != 0) {
		if (r < 0 && !c->logged)
			moat_proxy_conn_event(c, false,
					      moat_intercept_error(c->icpt)[0]
						      ? moat_intercept_error(c->icpt)
						      : "tls-failed",
					      NULL);
		moat_proxy_conn_close(c);
		return;
	}
	moat_proxy_set_deadline(c, p->idle_ms);
	(void)moat_loop_mod(p->loop, c->cfd, ce);
	(void)moat_loop_mod(p->loop, c->ufd, ue);
}

void moat_proxy_enter_tls(struct conn *c)
{
	const struct moat_proxy_config *cfg = c->p->cfg;
	struct moat_intercept_config ic = {
		.ca = cfg->ca,
		.upstream_ctx = cfg->upstream_tls,
		.secrets = cfg->secrets,
		.rules = cfg->http_rules,
		.n_rules = cfg->n_http_rules,
		.limits = c->p->hlim, /* one grammar, one set of limits */
		.port = c->port,
		.report = tls_report,
		.userdata = c,
	};

	/* The ClientHello the proxy read to check the SNI is replayed to the
	 * TLS server side. */
	if (moat_intercept_new_prefixed(&ic, c->name, c->cfd, c->in, c->in_len, c->ufd, &c->icpt) <
	    0) {
		moat_proxy_conn_event(c, false, "tls-intercept-failed", NULL);
		moat_proxy_conn_close(c);
		return;
	}
	free(c->in);
	c->in = NULL;
	c->in_len = 0;
	c->proto = "https";
	c->state = S_TLS;
	moat_proxy_tls_step(c);
}
