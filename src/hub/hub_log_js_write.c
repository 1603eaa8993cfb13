/* hub_log_js_write: this node's writes into JetStream.  Each session has
 * an outbox; one batch per session is in flight at a time, fenced by the
 * subject's expected last sequence and a message id naming its
 * predecessor, and renumbered after another node's frames when it loses
 * that race.  Once a batch is stored, the Runner frames in it are said to
 * be dealt with on their Runner's subject (the mark Enroll answers counts
 * nothing else).  What is written reaches this node's copy through its
 * consumer (hub_log_js_read.c); bus events are in hub_log_js_bus.c. */
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/js_link.h"
#include "common/clock.h"
#include "common/failpoint.h"
#include "common/log.h"
#include "hub/cluster_wire.h"
#include "hub/hub_log_js_internal.h"
#include "hub/runner_marks.h"
#include "store/store.h"

/* The batch in flight, known not stored, goes back in front of the
 * outbox, to be sequenced again after what another node wrote; its
 * withdrawn entries (hub_log_js_withdraw) go instead. */
static void fly_return(struct js_session *e)
{
    struct js_entry *keep = NULL, **tail = &keep, *p, *next, *last = NULL;

    free(e->fly_buf);
    e->fly_buf = NULL;
    for (p = e->fly; p; p = next) {
        next = p->next;
        if (p->withdrawn) {
            free(p);
            continue;
        }
        e->out_frames += entry_counts(p->kind);
        *tail = last = p;
        tail = &p->next;
    }
    e->fly = NULL;
    e->fly_frames = 0;
    if (!last)
        return;
    last->next = e->out_head;
    if (!e->out_head)
        e->out_tail = last;
    e->out_head = keep;
}

static void runner_dealt_queue(struct hub_log_js *js, const char *runner_id, uint64_t nonce,
                               uint64_t first, uint64_t last);

/* 1 when P is a Runner's frame, its origin in *O. */
static int runner_origin(const struct js_entry *p, struct cluster_wire_origin *o)
{
    return hub_log_js_entry_origin(p, o) == CLUSTER_ORIGIN_RUNNER;
}

/* 1 when NEXT is another part of the runner_seq of P (origin O). */
static int same_runner_seq(const struct js_entry *p, const struct cluster_wire_origin *o,
                           const struct js_entry *next)
{
    struct cluster_wire_origin n;

    return next && next->runner_seq == p->runner_seq && runner_origin(next, &n) &&
           n.nonce == o->nonce && n.id_len == o->id_len && memcmp(n.id, o->id, o->id_len) == 0;
}

/* P is in the log now: stored in a batch of its session, or dropped as a
 * copy of an entry stored before.  When P is a Runner's frame, its
 * runner_seq is dealt with, and a dealt entry on the Runner's subject says
 * so; Enroll's mark counts nothing else (runner_marks.h), so it never
 * covers a frame before its store.  Unless NEXT, the entry after P, is
 * another part of the same runner_seq still to be stored: the dealt entry
 * waits for the last part. */
static void note_dealt(struct hub_log_js *js, const struct js_entry *p, const struct js_entry *next)
{
    struct cluster_wire_origin o;
    char id[CLUSTER_ORIGIN_ID_MAX + 1];

    if (!runner_origin(p, &o) || same_runner_seq(p, &o, next))
        return;
    /* Tests: a writer that stored frames and died before saying so. */
    if (failpoint_active("cluster.dealt_lost"))
        return;
    memcpy(id, o.id, o.id_len);
    id[o.id_len] = '\0';
    runner_dealt_queue(js, id, o.nonce, p->runner_seq, p->runner_seq);
}

void hub_log_js_fly_done(struct hub_log_js *js, struct js_session *e)
{
    uint64_t ns = clock_monotonic_ns() - e->fly_since_ns;
    uint64_t stored_ord = 0;

    js->publish_ns_sum += ns;
    js->publish_acks++;
    if (ns > js->publish_ns_max)
        js->publish_ns_max = ns;
    for (const struct js_entry *p = e->fly; p; p = p->next) {
        stored_ord = p->ord;
        note_dealt(js, p, p->next ? p->next : e->out_head);
    }
    hub_log_js_entries_free(e->fly);
    free(e->fly_buf);
    e->fly = NULL;
    e->fly_buf = NULL;
    e->fly_frames = 0;
    e->in_flight = 0;
    e->acked = 0;
    e->dup_wait = 0;
    e->retry = 0;
    e->refusals = 0;
    if (stored_ord)
        hub_log_js_waits_stored(e, stored_ord);
    hub_log_js_pump(js, e);
}

