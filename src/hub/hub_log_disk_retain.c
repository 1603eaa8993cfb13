/* hub_log_disk_retain: the durable backend's retention on disk.  Once a
 * second each session's frames on disk are held to their bounds
 * (--disk-log-bytes, --disk-log-age-ms), all of them to the budget
 * (--disk-log-budget-bytes), a whole chunk at a time, the oldest first and
 * never one the ring still reaches into; a session memory forgot leaves
 * the disk; the bus keeps what memory keeps. */
#include "common/clock.h"
#include "hub/hub_log_disk_internal.h"

/* The seq below which E's ring holds nothing: the disk keeps what the ring
 * keeps, whatever its own bounds. */
static uint64_t ring_floor(struct session *s, const struct dsk_session *e)
{
    uint64_t oldest = ring_oldest_seq(session_ring(s));

    return oldest ? oldest : e->last_seq + 1;
}

/* 1 when E's oldest chunk may go: another follows, and the ring does not
 * reach into it. */
static int chunk_may_go(const struct dsk_session *e, uint64_t floor)
{
    return e->nchunks >= 2 && e->chunks[1].first_seq <= floor;
}

/* E's entries below its oldest chunk leave the disk. */
static void trim_to_chunks(struct hub_log_disk *d, struct dsk_session *e)
{
    uint64_t seq = e->chunks[0].first_seq;

    if (seq > e->trimmed && hub_log_disk_take(d, LOGDB_OP_TRIM, e, 0, seq, 0, NULL, 0)) {
        e->trimmed = seq;
        d->trims++;
    }
}

/* One session: forgotten by memory, it leaves the disk; else its oldest
 * chunks go while it is over its bytes or they are past the age. */
static void retain_session(struct hub_log_disk *d, struct dsk_session *e, int64_t now)
{
    struct session *s = session_lookup(d->reg, e->id, e->len);
    const struct hub_log_disk_config *c = &d->config;
    uint64_t floor;
    int dropped = 0;

    if (!s) {
        struct dsk_op *op;
        if (e->pending == 0 && (op = hub_log_disk_take(d, LOGDB_OP_DROP, e, 0, 0, 0, NULL, 0))) {
            op->session = NULL; /* names its sid only: E goes now */
            hub_log_disk_remove(d, e);
        }
        return;
    }
    floor = ring_floor(s, e);
    while (chunk_may_go(e, floor) &&
           (e->disk_bytes > c->session_bytes ||
            (c->age_ms && e->chunks[0].newest_at + (int64_t)c->age_ms < now))) {
        hub_log_disk_chunk_drop(d, e);
        dropped = 1;
    }
    if (dropped)
        trim_to_chunks(d, e);
}

/* Over the budget of every session's bytes: the oldest chunk of all goes,
 * a bounded number per round. */
static void retain_budget(struct hub_log_disk *d)
{
    for (int round = 0; round < 256 && d->disk_bytes > d->config.budget_bytes; round++) {
        struct dsk_session *oldest = NULL;
        for (struct dsk_session *e = hub_log_disk_first(d); e; e = hub_log_disk_after(d, e)) {
            struct session *s = session_lookup(d->reg, e->id, e->len);
            if (s && chunk_may_go(e, ring_floor(s, e)) &&
                (!oldest || e->chunks[0].newest_at < oldest->chunks[0].newest_at))
                oldest = e;
        }
        if (!oldest)
            return;
        hub_log_disk_chunk_drop(d, oldest);
        trim_to_chunks(d, oldest);
    }
}

/* Once a second: retention, the bus below memory's oldest event, and the
 * windows of older frames nobody reads. */
void hub_log_disk_gc(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;
    int64_t now = clock_unix_ms();
    uint64_t oldest;

    for (struct dsk_session *e = hub_log_disk_first(d), *next; e; e = next) {
        next = hub_log_disk_after(d, e);
        retain_session(d, e, now);
    }
    retain_budget(d);
    oldest = ring_oldest_seq(&d->bus->ring);
    if (oldest > d->bus_trimmed &&
        hub_log_disk_take(d, LOGDB_OP_BUS_TRIM, NULL, 0, oldest, 0, NULL, 0))
        d->bus_trimmed = oldest;
    hub_log_disk_cold_expire(d, clock_monotonic_ms());
}
