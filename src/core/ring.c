#include "core/ring.h"

#include <stdlib.h>
#include <string.h>

struct ring_slot {
    uint32_t off;
    uint32_t len;
    int64_t at_unix_ms;
};

_Static_assert(sizeof(struct ring_slot) == RING_SLOT_BYTES, "slot size is charged");

#define RING_MIN_CAP   4096u
#define RING_MIN_SLOTS 64u

static const uint8_t ring_empty[1];

void ring_init(struct ring *r, size_t bound)
{
    memset(r, 0, sizeof(*r));
    if (bound == 0)
        bound = RING_DEFAULT_BOUND;
    if (bound > RING_MAX_BYTES)
        bound = RING_MAX_BYTES;
    r->bound = bound;
    r->next_seq = 1;
}

void ring_free(struct ring *r)
{
    free(r->buf);
    free(r->slots);
    r->buf = NULL;
    r->slots = NULL;
    r->cap = 0;
    r->slot_cap = 0;
    r->count = 0;
    r->retained = 0;
    r->head = r->tail = 0;
    r->wrapped = 0;
}

static struct ring_slot *ring_slot_at(const struct ring *r, uint32_t i)
{
    return &r->slots[(r->slot_first + i) & (r->slot_cap - 1)];
}

static void ring_evict_oldest(struct ring *r)
{
    struct ring_slot *s = ring_slot_at(r, 0);
    uint32_t next_head;

    /* Only called with count > 0, so slot 0 was written by an append. */
    r->retained -= (size_t)s->len + RING_SLOT_BYTES; /* NOLINT(clang-analyzer-core.*) */
    r->slot_first = (r->slot_first + 1) & (r->slot_cap - 1);
    r->count--;
    if (r->count == 0) {
        /* Reset so the next entry starts at offset 0 with the whole buffer. */
        r->head = r->tail = 0;
        r->wrapped = 0;
        return;
    }
    next_head = ring_slot_at(r, 0)->off;
    /* Entries before the wrap point sit at increasing offsets, so a lower
     * offset means the oldest entry is now the one placed at 0. */
    if (r->wrapped && next_head < r->head)
        r->wrapped = 0;
    r->head = next_head;
}

/* Finds room for LEN contiguous bytes; returns 0 and sets *OFF, or -1 when
 * the free space is too small or fragmented. */
static int ring_place(struct ring *r, uint32_t len, uint32_t *off)
{
    if (r->count == 0) {
        r->head = r->tail = 0;
        r->wrapped = 0;
    }
    if (!r->wrapped) {
        if (r->cap - r->tail >= len) {
            *off = r->tail;
            r->tail += len;
            return 0;
        }
        if (r->head >= len) {
            /* The gap between tail and the end stays unused until the
             * head wraps past it. */
            *off = 0;
            r->tail = len;
            r->wrapped = 1;
            return 0;
        }
        return -1;
    }
    if (r->head - r->tail >= len) {
        *off = r->tail;
        r->tail += len;
        return 0;
    }
    return -1;
}

/* Moves the live entries, in order, to the start of a buffer of NEWCAP bytes.
 * Returns -1 (ring unchanged) when memory runs out. */
static int ring_grow(struct ring *r, uint32_t newcap)
{
    uint8_t *nb = malloc(newcap);
    uint32_t i, pos = 0;

    if (nb == NULL)
        return -1;
    for (i = 0; i < r->count; i++) {
        struct ring_slot *s = ring_slot_at(r, i);
        if (s->len > 0)
            memcpy(nb + pos, r->buf + s->off, s->len);
        s->off = pos;
        pos += s->len;
    }
    free(r->buf);
    r->buf = nb;
    r->cap = newcap;
    r->head = 0;
    r->tail = pos;
    r->wrapped = 0;
    return 0;
}

/* Moves the index into a fresh array of NCAP slots (a power of two holding
 * every entry).  Returns -1 (index unchanged) when memory runs out. */
static int ring_resize_slots(struct ring *r, uint32_t ncap)
{
    struct ring_slot *ns = malloc((size_t)ncap * sizeof(*ns));
    uint32_t i;

    if (ns == NULL)
        return -1;
    for (i = 0; i < r->count; i++)
        ns[i] = *ring_slot_at(r, i);
    free(r->slots);
    r->slots = ns;
    r->slot_cap = ncap;
    r->slot_first = 0;
    return 0;
}

/* Makes room in the index for one more slot; returns -1 on memory exhaustion. */
static int ring_reserve_slot(struct ring *r)
{
    if (r->count < r->slot_cap)
        return 0;
    return ring_resize_slots(r, r->slot_cap ? r->slot_cap * 2 : RING_MIN_SLOTS);
}

