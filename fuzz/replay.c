/* SPDX-License-Identifier: MIT */
/* fuzz_replay: runs the fuzz harness over files without libFuzzer, so that any compiler
 * (gcc, the aarch64 cross gcc under qemu) runs the corpus and crash files.
 *
 *   fuzz_replay [-v] FILE|DIR...     run each file (a directory: its files, sorted)
 *   fuzz_replay --make-corpus DIR    write the seed corpus (corpus.c) into DIR
 *   fuzz_replay --expect-traps DIR   for each planted fault (shadow.h), a forked replay
 *                                    of DIR must trap: the checks can fail
 *
 * Prints "fuzz_replay: N inputs, M allocator operations" and exits 0; a failed check traps.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_alloc.h"
#include "shadow.h"

int fz_write_corpus(const char *dir);

static int verbose;

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  static unsigned char buf[1 << 20]; /* inputs are far smaller (libFuzzer -max_len) */
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (verbose)
    fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(buf, n);
  return 0;
}

static int run_dir(const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort), rc = 0;
  if (n < 0) {
    perror(dir);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode))
      rc |= run_file(path);
    free(names[i]);
  }
  free(names);
  return rc;
}

/* Each planted fault must end a replay of dir with the harness's trap (SIGILL from ud2
 * on x86-64, SIGTRAP from brk on AArch64), not a clean exit or another crash. */
static int expect_traps(const char *dir) {
  int failed = 0;
  for (int plant = FZ_PLANT_NONE + 1; plant < FZ_NPLANTS; plant++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      fz_plant = plant;
      run_dir(dir);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
      perror("fork/waitpid");
      return 1;
    }
    bool trapped = WIFSIGNALED(st) && (WTERMSIG(st) == SIGILL || WTERMSIG(st) == SIGTRAP);
    fprintf(stderr, "fuzz_replay: planted fault %d: %s\n", plant,
            trapped ? "trapped" : "NOT CAUGHT");
    failed += !trapped;
  }
  if (failed)
    return 1;
  printf("fuzz_replay: all %d planted faults trapped\n", FZ_NPLANTS - 1);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--make-corpus") == 0)
    return fz_write_corpus(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--expect-traps") == 0) {
    fz_init(0);
    return expect_traps(argv[2]);
  }
  fz_init(0);
  int rc = 0, files = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (strcmp(argv[i], "-v") == 0) {
      verbose = 1;
    } else if (argv[i][0] == '-') { /* libFuzzer flags, so both binaries take a command */
      continue;
    } else if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      rc = 1;
    } else {
      rc |= S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
      files++;
    }
  }
  if (files == 0) {
    fprintf(stderr, "usage: fuzz_replay [-v] FILE|DIR... | --make-corpus DIR\n");
    return 2;
  }
  if (verbose)
    for (unsigned op = 0; op < FZ_NOPS; op++)
      fprintf(stderr, "fuzz_replay: %-16s %llu\n", fz_op_name(op),
              (unsigned long long)fz_op_counts[op]);
  printf("fuzz_replay: %llu inputs, %llu allocator operations\n", (unsigned long long)fz_inputs(),
         (unsigned long long)fz_allocator_calls());
  return rc;
}