/* A batch waits for the consumer to tell whose message follows its
 * predecessor: if the consumer stays silent it may have died with its
 * server, and is made again (hub_log_js_on_watch). */
void hub_log_js_watch_later(struct hub_log_js *js)
{
    event_add(js->watch_timer, &(struct timeval){WATCH_MS / 1000, (WATCH_MS % 1000) * 1000});
}

/* Arms the retry timer for AT (monotonic ns), unless it fires sooner. */
static void retry_arm(struct hub_log_js *js, uint64_t at, uint64_t now)
{
    uint64_t us = at > now ? (at - now + 999) / 1000 : 0;

    if (js->retry_due_ns && js->retry_due_ns <= at)
        return;
    js->retry_due_ns = at;
    event_add(js->retry_timer,
              &(struct timeval){(time_t)(us / 1000000), (suseconds_t)(us % 1000000)});
}

/* E's batch in flight (or its outbox) goes again in MS. */
static void retry_later(struct hub_log_js *js, struct js_session *e, uint32_t ms)
{
    uint64_t now = clock_monotonic_ns();

    e->retry = 1;
    e->retry_at_ns = now + (uint64_t)ms * 1000000;
    retry_arm(js, e->retry_at_ns, now);
}

void hub_log_js_fly_check(struct hub_log_js *js, struct js_session *e, const struct js_link_msg *m)
{
    if (!e->fly || !e->dup_wait || m->stream_seq < e->dup_wait)
        return;
    /* Refused, and another node's message follows the predecessor: the
     * batch is made again after it, and what that message holds is no
     * longer sent (pump filters against the copy). */
    js->writer_changes++;
    fly_return(e);
    e->in_flight = 0;
    e->dup_wait = 0;
    e->retry = 0;
    e->refusals = 0;
    hub_log_js_pump(js, e);
}