uint64_t ring_append(struct ring *r, const void *data, size_t len, int64_t at_unix_ms)
{
    size_t charge = len + RING_SLOT_BYTES;
    size_t maxcap;
    uint32_t off;
    struct ring_slot *s;

    if (len > RING_MAX_BYTES)
        return 0;
    /* Reserve index space first so a failure leaves the ring unchanged. */
    if (ring_reserve_slot(r) != 0)
        return 0;
    maxcap = len > r->bound ? len : r->bound;
    while (r->count > 0 && r->retained + charge > r->bound)
        ring_evict_oldest(r);
    for (;;) {
        if (ring_place(r, (uint32_t)len, &off) == 0)
            break;
        if ((size_t)r->cap < maxcap) {
            size_t live = r->retained - (size_t)r->count * RING_SLOT_BYTES;
            size_t want = (size_t)r->cap * 2;
            if (want < live + len)
                want = live + len;
            if (want < RING_MIN_CAP)
                want = RING_MIN_CAP;
            if (want > maxcap)
                want = maxcap;
            if (ring_grow(r, (uint32_t)want) != 0)
                return 0;
            continue;
        }
        /* Full or fragmented at the wrap: evict.  An empty ring with
         * cap >= len always places, so count > 0 here. */
        ring_evict_oldest(r);
    }
    if (len > 0)
        memcpy(r->buf + off, data, len);
    s = ring_slot_at(r, r->count);
    s->off = off;
    s->len = (uint32_t)len;
    s->at_unix_ms = at_unix_ms;
    r->count++;
    r->retained += charge;
    return r->next_seq++;
}

size_t ring_trim(struct ring *r, size_t keep)
{
    size_t before = ring_heap_bytes(r);
    size_t live;
    uint32_t ncap = RING_MIN_SLOTS;

    while (r->count > 0 && r->retained > keep)
        ring_evict_oldest(r);
    if (r->count == 0) {
        ring_free(r); /* next_seq survives: seqs are never reused */
        return before;
    }
    live = r->retained - (size_t)r->count * RING_SLOT_BYTES;
    if (live < RING_MIN_CAP)
        live = RING_MIN_CAP;
    if (live < r->cap)
        (void)ring_grow(r, (uint32_t)live); /* moves the entries to a smaller buffer */
    while (ncap < r->count)
        ncap *= 2;
    if (ncap < r->slot_cap)
        (void)ring_resize_slots(r, ncap);
    return before - ring_heap_bytes(r);
}

uint64_t ring_oldest_seq(const struct ring *r)
{
    return r->count ? r->next_seq - r->count : 0;
}

void ring_skip_to(struct ring *r, uint64_t next_seq)
{
    if (next_seq <= r->next_seq)
        return;
    ring_trim(r, 0);
    r->next_seq = next_seq;
}

uint64_t ring_newest_seq(const struct ring *r)
{
    return r->next_seq - 1;
}

uint32_t ring_count(const struct ring *r)
{
    return r->count;
}

size_t ring_retained_bytes(const struct ring *r)
{
    return r->retained;
}

size_t ring_heap_bytes(const struct ring *r)
{
    return (size_t)r->cap + (size_t)r->slot_cap * sizeof(struct ring_slot);
}

size_t ring_memory_bytes(const struct ring *r)
{
    return sizeof(*r) + ring_heap_bytes(r);
}

enum ring_status ring_next(const struct ring *r, uint64_t after_seq, struct ring_entry *e)
{
    uint64_t want = after_seq + 1;
    uint64_t oldest = r->next_seq - r->count;
    const struct ring_slot *s;

    if (want >= r->next_seq)
        return RING_NONE;
    if (want < oldest)
        return RING_EVICTED;
    s = ring_slot_at(r, (uint32_t)(want - oldest));
    /* An empty entry may live in a never-allocated buffer (NULL). */
    e->data = s->len ? r->buf + s->off : ring_empty;
    e->len = s->len;
    e->seq = want;
    e->at_unix_ms = s->at_unix_ms;
    return RING_OK;
}

uint64_t ring_tail_cursor(const struct ring *r, uint64_t n)
{
    uint64_t newest = r->next_seq - 1;

    if (n >= r->count)
        return r->next_seq - 1 - r->count;
    return newest - n;
}

enum ring_status ring_cursor_check(const struct ring *r, uint64_t after_seq)
{
    uint64_t newest = r->next_seq - 1;

    if (after_seq > newest)
        return RING_AHEAD;
    if (after_seq == newest || after_seq + 1 >= r->next_seq - r->count)
        return RING_OK;
    return RING_EVICTED;
}
