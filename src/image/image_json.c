/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON of an image (image.h): index.json, a manifest, an image config,
 * docker-archive's manifest.json. Pure: bytes in, structures out, every
 * count and string bounded, every unknown media type refused by name.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "shared/macro.h"

#if defined(__x86_64__)
#define HOST_ARCH "amd64"
#elif defined(__aarch64__)
#define HOST_ARCH "arm64"
#else
#define HOST_ARCH "unknown"
#endif

_printf_(4, 5) static int fail(int e, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -e;
}

static json_t *load(const char *json, size_t len, char *why, size_t whylen)
{
	json_error_t je;
	if (len > MOAT_IMAGE_JSON_MAX) {
		fail(EFBIG, why, whylen, "more than %u bytes", MOAT_IMAGE_JSON_MAX);
		return NULL;
	}
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fail(EINVAL, why, whylen, "not JSON: %.80s (line %d)", je.text, je.line);
	else if (!json_is_object(j) && !json_is_array(j)) {
		fail(EINVAL, why, whylen, "not a JSON object");
		json_decref(j);
		return NULL;
	}
	return j;
}

int moat_image_digest_check(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) != 0 || strlen(d) != MOAT_IMAGE_DIGEST_LEN)
		return -EINVAL;
	for (const char *c = d + 7; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return -EINVAL;
	return 0;
}

int moat_image_layer_type(const char *mt, enum moat_image_comp *ret)
{
	static const struct {
		const char *type;
		enum moat_image_comp comp;
	} types[] = {
		{"application/vnd.oci.image.layer.v1.tar", MOAT_IMAGE_COMP_NONE},
		{"application/vnd.oci.image.layer.v1.tar+gzip", MOAT_IMAGE_COMP_GZIP},
		{"application/vnd.oci.image.layer.v1.tar+zstd", MOAT_IMAGE_COMP_ZSTD},
		{"application/vnd.oci.image.layer.nondistributable.v1.tar", MOAT_IMAGE_COMP_NONE},
		{"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
		 MOAT_IMAGE_COMP_GZIP},
		{"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
		 MOAT_IMAGE_COMP_ZSTD},
		{"application/vnd.docker.image.rootfs.diff.tar", MOAT_IMAGE_COMP_NONE},
		{"application/vnd.docker.image.rootfs.diff.tar.gzip", MOAT_IMAGE_COMP_GZIP},
		{"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", MOAT_IMAGE_COMP_GZIP},
	};
	for (size_t i = 0; mt && i < ELEMENTSOF(types); i++)
		if (streq(mt, types[i].type)) {
			*ret = types[i].comp;
			return 0;
		}
	return -EPROTONOSUPPORT;
}

/* {mediaType, digest, size} */
static int desc(json_t *o, const char *what, struct moat_image_desc *d, char *why, size_t whylen)
{
	memset(d, 0, sizeof(*d));
	if (!json_is_object(o))
		return fail(EINVAL, why, whylen, "%s: not an object", what);
	const char *dg = json_string_value(json_object_get(o, "digest"));
	json_t *sz = json_object_get(o, "size");
	if (moat_image_digest_check(dg) < 0)
		return fail(EINVAL, why, whylen, "%s: digest %.80s: not sha256:<64 hex digits>",
			    what, dg ? dg : "(missing)");
	if (!json_is_integer(sz) || json_integer_value(sz) < 0 ||
	    (uint64_t)json_integer_value(sz) > MOAT_IMAGE_BLOB_MAX)
		return fail(EFBIG, why, whylen, "%s: size missing or over %llu bytes", what,
			    (unsigned long long)MOAT_IMAGE_BLOB_MAX);
	memcpy(d->digest, dg, MOAT_IMAGE_DIGEST_LEN + 1);
	d->size = (uint64_t)json_integer_value(sz);
	return 0;
}

static bool is_manifest_type(const char *mt)
{
	return mt &&
		(streq(mt, "application/vnd.oci.image.manifest.v1+json") ||
		 streq(mt, "application/vnd.docker.distribution.manifest.v2+json"));
}