void hub_log_js_on_ack(void *arg, const char *subject, const char *batch, enum js_ack ack,
                       uint64_t stream_seq)
{
    struct hub_log_js *js = arg;
    struct js_session *e;

    if (strcmp(subject, JS_BUS_SUBJECT) == 0) {
        hub_log_js_bus_on_ack(js, batch, ack);
        return;
    }
    e = hub_log_js_session_get(js, subject, NULL, 0);
    log_debug("cluster: %s: ack %d at stream seq %" PRIu64, subject, (int)ack, stream_seq);
    /* An ack of an earlier attempt, or of a batch the consumer confirmed. */
    if (!e || !e->in_flight || !batch || strtoull(batch, NULL, 10) != e->fly_nonce)
        return;
    /* Tests: a batch stored whose ack is lost (its server died after
     * storing it), once per batch. */
    if (ack == JS_ACK_OK && e->ack_lost_nonce != e->fly_nonce &&
        failpoint_active("cluster.ack_lost")) {
        e->ack_lost_nonce = e->fly_nonce;
        ack = JS_ACK_FAILED;
    }
    switch (ack) {
    case JS_ACK_OK:
        /* Stored; done once this node's consumer applies it, since readers
         * decide what it holds (hub_log_js_on_frames) and the next batch
         * is filtered against the copy that includes it. */
        e->acked = stream_seq;
        e->dup_since_ns = clock_monotonic_ns();
        hub_log_js_watch_later(js);
        return;
    case JS_ACK_DUPLICATE:
        if (stream_seq == 0)
            ack = JS_ACK_CONFLICT; /* the id of a refused attempt: nothing stored */
        /* fall through */
    case JS_ACK_CONFLICT:
        /* A message after the same predecessor is stored: this batch's own
         * earlier attempt (its ack lost to a server's death), or another
         * node's.  The first message after the predecessor tells, by its
         * Agenthub-Batch (fly_check); when it was applied already and was
         * not this batch, the batch goes again after what is there. */
        if (e->last_stream_seq > e->fly_pred) {
            js->writer_changes++;
            e->in_flight = 0;
            e->refusals = 0;
            fly_return(e);
            break;
        }
        if (e->dup_wait != e->fly_pred + 1) {
            e->dup_wait = e->fly_pred + 1;
            e->dup_since_ns = clock_monotonic_ns();
            hub_log_js_watch_later(js);
        }
        if (ack == JS_ACK_CONFLICT) {
            /* Refused, so not stored; but maybe nothing follows the
             * predecessor: the stream's leader checks the expected
             * sequence against what it has applied, and this node's
             * consumer, on another server, can deliver the predecessor
             * (and so start this batch) before the leader applied it.
             * The batch goes again unchanged, soon; another node's
             * message after the predecessor, if there is one, reaches
             * fly_check first and the batch is renumbered after it. */
            uint32_t ms = 1u << (e->refusals < 10 ? e->refusals : 10);
            e->in_flight = 0;
            e->fly_refused++;
            if (e->refusals < UINT8_MAX)
                e->refusals++;
            if (stream_seq < e->fly_pred && e->refusals >= PREDECESSOR_GONE_REFUSALS) {
                /* Refused for over a second, always naming a last sequence
                 * older than the predecessor: the subject's messages up to
                 * it were evicted (the frames stream is bounded, oldest
                 * first), or the leader is that far behind.  The batch
                 * follows what is there.  Either way nothing is taken
                 * twice: readers number the frames and take each origin's
                 * entries and each batch once (hub_log_js_on_frames). */
                log_warn("cluster: %s: stream seq %" PRIu64 " is not the subject's last; "
                         "writing after %" PRIu64,
                         e->subject, e->fly_pred, stream_seq);
                e->fly_pred = stream_seq;
                e->dup_wait = 0;
                e->refusals = 0;
                ms = 1;
            }
            retry_later(js, e, ms < REFUSED_MAX_MS ? ms : REFUSED_MAX_MS);
        }
        return;
    default:
        /* Not known to be stored (a server lost, no quorum in time): the
         * same batch goes again after the same predecessor, so a first
         * attempt that was stored after all is recognised, not doubled. */
        js->publish_retries++;
        e->in_flight = 0;
        retry_later(js, e, RETRY_MS);
        /* The append timed out: its producers hear UNAVAILABLE now. */
        hub_log_js_waits_fail(js, e, 0);
        return;
    }
    hub_log_js_pump(js, e);
}

/* Drops from E's outbox what its copy holds already: a Runner's frame
 * another node stored first (the Runner sent it again after a move), a
 * keyed call's retry.  The copy includes every message before the batch
 * this makes (one batch in flight, done once applied), so when the batch is
 * stored after its predecessor, nothing in it is a copy; when another
 * node wrote first, the batch comes back here and is filtered again.
 * Returns the highest ord dropped, or 0. */
static uint64_t outbox_filter(struct hub_log_js *js, struct js_session *e)
{
    struct js_entry **link = &e->out_head, *p, *prev = NULL;
    uint64_t dropped = 0;

    while ((p = *link)) {
        struct cluster_wire_origin o;
        uint64_t first = 0, last = 0;

        if (hub_log_js_entry_origin(p, &o) == CLUSTER_ORIGIN_NONE ||
            hub_log_js_origin_admit(e, &o, p->runner_seq, 0, 0)) {
            prev = p;
            link = &p->next;
            continue;
        }
        if (o.kind == CLUSTER_ORIGIN_KEY && !list_is_empty(&e->waits) &&
            hub_log_js_key_recall(e, hub_log_js_key_fp(o.id, o.id_len), &first, &last))
            hub_log_js_waits_number(e, p->ord, first, last);
        *link = p->next;
        if (e->out_tail == p)
            e->out_tail = prev;
        e->out_frames -= entry_counts(p->kind);
        dropped = p->ord;
        js->copies_dropped++;
        note_dealt(js, p, p->next);
        free(p);
    }
    return dropped;
}

