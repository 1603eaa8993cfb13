/* bus: the global event ring behind SubscribeEvents.
 *
 * One byte-bounded ring (default 16 MiB, --bus-bytes) of opaque payloads, each
 * stamped with a bus seq (1, 2, ... strictly increasing), at_unix_ms, and the
 * server's instance_epoch (random, nonzero, new at each start).
 *
 * Suggested payload for the RPC layer: the encoded SubscribeEventsResponse
 * WITHOUT fields 1..3.  On delivery, write seq (field 1), at_unix_ms (field 2)
 * and instance_epoch (field 3) as varint fields in front of the payload:
 * protobuf fields may appear in any order, so the result decodes as the full
 * message and no payload is re-encoded per subscriber.
 *
 * Resuming (bus_cursor_open):
 *  - since_seq 0 means live only: the subscriber sees events published after
 *    it joined, never the retained backlog (whatever epoch it sent).
 *  - since_seq N > 0 resumes after N, but only with the current epoch and
 *    while N + 1 is retained (or N is the newest seq); otherwise the answer is
 *    BUS_RESYNC and the RPC layer sends resync_required (seq 0) and closes.
 *  - A cursor that falls behind the oldest retained event while reading gets
 *    BUS_RESYNC from bus_next() too.
 *
 * Subscribers are struct watcher (core/watch.h) woken after each publish. */
#ifndef AGENTHUB_CORE_BUS_H
#define AGENTHUB_CORE_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/ring.h"
#include "core/watch.h"

#define BUS_DEFAULT_BOUND ((size_t)16 * 1024 * 1024)

struct bus {
    struct ring ring;
    struct watch_list watchers;
    uint64_t epoch;
};

enum bus_status {
    BUS_OK = 0,     /* an event was returned / the cursor is valid */
    BUS_NONE = 1,   /* caught up */
    BUS_RESYNC = 2, /* the subscriber must resync (send resync_required) */
};

struct bus_event {
    const uint8_t *payload; /* valid until the next bus_publish() */
    size_t len;
    uint64_t seq;
    int64_t at_unix_ms;
    uint64_t epoch;
};

/* Initializes an empty bus bounded by BOUND bytes (0: BUS_DEFAULT_BOUND).
 * EPOCH 0 draws a random nonzero epoch (getrandom, falling back to time and
 * pid); tests pass a fixed one.  Allocates nothing. */
void bus_init(struct bus *b, size_t bound, uint64_t epoch);
/* Frees the ring; watchers must have been removed by their owners. */
void bus_free(struct bus *b);
uint64_t bus_epoch(const struct bus *b);

/* Appends a copy of PAYLOAD and wakes every watcher.  Returns the event's seq,
 * or 0 when memory runs out (nothing published, nobody woken). */
uint64_t bus_publish(struct bus *b, const void *payload, size_t len, int64_t at_unix_ms);

/* Validates a resume point and sets *CURSOR (the seq of the last event the
 * subscriber has).  Returns BUS_OK, or BUS_RESYNC (see the header comment). */
enum bus_status bus_cursor_open(const struct bus *b, uint64_t since_seq, uint64_t epoch,
                                uint64_t *cursor);
/* Reads the event after CURSOR: BUS_OK (advance the cursor to ev->seq),
 * BUS_NONE (caught up), BUS_RESYNC (evicted under the cursor). */
enum bus_status bus_next(const struct bus *b, uint64_t cursor, struct bus_event *ev);

void bus_watch(struct bus *b, struct watcher *w);
void bus_unwatch(struct bus *b, struct watcher *w);

uint64_t bus_newest_seq(const struct bus *b);
/* The cursor from which bus_next yields the oldest retained event (the
 * newest seq when none is retained). */
uint64_t bus_oldest_cursor(const struct bus *b);
/* The next publish gets seq NEXT_SEQ when it is past the bus's own (see
 * ring_skip_to): a copy of a bus kept elsewhere starts where it is. */
void bus_skip_to(struct bus *b, uint64_t next_seq);
size_t bus_memory_bytes(const struct bus *b);

#endif
