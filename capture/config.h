/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* config.h - what the command line asks for: tags (address prefixes) and windows (phases). */
#ifndef BFDCAP_CONFIG_H
#define BFDCAP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct prefix {
	uint8_t family; /* 4 or 6 */
	uint8_t len_bits;
	uint8_t addr[16]; /* network order, IPv4 in the first 4 bytes */
};

/* --tag NAME=SRC[>DST]: an end whose sender is in @src (and receiver in @dst) is tagged @name. */
struct tag_rule {
	char *name;
	const char *spec; /* the text after '=', as given (not owned) */
	struct prefix src;
	struct prefix dst;
	int has_dst;
};

/* A window [start_ns, end_ns): a packet at ts belongs to it when start_ns <= ts < end_ns. */
struct window {
	char *name;
	int64_t start_ns, end_ns;
};

/*
 * prefix_parse() - "10.0.0.0/24", "fd00::/64" or a bare address (full length).
 * Return: 0, or -EINVAL.
 */
int prefix_parse(const char *text, struct prefix *out);

/* 1 when @addr of @family is inside @p. */
int prefix_match(const struct prefix *p, int family, const uint8_t *addr);

/* tag_rule_parse() - "NAME=PREFIX[>PREFIX]". Return: 0 or -EINVAL (@out untouched). */
int tag_rule_parse(const char *text, struct tag_rule *out);

/*
 * phases_load() - read a phases file (the lab writes phases.json): a JSON array of objects with
 * "name" (string), "start_ns" and "end_ns" (integers, ns since the epoch, end_ns >= start_ns);
 * other keys are ignored, and for a key given twice the last counts. Parsed by jansson: nothing
 * may follow the array.
 * Return: the number of phases (>= 0) with *@out malloc'd (with each name), or -1 with one line
 * in @err naming the file and where: "line L column C" for malformed JSON, "phase N" (from 1)
 * for a phase that lacks a key or holds the wrong type.
 */
int phases_load(const char *path, struct window **out, char *err, size_t errlen);

#endif /* BFDCAP_CONFIG_H */
