/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* config.c - tag rules and the phases file (see config.h). */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
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

/* --- A small JSON reader: enough for the phases file, strict about what it keeps. --- */

struct json {
	const char *p;
	char *err;
	size_t errlen;
};

static void skip_ws(struct json *j)
{
	while (*j->p && isspace((unsigned char)*j->p))
		j->p++;
}

/* Quote the file from where it went wrong: at most 20 bytes, up to the end of that line. */
static int fail(struct json *j, const char *what)
{
	int n = 0;

	while (n < 20 && j->p[n] && j->p[n] != '\n' && j->p[n] != '\r')
		n++;
	snprintf(j->err, j->errlen, "phases: %s near '%.*s'", what, n, j->p);
	return -1;
}

/* Step over @c if it is next; never past the end of the text. */
static int take(struct json *j, char c)
{
	if (*j->p != c)
		return 0;
	j->p++;
	return 1;
}

/* A string into a malloc'd buffer (escapes: the usual ones; \u kept as '?'). */
static int parse_string(struct json *j, char **out)
{
	size_t cap = 32, n = 0;
	char *s;

	if (*j->p != '"')
		return fail(j, "expected a string");
	j->p++;
	s = malloc(cap);
	if (!s)
		return fail(j, "out of memory");
	while (*j->p && *j->p != '"') {
		char c = *j->p++;

		if (c == '\\') {
			c = *j->p;
			if (c)
				j->p++;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u':
				for (int k = 0; k < 4 && isxdigit((unsigned char)*j->p); k++)
					j->p++;
				c = '?';
				break;
			case '\0':
				free(s);
				return fail(j, "unterminated string");
			default:
				break;
			}
		}
		if (n + 1 >= cap) {
			char *t = realloc(s, cap *= 2);

			if (!t) {
				free(s);
				return fail(j, "out of memory");
			}
			s = t;
		}
		s[n++] = c;
	}
	if (*j->p != '"') {
		free(s);
		return fail(j, "unterminated string");
	}
	j->p++;
	s[n] = '\0';
	*out = s;
	return 0;
}

static int skip_value(struct json *j, int depth);

static int parse_int(struct json *j, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(j->p, &end, 10);
	if (end == j->p || errno)
		return fail(j, "expected an integer (ns)");
	if (*end == '.' || *end == 'e' || *end == 'E')
		return fail(j, "expected an integer (ns), got a fraction");
	j->p = end;
	*out = v;
	return 0;
}

static int skip_value(struct json *j, int depth)
{
	char *s;

	if (depth > 64)
		return fail(j, "nested too deep");
	skip_ws(j);
	switch (*j->p) {
	case '"':
		if (parse_string(j, &s))
			return -1;
		free(s);
		return 0;
	case '{':
	case '[': {
		char close = *j->p == '{' ? '}' : ']';
		int obj = close == '}';

		j->p++;
		skip_ws(j);
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		for (;;) {
			if (obj) {
				skip_ws(j);
				if (parse_string(j, &s))
					return -1;
				free(s);
				skip_ws(j);
				if (!take(j, ':'))
					return fail(j, "expected ':'");
			}
			if (skip_value(j, depth + 1))
				return -1;
			skip_ws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p == close) {
				j->p++;
				return 0;
			}
			return fail(j, "expected ',' or a closing bracket");
		}
	}
	default:
		if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
			j->p += 4;
			return 0;
		}
		if (!strncmp(j->p, "false", 5)) {
			j->p += 5;
			return 0;
		}
		if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
			strtod(j->p, (char **)&j->p);
			return 0;
		}
		return fail(j, "unexpected character");
	}
}

int phases_parse(const char *text, struct window **out, char *err, size_t errlen)
{
	struct json j = {.p = text, .err = err, .errlen = errlen};
	struct window *w = NULL;
	int n = 0;

	skip_ws(&j);
	if (!take(&j, '['))
		return fail(&j, "expected a JSON array"), -1;
	skip_ws(&j);
	if (take(&j, ']')) {
		skip_ws(&j);
		if (*j.p)
			return fail(&j, "text after the array"), -1;
		*out = NULL;
		return 0;
	}
	for (;;) {
		struct window cur = {.start_ns = -1, .end_ns = -1};
		int have = 0;
		struct window *t;

		skip_ws(&j);
		if (!take(&j, '{')) {
			fail(&j, "expected an object");
			goto bad;
		}
		skip_ws(&j);
		while (*j.p != '}') {
			char *key;

			skip_ws(&j);
			if (parse_string(&j, &key))
				goto bad_cur;
			skip_ws(&j);
			if (!take(&j, ':')) {
				free(key);
				fail(&j, "expected ':'");
				goto bad_cur;
			}
			skip_ws(&j);
			if (!strcmp(key, "name")) {
				free(cur.name);
				cur.name = NULL;
				if (parse_string(&j, &cur.name)) {
					free(key);
					goto bad_cur;
				}
				have |= 1;
			} else if (!strcmp(key, "start_ns") || !strcmp(key, "end_ns")) {
				int64_t v = 0;

				if (parse_int(&j, &v)) {
					free(key);
					goto bad_cur;
				}
				if (key[0] == 's') {
					cur.start_ns = v;
					have |= 2;
				} else {
					cur.end_ns = v;
					have |= 4;
				}
			} else if (skip_value(&j, 1)) {
				free(key);
				goto bad_cur;
			}
			free(key);
			skip_ws(&j);
			if (*j.p == ',')
				j.p++;
			else if (*j.p != '}') {
				fail(&j, "expected ',' or '}'");
				goto bad_cur;
			}
		}
		j.p++;
		if (have != 7) {
			fail(&j, "each phase needs name, start_ns and end_ns");
			goto bad_cur;
		}
		if (cur.end_ns < cur.start_ns) {
			fail(&j, "a phase ends before it starts");
			goto bad_cur;
		}
		t = realloc(w, (size_t)(n + 1) * sizeof(*w));
		if (!t) {
			fail(&j, "out of memory");
			goto bad_cur;
		}
		w = t;
		w[n++] = cur;
		skip_ws(&j);
		if (*j.p == ',') {
			j.p++;
			continue;
		}
		if (take(&j, ']')) {
			skip_ws(&j);
			if (!*j.p)
				break;
			fail(&j, "text after the array");
			goto bad;
		}
		fail(&j, "expected ',' or ']'");
		goto bad;
	bad_cur:
		free(cur.name);
		goto bad;
	}
	*out = w;
	return n;
bad:
	for (int i = 0; i < n; i++)
		free(w[i].name);
	free(w);
	return -1;
}

int phases_load(const char *path, struct window **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	size_t len = 0, cap = 0, got;
	int rc;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	do {
		if (len + 4096 + 1 > cap) {
			char *t = realloc(text, cap = (cap ? cap * 2 : 8192));

			if (!t) {
				free(text);
				fclose(f);
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			text = t;
		}
		got = fread(text + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	fclose(f);
	text[len] = '\0';
	rc = phases_parse(text, out, err, errlen);
	free(text);
	return rc;
}
