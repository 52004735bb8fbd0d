// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* config.c - the session list (docs/bfdpeer.md): JSON in, struct peer_session_cfg out. */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bfd_shared.h"
#include "bfdpeer.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int parse_addr(const char *text, uint8_t *family, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, text, out) == 1) {
		*family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, text, out) == 1) {
		*family = 6;
		return 0;
	}
	return -1;
}

/* An optional integer member within [lo, hi]; absent leaves *@out alone. */
static int get_uint(json_t *o, const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
		    const char *where, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    json_integer_value(v) > (json_int_t)hi)
		return fail(err, errlen, "%s: %s must be an integer in %llu..%llu", where, key,
			    (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_bool(json_t *o, const char *key, bool *out, const char *where, char *err,
		    size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(err, errlen, "%s: %s must be true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

static const char *const known_keys[] = {
    "local",
    "peer",
    "interval_ms",
    "desired_min_tx_us",
    "required_min_rx_us",
    "detect_mult",
    "multihop",
    "min_ttl",
    "passive",
    "admin_down",
    "my_disc",
    "demand",
    "demand_poll_us",
    NULL,
};

static int parse_one(json_t *o, const char *where, struct peer_session_cfg *c, char *err,
		     size_t errlen)
{
	uint64_t interval_ms = 0, tx = 1000000, rx = 1000000, mult = 3, ttl = 254, disc = 0,
		 demand_poll = 1000000;
	const char *key, *local, *peer;
	uint8_t fam_peer;
	json_t *v;

	if (!json_is_object(o))
		return fail(err, errlen, "%s: expected an object", where);
	json_object_foreach(o, key, v)
	{
		const char *const *k;

		for (k = known_keys; *k && strcmp(*k, key); k++)
			;
		if (!*k)
			return fail(err, errlen, "%s: unknown key \"%s\"", where, key);
	}
	local = json_string_value(json_object_get(o, "local"));
	peer = json_string_value(json_object_get(o, "peer"));
	if (!local || !peer)
		return fail(err, errlen, "%s: \"local\" and \"peer\" (addresses) are required",
			    where);
	memset(c, 0, sizeof(*c));
	if (parse_addr(local, &c->family, c->local_addr))
		return fail(err, errlen, "%s: local \"%s\" is not an IPv4 or IPv6 address", where,
			    local);
	if (parse_addr(peer, &fam_peer, c->peer_addr) || fam_peer != c->family)
		return fail(err, errlen, "%s: peer \"%s\" is not an address of local's family",
			    where, peer);
	/* RFC 5880 4.1: the intervals are 32-bit microseconds; bfdd accepts 10 ms to 60 s. */
	if (get_uint(o, "interval_ms", 1, 4294967, &interval_ms, where, err, errlen))
		return -1;
	if (interval_ms)
		tx = rx = interval_ms * 1000;
	if (get_uint(o, "desired_min_tx_us", 1, UINT32_MAX, &tx, where, err, errlen) ||
	    get_uint(o, "required_min_rx_us", 0, UINT32_MAX, &rx, where, err, errlen) ||
	    get_uint(o, "detect_mult", 1, 255, &mult, where, err, errlen) ||
	    get_uint(o, "min_ttl", 1, 255, &ttl, where, err, errlen) ||
	    get_uint(o, "my_disc", 1, UINT32_MAX, &disc, where, err, errlen) ||
	    get_bool(o, "multihop", &c->multihop, where, err, errlen) ||
	    get_bool(o, "passive", &c->passive, where, err, errlen) ||
	    get_bool(o, "admin_down", &c->admin_down, where, err, errlen) ||
	    get_bool(o, "demand", &c->demand, where, err, errlen) ||
	    get_uint(o, "demand_poll_us", 0, UINT32_MAX, &demand_poll, where, err, errlen))
		return -1;
	c->desired_min_tx_us = (uint32_t)tx;
	c->required_min_rx_us = (uint32_t)rx;
	c->detect_mult = (uint8_t)mult;
	c->min_ttl = c->multihop ? (uint8_t)ttl : 255;
	c->my_disc = (uint32_t)disc;
	c->demand_poll_us = (uint32_t)demand_poll;
	return 0;
}

int peer_sessions_load(const char *path, struct peer_session_cfg **out, char *err, size_t errlen)
{
	struct peer_session_cfg *cfgs;
	json_error_t jerr;
	json_t *doc, *list;
	size_t i, j, n;
	char where[64];

	doc = json_load_file(path, 0, &jerr);
	if (!doc)
		return fail(err, errlen, "%s:%d: %s", path, jerr.line, jerr.text);
	list = json_object_get(doc, "sessions");
	if (!json_is_array(list) || json_array_size(list) == 0) {
		json_decref(doc);
		return fail(err, errlen, "%s: expected {\"sessions\": [ ... ]} with at least one",
			    path);
	}
	n = json_array_size(list);
	cfgs = calloc(n, sizeof(*cfgs));
	if (!cfgs) {
		json_decref(doc);
		return fail(err, errlen, "%s: out of memory for %zu sessions", path, n);
	}
	for (i = 0; i < n; i++) {
		snprintf(where, sizeof(where), "%s: sessions[%zu]", path, i);
		if (parse_one(json_array_get(list, i), where, &cfgs[i], err, errlen))
			goto bad;
		/* Two sessions with the same ends could not be told apart before Your
		 * Discriminator is known (RFC 5880 6.8.6). Sorted lists would be faster; lists
		 * are loaded once. */
		for (j = 0; j < i && n <= 20000; j++)
			if (cfgs[j].family == cfgs[i].family &&
			    cfgs[j].multihop == cfgs[i].multihop &&
			    !memcmp(cfgs[j].local_addr, cfgs[i].local_addr, 16) &&
			    !memcmp(cfgs[j].peer_addr, cfgs[i].peer_addr, 16)) {
				fail(err, errlen,
				     "%s: same addresses and hop type as sessions[%zu]", where, j);
				goto bad;
			}
	}
	json_decref(doc);
	*out = cfgs;
	return (int)n;
bad:
	free(cfgs);
	json_decref(doc);
	return -1;
}
