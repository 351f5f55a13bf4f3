/* SPDX-License-Identifier: MIT */
/* The double-free model (issue 38, class check 1): a block is freed into each place where a
 * freed block can wait, then freed again from each kind of thread; every second free must be
 * reported as "axmalloc: free(): double free <p>", and no block may ever be handed out twice.
 * White-box: the places are confirmed by reading the heaps, batches, inboxes and page lists
 * through src/common/list.h before the second free.
 *
 *   places (where the first free leaves the block; head, mid, tail: its position in a list)
 *     batch.*       the first freer's open batch to the owner (remote.c)
 *     inbox.*       the owner's inbox, the batch sent (it filled)
 *     segbatch.*    the first freer's open batch to an abandoned segment (its owner exited)
 *     seginbox.*    that segment's inbox, the batch sent
 *     tf.*          a page's thread_free, freed there by a thread without a heap
 *     tfclosed.*    an abandoned page's thread_free: a batch sent to an inbox that had closed
 *     cache.*       the owner's cache: its last block, the top of a class's stack, below it
 *     own.lf        the owner's page's local_free, freed there by the owner
 *     own.free      the page's free list, taken there from local_free by a trim
 *     own.drained   the page's lists, the block sent by another thread and drained by the owner
 *     own.abandoned an abandoned page's lists, freed by the owner before it exited
 *     own.retired   no place: every block of the page freed and a trim retired it (its
 *                   segment, the large page's, unmapped)
 *     huge          the cache of huge mappings
 *     huge.unmapped no place: the mapping unmapped by a trim
 *     zero          a zero-size block's slot (malloc(0), zero.c)
 *     aside, slot   (t_df_model prof: the heap profiler on) the block a heap keeps aside while
 *                   a cached class's sample is due (cache.c), a sampled block's slot (prof.c)
 *   second freers
 *     owner         the thread whose heap owns the block's page
 *     same          the thread that freed it first (when that is not the owner)
 *     third         another thread with a heap
 *     noheap        a thread that never allocated (checked: the count of heaps did not move)
 *   sizes           64 B (the direct table), 4 KiB (a cached class), 512 KiB (a large page,
 *                   not cached), and 2 MiB and 0 for the huge and zero places
 *
 * Each cell runs in a forked child, its stderr through a pipe, its threads in lock-step
 * (semaphores: one acts at a time, so every placement is deterministic). A child that
 * survives the second free goes on: the other threads exit (sending their batches), the owner
 * (or, the owner gone, a new thread that takes its segment over) trims and mallocs the size
 * until the block came back and its page's worth more. Every malloc in a child is checked
 * against a shadow set of the live blocks, and after the trim and the mallocs the owner's pages
 * of the class are audited: every live block in a page in use, no block on their lists twice
 * or live, the page's count of blocks out right (a double free that is not reported does its
 * harm there before any block comes out twice). Verdicts:
 *   R  reported at the second free (SIGABRT, "double free <p>" naming the block)
 *   L  reported later, by the owner taking its inbox (a failure: every place is sought at
 *      the second free, axi_remote_seek; before issue 38's fix 68 cells were L, and with
 *      -owner-first 17 of them became W or 2)
 *   I  "invalid pointer <p>" at the second free, where the block is no block any more
 *      (own.retired, huge.unmapped: counted as reported)
 *   M  missed: nothing seen, no block handed out twice
 *   2  missed, and a block was handed out twice, or the audit found the state that will
 *      (the worst)
 *   W  wrong: another report, another pointer, a crash or a hang
 *   S  the set-up did not put the block where the place says (the test's own failure)
 *   -  not applicable (the owner exited; the first freer is the owner)
 * The test fails on any cell not R or I unless it is listed in known_gaps below.
 *
 *   t_df_model                 every place but the profiler's
 *   t_df_model prof            the profiler's places (AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=1)
 *   t_df_model [prof] [-v] [-owner-first] <text>  only the cells whose name contains text
 *                              ("inbox.mid 64 third"); -v prints what each child said;
 *                              -owner-first: after the second free the owner mallocs first,
 *                              before the other threads exit and send their batches
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "huge.h"
#include "list.h"
#include "pagemap.h"
#include "testutil.h"

/* Cells the design cannot see, each with the reason (docs/design/05-remote.md, "Where a freed
 * block waits"), as "place size freer": they may fail without failing the test. None yet. */
static const char *const known_gaps[] = {NULL};

/* A report by the owner when it takes its inbox, after the second free returned, does not
 * count: by then the owner may have handed the block out (-owner-first). */
static const bool late_ok = false;

/* ---- the child's side: a shadow set of live blocks ----------------------------------------- */

#define SHADOW_BITS 15
#define SHADOW_MASK ((1u << SHADOW_BITS) - 1)
#define TOMB ((void *)1)
static struct live {
  void *p;
  size_t n;
} shadow[1u << SHADOW_BITS];

static unsigned shadow_hash(const void *p) {
  return (unsigned)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> (64 - SHADOW_BITS));
}
static long shadow_find(const void *p) {
  for (unsigned i = shadow_hash(p), n = 0; shadow[i].p && n <= SHADOW_MASK;
       i = (i + 1) & SHADOW_MASK, n++)
    if (shadow[i].p == p)
      return i;
  return -1;
}

/* Messages to the parent (fd 2, the pipe), without stdio: write(2) allocates nothing. */
static void say(const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0 && write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1) < 0)
    _exit(5);
}

