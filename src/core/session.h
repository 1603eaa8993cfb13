/* session: the registry of live agent sessions.
 *
 * session id -> {record ring, arbiter, watchers, Runner binding}, looked up in
 * O(1) through a chained hash table.  A session is created by session_open()
 * and ended by session_end(): ending removes it from the table at once (a
 * lookup misses, and the same id may be opened afresh) and wakes its
 * watchers, which drain what they still want and leave; its memory is freed
 * when it has ended and its last watcher has left.
 *
 * Memory budget: the rings of every session the registry holds (ended ones
 * still held by a watcher included) are charged against one whole-registry
 * budget of heap bytes (session_registry_set_budget).  An append that takes
 * the total past it trims the least recently appended-to sessions first,
 * oldest entries first, until the total fits again; the session being
 * appended to is never trimmed for its own append.  A reader whose next
 * entry was trimmed gets RING_EVICTED, exactly as for the ring's own bound.
 *
 * Subscribers are intrusive: the RPC layer embeds a struct session_watcher
 * (struct watcher of core/watch.h: a wake callback and links) next to its
 * cursor (a uint64_t seq) in its per-stream state.  session_append() wakes
 * every watcher and never waits on one.  A wake callback must not block; it
 * may call session_unwatch() for any watcher, even during session_end().
 *
 * Single-threaded: all calls come from the server's one event loop. */
#ifndef AGENTHUB_CORE_SESSION_H
#define AGENTHUB_CORE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "core/arbiter.h"
#include "core/ring.h"
#include "core/watch.h"

#define SESSION_MAX_ID 256u

#define session_watcher watcher

struct session_registry;

struct session {
    struct session *hnext;               /* hash chain */
    struct session *prev, *next;         /* every session, ended ones included */
    struct session *lru_prev, *lru_next; /* by last append, least recent first */
    struct session_registry *reg;
    uint64_t hash;
    struct ring ring;
    struct arbiter arb;
    struct watch_list watchers;
    char *runner_id; /* binding, or NULL */
    uint8_t ended;
    uint16_t id_len;
    char id[]; /* NUL-terminated */
};

struct session_registry {
    struct session **buckets;
    struct session *all; /* list of every session, for iteration and teardown */
    size_t nbuckets;     /* power of two, or 0 before the first open */
    size_t count;        /* sessions in the table (not ended) */
    size_t ring_bound;   /* --agent-log-bytes */
    struct session *lru_head, *lru_tail;
    size_t log_bytes;          /* heap bytes of every held session's ring */
    size_t log_budget;         /* 0: unbounded */
    uint64_t trimmed_bytes;    /* heap bytes given back to keep the budget */
    uint64_t trimmed_sessions; /* sessions trimmed to keep the budget */
};

enum session_open_result {
    SESSION_EXISTS = 0,
    SESSION_CREATED = 1,
    SESSION_NOMEM = -1,
    SESSION_BAD_ID = -2, /* empty or longer than SESSION_MAX_ID */
};

/* RING_BOUND 0 means RING_DEFAULT_BOUND.  Allocates nothing. */
void session_registry_init(struct session_registry *reg, size_t ring_bound);
/* Bounds the summed ring memory of every held session to BUDGET heap bytes
 * (0: unbounded); see the header comment.  Trims at once when over it. */
void session_registry_set_budget(struct session_registry *reg, size_t budget);
/* Heap bytes of every held session's ring (what the budget bounds). */
size_t session_registry_log_bytes(const struct session_registry *reg);

/* Frees every session, ended or not.  Watchers must no longer be used. */
void session_registry_free(struct session_registry *reg);
/* Live (not ended) sessions. */
size_t session_registry_count(const struct session_registry *reg);
/* Heap and struct bytes of the registry and every session it holds. */
size_t session_registry_memory_bytes(const struct session_registry *reg);

/* The live session ID[0..LEN), or NULL. */
struct session *session_find(const struct session_registry *reg, const char *id, size_t len);
/* Finds or creates the live session ID[0..LEN); *OUT gets it.  Returns
 * SESSION_EXISTS or SESSION_CREATED, or (with *OUT NULL) SESSION_NOMEM or
 * SESSION_BAD_ID.  A new session has derived state STARTING. */
int session_open(struct session_registry *reg, const char *id, size_t len, struct session **out);
/* Ends S (see the header comment).  S may be freed before this returns when
 * nobody watches it; do not use S afterwards unless you are a watcher. */
void session_end(struct session *s);
int session_is_ended(const struct session *s);

/* Appends a frame to S's ring and wakes its watchers.  Returns the frame's
 * seq, or 0 when S has ended or memory ran out (nothing appended).  The frame
 * is opaque: typically an encoded AgentSessionFrame without its seq field,
 * which the subscriber's writer prepends from the ring entry's seq.  S is
 * freed before this returns only when a wake callback ended it and every
 * watcher left. */
uint64_t session_append(struct session *s, const void *frame, size_t len, int64_t at_unix_ms);

/* W->wake must be set.  Watching an ended session is allowed (it drains). */
void session_watch(struct session *s, struct session_watcher *w);
/* Unlinks W; frees S when it has ended and W was its last watcher. */
void session_unwatch(struct session *s, struct session_watcher *w);
size_t session_watcher_count(const struct session *s);

/* Binds S to a Runner (copying RUNNER_ID); NULL unbinds.  Returns 0 or -1 when
 * memory runs out (binding unchanged). */
int session_bind(struct session *s, const char *runner_id);
/* The bound Runner id, or NULL. */
const char *session_binding(const struct session *s);

const char *session_id(const struct session *s);
struct ring *session_ring(struct session *s);
struct arbiter *session_arbiter(struct session *s);
/* Bytes S owns: struct, id, binding, ring buffers. */
size_t session_memory_bytes(const struct session *s);

/* Iterates live sessions in an unspecified order: first, then next until
 * NULL.  Do not open or end sessions while iterating. */
struct session *session_first(const struct session_registry *reg);
struct session *session_next(const struct session *s);

#endif
