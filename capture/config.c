/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* config.c - tag rules and the phases file (see config.h). */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int prefix_parse(const char *text, struct prefix *out)
{
	char buf[64], *slash, *end;
	struct prefix p = {0};
	long bits;

	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, p.addr) == 1)
		p.family = 4;
	else if (inet_pton(AF_INET6, buf, p.addr) == 1)
		p.family = 6;
	else
		return -EINVAL;
	p.len_bits = p.family == 4 ? 32 : 128;
	if (slash) {
		errno = 0;
		bits = strtol(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || bits < 0 || bits > p.len_bits)
			return -EINVAL;
		p.len_bits = (uint8_t)bits;
	}
	*out = p;
	return 0;
}

int prefix_match(const struct prefix *p, int family, const uint8_t *addr)
{
	unsigned full = p->len_bits / 8, rest = p->len_bits % 8;

	if (p->family != family)
		return 0;
	if (memcmp(p->addr, addr, full))
		return 0;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));

		if ((p->addr[full] & mask) != (addr[full] & mask))
			return 0;
	}
	return 1;
}

int tag_rule_parse(const char *text, struct tag_rule *out)
{
	const char *eq = strchr(text, '=');
	char spec[160], *gt;
	struct tag_rule t = {0};

	if (!eq || eq == text || strlen(eq + 1) >= sizeof(spec))
		return -EINVAL;
	strcpy(spec, eq + 1);
	gt = strchr(spec, '>');
	if (gt)
		*gt = '\0';
	if (prefix_parse(spec, &t.src))
		return -EINVAL;
	if (gt) {
		if (prefix_parse(gt + 1, &t.dst))
			return -EINVAL;
		t.has_dst = 1;
	}
	t.spec = eq + 1;
	t.name = strndup(text, (size_t)(eq - text));
	if (!t.name)
		return -EINVAL;
	*out = t;
	return 0;
}

/* --- the phases file, parsed by jansson; what a phase must hold is checked here --- */

/* What a JSON value is, for "expected X, got Y". */
static const char *kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a fraction or an exponent";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	default:
		return "null";
	}
}

/* Phase @i (0-based) of the file, @o, into @w (its name malloc'd). Return: 0, or -1 and @err. */
static int phase_from(const json_t *o, size_t i, struct window *w, const char *path, char *err,
		      size_t errlen)
{
	static const char *const keys[] = {"start_ns", "end_ns"};
	const json_t *name, *ns[2];
	char why[128];

	if (!json_is_object(o)) {
		snprintf(why, sizeof(why), "expected an object, got %s", kind(o));
		goto bad;
	}
	name = json_object_get(o, "name");
	ns[0] = json_object_get(o, keys[0]);
	ns[1] = json_object_get(o, keys[1]);
	if (!name || !ns[0] || !ns[1]) {
		snprintf(why, sizeof(why), "each phase needs name, start_ns and end_ns");
		goto bad;
	}
	if (!json_is_string(name)) {
		snprintf(why, sizeof(why), "name: expected a string, got %s", kind(name));
		goto bad;
	}
	for (int k = 0; k < 2; k++) {
		if (!json_is_integer(ns[k])) {
			snprintf(why, sizeof(why), "%s: expected an integer (ns), got %s", keys[k],
				 kind(ns[k]));
			goto bad;
		}
	}
	w->start_ns = json_integer_value(ns[0]);
	w->end_ns = json_integer_value(ns[1]);
	if (w->end_ns < w->start_ns) {
		snprintf(why, sizeof(why), "ends before it starts (start_ns %lld, end_ns %lld)",
			 (long long)w->start_ns, (long long)w->end_ns);
		goto bad;
	}
	w->name = strdup(json_string_value(name));
	if (!w->name) {
		snprintf(why, sizeof(why), "out of memory");
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "phases file %s, phase %zu: %s", path, i + 1, why);
	return -1;
}

int phases_load(const char *path, struct window **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct window *w;
	json_error_t je;
	json_t *root, *o;
	size_t i, n;
	int read_errno;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* Flags 0: the text must end after the array; integers stay integers. */
	root = json_loadf(f, 0, &je);
	read_errno = ferror(f) ? errno : 0;
	fclose(f);
	if (read_errno) {
		snprintf(err, errlen, "%s: %s", path, strerror(read_errno));
		json_decref(root);
		return -1;
	}
	if (!root) {
		/* jansson quotes the token it stopped at: keep the message on one line. */
		for (char *c = je.text; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		snprintf(err, errlen, "phases file %s, line %d column %d: %s", path, je.line,
			 je.column, je.text);
		return -1;
	}
	if (!json_is_array(root)) {
		snprintf(err, errlen, "phases file %s: expected a JSON array of phases, got %s",
			 path, kind(root));
		json_decref(root);
		return -1;
	}
	n = json_array_size(root);
	w = calloc(n + 1, sizeof(*w));
	if (!w) {
		snprintf(err, errlen, "out of memory");
		json_decref(root);
		return -1;
	}
	json_array_foreach(root, i, o)
	{
		if (phase_from(o, i, &w[i], path, err, errlen)) {
			while (i--)
				free(w[i].name);
			free(w);
			json_decref(root);
			return -1;
		}
	}
	json_decref(root);
	*out = w;
	return (int)n;
}
