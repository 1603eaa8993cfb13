/* hub_log: where the hub keeps session logs and the bus.
 *
 * Handlers and the hub reach a session's frames and the bus's events only
 * through these operations, so a backend other than memory (a replicated
 * log) can stand in without touching them.  The first implementation,
 * hub_log_memory, keeps each session's frames in its core ring and the
 * events in one core bus, exactly as before; the per-session budget and
 * retention (core/session.h) trim those rings.
 *
 * Delivery reads borrow the stored bytes (struct ring_entry, struct
 * bus_event) until the next change of that log, so the fast path copies
 * nothing. */
#ifndef AGENTHUB_HUB_LOG_H
#define AGENTHUB_HUB_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/list.h"
#include "core/bus.h"
#include "core/ring.h"
#include "core/session.h"

/* What a session's log holds now. */
struct hub_log_span {
    uint64_t oldest;   /* seq of the oldest retained frame, 0 when none */
    uint64_t newest;   /* seq of the newest frame ever appended, 0 when none */
    uint64_t readable; /* the newest seq a reader gets now: NEWEST, or less while
                          newer frames are still being stored */
    uint32_t count;    /* frames retained */
    size_t bytes;      /* their bytes */
};

/* Changes of a session's log other than frames, kept in order with them. */
enum hub_log_mark {
    HUB_LOG_TAIL_END = 0,    /* the agent stopped: the current tail is over */
    HUB_LOG_TAIL_RESUME = 1, /* the agent is back: a new tail starts */
    HUB_LOG_END = 2,         /* the session ended (closed); do not use S afterwards */
};

/* A producer waiting until frames it appended are stored (a replicated log
 * acknowledged them).  The caller owns it: hub_log_track fills it while
 * appending, hub_log_stored says whether it is complete at once, and
 * otherwise hub_log_wait hands it to the backend until DONE runs (once) or
 * hub_log_wait_cancel takes it back. */
struct hub_log_wait;
/* OK is 1 when every tracked frame is stored, FIRST_SEQ and LAST_SEQ then
 * being their final seqs; 0 when they could not be stored in time (the
 * log unreachable, the append timed out).  W is no longer the backend's. */
typedef void (*hub_log_done_fn)(struct hub_log_wait *w, int ok);

struct hub_log_wait {
    uint64_t first_seq, last_seq; /* the tracked frames' seqs (final once stored) */
    uint64_t first_ord, last_ord; /* the backend's names for those frames */
    hub_log_done_fn done;
    /* the backend's, while it holds W: linked only then */
    struct list_node link;
    uint64_t deadline_ns;
};

/* Where frames come from (hub_log_origin): a Runner's frame RUNNER_SEQ, or
 * a producer's call under an idempotency key. */
struct hub_log_origin {
    const char *runner_id; /* or NULL */
    uint64_t runner_seq;
    const char *key; /* or NULL */
    size_t key_len;
};

struct hub_log_ops {
    /* --- session logs --- */
    /* Appends FRAME to S's log and wakes its watchers.  Returns its seq, or
     * 0 when nothing was appended (memory, or S has ended). */
    uint64_t (*append)(void *impl, struct session *s, const void *frame, size_t len,
                       int64_t at_unix_ms);
    /* The frame after AFTER_SEQ (see ring_next). */
    enum ring_status (*read)(void *impl, struct session *s, uint64_t after_seq,
                             struct ring_entry *out);
    /* May a reader resume after AFTER_SEQ (see ring_cursor_check)? */
    enum ring_status (*check)(void *impl, struct session *s, uint64_t after_seq);
    /* Applies MARK to S after every frame appended before it (see
     * session_tail_end, session_tail_resume, session_end). */
    void (*mark)(void *impl, struct session *s, enum hub_log_mark mark);
    /* The cursor that replays the last N retained frames. */
    uint64_t (*tail)(void *impl, struct session *s, uint64_t n);
    void (*span)(void *impl, struct session *s, struct hub_log_span *out);

