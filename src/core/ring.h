/* ring: a per-session record ring bounded in bytes.
 *
 * Each entry is an opaque byte string (an encoded frame the ring never looks
 * into) stamped with a ring-assigned seq (1, 2, 3, ... strictly increasing,
 * never reused) and the caller's at_unix_ms.  Appending past the bound evicts
 * the oldest entries; eviction is never an error.
 *
 * Bound accounting: every entry is charged len + RING_SLOT_BYTES, and the sum
 * of charges of retained entries never exceeds the bound, with one exception:
 * an entry whose charge alone exceeds the bound evicts everything else and is
 * kept on its own (so a frame is never silently dropped); the next append
 * evicts it.  Because entries are stored contiguously in a circular buffer,
 * fragmentation at the wrap point may evict up to one entry more than strictly
 * necessary.
 *
 * Readers hold a cursor: the seq of the last entry they delivered (0 before
 * the first).  ring_next() reads the entry after it in place, without a copy;
 * the pointer stays valid until the next ring_append() or ring_free() on the
 * same ring.  A cursor behind the oldest retained entry gets RING_EVICTED,
 * never a silent skip.
 *
 * An empty ring allocates nothing: the buffers are allocated on the first
 * append and grow by doubling up to the bound.  Single-threaded. */
#ifndef AGENTHUB_CORE_RING_H
#define AGENTHUB_CORE_RING_H

#include <stddef.h>
#include <stdint.h>

#define RING_DEFAULT_BOUND ((size_t)4 * 1024 * 1024)
/* Bookkeeping charged per entry against the bound (the index slot). */
#define RING_SLOT_BYTES 16u
/* Largest accepted bound and entry (the index stores 32-bit offsets). */
#define RING_MAX_BYTES ((size_t)1 << 30)

struct ring_slot;

struct ring {
    uint8_t *buf;
    struct ring_slot *slots;
    uint64_t next_seq; /* seq the next append gets */
    size_t bound;      /* ceiling on the summed charge */
    size_t retained;   /* summed charge of retained entries */
    uint32_t cap;      /* bytes allocated in buf */
    uint32_t head;     /* offset of the oldest entry's bytes */
    uint32_t tail;     /* offset where the next entry's bytes go */
    uint32_t slot_cap; /* power of two, or 0 */
    uint32_t slot_first;
    uint32_t count;
    int wrapped; /* live bytes are [head,end) + [0,tail) */
};

enum ring_status {
    RING_OK = 0,      /* an entry was returned */
    RING_NONE = 1,    /* caught up: nothing after the cursor yet */
    RING_EVICTED = 2, /* the entry after the cursor was evicted */
    RING_AHEAD = 3,   /* the cursor is past the newest seq (ring_cursor_check) */
};

struct ring_entry {
    const uint8_t *data;
    size_t len;
    uint64_t seq;
    int64_t at_unix_ms;
};

/* Initializes an empty ring; BOUND 0 means RING_DEFAULT_BOUND, and a bound
 * above RING_MAX_BYTES is clamped to it.  Allocates nothing. */
void ring_init(struct ring *r, size_t bound);
void ring_free(struct ring *r);

/* Appends a copy of DATA[0..LEN) and returns its seq (>= 1).  Returns 0, with
 * the ring unchanged, when LEN > RING_MAX_BYTES or memory runs out. */
uint64_t ring_append(struct ring *r, const void *data, size_t len, int64_t at_unix_ms);

/* Reads the entry right after cursor AFTER_SEQ into *E (RING_OK), or reports
 * RING_NONE (AFTER_SEQ >= newest) or RING_EVICTED (AFTER_SEQ + 1 < oldest). */
enum ring_status ring_next(const struct ring *r, uint64_t after_seq, struct ring_entry *e);

/* Checks a resume point before a reader starts at it: RING_OK when the
 * entries after AFTER_SEQ are all retained (or it is the newest seq: caught
 * up), RING_EVICTED when some were evicted (SubscribeAgentSession answers
 * OUT_OF_RANGE), RING_AHEAD when AFTER_SEQ was never assigned. */
enum ring_status ring_cursor_check(const struct ring *r, uint64_t after_seq);

/* The cursor from which ring_next() yields the last N retained entries
 * (all of them when fewer are retained); N 0 gives the live cursor. */
uint64_t ring_tail_cursor(const struct ring *r, uint64_t n);

/* Evicts the oldest entries until the summed charge is at most KEEP bytes,
 * then moves what is left into buffers just big enough for it, so the
 * memory is given back (KEEP 0 frees both buffers).  Seqs are unchanged: a
 * reader behind the new oldest entry gets RING_EVICTED.  Returns the heap
 * bytes released; when memory for the smaller buffers runs out the entries
 * are still evicted and only the compaction is skipped. */
size_t ring_trim(struct ring *r, size_t keep);

/* Makes NEXT_SEQ the seq of the next append when it is past the ring's
 * own, evicting every retained entry (a reader behind gets RING_EVICTED):
 * a copy of a log whose older entries are gone at the source starts where
 * the source is.  Does nothing otherwise. */
void ring_skip_to(struct ring *r, uint64_t next_seq);

/* Oldest retained seq, or 0 when the ring is empty. */
uint64_t ring_oldest_seq(const struct ring *r);
/* Last seq assigned, or 0 before the first append (the live cursor). */
uint64_t ring_newest_seq(const struct ring *r);
uint32_t ring_count(const struct ring *r);
/* Summed charge of retained entries (see bound accounting above). */
size_t ring_retained_bytes(const struct ring *r);
/* Heap bytes the ring owns: data buffer plus index, excluding struct ring. */
size_t ring_heap_bytes(const struct ring *r);
/* Exact memory: sizeof(struct ring) + ring_heap_bytes(). */
size_t ring_memory_bytes(const struct ring *r);

#endif