/* Where a subject stands, from the heads stream (hub_log_js_pump). */
static void on_head(void *arg, const char *subject, enum js_last last, const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;
    struct js_session *e = hub_log_js_session_get(js, subject, NULL, 0);

    if (!e || e->head != HEAD_ASKED)
        return;
    e->head = HEAD_UNKNOWN;
    if (last == JS_LAST_FAILED) {
        retry_later(js, e, RETRY_MS);
        return;
    }
    if (last == JS_LAST_LIVE && e->last_stream_seq == 0) {
        /* Not yet read here, and still in the frames stream: the consumer
         * delivers it (or what follows), then this is asked again if the
         * copy still holds nothing. */
        retry_later(js, e, RETRY_MS);
        return;
    }
    /* Known before the head is applied: applying it may pump E. */
    e->head = HEAD_KNOWN;
    if (last == JS_LAST_FOUND && e->last_stream_seq == 0) {
        /* Gone from the frames stream while this copy holds no message
         * of the subject: evicted before this node read them.  The copy continues after the newest,
         * as a copy that did read it. */
        js->heads_applied++;
        log_info("cluster: %s: its messages are gone from the frames stream; continuing after "
                 "stream seq %" PRIu64 " (seq %s), from the heads stream",
                 subject, m->stream_seq, m->seq_header ? m->seq_header : "?");
        hub_log_js_apply_head(js, m);
    }
    hub_log_js_pump(js, e);
}

/* Sends E's batch in flight (again), or makes the next from its outbox. */
void hub_log_js_pump(struct hub_log_js *js, struct js_session *e)
{
    struct js_entry *take, *last = NULL, *p;
    size_t bytes = 0, off = 0;
    uint32_t frames = 0;
    char msg_id[SUBJECT_MAX + 48], sid[SESSION_MAX_ID + 1];
    uint64_t expect, dropped;

    if (e->in_flight || (!e->out_head && !e->fly))
        return;
    /* Reading on demand, a batch goes only after a current copy. */
    if (!hub_log_js_demand(js, e))
        return;
    if (!e->fly && e->last_stream_seq == 0 && e->head != HEAD_KNOWN &&
        cluster_wire_session_id(e->subject, sid) == 0) {
        /* This copy holds no message of the subject: it is new, or the
         * frames stream (bounded, oldest first) evicted its messages
         * before this node read them.  The heads stream tells which, and
         * where its seq stands; a first batch numbered from 1 would give
         * the session's seqs a second meaning on the copies that remember
         * it.  (A Runner's subject is numbered by no reader: its old
         * entries would only bring back an older run.) */
        uint64_t id;
        if (e->head == HEAD_UNKNOWN) {
            if (js_link_last(js->link, e->subject, on_head, js, &id) == 0)
                e->head = HEAD_ASKED;
            else
                retry_later(js, e, RETRY_MS);
        }
        return;
    }
    if (!e->fly) {
        dropped = outbox_filter(js, e);
        take = e->out_head;
        if (!take) {
            /* Everything waiting was a copy: its producers' records are
             * stored already. */
            if (dropped)
                hub_log_js_waits_stored(e, dropped);
            return;
        }
        for (p = take; p; p = p->next) {
            if (last && bytes + CLUSTER_ENTRY_HEAD + p->olen + p->len > BATCH_BYTES)
                break;
            bytes += CLUSTER_ENTRY_HEAD + p->olen + p->len;
            frames += entry_counts(p->kind);
            last = p;
        }
        e->fly_buf = malloc(bytes);
        if (!e->fly_buf)
            return;
        for (p = take;; p = p->next) {
            struct cluster_wire_entry w = {
                .kind = p->kind,
                .at_unix_ms = p->at_unix_ms,
                .runner_seq = p->runner_seq,
                .origin = p->data,
                .origin_len = p->olen,
                .frame = p->data + p->olen,
                .frame_len = p->len,
            };
            off += cluster_wire_put(e->fly_buf + off, &w);
            if (p == last)
                break;
        }
        e->out_head = last->next;
        if (!e->out_head)
            e->out_tail = NULL;
        last->next = NULL;
        e->out_frames -= frames;
        e->fly = take;
        e->fly_len = bytes;
        e->fly_frames = frames;
        e->fly_first_seq = e->last_seq + 1;
        e->fly_pred = e->last_stream_seq;
        e->fly_nonce = ++js->batches;
        e->fly_refused = 0;
        e->fly_since_ns = clock_monotonic_ns();
    }
    /* Fenced by the subject's expected last sequence: stored only right
     * after the message the writer's copy ends with.  The message id names
     * this batch and this attempt after a refusal: an attempt whose ack
     * was lost is sent again under the same id, so JetStream recognises it;
     * after a refusal the id is a new one, since a clustered JetStream
     * 2.10 keeps the id of a message it refused, and the same id would be
     * refused again as a duplicate of nothing.  Two writers racing on one
     * predecessor can both pass the check while their proposals are in
     * flight (JetStream checks it against what it has applied): readers
     * still take each frame once and number them alike. */
    snprintf(msg_id, sizeof(msg_id), "%s:%" PRIu64 ":%" PRIu64 ".%u",
             e->subject + sizeof(JS_FRAMES_PREFIX) - 1, e->fly_pred, e->fly_nonce,
             (unsigned)e->fly_refused);
    /* Tests: a writer that cannot reach JetStream for now (paused, cut
     * off) and writes what it took later. */
    if (failpoint_active("cluster.hold_publish")) {
        retry_later(js, e, RETRY_MS);
        return;
    }
    expect = e->fly_pred + (e->refusals == 0 && failpoint_active("cluster.refuse_first"));
    if (js_link_publish_frames(js->link, e->subject, e->fly_first_seq, expect, msg_id, e->fly_nonce,
                               e->fly_buf, e->fly_len) != 0) {
        retry_later(js, e, RETRY_MS); /* unreachable: again once it is back */
        return;
    }
    e->in_flight = 1;
    log_debug("cluster: %s: frames %" PRIu64 "+%u after stream seq %" PRIu64 " sent", e->subject,
              e->fly_first_seq, e->fly_frames, e->fly_pred);
}

