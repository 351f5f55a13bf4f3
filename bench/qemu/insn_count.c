/* SPDX-License-Identifier: MIT */
/* insn_count.c -- a qemu TCG plugin that counts the guest instructions a program executes.
 *
 *   cc -O2 -shared -fPIC -o insn_count.so insn_count.c
 *   qemu-aarch64 -plugin ./insn_count.so,outfile=FILE prog args...
 *
 * Writes the total, one decimal number and a newline, to FILE (stderr without outfile=) when
 * the program exits. Every translated block adds its instruction count each time it starts
 * executing, into a counter of the guest thread (vCPU) that runs it, so threads do not race
 * on one word; the total is their sum. A block always runs to its end in the programs counted
 * here (no guest fault), so the count is exact and does not depend on timing (unlike
 * `-d exec,nochain -singlestep`, which counts the same but writes a line per instruction).
 *
 * qemu 7.2 (Debian 12) installs no plugin header: the few declarations used are written
 * here from its documented plugin API, version 1 (include/qemu/qemu-plugin.h there). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* (not read) */
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);

EXPORT int qemu_plugin_version = 1;

#define MAX_VCPUS 1024 /* guest threads; qemu-user numbers them from 0 */
static uint64_t counts[MAX_VCPUS];
static char outfile[4096];

static void tb_exec(unsigned int vcpu, void *n) { counts[vcpu % MAX_VCPUS] += (uintptr_t)n; }

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                       (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void at_exit(qemu_plugin_id_t id, void *unused) {
  (void)id, (void)unused;
  uint64_t total = 0;
  for (unsigned i = 0; i < MAX_VCPUS; i++)
    total += counts[i];
  FILE *f = outfile[0] ? fopen(outfile, "w") : stderr;
  if (!f) {
    perror(outfile);
    return;
  }
  fprintf(f, "%llu\n", (unsigned long long)total);
  if (f != stderr)
    fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv) {
  (void)info;
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "outfile=", 8) != 0 || strlen(argv[i] + 8) >= sizeof outfile) {
      fprintf(stderr, "insn_count: unknown argument '%s' (outfile=FILE)\n", argv[i]);
      return 1;
    }
    strcpy(outfile, argv[i] + 8);
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
