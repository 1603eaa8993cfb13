/* session: the registry of agent sessions and their logs.
 *
 * session id -> {record ring, arbiter, watchers, Runner binding}, looked up in
 * O(1) through a chained hash table.  A session is created by session_open()
 * and ended by session_end() (closed in the store).  session_find() sees live
 * sessions only; session_lookup() also sees ended sessions whose log is
 * retained, so a pane opened after the fact can still replay it.
 *
 * Tails: the frames a session's agent produced between a start and a
 * terminal state form one tail.  session_tail_end() (the agent stopped or
 * errored) and session_end() mark the current tail over and wake every
 * watcher: a pane drains to the newest frame and leaves.  While the tail is
 * over, a new pane replays and leaves too.  session_tail_resume() (the agent
 * came back) and session_open() of an ended session start a new tail: the
 * ring goes on from where it was (seqs keep increasing), panes of the old
 * tail leave after its last frame, and new panes follow live again.
 *
 * Retention: the logs of sessions whose tail is over stay readable within a
 * budget of ring heap bytes and an age (session_registry_set_retention).
 * Past either, the session whose tail ended first is evicted first: its ring
 * is freed (once no watcher holds it) and, when it has ended, the session is
 * forgotten, so the same id opens afresh.  A session that is not retained
 * behaves as an ended session always did: freed once its last watcher left.
 * Age is enforced lazily, by session_open, session_lookup, session_end,
 * session_tail_end and session_registry_expire.
 *
 * Memory budget: the rings of every session the registry holds (retained
 * ones and ended ones still held by a watcher included) are charged against
 * one whole-registry budget of heap bytes (session_registry_set_budget).  An
 * append that takes the total past it trims the least recently appended-to
 * sessions first, oldest entries first, until the total fits again; the
 * session being appended to is never trimmed for its own append.  A reader
 * whose next entry was trimmed gets RING_EVICTED, exactly as for the ring's
 * own bound.  A retained session trimmed to nothing is evicted.
 *
 * Subscribers are intrusive: the RPC layer embeds a struct watcher
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

#include "common/hash_map.h"
#include "common/list.h"
#include "core/arbiter.h"
#include "core/ring.h"
#include "core/watch.h"

#define SESSION_MAX_ID 256u

/* Retention defaults: 64 MiB of ended sessions' logs, for 24 hours. */
#define SESSION_DEFAULT_RETAIN_BYTES ((size_t)64 * 1024 * 1024)
#define SESSION_DEFAULT_RETAIN_MS    ((int64_t)24 * 60 * 60 * 1000)

struct session_registry;

struct session {
    struct hash_map_node by_id;   /* in the registry's table while in_table */
    struct list_node all_link;    /* every session, ended ones included */
    struct list_node lru_link;    /* by last append, least recent first */
    struct list_node retain_link; /* retained, by tail end, oldest first */
    struct session_registry *reg;
    struct ring ring;
    struct arbiter arb;
    struct watch_list watchers;
    char *runner_id;     /* binding, or NULL */
    uint64_t tail_start; /* seq of the current tail's first frame */
    int64_t over_at_ms;  /* monotonic time it joined the retained list */
    uint8_t ended;
    uint8_t over;     /* the current tail is over (terminal state or ended) */
    uint8_t retained; /* in the retained list */
    uint8_t in_table; /* findable by id */
    uint8_t closing;  /* its end is being stored: session_find no longer sees it */
    /* The hub's: the state its last status told (valid once told is 1), so
     * that a status goes out only on a transition. */
    uint8_t told;
    uint8_t told_state;
    uint16_t id_len;
    char id[]; /* NUL-terminated */
};

enum session_evict_reason {
    SESSION_EVICT_BYTES = 0,  /* retained logs past the retention bytes */
    SESSION_EVICT_AGE = 1,    /* retained longer than the retention age */
    SESSION_EVICT_BUDGET = 2, /* trimmed to nothing by the memory budget */
    SESSION_EVICT_REASONS = 3
};

struct session_registry {
    struct hash_map table; /* sessions findable by id: live and retained ended */
    struct list_node all;  /* every session, for iteration and teardown */
    size_t count;          /* live (not ended) sessions */
    size_t ring_bound;     /* --agent-log-bytes */
    struct list_node lru;
    size_t log_bytes;          /* heap bytes of every held session's ring */
    size_t log_budget;         /* 0: unbounded */
    uint64_t trimmed_bytes;    /* heap bytes given back to keep the budget */
    uint64_t trimmed_sessions; /* sessions trimmed to keep the budget */
    struct list_node retained; /* oldest tail end first */
    size_t retained_count;
    size_t retained_bytes; /* ring heap bytes of retained sessions */
    size_t retain_bytes;   /* 0: nothing is retained */
    int64_t retain_ms;     /* 0: nothing is retained */
    uint64_t evictions[SESSION_EVICT_REASONS];
};

