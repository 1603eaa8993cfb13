/* hub_snapshot: the state a since_seq = 0 subscriber of the bus is told
 * before the live tail: each session's latest AgentSessionStatus, as the
 * bus last said it.
 *
 * It reads the bus through the session log (hub_log.h: the memory log's
 * bus, and the copy the disk and JetStream logs keep of theirs, in their
 * bus seqs) every time an event is published, so it is always the bus up
 * to its newest seq, compacted to one status per session.  A snapshot taken at newest seq N is
 * therefore exactly what the events up to N said, and the tail from N + 1 says the rest: nothing
 * falls between the two and nothing is told twice, whatever the backend and whichever node
 * published the status.
 *
 * Each entry keeps its event's own seq and time.  A session whose latest
 * status is STOPPED is dropped (it is over; GetAgentStatus still lists it),
 * so the index holds the sessions that are not stopped. */
#ifndef AGENTHUB_HUB_SNAPSHOT_H
#define AGENTHUB_HUB_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "common/hash_map.h"
#include "core/bus.h"
#include "core/watch.h"
#include "hub/hub_log.h"

struct hub_snapshot {
    const struct hub_log *log; /* read through its ops, which may change */
    struct watcher watcher;
    uint64_t cursor;       /* the newest bus seq read */
    struct hash_map by_id; /* session id -> entry */
    struct hash_map by_seq;
    size_t bytes;    /* payload bytes held */
    uint64_t losses; /* statuses that could not be kept (memory) */
};

/* Starts indexing LOG's bus from its oldest retained event; call it before
 * anything is published so that no status is missed.  LOG may take
 * another backend later (its bus watchers stay the core bus's).
 * Allocates nothing. */
void hub_snapshot_init(struct hub_snapshot *snap, const struct hub_log *log);
void hub_snapshot_free(struct hub_snapshot *snap);

/* The snapshot as of now: *SEQS (malloc'd, the caller frees it) holds the
 * bus seq of each session's latest status, ascending, and *N their count.
 * Returns the bus seq N the snapshot stands at (the tail goes on after
 * it), or sets *SEQS to NULL with *N 0 on -1 when memory is short. */
int hub_snapshot_take(struct hub_snapshot *snap, uint64_t **seqs, size_t *n, uint64_t *at_seq);

/* The status event at bus seq SEQ, while it is still its session's latest
 * (OUT borrows it until the next publish).  Returns 0, or -1 when a newer
 * status of that session replaced it (the tail carries that one). */
int hub_snapshot_get(const struct hub_snapshot *snap, uint64_t seq, struct bus_event *out);

#endif
