/* SPDX-License-Identifier: MIT */
/* wl_binarytrees.c -- the Computer Language Benchmarks Game "binary-trees", C version.
 *
 * Models seed 002: an allocation-dominated benchmark (one malloc per tree node, every
 * node freed again) that ran 5x slower on an AArch64 server than on x86.
 *
 * Usage: wl_binarytrees [max_depth]      (default 17)
 *
 * As in the benchmark: a "stretch" tree of depth max_depth+1 is built, checked and freed;
 * a long-lived tree of depth max_depth is built and kept; then for depth d = 4, 6, ...,
 * max_depth, 2^(max_depth - d + 4) trees of depth d are built, checked and freed; finally
 * the long-lived tree is checked and freed. Single-threaded, like the seed's C program.
 *
 * stdout: exactly one line "checksum <sum of all check values>".
 * stderr: the benchmark's usual report lines.
 * Exit status 1 if malloc fails or a check value is not what the tree shape implies.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct tree_node {
  struct tree_node *left;
  struct tree_node *right;
} tree_node;

static void die(const char *msg) {
  fprintf(stderr, "wl_binarytrees: FAILED: %s\n", msg);
  exit(1);
}

static tree_node *new_node(tree_node *left, tree_node *right) {
  tree_node *n = malloc(sizeof *n);
  if (n == NULL)
    die("malloc returned NULL");
  n->left = left;
  n->right = right;
  return n;
}

/* Bottom-up construction, as in the benchmark's C programs. */
static tree_node *bottom_up_tree(unsigned depth) {
  if (depth > 0)
    return new_node(bottom_up_tree(depth - 1), bottom_up_tree(depth - 1));
  return new_node(NULL, NULL);
}

/* The check value is the node count. A node with exactly one child means corruption. */
static long item_check(const tree_node *t) {
  if (t->left == NULL) {
    if (t->right != NULL)
      die("corrupt tree node (right child without left)");
    return 1;
  }
  if (t->right == NULL)
    die("corrupt tree node (left child without right)");
  return 1 + item_check(t->left) + item_check(t->right);
}

static void delete_tree(tree_node *t) {
  if (t->left != NULL) {
    delete_tree(t->left);
    delete_tree(t->right);
  }
  free(t);
}

static long expected_check(unsigned depth) { return (2L << depth) - 1; }

static unsigned parse_arg(const char *s, unsigned lo, unsigned hi) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "wl_binarytrees: bad argument '%s' (want %u..%u)\n", s, lo, hi);
    fprintf(stderr, "usage: wl_binarytrees [max_depth]\n");
    exit(2);
  }
  return (unsigned)v;
}

int main(int argc, char **argv) {
  const unsigned min_depth = 4;
  unsigned n = argc > 1 ? parse_arg(argv[1], 0, 30) : 17;
  unsigned max_depth = (min_depth + 2 > n) ? min_depth + 2 : n;
  unsigned stretch_depth = max_depth + 1;
  uint64_t checksum = 0;

  tree_node *stretch = bottom_up_tree(stretch_depth);
  long c = item_check(stretch);
  if (c != expected_check(stretch_depth))
    die("stretch tree check mismatch");
  fprintf(stderr, "stretch tree of depth %u\t check: %ld\n", stretch_depth, c);
  checksum += (uint64_t)c;
  delete_tree(stretch);

  tree_node *long_lived = bottom_up_tree(max_depth);

  for (unsigned depth = min_depth; depth <= max_depth; depth += 2) {
    long iterations = 1L << (max_depth - depth + min_depth);
    long check = 0;
    for (long i = 1; i <= iterations; i++) {
      tree_node *t = bottom_up_tree(depth);
      long ci = item_check(t);
      if (ci != expected_check(depth))
        die("tree check mismatch");
      check += ci;
      delete_tree(t);
    }
    fprintf(stderr, "%ld\t trees of depth %u\t check: %ld\n", iterations, depth, check);
    checksum += (uint64_t)check;
  }

  c = item_check(long_lived);
  if (c != expected_check(max_depth))
    die("long lived tree check mismatch");
  fprintf(stderr, "long lived tree of depth %u\t check: %ld\n", max_depth, c);
  checksum += (uint64_t)c;
  delete_tree(long_lived);

  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