static bool is_index_type(const char *mt)
{
	return mt &&
		(streq(mt, "application/vnd.oci.image.index.v1+json") ||
		 streq(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

int moat_image_parse_index(const char *json, size_t len, struct moat_image_desc *ret, char *why,
			   size_t whylen)
{
	json_t *j = load(json, len, why, whylen);
	if (!j)
		return -EINVAL;
	int k = 0;
	unsigned found = 0;
	json_t *ms = json_object_get(j, "manifests"), *m;
	size_t i;
	if (!json_is_object(j) || json_integer_value(json_object_get(j, "schemaVersion")) != 2) {
		k = fail(EINVAL, why, whylen, "index.json: schemaVersion is not 2");
		goto out;
	}
	if (!json_is_array(ms) || json_array_size(ms) == 0 ||
	    json_array_size(ms) > MOAT_IMAGE_MANIFESTS_MAX) {
		k = fail(EINVAL, why, whylen, "index.json: manifests: 1 to %u descriptors",
			 MOAT_IMAGE_MANIFESTS_MAX);
		goto out;
	}
	json_array_foreach(ms, i, m)
	{
		struct moat_image_desc d;
		char what[48];
		snprintf(what, sizeof(what), "index.json: manifests[%zu]", i);
		if (!json_is_object(m)) {
			k = fail(EINVAL, why, whylen, "%s: not an object", what);
			goto out;
		}
		const char *mt = json_string_value(json_object_get(m, "mediaType"));
		json_t *pl = json_object_get(m, "platform");
		if (pl) {
			const char *os = json_string_value(json_object_get(pl, "os"));
			const char *arch = json_string_value(json_object_get(pl, "architecture"));
			if (!os || !arch || !streq(os, "linux") || !streq(arch, HOST_ARCH))
				continue; /* another platform, or an attestation */
		}
		if (!is_manifest_type(mt) && !is_index_type(mt)) {
			k = fail(EPROTONOSUPPORT, why, whylen, "%s: media type %.100s: unsupported",
				 what, mt ? mt : "(missing)");
			goto out;
		}
		if ((k = desc(m, what, &d, why, whylen)) < 0)
			goto out;
		d.is_index = is_index_type(mt);
		if (found++) {
			k = fail(EINVAL, why, whylen,
				 "index.json: more than one image for linux/" HOST_ARCH
				 ": give a layout with one");
			goto out;
		}
		*ret = d;
	}
	if (!found)
		k = fail(ENOENT, why, whylen, "index.json: no image for linux/" HOST_ARCH);
out:
	json_decref(j);
	return k;
}

int moat_image_parse_manifest(const char *json, size_t len, struct moat_image_manifest *ret,
			      char *why, size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	json_t *j = load(json, len, why, whylen);
	if (!j)
		return -EINVAL;
	int k = 0;
	const char *mt = json_string_value(json_object_get(j, "mediaType"));
	json_t *cfg = json_object_get(j, "config"), *ls = json_object_get(j, "layers"), *l;
	size_t i;
	if (!json_is_object(j) || json_integer_value(json_object_get(j, "schemaVersion")) != 2) {
		k = fail(EINVAL, why, whylen, "manifest: schemaVersion is not 2");
		goto out;
	}
	if (json_object_get(j, "mediaType") && !is_manifest_type(mt)) {
		k = fail(EPROTONOSUPPORT, why, whylen, "manifest: media type %.100s: unsupported",
			 mt ? mt : "(not a string)");
		goto out;
	}
	const char *ct = json_string_value(json_object_get(cfg, "mediaType"));
	if (!ct ||
	    (!streq(ct, "application/vnd.oci.image.config.v1+json") &&
	     !streq(ct, "application/vnd.docker.container.image.v1+json"))) {
		k = fail(EPROTONOSUPPORT, why, whylen,
			 "manifest: config: media type %.100s: not an image config",
			 ct ? ct : "(missing)");
		goto out;
	}
	if ((k = desc(cfg, "manifest: config", &ret->config, why, whylen)) < 0)
		goto out;
	if (ret->config.size > MOAT_IMAGE_JSON_MAX) {
		k = fail(EFBIG, why, whylen, "manifest: config: over %u bytes",
			 MOAT_IMAGE_JSON_MAX);
		goto out;
	}
	if (!json_is_array(ls) || json_array_size(ls) == 0 ||
	    json_array_size(ls) > MOAT_IMAGE_LAYERS_MAX) {
		k = fail(EINVAL, why, whylen, "manifest: layers: 1 to %u descriptors",
			 MOAT_IMAGE_LAYERS_MAX);
		goto out;
	}
	json_array_foreach(ls, i, l)
	{
		char what[40];
		snprintf(what, sizeof(what), "manifest: layers[%zu]", i);
		if ((k = desc(l, what, &ret->layers[i], why, whylen)) < 0)
			goto out;
		const char *lt = json_string_value(json_object_get(l, "mediaType"));
		if (moat_image_layer_type(lt, &ret->layers[i].comp) < 0) {
			k = fail(EPROTONOSUPPORT, why, whylen,
				 "%s: media type %.100s: not a layer moat can unpack (tar, "
				 "tar+gzip, tar+zstd)",
				 what, lt ? lt : "(missing)");
			goto out;
		}
		ret->n_layers++;
	}
out:
	json_decref(j);
	return k;
}

int moat_image_rel_check(const char *name)
{
	if (!name || !*name || name[0] == '/' || strlen(name) > MOAT_IMAGE_PATH_MAX)
		return -EINVAL;
	for (const char *c = name; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 2 && c[0] == '.' && c[1] == '.') || (n == 1 && c[0] == '.'))
			return -EINVAL;
		c += n;
		if (*c == '/')
			c++;
	}
	return 0;
}

void moat_image_docker_done(struct moat_image_docker *d)
{
	free(d->config);
	for (unsigned i = 0; i < d->n_layers; i++)
		free(d->layers[i]);
	memset(d, 0, sizeof(*d));
}

int moat_image_parse_docker(const char *json, size_t len, struct moat_image_docker *ret, char *why,
			    size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	json_t *j = load(json, len, why, whylen);
	if (!j)
		return -EINVAL;
	int k = 0;
	json_t *m = json_array_get(j, 0), *ls, *l;
	size_t i;
	if (!json_is_array(j) || json_array_size(j) != 1 || !json_is_object(m)) {
		k = fail(EINVAL, why, whylen,
			 "manifest.json: not an array of one image (give an archive of one)");
		goto out;
	}
	const char *c = json_string_value(json_object_get(m, "Config"));
	ls = json_object_get(m, "Layers");
	if (moat_image_rel_check(c) < 0) {
		k = fail(EINVAL, why, whylen, "manifest.json: Config: not a name in the archive");
		goto out;
	}
	if (!json_is_array(ls) || json_array_size(ls) == 0 ||
	    json_array_size(ls) > MOAT_IMAGE_LAYERS_MAX) {
		k = fail(EINVAL, why, whylen, "manifest.json: Layers: 1 to %u names",
			 MOAT_IMAGE_LAYERS_MAX);
		goto out;
	}
	if (!(ret->config = strdup(c))) {
		k = -ENOMEM;
		goto out;
	}
	json_array_foreach(ls, i, l)
	{
		const char *s = json_string_value(l);
		if (moat_image_rel_check(s) < 0) {
			k = fail(EINVAL, why, whylen,
				 "manifest.json: Layers[%zu]: not a name in the archive", i);
			goto out;
		}
		if (!(ret->layers[i] = strdup(s))) {
			k = -ENOMEM;
			goto out;
		}
		ret->n_layers++;
	}
out:
	if (k < 0)
		moat_image_docker_done(ret);
	json_decref(j);
	return k;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void moat_image_config_done(struct moat_image_config *c)
{
	strv_free(c->env);
	strv_free(c->entrypoint);
	strv_free(c->cmd);
	free(c->workdir);
	free(c->user);
	memset(c, 0, sizeof(*c));
}

/* An array of strings (null or absent: none), each at most MOAT_IMAGE_STR_MAX. */
static int strv(json_t *a, const char *what, size_t max, char ***ret, size_t *ret_n, char *why,
		size_t whylen)
{
	json_t *s;
	size_t i;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > max)
		return fail(EINVAL, why, whylen, "config: %s: not an array of at most %zu strings",
			    what, max);
	char **v = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	json_array_foreach(a, i, s)
	{
		if (!json_is_string(s) || json_string_length(s) > MOAT_IMAGE_STR_MAX ||
		    strlen(json_string_value(s)) != json_string_length(s)) {
			strv_free(v);
			return fail(EINVAL, why, whylen,
				    "config: %s[%zu]: not a string of at most %u bytes", what, i,
				    MOAT_IMAGE_STR_MAX);
		}
		if (!(v[i] = strdup(json_string_value(s)))) {
			strv_free(v);
			return -ENOMEM;
		}
	}
	*ret = v;
	*ret_n = json_array_size(a);
	return 0;
}

static int str(json_t *s, const char *what, char **ret, char *why, size_t whylen)
{
	if (!s || json_is_null(s))
		return 0;
	if (!json_is_string(s) || json_string_length(s) > MOAT_IMAGE_STR_MAX ||
	    strlen(json_string_value(s)) != json_string_length(s))
		return fail(EINVAL, why, whylen, "config: %s: not a string of at most %u bytes",
			    what, MOAT_IMAGE_STR_MAX);
	if (!json_string_length(s))
		return 0;
	return (*ret = strdup(json_string_value(s))) ? 0 : -ENOMEM;
}

bool moat_image_env_ok(const char *e)
{
	size_t n = strcspn(e, "=");
	if (!e[n] || n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((e[i] >= 'A' && e[i] <= 'Z') || (e[i] >= 'a' && e[i] <= 'z') || e[i] == '_' ||
		      (i && e[i] >= '0' && e[i] <= '9')))
			return false;
	return true;
}

int moat_image_parse_config(const char *json, size_t len, struct moat_image_config *ret, char *why,
			    size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	json_t *j = load(json, len, why, whylen);
	if (!j)
		return -EINVAL;
	int k = 0;
	const char *os = json_string_value(json_object_get(j, "os"));
	json_t *c = json_object_get(j, "config"), *rf = json_object_get(j, "rootfs");
	json_t *ids = json_object_get(rf, "diff_ids"), *d;
	size_t i;
	if (!json_is_object(j)) {
		k = fail(EINVAL, why, whylen, "config: not an object");
		goto out;
	}
	if (json_object_get(j, "os") && (!os || !streq(os, "linux"))) {
		k = fail(EINVAL, why, whylen, "config: os %.40s: not linux", os ? os : "?");
		goto out;
	}
	const char *rt = json_string_value(json_object_get(rf, "type"));
	if (!rt || !streq(rt, "layers") || !json_is_array(ids) ||
	    json_array_size(ids) > MOAT_IMAGE_LAYERS_MAX) {
		k = fail(EINVAL, why, whylen,
			 "config: rootfs: not {\"type\": \"layers\", \"diff_ids\": [...]} of at "
			 "most %u",
			 MOAT_IMAGE_LAYERS_MAX);
		goto out;
	}
	json_array_foreach(ids, i, d)
	{
		if (moat_image_digest_check(json_string_value(d)) < 0) {
			k = fail(EINVAL, why, whylen, "config: rootfs.diff_ids[%zu]: not a digest",
				 i);
			goto out;
		}
		memcpy(ret->diff_ids[i], json_string_value(d), MOAT_IMAGE_DIGEST_LEN + 1);
		ret->n_diff_ids++;
	}
	if (c && !json_is_null(c) && !json_is_object(c)) {
		k = fail(EINVAL, why, whylen, "config: config: not an object");
		goto out;
	}
	if ((k = strv(json_object_get(c, "Env"), "Env", MOAT_IMAGE_ENV_MAX, &ret->env, &ret->n_env,
		      why, whylen)) < 0 ||
	    (k = strv(json_object_get(c, "Entrypoint"), "Entrypoint", MOAT_IMAGE_ARGS_MAX,
		      &ret->entrypoint, &ret->n_entrypoint, why, whylen)) < 0 ||
	    (k = strv(json_object_get(c, "Cmd"), "Cmd", MOAT_IMAGE_ARGS_MAX, &ret->cmd, &ret->n_cmd,
		      why, whylen)) < 0 ||
	    (k = str(json_object_get(c, "WorkingDir"), "WorkingDir", &ret->workdir, why, whylen)) <
		    0 ||
	    (k = str(json_object_get(c, "User"), "User", &ret->user, why, whylen)) < 0)
		goto out;
	for (i = 0; i < ret->n_env; i++)
		if (!moat_image_env_ok(ret->env[i])) {
			k = fail(EINVAL, why, whylen, "config: Env[%zu]: not NAME=VALUE", i);
			goto out;
		}
	if (ret->workdir && ret->workdir[0] != '/') {
		k = fail(EINVAL, why, whylen, "config: WorkingDir: not an absolute path");
		goto out;
	}
out:
	if (k < 0)
		moat_image_config_done(ret);
	json_decref(j);
	return k;
}
