#include "core/seq_index.h"

#include <stdlib.h>

void seq_index_free(struct seq_index *x)
{
    free(x->seqs);
    x->seqs = NULL;
    x->cap = x->count = 0;
}

int seq_index_reserve(struct seq_index *x)
{
    size_t cap;
    uint64_t *seqs;

    if (x->count < x->cap)
        return 0;
    cap = x->cap ? x->cap * 2 : 1024;
    seqs = malloc(cap * sizeof(*seqs));
    if (!seqs)
        return -1;
    for (uint64_t l = x->first; l < x->first + x->count; l++)
        seqs[l & (cap - 1)] = seq_index_at(x, l);
    free(x->seqs);
    x->seqs = seqs;
    x->cap = cap;
    return 0;
}

void seq_index_push(struct seq_index *x, uint64_t local, uint64_t seq, uint64_t oldest)
{
    while (x->count && x->first < oldest) {
        seq_index_raise_floor(x, seq_index_at(x, x->first));
        x->first++;
        x->count--;
    }
    if (!x->count)
        x->first = local;
    x->seqs[local & (x->cap - 1)] = seq;
    x->count++;
}

uint64_t seq_index_after(const struct seq_index *x, uint64_t seq)
{
    uint64_t lo = x->first, hi = x->first + x->count;

    if (!x->count || seq_index_newest(x) <= seq)
        return 0;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (seq_index_at(x, mid) <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
