/* SPDX-License-Identifier: MIT */
/* check.h: CHECK(cond, fmt, ...) prints "<prog>: FAIL <file>:<line>: <cond>: <detail>" and
 * exits 1. The consumer programs share it with nothing else in the tree on purpose: they
 * see only what an installed axmalloc provides. */
#ifndef CONSUMER_CHECK_H
#define CONSUMER_CHECK_H
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                              \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#endif
