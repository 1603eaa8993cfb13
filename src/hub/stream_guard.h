/* stream_guard: open streams stay authorized.
 *
 * A long-lived stream (SubscribeAgentSession, SubscribeEvents,
 * PublishEvents, a Runner's Sessions stream) was authorized when it opened.
 * When the ownership store changes afterwards (a token revoked, a
 * membership removed, a container moved to another agent or Runner, most
 * often by `agenthub admin` in another process), each such stream is
 * decided again and ended exactly as a fresh call would be refused.
 *
 * How the server learns of a change: while at least one guard is
 * registered, a timer asks the store every STREAM_GUARD_POLL_MS whether
 * another connection committed (store_ops.change_generation: a 48-byte
 * compare of SQLite's shared wal-index header, no SQL when nothing moved).
 * When it did, every guard's recheck runs, STREAM_GUARD_BATCH per loop
 * turn, so thousands of open streams never hold up other calls.  With no
 * stream open there is no timer at all. */
#ifndef AGENTHUB_STREAM_GUARD_H
#define AGENTHUB_STREAM_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/list.h"
#include "hub/hub_stream.h"

struct event_base;
struct store;
struct store_subject;
struct stream_guards;

#define STREAM_GUARD_POLL_MS 500
#define STREAM_GUARD_BATCH   64

struct stream_guard {
    /* Decides the stream again from fresh store reads and ends it (through
     * stream_guard_end) when a fresh call would be refused.  May remove
     * any guard, its own included. */
    void (*recheck)(struct stream_guard *guard);
    struct list_node link; /* on the guards' list while added */
};

/* Returns NULL when memory is short. */
struct stream_guards *stream_guards_new(struct event_base *base, struct store *store);
void stream_guards_free(struct stream_guards *guards);

/* Registers GUARD (recheck set).  Removing is safe when not registered. */
void stream_guard_add(struct stream_guards *guards, struct stream_guard *guard);
void stream_guard_remove(struct stream_guards *guards, struct stream_guard *guard);

/* This process changed the store itself (the RevokeToken call): decide
 * every open stream again now.  The poll cannot see it: a handle's own
 * commits do not move its change generation.  Other processes and nodes
 * see the commit as they see any other.  A no-op with no stream open. */
void stream_guards_recheck(struct stream_guards *guards);

/* Resolves STREAM's bearer token again, as a fresh call on its door would.
 * Returns 0 with *SUBJECT refreshed; otherwise ends the stream
 * (UNAUTHENTICATED for a revoked or unknown token, UNAVAILABLE when the
 * store cannot answer), counts it and returns -1. */
int stream_guard_reauthenticate(struct stream_guards *guards, struct hub_stream stream,
                                struct store_subject *subject);

/* Ends STREAM with STATUS and MESSAGE because a recheck refused it, and
 * counts it by status.  No trailers are added: the client sees the status
 * and message a fresh call would get. */
void stream_guard_end(struct stream_guards *guards, struct hub_stream stream,
                      enum grpc_status status, const char *message);

/* Prometheus text: guarded streams, recheck passes, streams ended. */
void stream_guards_write_metrics(const struct stream_guards *guards, FILE *out);

#endif