    /* --- the bus --- */
    /* Publishes PAYLOAD.  Returns its bus seq. */
    uint64_t (*publish)(void *impl, const void *payload, size_t len, int64_t at_unix_ms);
    /* A cursor for a subscriber resuming after SINCE_SEQ of EPOCH (see
     * bus_cursor_open). */
    enum bus_status (*open)(void *impl, uint64_t since_seq, uint64_t epoch, uint64_t *cursor);
    /* The event after CURSOR (see bus_next). */
    enum bus_status (*next)(void *impl, uint64_t cursor, struct bus_event *out);
    /* W is woken after each publish until unsubscribed. */
    void (*subscribe)(void *impl, struct watcher *w);
    void (*unsubscribe)(void *impl, struct watcher *w);
    /* This server run's instance_epoch. */
    uint64_t (*epoch)(void *impl);
    /* The cursor from which next yields the oldest event retained, and the
     * newest bus seq (0 before the first). */
    uint64_t (*bus_oldest)(void *impl);
    uint64_t (*bus_newest)(void *impl);

    /* --- where frames come from: Runners' runner_seq, keyed calls --- */
    /* Frames appended until the next call come from O (NULL: nowhere a
     * reader need tell apart).  A replicated log stores each origin's
     * frames at most once, whichever nodes took them how often.  Returns
     * how many frames the log took under the previous origin. */
    uint32_t (*origin)(void *impl, const struct hub_log_origin *o);
    /* The highest runner_seq of RUNNER_ID up to which the log holds every
     * frame of its current run or was told it was dealt with
     * (runner_dealt), in the run counted by *GENERATION (bumped by every
     * runner_reset, on whichever node).  0 when none is known (memory:
     * always). */
    uint64_t (*runner_mark)(void *impl, const char *runner_id, uint64_t *generation);
    /* RUNNER_ID starts a new run: its mark goes back to 0. */
    void (*runner_reset)(void *impl, const char *runner_id);
    /* RUNNER_ID's runner_seq FIRST..LAST were dealt with without a frame
     * (dropped by the relay, or never sent).  NULL: nothing to tell. */
    void (*runner_dealt)(void *impl, const char *runner_id, uint64_t first, uint64_t last);
    /* Runs W->done once this node's copy holds everything written for
     * RUNNER_ID before the call (its resets, frames and runner_seq marks,
     * by any node), or cannot (done with 0).  NULL: the copy is the log. */
    void (*runner_sync)(void *impl, const char *runner_id, struct hub_log_wait *w);
    /* With ON, frames appended until it is called with 0 are derived from
     * the origin's (a state frame a record implies), not its own: they are
     * stored with it but left out of the seqs recall answers.  NULL:
     * nothing to tell. */
    void (*derive)(void *impl, int on);
    /* 1 when the log holds the records of S's call keyed KEY[0..LEN), with
     * their seqs; else 0.  NULL: keys are not remembered. */
    int (*recall)(void *impl, struct session *s, const char *key, size_t len, uint64_t *first_seq,
                  uint64_t *last_seq);

    /* --- durability --- */
    /* The frame just appended to S (seq SEQ) belongs to W. */
    void (*track)(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq);
    /* 1 when W's frames are stored already (memory: always), with their
     * final seqs in W; 0 when hub_log_wait must wait for them. */
    int (*stored)(void *impl, struct session *s, struct hub_log_wait *w);
    /* Holds W until its frames are stored or cannot be; then runs
     * W->done.  NULL for a backend whose stored always answers 1. */
    void (*wait)(void *impl, struct session *s, struct hub_log_wait *w);

    /* --- operating --- */
    /* 1 when appends and publishes are taken now; 0 while a replicated log
     * is unreachable or still catching up (producers answer UNAVAILABLE). */
    int (*writable)(void *impl);
    /* Prometheus text of the backend's own state; NULL: none. */
    void (*write_metrics)(void *impl, FILE *out);

