/* seq_index: the seqs a copy of a log numbers its entries with, when they
 * are not the copy's own.
 *
 * A ring numbers its entries 1, 2, 3, ... (its local seqs).  A cluster's
 * bus copy keeps its events in such a ring, but their bus seqs come from
 * the stream (stream seq * 1024 + index) and have gaps.  seq_index maps
 * each retained local seq to its seq, in order; both only grow, so a seq
 * is found by binary search.  It also keeps a floor: the highest seq that
 * may have existed and is not held (evicted, or never read), below which a
 * reader's position cannot be resumed.
 *
 * Allocates on the first push, doubling; single-threaded. */
#ifndef AGENTHUB_CORE_SEQ_INDEX_H
#define AGENTHUB_CORE_SEQ_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct seq_index {
    uint64_t *seqs; /* at local seq & (cap - 1) */
    size_t cap;     /* a power of two, or 0 */
    uint64_t first; /* local seq of the oldest entry held */
    size_t count;
    uint64_t floor;
};

void seq_index_free(struct seq_index *x);

/* Makes room for one more entry.  Returns 0, or -1 when memory is short
 * (the index is unchanged).  Call it before the ring takes the entry, so
 * that what the ring holds and what the index maps never part. */
int seq_index_reserve(struct seq_index *x);

/* Records that local seq LOCAL (the ring's newest, one past the last
 * pushed) holds SEQ (above every seq pushed), after forgetting the entries
 * below OLDEST (the ring's oldest retained local seq now), whose seqs
 * raise the floor.  Room must have been reserved. */
void seq_index_push(struct seq_index *x, uint64_t local, uint64_t seq, uint64_t oldest);

/* The seq at local seq LOCAL, which must be held. */
static inline uint64_t seq_index_at(const struct seq_index *x, uint64_t local)
{
    return x->seqs[local & (x->cap - 1)];
}

/* The newest seq held, or 0. */
static inline uint64_t seq_index_newest(const struct seq_index *x)
{
    return x->count ? seq_index_at(x, x->first + x->count - 1) : 0;
}

/* The local seq of the first entry whose seq is above SEQ, or 0 when none
 * is held. */
uint64_t seq_index_after(const struct seq_index *x, uint64_t seq);

/* Raises the floor to SEQ (never lowers it). */
static inline void seq_index_raise_floor(struct seq_index *x, uint64_t seq)
{
    if (seq > x->floor)
        x->floor = seq;
}

#endif