void hub_log_js_on_watch(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    uint64_t now = clock_monotonic_ns();
    int waiting = 0, stale = 0;

    for (struct js_session *e = hub_log_js_session_first(js); e; e = hub_log_js_session_next(js, e))
        if (e->dup_wait || e->acked) {
            int silent = now - e->dup_since_ns >= (uint64_t)WATCH_MS * 1000000;
            waiting = 1;
            stale |= silent;
            /* Read on demand: that session's own consumer is made anew. */
            if (silent)
                hub_log_js_demand_renew(js, e);
        }
    if (js->got_ready && !js->caught_up && js->connected) {
        /* Replaying the streams after a start: a consumer that stops
         * delivering (its server lost, a leader change) is made again from
         * where it stopped, so the replay always finishes. */
        uint64_t applied = js->frames_applied + js->bus_applied;
        waiting = 1;
        if (applied == js->catchup_applied) {
            log_warn("cluster: catching up stalled at frames %" PRIu64 " of %" PRIu64
                     ", bus %" PRIu64 " of %" PRIu64 "; making the consumers again",
                     js->frames_applied, js->frames_target, js->bus_applied, js->bus_target);
            stale = 1;
        }
        js->catchup_applied = applied;
    }
    if (stale) {
        log_warn("cluster: the frames consumer is silent; making it again");
        js_link_refresh(js->link);
        for (struct js_session *e = hub_log_js_session_first(js); e;
             e = hub_log_js_session_next(js, e))
            e->dup_since_ns = now;
    }
    if (waiting)
        hub_log_js_watch_later(js);
}

void hub_log_js_on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    uint64_t now = clock_monotonic_ns(), next = 0;

    js->retry_due_ns = 0;
    for (struct js_session *e = hub_log_js_session_first(js); e;
         e = hub_log_js_session_next(js, e)) {
        if (!e->retry || e->in_flight)
            continue;
        if (e->retry_at_ns > now) {
            if (!next || e->retry_at_ns < next)
                next = e->retry_at_ns;
            continue;
        }
        e->retry = 0;
        hub_log_js_pump(js, e);
    }
    if (next)
        retry_arm(js, next, now);
}

/* Queues an entry of KIND on SUBJECT (of session or Runner ID).  A frame
 * carries the current origin (hub_log_origin) tagged with its part; a
 * Runner entry (reset, dealt, sync) names the Runner, RUNNER_SEQ its own
 * number.  Returns the subject's entry, or NULL when memory is short. */
