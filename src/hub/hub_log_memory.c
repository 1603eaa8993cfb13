/* hub_log_memory: session logs in each session's core ring, events in one
 * core bus.  Every operation is the core call it names. */
#include "hub/hub_log.h"

static uint64_t memory_append(void *impl, struct session *s, const void *frame, size_t len,
                              int64_t at_unix_ms)
{
    return session_append(s, frame, len, at_unix_ms);
}

enum ring_status hub_log_ring_read(void *impl, struct session *s, uint64_t after_seq,
                                   struct ring_entry *out)
{
    return ring_next(session_ring(s), after_seq, out);
}

enum ring_status hub_log_ring_check(void *impl, struct session *s, uint64_t after_seq)
{
    return ring_cursor_check(session_ring(s), after_seq);
}

static void memory_mark(void *impl, struct session *s, enum hub_log_mark mark)
{
    switch (mark) {
    case HUB_LOG_TAIL_END:
        session_tail_end(s);
        break;
    case HUB_LOG_TAIL_RESUME:
        session_tail_resume(s);
        break;
    case HUB_LOG_END:
        session_end(s);
        break;
    }
}

static int memory_writable(void *impl)
{
    return 1;
}

/* One process: runner_seq.c's own mark is the whole truth. */
static uint32_t memory_origin(void *impl, const struct hub_log_origin *o)
{
    return 0;
}

static uint64_t memory_runner_mark(void *impl, const char *runner_id, uint64_t *generation)
{
    *generation = 0;
    return 0;
}

static void memory_runner_reset(void *impl, const char *runner_id)
{
}

uint64_t hub_log_ring_tail(void *impl, struct session *s, uint64_t n)
{
    return ring_tail_cursor(session_ring(s), n);
}

void hub_log_ring_span(void *impl, struct session *s, struct hub_log_span *out)
{
    const struct ring *ring = session_ring(s);

    out->oldest = ring_oldest_seq(ring);
    out->newest = out->readable = ring_newest_seq(ring);
    out->count = ring_count(ring);
    out->bytes = ring_retained_bytes(ring);
}

static uint64_t memory_publish(void *impl, const void *payload, size_t len, int64_t at_unix_ms)
{
    return bus_publish(impl, payload, len, at_unix_ms);
}

static enum bus_status memory_open(void *impl, uint64_t since_seq, uint64_t epoch, uint64_t *cursor)
{
    return bus_cursor_open(impl, since_seq, epoch, cursor);
}

static enum bus_status memory_next(void *impl, uint64_t cursor, struct bus_event *out)
{
    return bus_next(impl, cursor, out);
}

static uint64_t memory_bus_oldest(void *impl)
{
    return bus_oldest_cursor(impl);
}

static uint64_t memory_bus_newest(void *impl)
{
    return bus_newest_seq(impl);
}

static void memory_subscribe(void *impl, struct watcher *w)
{
    bus_watch(impl, w);
}

static void memory_unsubscribe(void *impl, struct watcher *w)
{
    bus_unwatch(impl, w);
}

static uint64_t memory_epoch(void *impl)
{
    return bus_epoch(impl);
}

/* Memory stores a frame as it appends it: its seq is final at once. */
static void memory_track(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq)
{
    if (w->first_seq == 0)
        w->first_seq = seq;
    w->last_seq = seq;
}

static int memory_stored(void *impl, struct session *s, struct hub_log_wait *w)
{
    return 1;
}

static const struct hub_log_ops memory_ops = {
    .append = memory_append,
    .read = hub_log_ring_read,
    .check = hub_log_ring_check,
    .mark = memory_mark,
    .tail = hub_log_ring_tail,
    .span = hub_log_ring_span,
    .publish = memory_publish,
    .open = memory_open,
    .next = memory_next,
    .subscribe = memory_subscribe,
    .unsubscribe = memory_unsubscribe,
    .epoch = memory_epoch,
    .bus_oldest = memory_bus_oldest,
    .bus_newest = memory_bus_newest,
    .origin = memory_origin,
    .runner_mark = memory_runner_mark,
    .runner_reset = memory_runner_reset,
    .track = memory_track,
    .stored = memory_stored,
    .writable = memory_writable,
};

void hub_log_memory(struct hub_log *log, struct bus *bus)
{
    log->ops = &memory_ops;
    log->impl = bus;
}
