/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * check.h - two macros for the C tests: CHECK_EQ prints actual and expected on failure and
 * counts it; check_done() reports and gives the exit status.
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdio.h>

static int check_failures, check_count;

#define CHECK_EQ(actual, expected, what)                                                           \
	do {                                                                                       \
		long long a_ = (long long)(actual), e_ = (long long)(expected);                    \
		check_count++;                                                                     \
		if (a_ != e_) {                                                                    \
			check_failures++;                                                          \
			fprintf(stderr, "FAIL %s:%d %s: got %lld, want %lld\n", __FILE__,          \
				__LINE__, (what), a_, e_);                                         \
		}                                                                                  \
	} while (0)

#define CHECK(cond, what) CHECK_EQ(!!(cond), 1, what)

static inline int check_done(const char *suite)
{
	printf("%s: %d checks, %d failed\n", suite, check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