static struct js_session *enqueue(struct hub_log_js *js, const char *subject, const char *id,
                                  uint8_t kind, uint64_t runner_seq, const void *data, size_t len,
                                  int64_t at)
{
    struct js_session *e = hub_log_js_session_get(js, subject, id, 1);
    uint8_t origin[256];
    size_t olen = 0;
    struct js_entry *entry;

    if (kind == CLUSTER_ENTRY_FRAME && js->origin_kind != CLUSTER_ORIGIN_NONE) {
        struct cluster_wire_origin o = {
            .kind = js->origin_kind,
            .id = (const uint8_t *)js->origin,
            .id_len = js->origin_len,
            .nonce = js->origin_nonce,
            .part = js->origin_parts++,
        };
        if (js->origin_derived && o.kind == CLUSTER_ORIGIN_KEY)
            o.part |= CLUSTER_PART_DERIVED;
        olen = cluster_wire_origin_put(origin, &o);
        kind = CLUSTER_ENTRY_TAGGED;
        runner_seq = js->origin_seq;
    } else if (kind != CLUSTER_ENTRY_FRAME && !entry_counts(kind)) {
        olen = 0; /* a mark */
    } else if (kind != CLUSTER_ENTRY_FRAME) {
        olen = strlen(id);
        memcpy(origin, id, olen);
    }
    entry = e ? malloc(sizeof(*entry) + olen + len) : NULL;
    if (!entry)
        return NULL;
    entry->next = NULL;
    entry->withdrawn = 0;
    entry->kind = kind;
    entry->olen = (uint8_t)olen;
    entry->runner_seq = runner_seq;
    entry->at_unix_ms = at;
    entry->len = len;
    memcpy(entry->data, origin, olen);
    if (len)
        memcpy(entry->data + olen, data, len);
    if (e->out_tail)
        e->out_tail->next = entry;
    else
        e->out_head = entry;
    e->out_tail = entry;
    if (entry_counts(kind))
        e->out_frames++;
    entry->ord = ++e->ords;
    js->last_ord = entry->ord;
    return e;
}

static struct js_session *enqueue_session(struct hub_log_js *js, struct session *s, uint8_t kind,
                                          const void *data, size_t len, int64_t at)
{
    char subject[SUBJECT_MAX];

    cluster_wire_subject(session_id(s), 0, subject);
    return enqueue(js, subject, session_id(s), kind, 0, data, len, at);
}

uint64_t hub_log_js_append(void *impl, struct session *s, const void *frame, size_t len,
                           int64_t at_unix_ms)
{
    struct hub_log_js *js = impl;
    struct js_session *e;
    uint64_t seq;

    if (!hub_log_js_writable(js) || session_is_ended(s) ||
        len > BATCH_BYTES - CLUSTER_ENTRY_HEAD - STORE_ID_MAX)
        return 0;
    e = enqueue_session(js, s, CLUSTER_ENTRY_FRAME, frame, len, at_unix_ms);
    if (!e)
        return 0;
    /* The seq it gets unless another node writes this session first (the
     * consumer may have delivered the batch in flight before its ack). */
    seq = e->last_seq;
    if (e->in_flight && e->fly_first_seq + e->fly_frames - 1 > seq)
        seq = e->fly_first_seq + e->fly_frames - 1;
    seq += e->out_frames;
    hub_log_js_pump(js, e);
    return seq;
}

void hub_log_js_mark(void *impl, struct session *s, enum hub_log_mark mark)
{
    struct hub_log_js *js = impl;
    struct js_session *e;

    /* Unreachable: the mark applies here only, as on one node. */
    if (!hub_log_js_writable(js) ||
        !(e = enqueue_session(js, s, (uint8_t)mark, NULL, 0, clock_unix_ms()))) {
        if (mark == HUB_LOG_END)
            session_end(s);
        else if (mark == HUB_LOG_TAIL_END)
            session_tail_end(s);
        else
            session_tail_resume(s);
        return;
    }
    hub_log_js_pump(js, e);
}

/* --- a Runner's new run, and bus events --------------------------------------- */

/* agenthub.frames.=<runner>: the Runner's new runs, the runner_seq values
 * dealt with (frames stored, or dealt with without one), and sync points:
 * everything its mark is read from, in one subject every node reads in
 * the same order.  Queues KIND for
 * RUNNER_ID; with W (may be NULL) tracked to be answered once this node's
 * copy applied it.  Returns 0, or -1 when memory is short. */