/* The set-up did not go as the place says: exit 4 (verdict S). */
#define CONFIRM(cond, ...)                                                                         \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      say("@setup %s:%d: %s: ", __FILE__, __LINE__, #cond);                                        \
      say(__VA_ARGS__);                                                                            \
      say("\n");                                                                                   \
      _exit(4);                                                                                    \
    }                                                                                              \
  } while (0)

/* A block live twice, or live and free (it will be handed out again): exit 3 (verdict 2). */
static void twice(const char *fmt, ...) {
  char buf[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  say("@twice %s\n", buf);
  _exit(3);
}

/* Every malloc of a child goes through the set. */
static void *tmalloc(size_t n) {
  void *p = malloc(n);
  CONFIRM(p != NULL, "malloc(%zu) failed", n);
  if (shadow_find(p) >= 0)
    twice("%p handed out twice", p);
  unsigned i = shadow_hash(p);
  while (shadow[i].p && shadow[i].p != TOMB)
    i = (i + 1) & SHADOW_MASK;
  shadow[i] = (struct live){p, n};
  return p;
}
static void tfree(void *p) {
  long i = shadow_find(p);
  CONFIRM(i >= 0, "%p is not live", p);
  shadow[i].p = TOMB;
  free(p);
}

/* Can a segment header be read (mapped, and not made inaccessible: a cached segment may be)?
 * write(2) from it says so without a fault. */
static bool readable(const void *p) {
  static int fds[2] = {-1, -1};
  if (fds[0] < 0 && pipe(fds) != 0)
    return false;
  char c;
  bool ok = write(fds[1], p, 1) == 1;
  if (ok && read(fds[0], &c, 1) != 1)
    ok = false;
  return ok;
}

static ax_page_t *page_of(const void *p) { return axi_page_of(axi_segment_of(p), p); }

/* A block of page's, carved (a list's link may be anything once a double free went by). */
static bool carved(const ax_page_t *page, const void *x) {
  return (uintptr_t)x - page->area < axi_page_carved(page) &&
         axi_block_index(page, x) < page->capacity;
}

static void *target;        /* the block freed twice */
static unsigned target_cls; /* its class (small, medium and large blocks; 0: others) */

/* Where a block freed twice does its harm without being handed out yet: every live block of a
 * page (the set's, 1 B .. 1 MiB) must be in a mapped segment, in a page in use, carved, and on
 * none of its page's lists of free blocks (free, local_free, thread_free). */
static void audit(const char *when) {
  static const ax_page_t *pages[512];
  unsigned np = 0;
  static bool noted;
  if (target_cls && !noted &&
      (!readable(axi_segment_of(target)) || !page_of(target)->in_use ||
       !carved(page_of(target), target))) {
    noted = true;
    say("@note %p's page went back to its segment (%s)\n", target, when);
  }
  for (unsigned i = 0; i <= SHADOW_MASK; i++) {
    const void *p = shadow[i].p;
    if (!p || p == TOMB || shadow[i].n == 0 || shadow[i].n > AX_LARGE_MAX)
      continue;
    if (!readable(axi_segment_of(p)))
      twice("live %p in a segment unmapped (%s)", p, when);
    const ax_page_t *page = page_of(p);
    if (!page->in_use || !carved(page, p))
      twice("live %p in a page %s (%s)", p, page->in_use ? "restarted" : "retired", when);
    unsigned k = 0;
    while (k < np && pages[k] != page)
      k++;
    if (k == np && np < sizeof pages / sizeof *pages)
      pages[np++] = page;
  }
  for (unsigned k = 0; k < np; k++) {
    const ax_page_t *page = pages[k];
    const ax_block_t *lists[] = {page->free, page->local_free,
                                 axi_tf_list(ax_atomic_load_relaxed(&page->thread_free))};
    static const char *const name[] = {"free", "local_free", "thread_free"};
    for (int l = 0; l < 3; l++) {
      uint32_t n = 0;
      for (const ax_block_t *x = lists[l]; x && n <= page->capacity && carved(page, x);
           x = axi_link(page, x), n++)
        if (shadow_find(x) >= 0)
          twice("live %p on its page's %s (%s)", (const void *)x, name[l], when);
    }
  }
}

/* ---- the child's side: threads in lock-step ------------------------------------------------ */

enum { OWNER, FREER, THIRD, NOHEAP, NOHEAP1, RECLAIMER, ACTORS };
typedef struct actor {
  pthread_t thread;
  sem_t go, done;
  void (*fn)(long);
  long arg;
  bool live, heapful;
  ax_heap_t *heap; /* a heapful actor's, kept after it exits */
} actor_t;
static actor_t act[ACTORS];
static uint64_t heaps_base; /* heaps_live once the heapful actors started */
static unsigned heaps_gone; /* heapful actors that exited since */

static void *actor_loop(void *arg) {
  actor_t *a = arg;
  for (;;) {
    while (sem_wait(&a->go) != 0)
      ;
    if (!a->fn)
      return NULL;
    a->fn(a->arg);
    sem_post(&a->done);
  }
}

static void start(int id) {
  actor_t *a = &act[id];
  CONFIRM(sem_init(&a->go, 0, 0) == 0 && sem_init(&a->done, 0, 0) == 0, "sem_init");
  CONFIRM(pthread_create(&a->thread, NULL, actor_loop, a) == 0, "pthread_create");
  a->live = true;
}

/* Actor id runs fn(arg) while every other thread waits. */
static void run(int id, void (*fn)(long), long arg) {
  actor_t *a = &act[id];
  if (!a->live)
    start(id);
  a->fn = fn;
  a->arg = arg;
  sem_post(&a->go);
  while (sem_wait(&a->done) != 0)
    ;
}

/* Actor id exits (a heapful one sends its batches, drains its inbox, abandons its segments). */
static void stop(int id) {
  actor_t *a = &act[id];
  if (!a->live)
    return;
  a->fn = NULL;
  sem_post(&a->go);
  CONFIRM(pthread_join(a->thread, NULL) == 0, "pthread_join");
  a->live = false;
  heaps_gone += a->heapful;
}

/* ---- the child's side: white-box reads of where a block waits ------------------------------ */

static ax_heap_t *heap_of(const void *p) {
  return (ax_heap_t *)ax_atomic_load_relaxed(&axi_segment_of(p)->heap);
}

/* b's index in the list of blocks in transit from head (-1: not there); *len: the list's. */
static int chain_pos(const ax_block_t *head, const void *b, int *len) {
  int pos = -1, n = 0;
  for (const ax_block_t *x = head; x && n < 4096;) {
    if (x == b)
      pos = n;
    n++;
    uintptr_t link = axi_transit(page_of(x), x);
    if (!(link & AX_TRANSIT))
      break;
    x = (const ax_block_t *)(link & ~AX_TRANSIT);
  }
  *len = n;
  return pos;
}

/* b's index in a list of page's (free, local_free, thread_free), -1: not there. */
static int list_pos(const ax_page_t *page, const ax_block_t *head, const void *b, int *len) {
  int pos = -1, n = 0;
  for (const ax_block_t *x = head; x && n <= (int)page->capacity; x = axi_link(page, x)) {
    if (x == b)
      pos = n;
    n++;
  }
  *len = n;
  return pos;
}
static const ax_block_t *tf_list(const ax_page_t *page) {
  return axi_tf_list(ax_atomic_load_relaxed(&page->thread_free));
}

/* The open batch of heap to key (0: none). */
static const ax_remote_slot_t *batch_to(const ax_heap_t *heap, uintptr_t key) {
  for (unsigned i = 0; i < AX_RB_SLOTS; i++)
    if (heap->rb.slot[i].to == key && axi_rb_n(heap->rb.slot[i].nb))
      return &heap->rb.slot[i];
  return NULL;
}

static bool in_cache(const ax_heap_t *heap, const void *b) {
  return axi_cache_has(heap, page_of(b)->cls, b);
}

/* The pages of class c of heap (its queue and its full list) as it will hand them out: every
 * block on one of their lists at most once, carved and not live, and the blocks out (on none)
 * as many as the page counts used (page.c: used - pinned == capacity - |free| - |local_free|,
 * thread_free's blocks still counted) and as the set has live there. */
static void audit_pages(const ax_heap_t *heap, unsigned c, const char *when) {
  static const char *const name[] = {"free", "local_free", "thread_free"};
  const ax_page_t *first[] = {heap->queue[c].first, heap->full.first};
  for (int q = 0; q < 2; q++)
    for (const ax_page_t *page = first[q]; page; page = page->next) {
      if (page->cls != c)
        continue;
      static uint8_t seen[1u << 16];
      memset(seen, 0, page->capacity);
      const ax_block_t *lists[] = {page->free, page->local_free,
                                   axi_tf_list(ax_atomic_load_relaxed(&page->thread_free))};
      uint32_t listed[3] = {0, 0, 0};
      for (int l = 0; l < 3; l++)
        for (const ax_block_t *x = lists[l]; x; x = axi_link(page, x)) {
          if (!carved(page, x))
            twice("%s of page %p reaches %p, no carved block (%s)", name[l], (void *)page->area,
                  (const void *)x, when);
          uint64_t k = axi_block_index(page, x);
          if (seen[k]++)
            twice("%p twice on page %p's lists (%s, %s)", (const void *)x, (void *)page->area,
                  name[l], when);
          if (shadow_find(x) >= 0)
            twice("live %p on its page's %s (%s)", (const void *)x, name[l], when);
          listed[l]++;
        }
      uint32_t live = 0, out = page->capacity - listed[0] - listed[1];
      for (unsigned i = 0; i <= SHADOW_MASK; i++)
        live += shadow[i].p && shadow[i].p != TOMB && shadow[i].n && shadow[i].n <= AX_LARGE_MAX &&
                page_of(shadow[i].p) == page;
      if (axi_page_live(page) < out)
        twice("page %p counts %u blocks out, %u are (%s): it can empty under a live block",
              (void *)page->area, axi_page_live(page), out, when);
      if (axi_page_live(page) > out || out - listed[2] > live)
        say("@note page %p: %u blocks out by its count, %u off its lists, %u live (%s): lost\n",
            (void *)page->area, axi_page_live(page), out - listed[2], live, when);
    }
}

enum { HEAD, MID, TAIL };
static bool at(int pos, int len, int want) {
  return len >= 3 && pos >= 0 &&
         (want == HEAD   ? pos == 0
          : want == TAIL ? pos == len - 1
                         : pos > 0 && pos < len - 1);
}

/* ---- the cell ------------------------------------------------------------------------------ */

static size_t S;           /* the cell's size */
static void *blk[256];     /* the owner's blocks of S */
static size_t reuse_count; /* mallocs after the second free, at most */
static bool owner_first;   /* -owner-first: the owner mallocs before the others exit */

static void op_start(long id) { /* a heap, bound to a small block that stays live */
  void *p = tmalloc(16);
  act[id].heap = heap_of(p);
  act[id].heapful = true;
}
static void op_alloc(long n) {
  for (long i = 0; i < n; i++)
    blk[i] = tmalloc(S);
}
static void op_free(long i) { tfree(blk[i]); }
static void op_free_target(long unused) { free(target); } /* the second free: not in the set */
static void op_trim(long unused) { malloc_trim(0); }
/* A thread's batches wait at most 2 * AX_RB_AGE_TICKS of its malloc slow paths (remote.c):
 * sizes above 1 KiB take one at every malloc. */
static void op_age(long unused) {
  for (unsigned i = 0; i < 2 * AX_RB_AGE_TICKS + 2; i++)
    tmalloc(2048);
}
/* The owner mallocs until the free list of blk[i]'s page is empty. */
static void op_exhaust(long i) {
  const ax_page_t *page = page_of(blk[i]);
  for (uint32_t n = 0; page->free && n <= page->reserved; n++)
    tmalloc(S);
  CONFIRM(!page->free, "the free list of %p's page did not run dry", blk[i]);
}
/* Mallocs of S until the block freed twice came back, and its page's worth more (a second
 * copy of it comes out of the same lists), n at most. */
static void op_reuse(long n) {
  long more = -1;
  for (long i = 0; i < n && more != 0; i++, more -= more > 0) {
    void *p = tmalloc(S);
    if (p == target && more < 0)
      more = S && S <= AX_LARGE_MAX ? (long)page_of(p)->reserved + 16 : 4;
  }
  if (more < 0)
    say("@note %p did not come back in %ld mallocs\n", target, n);
}
/* A thread without a heap: the heaps live are those of the heapful actors still there. */
static void op_heapless(long id) {
  ax_stats_t s;
  ax_stats_get(&s);
  CONFIRM(s.heaps_live == heaps_base - heaps_gone,
          "the %s thread has a heap (heaps live %llu, expected %llu)",
          id == NOHEAP ? "noheap" : "noheap1", (unsigned long long)s.heaps_live,
          (unsigned long long)(heaps_base - heaps_gone));
}
static void op_prof_active(long on) {
  bool v = on != 0;
  CONFIRM(ax_ctl("prof.active", NULL, NULL, &v, sizeof v) == 0, "prof.active");
}

/* Blocks in a batch before it fills and is sent (remote.c: cost = bytes + AX_RB_BLOCK_COST a
 * block, sent at AX_RB_COST), at least 2 so that an inbox of them has a middle. */
static int fill_count(void) {
  uint32_t bs = page_of(blk[0])->block_size;
  int k = (int)((AX_RB_COST + bs + AX_RB_BLOCK_COST - 1) / (bs + AX_RB_BLOCK_COST));
  return k < 2 ? 2 : k;
}

/* The first freer frees blk[0] (sent alone: the first free to an owner names it in a slot),
 * then blk[1 .. n] into a batch. */
static void remote_frees(int who, int n) {
  for (int i = 0; i <= n; i++)
    run(who, op_free, i);
}

static void owner_exits(void) {
  stop(OWNER);
  CONFIRM(heap_of(blk[0]) == NULL, "the owner's segment was not abandoned");
}

/* batch.*: blk[1..3] in the freer's open batch (tail, mid, head). */
static void setup_batch(int want) {
  run(OWNER, op_alloc, 5);
  remote_frees(FREER, 3);
  target = blk[3 - want];
  const ax_remote_slot_t *s = batch_to(act[FREER].heap, (uintptr_t)act[OWNER].heap);
  CONFIRM(s, "no batch open to the owner");
  int len, pos = chain_pos(s->head, target, &len);
  CONFIRM(at(pos, len, want) && (uint32_t)len == axi_rb_n(s->nb), "%p at %d of %d", target, pos,
          len);
}

/* inbox.*: a batch filled and sent, and the block sent alone before it: the owner's inbox. */
static void setup_inbox(int want) {
  run(OWNER, op_alloc, 1); /* (blk[0] first, for its block size) */
  int k = fill_count();
  run(OWNER, op_alloc, k + 2);
  remote_frees(FREER, k);
  target = blk[want == HEAD ? k : want == MID ? k - k / 2 : 0];
  int len,
      pos = chain_pos((ax_block_t *)ax_atomic_load_relaxed(&act[OWNER].heap->inbox), target, &len);
  CONFIRM(at(pos, len, want) && len == k + 1, "%p at %d of %d in the inbox", target, pos, len);
}

/* segbatch.*: the owner exited; blk[1..3] in the freer's batch to the abandoned segment. */
static void setup_segbatch(int want) {
  run(OWNER, op_alloc, 5);
  owner_exits();
  remote_frees(FREER, 3);
  target = blk[3 - want];
  const ax_remote_slot_t *s =
      batch_to(act[FREER].heap, (uintptr_t)axi_segment_of(blk[0]) | 1); /* (remote.c: key_of) */
  CONFIRM(s, "no batch open to the segment");
  int len, pos = chain_pos(s->head, target, &len);
  CONFIRM(at(pos, len, want), "%p at %d of %d", target, pos, len);
}

/* seginbox.*: the same batch filled and sent: the abandoned segment's inbox. */
static void setup_seginbox(int want) {
  run(OWNER, op_alloc, 1); /* (blk[0] first, for its block size) */
  int k = fill_count();
  run(OWNER, op_alloc, k + 2);
  owner_exits();
  remote_frees(FREER, k);
  target = blk[want == HEAD ? k : want == MID ? k - k / 2 : 0];
  int len, pos = chain_pos((ax_block_t *)ax_atomic_load_relaxed(&axi_segment_of(blk[0])->inbox),
                           target, &len);
  CONFIRM(at(pos, len, want) && len == k + 1, "%p at %d of %d in the segment's inbox", target, pos,
          len);
}

/* tf.*: a thread without a heap frees blk[0..2], each alone onto the page's thread_free. */
static void setup_tf(int want) {
  run(OWNER, op_alloc, 4);
  for (int i = 0; i < 3; i++)
    run(NOHEAP1, op_free, i);
  run(NOHEAP1, op_heapless, NOHEAP1);
  target = blk[2 - want];
  const ax_page_t *page = page_of(target);
  CONFIRM(page_of(blk[0]) == page && page_of(blk[2]) == page, "blk[0..2] in different pages");
  int len, pos = list_pos(page, tf_list(page), target, &len);
  CONFIRM(at(pos, len, want), "%p at %d of %d on thread_free", target, pos, len);
}

/* tfclosed.*: blk[1..3] in the freer's batch to the owner, which exits (closing its inbox);
 * the batch, sent when it ages, goes block by block onto the abandoned page's thread_free. */
static void setup_tfclosed(int want) {
  run(OWNER, op_alloc, 5);
  remote_frees(FREER, 3);
  owner_exits();
  run(FREER, op_age, 0);
  CONFIRM(!batch_to(act[FREER].heap, (uintptr_t)act[OWNER].heap), "the batch was not sent");
  target = blk[want + 1];
  const ax_page_t *page = page_of(target);
  int len, pos = list_pos(page, tf_list(page), target, &len);
  CONFIRM(at(pos, len, want), "%p at %d of %d on thread_free", target, pos, len);
}

/* cache.*: the owner frees blk[0] (its heap's last block), blk[1] and blk[2] (its class's
 * stack: blk[2] on top). */
static void setup_cache(int want) {
  run(OWNER, op_alloc, 4);
  for (int i = 0; i < 3; i++)
    run(OWNER, op_free, i);
  const ax_heap_t *h = act[OWNER].heap;
  unsigned c = page_of(blk[0])->cls - AX_CACHE_FIRST;
  CONFIRM(h->cache.last_cls && h->cache.last == blk[0] && h->cache.n[c] == 2 &&
              h->cache.slot[c][0] == blk[1] && h->cache.slot[c][1] == blk[2],
          "the cache: last %p (class %u), %u on the stack", (void *)h->cache.last,
          h->cache.last_cls, h->cache.n[c]);
  target = blk[want == HEAD ? 0 : want == MID ? 2 : 1];
}

/* own.lf: the owner frees blk[1] onto local_free (a cached class: frees until its stack
 * overflows and gives its older half, blk[1] among it, back to the page). */
static void setup_own_lf(int unused) {
  run(OWNER, op_alloc, S > AX_DIRECT_MAX && S <= AX_CACHE_MAX ? 40 : 3);
  run(OWNER, op_free, 0);
  run(OWNER, op_free, 1);
  for (int i = 2; in_cache(act[OWNER].heap, blk[1]) && i < 39; i++)
    run(OWNER, op_free, i);
  target = blk[1];
  const ax_page_t *page = page_of(target);
  int len;
  CONFIRM(list_pos(page, page->local_free, target, &len) >= 0, "%p not on local_free", target);
}

/* own.free: the owner's page has no free block left; the owner frees blk[1] and trims, which
 * takes local_free (and the cache) onto the free list. */
static void setup_own_free(int unused) {
  run(OWNER, op_alloc, 3);
  run(OWNER, op_exhaust, 1);
  run(OWNER, op_free, 1);
  run(OWNER, op_trim, 0);
  target = blk[1];
  const ax_page_t *page = page_of(target);
  int len;
  CONFIRM(list_pos(page, page->free, target, &len) >= 0, "%p not on free", target);
}

/* own.drained: the freer frees blk[1] (sent alone); the owner's trim takes its inbox. */
static void setup_own_drained(int unused) {
  run(OWNER, op_alloc, 3);
  run(FREER, op_free, 1);
  run(OWNER, op_trim, 0);
  target = blk[1];
  const ax_page_t *page = page_of(target);
  int len;
  CONFIRM(list_pos(page, page->free, target, &len) >= 0 ||
              list_pos(page, page->local_free, target, &len) >= 0,
          "%p not on its page's lists", target);
}

/* own.abandoned: the owner frees blk[1] and exits: its segment is abandoned with the block on
 * its page's lists. */
static void setup_own_abandoned(int unused) {
  run(OWNER, op_alloc, 3);
  run(OWNER, op_free, 1);
  owner_exits();
  target = blk[1];
  const ax_page_t *page = page_of(target);
  int len;
  CONFIRM(list_pos(page, page->free, target, &len) >= 0 ||
              list_pos(page, page->local_free, target, &len) >= 0,
          "%p not on its page's lists", target);
}

/* huge: the owner frees a huge block, whose mapping the cache of huge mappings keeps (the
 * purge delay is a minute: nothing is unmapped meanwhile). */
static void setup_huge(int unused) {
  run(OWNER, op_alloc, 1);
  run(OWNER, op_free, 0);
  target = blk[0];
  ax_segment_t *seg = axi_huge_segment_of(target);
  CONFIRM(readable(seg) && !seg->pages[0].in_use, "%p's mapping not cached", target);
}

/* zero: the owner frees a malloc(0) block. */
static void setup_zero(int unused) {
  run(OWNER, op_alloc, 1);
  run(OWNER, op_free, 0);
  target = blk[0];
}

/* own.retired: every block of the owner's page freed and a trim: the page goes back to its
 * segment (64 B, 4 KiB: the segment stays, the owner's other block keeps it) or, a large page,
 * the segment to the cache, which the trim unmaps. The block is no block any more. */
static void setup_own_retired(int unused) {
  run(OWNER, op_alloc, 3);
  for (int i = 0; i < 3; i++)
    run(OWNER, op_free, i);
  run(OWNER, op_trim, 0);
  target = blk[1];
  CONFIRM(!readable(axi_segment_of(target)) || !page_of(target)->in_use, "%p's page still in use",
          target);
}

/* huge.unmapped: the owner frees a huge block and trims: its mapping is unmapped. */
static void setup_huge_unmapped(int unused) {
  run(OWNER, op_alloc, 1);
  run(OWNER, op_free, 0);
  run(OWNER, op_trim, 0);
  target = blk[0];
  CONFIRM(!readable(axi_huge_segment_of(target)), "%p still mapped", target);
}

/* aside (the profiler on, sampling paused: every class's turn comes at each allocation and
 * passes): the owner frees blk[1], a cached class's block, while its sample is due. */
static void setup_aside(int unused) {
  run(OWNER, op_alloc, 3);
  run(OWNER, op_free, 1);
  target = blk[1];
  CONFIRM(act[OWNER].heap->cache.aside == target, "%p not aside (aside: %p)", target,
          (void *)act[OWNER].heap->cache.aside);
}

/* slot (the profiler on, sampling every byte): the owner frees a sampled block. */
static void setup_slot(int unused) {
  run(OWNER, op_prof_active, 1);
  run(OWNER, op_alloc, 1);
  run(OWNER, op_prof_active, 0);
  CONFIRM(axi_segment_of(blk[0])->prof_slots, "%p not sampled", blk[0]);
  run(OWNER, op_free, 0);
  target = blk[0];
}

/* ---- the model ----------------------------------------------------------------------------- */

enum { Z64 = 1, Z4K = 2, Z512K = 4, ZHUGE = 8, ZZERO = 16 };
static const size_t size_of[] = {64, 4096, 512 << 10, 2 << 20, 0};
static const char *const size_name[] = {"64", "4096", "512K", "2M", "0"};
#define SIZES 5

enum { K_OWNER, K_SAME, K_THIRD, K_NOHEAP, KINDS };
static const char *const kind_name[] = {"owner", "same", "third", "noheap"};

typedef struct place {
  const char *name;
  void (*setup)(int);
  int arg;        /* the position, for the places that are lists */
  unsigned sizes; /* Z* */
  int first;      /* the actor that frees first */
  bool abandoned; /* the owner exits during the set-up */
  bool prof;      /* t_df_model prof only */
  /* the block is no block any more (its page retired, its mapping unmapped): "invalid pointer
   * <p>" is a report too (ptr.c: a pointer into no page in use is no block's) */
  bool gone;
} place_t;

#define AT(n, fn, pos, sz, who, ...)                                                               \
  { .name = n, .setup = fn, .arg = pos, .sizes = sz, .first = who, __VA_ARGS__ }
#define LIST3(n, fn, sz, who, ...)                                                                 \
  AT(n ".head", fn, HEAD, sz, who, __VA_ARGS__), AT(n ".mid", fn, MID, sz, who, __VA_ARGS__),      \
      AT(n ".tail", fn, TAIL, sz, who, __VA_ARGS__)
static const place_t places[] = {
    LIST3("batch", setup_batch, Z64 | Z4K, FREER, .abandoned = false),
    LIST3("inbox", setup_inbox, Z64 | Z4K | Z512K, FREER, .abandoned = false),
    LIST3("segbatch", setup_segbatch, Z64 | Z4K, FREER, .abandoned = true),
    LIST3("seginbox", setup_seginbox, Z64 | Z4K | Z512K, FREER, .abandoned = true),
    LIST3("tf", setup_tf, Z64 | Z4K | Z512K, NOHEAP1, .abandoned = false),
    LIST3("tfclosed", setup_tfclosed, Z64 | Z4K, FREER, .abandoned = true),
    AT("cache.last", setup_cache, HEAD, Z4K, OWNER, .abandoned = false),
    AT("cache.top", setup_cache, MID, Z4K, OWNER, .abandoned = false),
    AT("cache.deep", setup_cache, TAIL, Z4K, OWNER, .abandoned = false),
    AT("own.lf", setup_own_lf, 0, Z64 | Z4K | Z512K, OWNER, .abandoned = false),
    AT("own.free", setup_own_free, 0, Z64 | Z4K | Z512K, OWNER, .abandoned = false),
    AT("own.drained", setup_own_drained, 0, Z64 | Z4K | Z512K, FREER, .abandoned = false),
    AT("own.abandoned", setup_own_abandoned, 0, Z64 | Z4K | Z512K, OWNER, .abandoned = true),
    AT("own.retired", setup_own_retired, 0, Z64 | Z4K | Z512K, OWNER, .gone = true),
    AT("huge", setup_huge, 0, ZHUGE, OWNER, .abandoned = false),
    AT("huge.unmapped", setup_huge_unmapped, 0, ZHUGE, OWNER, .gone = true),
    AT("zero", setup_zero, 0, ZZERO, OWNER, .abandoned = false),
    AT("aside", setup_aside, 0, Z4K, OWNER, .prof = true),
    AT("slot", setup_slot, 0, Z64, OWNER, .prof = true),
};
#define PLACES (sizeof places / sizeof *places)

static int second_actor(const place_t *pl, int kind) {
  switch (kind) {
  case K_OWNER:
    return pl->abandoned ? -1 : OWNER;
  case K_SAME:
    return pl->first == OWNER ? -1 : pl->first;
  case K_THIRD:
    return THIRD;
  default:
    return NOHEAP;
  }
}

/* The child: the set-up, the second free, and what follows when it returns. */
static void cell_child(const place_t *pl, int si, int kind) {
  alarm(60); /* a hang is a verdict too (W) */
  S = size_of[si];
  uint64_t minute = 60000;
  CONFIRM(ax_ctl("purge.delay_ms", NULL, NULL, &minute, sizeof minute) == 0, "purge.delay_ms");
  if (pl->prof)
    op_prof_active(0);
  int second = second_actor(pl, kind);
  /* the heapful threads first, then the count of heaps the heapless ones must leave alone */
  run(OWNER, op_start, OWNER);
  if (pl->first == FREER)
    run(FREER, op_start, FREER);
  if (second == THIRD)
    run(THIRD, op_start, THIRD);
  ax_stats_t s;
  ax_stats_get(&s);
  heaps_base = s.heaps_live;
  if (pl->first == NOHEAP1)
    run(NOHEAP1, op_heapless, NOHEAP1);
  if (second == NOHEAP)
    run(NOHEAP, op_heapless, NOHEAP);
  pl->setup(pl->arg);
  if (act[second].live && !act[second].heapful)
    run(second, op_heapless, second);
  /* the block's page twice over, and every block the set-up freed (huge blocks, zero-size
   * ones and blocks whose page went: a few dozen) */
  reuse_count = 64;
  if (S && S <= AX_LARGE_MAX && !pl->gone) {
    target_cls = page_of(target)->cls;
    reuse_count = 2 * (size_t)page_of(target)->reserved + 2 * sizeof blk / sizeof *blk + 40;
  } else if (S > AX_LARGE_MAX) {
    reuse_count = 4;
  }
  say("@target %p\n@second\n", target);
  run(second, op_free_target, 0);
  say("@survived\n");
  /* (owner_first: the owner mallocs before the others send what they hold, as it may while a
   * batch waits for its thread's next slow paths) */
  if (owner_first && act[OWNER].live) {
    run(OWNER, op_reuse, (long)reuse_count);
    audit("after the owner's mallocs");
  }
  /* the others exit (their batches sent); the owner, or a thread that takes over its
   * segment, trims (takes its inbox, every thread_free and its cache) and mallocs */
  for (int id = FREER; id < ACTORS; id++)
    stop(id);
  int who = OWNER;
  if (!act[OWNER].live) {
    who = RECLAIMER;
    run(RECLAIMER, op_start, RECLAIMER);
  }
  run(who, op_trim, 0);
  audit("after the trim");
  if (target_cls)
    audit_pages(act[who].heap, target_cls, "after the trim");
  run(who, op_reuse, (long)reuse_count);
  audit("after the mallocs");
  if (target_cls)
    audit_pages(act[who].heap, target_cls, "after the mallocs");
  say("@clean\n");
  _exit(0);
}

/* ---- the parent's side --------------------------------------------------------------------- */

enum verdict { V_NA, V_REPORTED, V_LATE, V_INVALID, V_MISSED, V_TWICE, V_WRONG, V_SETUP, VERDICTS };
static const char verdict_code[] = "-RLIM2WS";
static const char *const verdict_name[] = {
    "n/a",    "REPORTED",     "REPORTED-LATE", "REPORTED-INVALID",
    "MISSED", "HANDED-TWICE", "WRONG",         "SETUP"};

/* The first line of out containing what, copied into line (without its newline). */
static const char *line_with(const char *out, const char *what, char *line, size_t n) {
  const char *p = strstr(out, what);
  if (!p)
    return NULL;
  while (p > out && p[-1] != '\n')
    p--;
  size_t k = strcspn(p, "\n");
  snprintf(line, n, "%.*s", (int)k, p);
  return line;
}

static bool verbose; /* -v: every child's output */

static enum verdict run_cell(const place_t *pl, int si, int kind, char *detail, size_t dn) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    close(fds[1]);
    cell_child(pl, si, kind);
  }
  close(fds[1]);
  static char out[16384];
  size_t got = 0;
  for (ssize_t r; got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) > 0;)
    got += (size_t)r;
  out[got] = 0;
  for (char sink[256]; read(fds[0], sink, sizeof sink) > 0;)
    ;
  close(fds[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  if (verbose)
    printf("---- %s %s %s: status 0x%x\n%s", pl->name, size_name[si], kind_name[kind], st, out);

  char line[256], want[96] = "(none)";
  const char *t = strstr(out, "@target ");
  if (t)
    snprintf(want, sizeof want, "axmalloc: free(): double free %.*s\n", (int)strcspn(t + 8, "\n"),
             t + 8);
  const char *second = strstr(out, "@second\n"), *survived = strstr(out, "@survived\n");
  const char *report = t ? strstr(out, want) : NULL;
  const char *msg = line_with(out, "axmalloc:", line, sizeof line);
  snprintf(detail, dn, "%s", msg ? msg : "");
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && report && second && report > second)
    return survived && report > survived ? V_LATE : V_REPORTED;
  if (t && pl->gone) { /* "invalid pointer <p>" at the second free */
    snprintf(want, sizeof want, "axmalloc: free(): invalid pointer %.*s\n",
             (int)strcspn(t + 8, "\n"), t + 8);
    report = strstr(out, want);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && report && second && report > second &&
        (!survived || report < survived))
      return V_INVALID;
  }
  if (line_with(out, "@setup", line, sizeof line)) {
    snprintf(detail, dn, "%s", line);
    return V_SETUP;
  }
  if (!second) {
    snprintf(detail, dn, "died in the set-up (status 0x%x) %s", st, msg ? msg : "");
    return V_SETUP;
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
    const char *l = line_with(out, "@twice", line, sizeof line);
    snprintf(detail, dn, "%s", l ? l + 7 : "");
    return V_TWICE;
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "@clean\n")) {
    const char *l = line_with(out, "@note", line, sizeof line);
    snprintf(detail, dn, "%s", l ? l + 6 : "");
    return V_MISSED;
  }
  if (WIFSIGNALED(st))
    snprintf(detail, dn, "%s signal %d%s%s",
             survived ? "after the second free:" : "at the second free:", WTERMSIG(st),
             msg ? ": " : "", msg ? msg : "");
  else
    snprintf(detail, dn, "exit %d %s", WEXITSTATUS(st), msg ? msg : "");
  return V_WRONG;
}