    /* --- reading on demand --- */
    /* Runs W->done once this node's copy of S is as current as the log (1),
     * or cannot be made so in time (0); perhaps before it returns.  A
     * reader calls it before it reads S; hub_log_wait_cancel takes W back.
     * NULL: the copy is always current. */
    void (*prepare)(void *impl, struct session *s, struct hub_log_wait *w);
    /* 1 while this node reads S's log as it grows; 0 when its copy may be
     * behind (read again by the next prepare), with *NEWEST the newest seq
     * the bus last said S had (its state then comes from the bus too).
     * NULL: always 1. */
    int (*reads)(void *impl, struct session *s, uint64_t *newest);
};

/* What a producer hears while the log takes no appends (hub_log_writable). */
#define HUB_LOG_UNAVAILABLE_MESSAGE "the session log cannot store frames now; retry"

struct hub_log {
    const struct hub_log_ops *ops;
    void *impl;
};

/* Makes LOG the in-memory implementation: each session's core ring, and
 * BUS. */
void hub_log_memory(struct hub_log *log, struct bus *bus);

/* The session-log reads of every backend that keeps its frames (or its
 * copy of them) in the sessions' core rings: ring_next, ring_cursor_check,
 * ring_tail_cursor and the ring's span.  IMPL is unused. */
enum ring_status hub_log_ring_read(void *impl, struct session *s, uint64_t after_seq,
                                   struct ring_entry *out);
enum ring_status hub_log_ring_check(void *impl, struct session *s, uint64_t after_seq);
uint64_t hub_log_ring_tail(void *impl, struct session *s, uint64_t n);
void hub_log_ring_span(void *impl, struct session *s, struct hub_log_span *out);

static inline uint64_t hub_log_append(const struct hub_log *log, struct session *s,
                                      const void *frame, size_t len, int64_t at_unix_ms)
{
    return log->ops->append(log->impl, s, frame, len, at_unix_ms);
}

static inline enum ring_status hub_log_read(const struct hub_log *log, struct session *s,
                                            uint64_t after_seq, struct ring_entry *out)
{
    return log->ops->read(log->impl, s, after_seq, out);
}

static inline enum ring_status hub_log_check(const struct hub_log *log, struct session *s,
                                             uint64_t after_seq)
{
    return log->ops->check(log->impl, s, after_seq);
}

static inline void hub_log_mark(const struct hub_log *log, struct session *s,
                                enum hub_log_mark mark)
{
    log->ops->mark(log->impl, s, mark);
}

/* Frames appended from now on are RUNNER_ID's frame RUNNER_SEQ (RUNNER_ID
 * NULL: nobody's).  Returns how many frames the log took since the last
 * call (0 for memory, which keeps no origins). */
static inline uint32_t hub_log_origin(const struct hub_log *log, const char *runner_id,
                                      uint64_t runner_seq)
{
    const struct hub_log_origin o = {.runner_id = runner_id, .runner_seq = runner_seq};

    return log->ops->origin(log->impl, runner_id ? &o : NULL);
}

/* Frames appended from now on are records of the call keyed KEY[0..LEN). */
static inline uint32_t hub_log_origin_key(const struct hub_log *log, const char *key, size_t len)
{
    const struct hub_log_origin o = {.key = key, .key_len = len};

    return log->ops->origin(log->impl, key ? &o : NULL);
}

static inline void hub_log_runner_dealt(const struct hub_log *log, const char *runner_id,
                                        uint64_t first, uint64_t last)
{
    if (log->ops->runner_dealt)
        log->ops->runner_dealt(log->impl, runner_id, first, last);
}

/* 1 when RUNNER_ID's mark may be read at once; 0 when W->done will run
 * (see runner_sync). */
static inline int hub_log_runner_sync(const struct hub_log *log, const char *runner_id,
                                      struct hub_log_wait *w)
{
    if (!log->ops->runner_sync)
        return 1;
    log->ops->runner_sync(log->impl, runner_id, w);
    return 0;
}

static inline void hub_log_derive(const struct hub_log *log, int on)
{
    if (log->ops->derive)
        log->ops->derive(log->impl, on);
}

static inline int hub_log_recall(const struct hub_log *log, struct session *s, const char *key,
                                 size_t len, uint64_t *first_seq, uint64_t *last_seq)
{
    return log->ops->recall && log->ops->recall(log->impl, s, key, len, first_seq, last_seq);
}