static int runner_entry(struct hub_log_js *js, const char *runner_id, uint8_t kind,
                        uint64_t runner_seq, const void *data, size_t len, struct hub_log_wait *w)
{
    char subject[SUBJECT_MAX];
    struct js_session *e;

    cluster_wire_subject(runner_id, 1, subject);
    e = enqueue(js, subject, runner_id, kind, runner_seq, data, len, clock_unix_ms());
    if (!e)
        return -1;
    if (w) {
        w->first_ord = w->last_ord = js->last_ord;
        hub_log_js_waits_hold(js, e, w);
    }
    hub_log_js_pump(js, e);
    return 0;
}

void hub_log_js_runner_reset(void *impl, const char *runner_id)
{
    struct hub_log_js *js = impl;
    uint64_t nonce = ((uint64_t)clock_unix_ms() << 16) ^ clock_monotonic_ns();

    /* Here at once, so this node's next frames are the new run's; the same
     * reset coming back through the stream changes nothing more. */
    runner_marks_reset(js->marks, runner_id, strlen(runner_id), nonce);
    runner_entry(js, runner_id, CLUSTER_ENTRY_RUNNER_RESET, nonce, NULL, 0, NULL);
}

/* Extends the dealt entry at the end of RUNNER_ID's outbox with
 * FIRST..LAST of run NONCE when they overlap or follow it: a Runner's
 * frames, transcript entries and acks are dealt with one after another.
 * Returns 1 when it did. */
static int runner_dealt_extend(struct hub_log_js *js, const char *runner_id, uint64_t nonce,
                               uint64_t first, uint64_t last)
{
    char subject[SUBJECT_MAX];
    struct js_session *e;
    struct js_entry *t;
    uint64_t tail_nonce = 0, tail_last = 0;

    cluster_wire_subject(runner_id, 1, subject);
    e = hub_log_js_session_get(js, subject, NULL, 0);
    t = e ? e->out_tail : NULL;
    if (!t || t->kind != CLUSTER_ENTRY_RUNNER_DEALT || t->len != 16)
        return 0;
    for (int i = 7; i >= 0; i--) {
        tail_nonce = tail_nonce << 8 | t->data[t->olen + i];
        tail_last = tail_last << 8 | t->data[t->olen + 8 + i];
    }
    if (tail_nonce != nonce || first < t->runner_seq || first > tail_last + 1)
        return 0;
    if (last > tail_last)
        for (int i = 0; i < 8; i++)
            t->data[t->olen + 8 + i] = (uint8_t)(last >> (8 * i));
    return 1;
}

/* Queues on RUNNER_ID's subject that FIRST..LAST of its run NONCE are
 * dealt with (memory short: not said, so the mark stays lower and the
 * Runner sends them again, dropped as copies). */
static void runner_dealt_queue(struct hub_log_js *js, const char *runner_id, uint64_t nonce,
                               uint64_t first, uint64_t last)
{
    uint8_t body[16];

    if (runner_dealt_extend(js, runner_id, nonce, first, last))
        return;
    for (int i = 0; i < 8; i++) {
        body[i] = (uint8_t)(nonce >> (8 * i));
        body[8 + i] = (uint8_t)(last >> (8 * i));
    }
    runner_entry(js, runner_id, CLUSTER_ENTRY_RUNNER_DEALT, first, body, sizeof(body), NULL);
}

void hub_log_js_runner_dealt(void *impl, const char *runner_id, uint64_t first, uint64_t last)
{
    struct hub_log_js *js = impl;
    uint64_t generation, nonce;

    runner_marks_get(js->marks, runner_id, &generation, &nonce);
    runner_dealt_queue(js, runner_id, nonce, first, last);
}

void hub_log_js_runner_sync(void *impl, const char *runner_id, struct hub_log_wait *w)
{
    struct hub_log_js *js = impl;

    if (!hub_log_js_writable(js) ||
        runner_entry(js, runner_id, CLUSTER_ENTRY_RUNNER_SYNC, 0, NULL, 0, w) != 0) {
        js->waits_failed++;
        w->done(w, 0);
    }
}