enum session_open_result {
    SESSION_EXISTS = 0,
    SESSION_CREATED = 1,
    SESSION_REOPENED = 2, /* an ended session whose log was retained */
    SESSION_NOMEM = -1,
    SESSION_BAD_ID = -2, /* empty or longer than SESSION_MAX_ID */
};

/* RING_BOUND 0 means RING_DEFAULT_BOUND.  Retention starts at its defaults.
 * Allocates nothing. */
void session_registry_init(struct session_registry *reg, size_t ring_bound);
/* Bounds the summed ring memory of every held session to BUDGET heap bytes
 * (0: unbounded); see the header comment.  Trims at once when over it. */
void session_registry_set_budget(struct session_registry *reg, size_t budget);
/* Heap bytes of every held session's ring (what the budget bounds). */
size_t session_registry_log_bytes(const struct session_registry *reg);
/* Keeps the logs of sessions whose tail is over for at most AGE_MS and
 * BYTES ring heap bytes together (either 0: none is kept); see the header
 * comment.  Evicts at once what no longer fits. */
void session_registry_set_retention(struct session_registry *reg, size_t bytes, int64_t age_ms);
/* Evicts retained sessions whose tail ended AGE_MS or more before NOW_MS
 * (monotonic).  Returns how many were evicted. */
size_t session_registry_expire(struct session_registry *reg, int64_t now_ms);

/* Frees every session, ended or not.  Watchers must no longer be used. */
void session_registry_free(struct session_registry *reg);
/* Live (not ended) sessions. */
size_t session_registry_count(const struct session_registry *reg);
/* Heap and struct bytes of the registry and every session it holds. */
size_t session_registry_memory_bytes(const struct session_registry *reg);

/* The live session ID[0..LEN), or NULL. */
struct session *session_find(const struct session_registry *reg, const char *id, size_t len);
/* The live session ID[0..LEN), or the ended one whose log is retained, or
 * NULL.  Expires retained sessions first. */
struct session *session_lookup(struct session_registry *reg, const char *id, size_t len);
/* Finds or creates the live session ID[0..LEN); *OUT gets it.  Returns
 * SESSION_EXISTS, SESSION_CREATED or SESSION_REOPENED (a retained ended
 * session starts a new tail: its ring goes on, its evidence and binding are
 * reset), or (with *OUT NULL) SESSION_NOMEM or SESSION_BAD_ID.  A new or
 * reopened session has derived state STARTING. */
enum session_open_result session_open(struct session_registry *reg, const char *id, size_t len,
                                      struct session **out);
/* Ends S: its tail is over, session_find() no longer sees it, and its log is
 * retained or released (see the header comment).  S may be freed before
 * this returns; do not use S afterwards unless you are a watcher. */
void session_end(struct session *s);
int session_is_ended(const struct session *s);

/* The agent of live session S reached a terminal state: the current tail is
 * over (watchers are woken) and S's log joins the retained ones.  S stays
 * live.  Does nothing when the tail is already over. */
void session_tail_end(struct session *s);
/* S's end is on its way (a log that stores it first, then ends S):
 * session_find no longer sees S, so late producers are told it ended, while
 * S keeps taking what its log already holds.  session_open of S makes it
 * live again. */
void session_closing(struct session *s);
/* S's tail has been over for AGE_MS already (a log read back after a
 * restart): its log leaves the retained ones that much sooner.  Called in
 * the order the tails ended, the retained list stays in that order.  Does
 * nothing unless S is retained. */
void session_backdate_over(struct session *s, int64_t age_ms);
/* The agent of live session S came back: a new tail starts with the next
 * append.  Does nothing unless the tail is over and S is live. */
void session_tail_resume(struct session *s);
/* 1 when S's current tail is over: no more frames are expected. */
int session_tail_over(const struct session *s);
/* The seq the current tail starts at: a watcher that began in an earlier
 * tail stops before it. */
uint64_t session_tail_start(const struct session *s);

/* Appends a frame to S's ring and wakes its watchers.  Returns the frame's
 * seq, or 0 when S has ended or memory ran out (nothing appended).  The frame
 * is opaque: typically an encoded AgentSessionFrame without its seq field,
 * which the subscriber's writer prepends from the ring entry's seq.  S is
 * freed before this returns only when a wake callback ended it and every
 * watcher left. */
uint64_t session_append(struct session *s, const void *frame, size_t len, int64_t at_unix_ms);

/* The next append to S gets seq NEXT_SEQ when it is past S's own (see
 * ring_skip_to), the memory given back counted.  Watchers are woken by
 * the append that follows. */
void session_skip_to(struct session *s, uint64_t next_seq);

/* Wakes S's watchers without an append (a log that read older frames
 * for them).  S may be freed before this returns, as by session_append. */
void session_wake(struct session *s);

/* W->wake must be set.  Watching an ended session is allowed (it drains). */
void session_watch(struct session *s, struct watcher *w);
/* Unlinks W; frees S when it has ended, is not retained and W was its last
 * watcher. */
void session_unwatch(struct session *s, struct watcher *w);
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