static inline uint64_t hub_log_runner_mark(const struct hub_log *log, const char *runner_id,
                                           uint64_t *generation)
{
    return log->ops->runner_mark(log->impl, runner_id, generation);
}

static inline void hub_log_runner_reset(const struct hub_log *log, const char *runner_id)
{
    log->ops->runner_reset(log->impl, runner_id);
}

static inline void hub_log_track(const struct hub_log *log, struct session *s,
                                 struct hub_log_wait *w, uint64_t seq)
{
    log->ops->track(log->impl, s, w, seq);
}

static inline int hub_log_stored(const struct hub_log *log, struct session *s,
                                 struct hub_log_wait *w)
{
    return log->ops->stored(log->impl, s, w);
}

static inline void hub_log_wait(const struct hub_log *log, struct session *s,
                                struct hub_log_wait *w)
{
    log->ops->wait(log->impl, s, w);
}

/* Takes W back from the backend before its done has run (its caller went
 * away); nothing when the backend no longer holds it. */
static inline void hub_log_wait_cancel(struct hub_log_wait *w)
{
    list_remove(&w->link); /* nothing when W is not linked */
}

/* The wait whose backend link is NODE, or NULL when NODE is NULL (a
 * backend's walk over the waits it holds). */
static inline struct hub_log_wait *hub_log_wait_of(struct list_node *node)
{
    return node ? list_entry(node, struct hub_log_wait, link) : NULL;
}

/* See hub_log_ops.prepare: W->done(W, 1) at once for a log whose copy is
 * always current. */
static inline void hub_log_prepare(const struct hub_log *log, struct session *s,
                                   struct hub_log_wait *w)
{
    if (log->ops->prepare)
        log->ops->prepare(log->impl, s, w);
    else
        w->done(w, 1);
}

static inline int hub_log_reads(const struct hub_log *log, struct session *s, uint64_t *newest)
{
    *newest = 0;
    return log->ops->reads ? log->ops->reads(log->impl, s, newest) : 1;
}

static inline int hub_log_writable(const struct hub_log *log)
{
    return log->ops->writable(log->impl);
}

static inline void hub_log_write_metrics(const struct hub_log *log, FILE *out)
{
    if (log->ops->write_metrics)
        log->ops->write_metrics(log->impl, out);
}

static inline uint64_t hub_log_tail(const struct hub_log *log, struct session *s, uint64_t n)
{
    return log->ops->tail(log->impl, s, n);
}

static inline void hub_log_span(const struct hub_log *log, struct session *s,
                                struct hub_log_span *out)
{
    log->ops->span(log->impl, s, out);
}

static inline uint64_t hub_log_publish(const struct hub_log *log, const void *payload, size_t len,
                                       int64_t at_unix_ms)
{
    return log->ops->publish(log->impl, payload, len, at_unix_ms);
}

static inline enum bus_status hub_log_open(const struct hub_log *log, uint64_t since_seq,
                                           uint64_t epoch, uint64_t *cursor)
{
    return log->ops->open(log->impl, since_seq, epoch, cursor);
}

static inline enum bus_status hub_log_next(const struct hub_log *log, uint64_t cursor,
                                           struct bus_event *out)
{
    return log->ops->next(log->impl, cursor, out);
}

static inline void hub_log_subscribe(const struct hub_log *log, struct watcher *w)
{
    log->ops->subscribe(log->impl, w);
}

static inline void hub_log_unsubscribe(const struct hub_log *log, struct watcher *w)
{
    log->ops->unsubscribe(log->impl, w);
}

static inline uint64_t hub_log_epoch(const struct hub_log *log)
{
    return log->ops->epoch(log->impl);
}

static inline uint64_t hub_log_bus_oldest(const struct hub_log *log)
{
    return log->ops->bus_oldest(log->impl);
}

static inline uint64_t hub_log_bus_newest(const struct hub_log *log)
{
    return log->ops->bus_newest(log->impl);
}

#endif
