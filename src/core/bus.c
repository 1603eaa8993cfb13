#include "core/bus.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Returns a nonzero random 64-bit value; falls back to a mix of time and pid
 * when the kernel has no entropy call (never 0 either way). */
static uint64_t bus_random_epoch(void)
{
    uint64_t v = 0;
    struct timespec ts;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v) || v == 0) {
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
        /* splitmix64 finalizer spreads the low-entropy bits. */
        v ^= v >> 30;
        v *= 0xbf58476d1ce4e5b9ULL;
        v ^= v >> 27;
        v *= 0x94d049bb133111ebULL;
        v ^= v >> 31;
    }
    return v ? v : 1;
}

void bus_init(struct bus *b, size_t bound, uint64_t epoch)
{
    ring_init(&b->ring, bound ? bound : BUS_DEFAULT_BOUND);
    watch_list_init(&b->watchers);
    b->epoch = epoch ? epoch : bus_random_epoch();
}

void bus_free(struct bus *b)
{
    ring_free(&b->ring);
}

uint64_t bus_epoch(const struct bus *b)
{
    return b->epoch;
}

uint64_t bus_publish(struct bus *b, const void *payload, size_t len, int64_t at_unix_ms)
{
    uint64_t seq = ring_append(&b->ring, payload, len, at_unix_ms);

    if (seq != 0)
        watch_list_wake(&b->watchers);
    return seq;
}

enum bus_status bus_cursor_open(const struct bus *b, uint64_t since_seq, uint64_t epoch,
                                uint64_t *cursor)
{
    uint64_t newest = ring_newest_seq(&b->ring);
    uint64_t oldest = ring_oldest_seq(&b->ring);

    if (since_seq == 0) {
        *cursor = newest;
        return BUS_OK;
    }
    if (epoch != b->epoch || since_seq > newest)
        return BUS_RESYNC;
    /* since_seq == newest is "caught up" even when nothing is retained. */
    if (since_seq < newest && since_seq + 1 < oldest)
        return BUS_RESYNC;
    *cursor = since_seq;
    return BUS_OK;
}

enum bus_status bus_next(const struct bus *b, uint64_t cursor, struct bus_event *ev)
{
    struct ring_entry e;

    switch (ring_next(&b->ring, cursor, &e)) {
    case RING_OK:
        ev->payload = e.data;
        ev->len = e.len;
        ev->seq = e.seq;
        ev->at_unix_ms = e.at_unix_ms;
        ev->epoch = b->epoch;
        return BUS_OK;
    case RING_NONE:
        return BUS_NONE;
    case RING_EVICTED:
    case RING_AHEAD:
        break;
    }
    return BUS_RESYNC;
}

void bus_watch(struct bus *b, struct watcher *w)
{
    watch_list_add(&b->watchers, w);
}

void bus_unwatch(struct bus *b, struct watcher *w)
{
    watch_list_remove(&b->watchers, w);
}

uint64_t bus_newest_seq(const struct bus *b)
{
    return ring_newest_seq(&b->ring);
}

void bus_skip_to(struct bus *b, uint64_t next_seq)
{
    ring_skip_to(&b->ring, next_seq);
}

size_t bus_memory_bytes(const struct bus *b)
{
    return sizeof(*b) - sizeof(b->ring) + ring_memory_bytes(&b->ring);
}

uint64_t bus_oldest_cursor(const struct bus *b)
{
    return ring_count(&b->ring) ? ring_oldest_seq(&b->ring) - 1 : ring_newest_seq(&b->ring);
}