static void *idle_thread(void *arg) { return arg; }

static bool known_gap(const char *cell) {
  for (const char *const *g = known_gaps; *g; g++)
    if (strcmp(*g, cell) == 0)
      return true;
  return false;
}

int main(int argc, char **argv) {
  bool prof = false;
  const char *filter = NULL;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "prof") == 0)
      prof = true;
    else if (strcmp(argv[i], "-v") == 0)
      verbose = true;
    else if (strcmp(argv[i], "-owner-first") == 0)
      owner_first = true;
    else
      filter = argv[i];
  check_axmalloc_active();
  skip_when_tagging("t_df_model");
  void *probe = malloc(100);
  if (malloc_usable_size(probe) == 100) { /* (the class of 100 B is 112 B) */
    printf("t_df_model: skipped: checked mode (its quarantine holds every freed block)\n");
    return 77;
  }
  free(probe);
  ax_info_t info;
  ax_info(&info);
  if (prof != (info.prof_sample != 0)) {
    printf("t_df_model%s: skipped: the heap profiler is %s\n", prof ? " prof" : "",
           prof ? "off" : "on (its sampled blocks have places of their own: t_df_model prof)");
    return 77;
  }
  /* A thread that never allocates, started and joined before the first fork: qemu-user leaves
   * its single-threaded mode once for all the children instead of in each (24 -> 19 ms a cell
   * under qemu; natively nothing changes: every child starts threads anyway). */
  pthread_t idle;
  CHECK(pthread_create(&idle, NULL, idle_thread, NULL) == 0 && pthread_join(idle, NULL) == 0);
  /* the coordinator (every child's main thread) has a segment of every kind: it never takes
   * over a segment the test abandons */
  static const size_t keep_sizes[] = {16, 64, 2048, 4096, 512 << 10};
  static void *keep[sizeof keep_sizes / sizeof *keep_sizes];
  for (size_t i = 0; i < sizeof keep_sizes / sizeof *keep_sizes; i++)
    CHECK((keep[i] = malloc(keep_sizes[i])) != NULL);

  static enum verdict table[PLACES][SIZES][KINDS];
  unsigned count[VERDICTS] = {0}, failed = 0;
  for (size_t p = 0; p < PLACES; p++) {
    const place_t *pl = &places[p];
    if (pl->prof != prof)
      continue;
    for (int si = 0; si < SIZES; si++) {
      if (!(pl->sizes & (1u << si)))
        continue;
      for (int k = 0; k < KINDS; k++) {
        char cell[96], detail[256] = "";
        snprintf(cell, sizeof cell, "%s %s %s", pl->name, size_name[si], kind_name[k]);
        enum verdict v = V_NA;
        if (second_actor(pl, k) >= 0 && (!filter || strstr(cell, filter)))
          v = run_cell(pl, si, k, detail, sizeof detail);
        table[p][si][k] = v;
        count[v]++;
        if (v == V_NA)
          continue;
        bool ok = v == V_REPORTED || v == V_INVALID || (v == V_LATE && late_ok) || known_gap(cell);
        failed += !ok;
        printf("%-28s %s%s%s%s\n", cell, verdict_name[v], *detail ? ": " : "", detail,
               ok ? "" : "   <-- FAIL");
      }
    }
  }
  printf("\n%-22s %-6s %6s %6s %6s %6s\n", "place", "size", kind_name[0], kind_name[1],
         kind_name[2], kind_name[3]);
  for (size_t p = 0; p < PLACES; p++)
    for (int si = 0; si < SIZES; si++)
      if (places[p].prof == prof && (places[p].sizes & (1u << si)))
        printf("%-22s %-6s %6c %6c %6c %6c\n", places[p].name, size_name[si],
               verdict_code[table[p][si][0]], verdict_code[table[p][si][1]],
               verdict_code[table[p][si][2]], verdict_code[table[p][si][3]]);
  printf("(R reported, L reported late, I an invalid pointer, M missed, 2 handed out twice, W "
         "wrong, S set-up failed, - not applicable)\n");
  printf("\nt_df_model%s: %u reported, %u reported late, %u invalid pointers, %u missed, %u "
         "handed twice, %u wrong, %u set-up failures; %u failed\n",
         prof ? " prof" : "", count[V_REPORTED], count[V_LATE], count[V_INVALID], count[V_MISSED],
         count[V_TWICE], count[V_WRONG], count[V_SETUP], failed);
  return failed ? 1 : 0;
}
