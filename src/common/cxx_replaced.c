/* SPDX-License-Identifier: MIT */
/* Whether the program replaced a C++ operator that the others are defined by.
 *
 * The standard defines most forms by others: new[] and the nothrow forms call operator
 * new(size_t), sized and nothrow deletes call operator delete(void *), the aligned forms
 * likewise. new_delete.cc serves every form straight from ax_* while nothing is replaced.
 * When the program defines one of the base operators itself, its definition wins (the
 * executable comes first in symbol lookup; ours are weak for static links), and our
 * other forms must go through it. Names taken here, in C, resolve through the GOT to the
 * winning definitions; new_delete.cc's hidden aliases are ours. */
#include <stdbool.h>
#include <stddef.h>

#include "cxx_ops.h"

/* the winners */
void *ax_sym_new(size_t) __asm__("_Znwm");
void *ax_sym_new_array(size_t) __asm__("_Znam");
void ax_sym_delete(void *) __asm__("_ZdlPv");
void ax_sym_delete_array(void *) __asm__("_ZdaPv");
void *ax_sym_new_al(size_t, size_t) __asm__("_ZnwmSt11align_val_t");
void *ax_sym_new_array_al(size_t, size_t) __asm__("_ZnamSt11align_val_t");
void ax_sym_delete_al(void *, size_t) __asm__("_ZdlPvSt11align_val_t");
void ax_sym_delete_array_al(void *, size_t) __asm__("_ZdaPvSt11align_val_t");

axi_cxx_ops_t axi_cxx_ops;
bool axi_cxx_replaced;
void (*axi_cxx_sized_delete)(void *, size_t) = axi_delete_sized;
void (*axi_cxx_sized_delete_array)(void *, size_t) = axi_delete_array_sized;

/* a sized delete when the program replaced a base operator: its operator delete (delete[]) */
static void replaced_sized(void *p, size_t n) {
  (void)n;
  axi_cxx_ops.delete_(p);
}
static void replaced_sized_array(void *p, size_t n) {
  (void)n;
  axi_cxx_ops.delete_array(p);
}

/* Compared as plain numbers: the compiler must not fold two declared functions apart. */
static bool differ(void *winner, void *ours) {
  __asm__("" : "+r"(winner));
  return winner != ours;
}

__attribute__((constructor)) static void cxx_probe(void) {
  axi_cxx_ops =
      (axi_cxx_ops_t){ax_sym_new,    ax_sym_new_array,    ax_sym_delete,    ax_sym_delete_array,
                      ax_sym_new_al, ax_sym_new_array_al, ax_sym_delete_al, ax_sym_delete_array_al};
  axi_cxx_replaced = differ((void *)ax_sym_new, (void *)axi_cxx_new) ||
                     differ((void *)ax_sym_new_array, (void *)axi_cxx_new_array) ||
                     differ((void *)ax_sym_delete, (void *)axi_cxx_delete) ||
                     differ((void *)ax_sym_delete_array, (void *)axi_cxx_delete_array) ||
                     differ((void *)ax_sym_new_al, (void *)axi_cxx_new_al) ||
                     differ((void *)ax_sym_new_array_al, (void *)axi_cxx_new_array_al) ||
                     differ((void *)ax_sym_delete_al, (void *)axi_cxx_delete_al) ||
                     differ((void *)ax_sym_delete_array_al, (void *)axi_cxx_delete_array_al);
  if (axi_cxx_replaced) {
    axi_cxx_sized_delete = replaced_sized;
    axi_cxx_sized_delete_array = replaced_sized_array;
  }
}
