#include "hub/hub_log_jetstream.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cluster/js_link.h"
#include "common/clock.h"
#include "common/log.h"
#include "hub/cluster_wire.h"
#include "hub/hub_wire.h"
#include "hub/runner_marks.h"
#include "store/store.h"

#include "hub/hub_log_js_internal.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The entry for SUBJECT (made with ID when CREATE).  NULL when absent or
 * memory is short. */
static struct js_session *js_session_get(struct hub_log_js *js, const char *subject, const char *id,
                                         int create)
{
    struct js_session **slot = &js->table[hash_str(subject) % TABLE_BUCKETS], *e;

    for (e = *slot; e; e = e->hnext)
        if (strcmp(e->subject, subject) == 0)
            return e;
    if (!create)
        return NULL;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->subject, sizeof(e->subject), "%s", subject);
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->hnext = *slot;
    *slot = e;
    return e;
}

static void entries_free(struct js_entry *e)
{
    while (e) {
        struct js_entry *next = e->next;
        free(e);
        e = next;
    }
}

/* --- applying what the streams deliver ---------------------------------------- */

static void check_caught_up(struct hub_log_js *js)
{
    if (!js->caught_up && js->got_ready && js->frames_applied >= js->frames_target &&
        js->bus_applied >= js->bus_target) {
        js->caught_up = 1;
        log_info("cluster: caught up with JetStream (frames %" PRIu64 ", bus %" PRIu64 ")",
                 js->frames_applied, js->bus_applied);
    }
}

static void pump(struct hub_log_js *js, struct js_session *e);
static void fly_check(struct hub_log_js *js, struct js_session *e, const struct js_link_msg *m);

/* Applies one entry to the node's copy of session ID.  Frame SEQ is
 * appended unless the copy has it already. */
static void apply_entry(struct hub_log_js *js, const char *id, uint8_t kind, uint64_t seq,
                        const uint8_t *data, size_t len, int64_t at, int from_self)
{
    size_t n = strlen(id);
    struct session *s = session_lookup(js->reg, id, n);

    if (kind == HUB_LOG_END) {
        if (s && !session_is_ended(s))
            session_end(s);
        return;
    }
    if (!s || session_is_ended(s)) {
        if (session_open(js->reg, id, n, &s) < 0 || !s)
            return;
    }
    if (kind == HUB_LOG_TAIL_END) {
        session_tail_end(s);
        return;
    }
    if (kind == HUB_LOG_TAIL_RESUME) {
        session_tail_resume(s);
        return;
    }
    if (seq <= ring_newest_seq(session_ring(s)))
        return; /* delivered again (a consumer reset) */
    if (seq > ring_newest_seq(session_ring(s)) + 1) {
        /* Older frames are gone from the stream (or never reached this
         * node): readers behind get OUT_OF_RANGE, never a silent skip. */
        if (ring_newest_seq(session_ring(s)) > 0)
            js->apply_gaps++;
        session_skip_to(s, seq);
    }
    /* Another node's state frame is this session's state here too
     * (GetAgentStatus); the writer's own arbiter derived it already. */
    if (!from_self) {
        int state = hub_frame_state(data, len);
        if (state > 0)
            arbiter_announce(session_arbiter(s), (enum arbiter_state)state);
    }
    session_append(s, data, len, at);
}

static void on_frames(void *arg, const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;
    char id[SESSION_MAX_ID + 1];
    struct cluster_wire_entry w;
    struct js_session *e;
    uint64_t seq;
    size_t off = 0;
    int is_session;

    if (m->stream_seq > js->frames_applied)
        js->frames_applied = m->stream_seq;
    if (!m->seq_header) {
        check_caught_up(js);
        return;
    }
    is_session = cluster_wire_session_id(m->subject, id) == 0;
    seq = strtoull(m->seq_header, NULL, 10);
    e = js_session_get(js, m->subject, is_session ? id : "", 1);
    /* A malformed rest (rv -1) is dropped; the entries before it stand. */
    while (cluster_wire_next(m->data, m->len, &off, &w) == 1) {
        if (w.kind == CLUSTER_ENTRY_FRAME && w.origin_len)
            runner_marks_see(js->marks, (const char *)w.origin, w.origin_len, w.runner_seq);
        else if (w.kind == CLUSTER_ENTRY_RUNNER_RESET && w.origin_len)
            runner_marks_reset(js->marks, (const char *)w.origin, w.origin_len, w.runner_seq);
        if (is_session && w.kind != CLUSTER_ENTRY_RUNNER_RESET)
            apply_entry(js, id, w.kind, seq, w.frame, w.frame_len, w.at_unix_ms, m->from_self);
        if (entry_counts(w.kind)) {
            if (e && m->stream_seq > e->last_stream_seq && seq > e->last_seq)
                e->last_seq = seq;
            seq++;
        }
    }
    if (e && m->stream_seq > e->last_stream_seq) {
        e->last_stream_seq = m->stream_seq;
        if (e->retry && !e->in_flight) {
            e->retry = 0;
            pump(js, e);
        }
    }
    if (e)
        fly_check(js, e, m);
    check_caught_up(js);
}

static void on_bus(void *arg, const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;
    int64_t at = m->at_header ? strtoll(m->at_header, NULL, 10) : clock_unix_ms();

    if (m->stream_seq > js->bus_applied)
        js->bus_applied = m->stream_seq;
    if (m->stream_seq > bus_newest_seq(js->bus)) {
        bus_skip_to(js->bus, m->stream_seq);
        bus_publish(js->bus, m->data, m->len, at);
    }
    check_caught_up(js);
}

static void on_ready(void *arg, uint64_t epoch, uint64_t frames_last, uint64_t bus_last)
{
    struct hub_log_js *js = arg;

    js->epoch = epoch;
    js->bus->epoch = epoch;
    js->frames_target = frames_last;
    js->bus_target = bus_last;
    js->got_ready = 1;
    log_info("cluster: JetStream streams ready (epoch %" PRIu64 ")", epoch);
    check_caught_up(js);
}

static void on_connection(void *arg, int up)
{
    struct hub_log_js *js = arg;

    js->connected = up;
    if (up) {
        log_info("cluster: connected to NATS");
        return;
    }
    log_warn("cluster: NATS unreachable; appends answer UNAVAILABLE until it is back");
    /* Panes end where they are (compass_stream.c), so their clients resume
     * on a node that still reaches JetStream. */
    for (struct session *s = session_first(js->reg); s; s = session_next(s))
        watch_list_wake(&s->watchers);
    for (size_t i = 0; i < TABLE_BUCKETS; i++)
        for (struct js_session *e = js->table[i]; e; e = e->hnext)
            hub_log_js_waits_fail(js, e, 0);
}

/* --- writing ------------------------------------------------------------------ */

/* --- producers waiting for their frames (hub_log_wait_*.c does the rest) ----- */

static void js_track(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq)
{
    struct hub_log_js *js = impl;

    if (w->first_ord == 0) {
        w->first_ord = js->last_ord;
        w->first_seq = seq;
    }
    w->last_ord = js->last_ord;
    w->last_seq = seq;
}

static int js_stored(void *impl, struct session *s, struct hub_log_wait *w)
{
    return w->last_ord == 0; /* nothing taken: nothing to wait for */
}

static void js_wait(void *impl, struct session *s, struct hub_log_wait *w)
{
    struct hub_log_js *js = impl;
    char subject[SUBJECT_MAX];
    struct js_session *e;

    cluster_wire_subject(session_id(s), 0, subject);
    e = js_session_get(js, subject, NULL, 0);
    if (!e || !js->connected) {
        js->waits_failed++;
        w->done(w, 0);
        return;
    }
    w->deadline_ns = clock_monotonic_ns() + js->wait_ns;
    w->next = e->waits;
    if (w->next)
        w->next->pprev = &w->next;
    w->pprev = &e->waits;
    e->waits = w;
    if (!evtimer_pending(js->wait_timer, NULL))
        event_add(js->wait_timer, &(struct timeval){0, 100 * 1000});
}

/* The batch in flight goes back in front of the outbox, to be sequenced
 * again after what another node wrote. */
static void fly_return(struct js_session *e)
{
    struct js_entry *last = e->fly;

    free(e->fly_buf);
    e->fly_buf = NULL;
    if (!last)
        return;
    while (last->next)
        last = last->next;
    last->next = e->out_head;
    if (!e->out_head)
        e->out_tail = last;
    e->out_head = e->fly;
    e->out_frames += e->fly_frames;
    e->fly = NULL;
    e->fly_frames = 0;
}

/* The batch in flight is stored; producers whose frames it ends are
 * answered. */
static void fly_done(struct hub_log_js *js, struct js_session *e)
{
    uint64_t ns = clock_monotonic_ns() - e->fly_since_ns;
    uint64_t stored_ord = 0;

    js->publish_ns_sum += ns;
    js->publish_acks++;
    if (ns > js->publish_ns_max)
        js->publish_ns_max = ns;
    if (e->waits) {
        hub_log_js_waits_number(e);
        for (const struct js_entry *p = e->fly; p; p = p->next)
            stored_ord = p->ord;
    }
    entries_free(e->fly);
    free(e->fly_buf);
    e->fly = NULL;
    e->fly_buf = NULL;
    e->fly_frames = 0;
    e->in_flight = 0;
    e->dup_wait = 0;
    if (stored_ord)
        hub_log_js_waits_stored(e, stored_ord);
}

/* A batch waits for the consumer to tell whose message follows its
 * predecessor: if the consumer stays silent it may have died with its
 * server, and is made again (on_watch). */
static void watch_later(struct hub_log_js *js)
{
    event_add(js->watch_timer, &(struct timeval){WATCH_MS / 1000, (WATCH_MS % 1000) * 1000});
}

static void retry_later(struct hub_log_js *js, struct js_session *e)
{
    e->retry = 1;
    event_add(js->retry_timer, &(struct timeval){0, RETRY_MS * 1000});
}

/* A frames message on E's subject was applied: when it is the batch in
 * flight (its Agenthub-Batch), that batch is stored, whatever became of
 * its ack; when the batch was refused (conflict, duplicate) and this is
 * the first message after its predecessor, another node's, the batch goes
 * again after it. */
static void fly_check(struct hub_log_js *js, struct js_session *e, const struct js_link_msg *m)
{
    if (!e->fly)
        return;
    if (m->batch_header && strtoull(m->batch_header, NULL, 10) == e->fly_nonce) {
        fly_done(js, e);
        pump(js, e);
        return;
    }
    if (e->dup_wait && m->stream_seq >= e->dup_wait) {
        fly_return(e);
        e->in_flight = 0;
        e->dup_wait = 0;
        pump(js, e);
    }
}

static void on_ack(void *arg, const char *subject, const char *batch, enum js_ack ack,
                   uint64_t stream_seq)
{
    struct hub_log_js *js = arg;
    struct js_session *e;

    if (strcmp(subject, JS_BUS_SUBJECT) == 0) {
        if (ack != JS_ACK_OK)
            js->bus_lost++;
        return;
    }
    e = js_session_get(js, subject, NULL, 0);
    log_debug("cluster: %s: ack %d at stream seq %" PRIu64, subject, (int)ack, stream_seq);
    /* An ack of an earlier attempt, or of a batch the consumer confirmed. */
    if (!e || !e->in_flight || !batch || strtoull(batch, NULL, 10) != e->fly_nonce)
        return;
    switch (ack) {
    case JS_ACK_OK:
        if (stream_seq > e->last_stream_seq) {
            e->last_stream_seq = stream_seq;
            if (e->fly_frames && e->fly_first_seq + e->fly_frames - 1 > e->last_seq)
                e->last_seq = e->fly_first_seq + e->fly_frames - 1;
        }
        fly_done(js, e);
        break;
    case JS_ACK_DUPLICATE:
    case JS_ACK_CONFLICT:
        /* A message after the same predecessor is stored: this batch's own
         * earlier attempt (its ack lost to a server's death), or another
         * node's.  The first message after the predecessor tells, by its
         * Agenthub-Batch (fly_check); when it was applied already and was
         * not this batch, the batch goes again after what is there. */
        js->writer_changes++;
        if (e->last_stream_seq > e->fly_pred) {
            e->in_flight = 0;
            fly_return(e);
            break;
        }
        e->dup_wait = e->fly_pred + 1;
        e->dup_since_ns = clock_monotonic_ns();
        watch_later(js);
        return;
    default:
        /* Not known to be stored (a server lost, no quorum in time): the
         * same batch goes again after the same predecessor, so a first
         * attempt that was stored after all is recognised, not doubled. */
        js->publish_retries++;
        e->in_flight = 0;
        retry_later(js, e);
        /* The append timed out: its producers hear UNAVAILABLE now. */
        hub_log_js_waits_fail(js, e, 0);
        return;
    }
    pump(js, e);
}

/* Sends E's batch in flight (again), or makes the next from its outbox. */
static void pump(struct hub_log_js *js, struct js_session *e)
{
    struct js_entry *take = e->out_head, *last = NULL, *p;
    size_t bytes = 0, off = 0;
    uint32_t frames = 0;
    char msg_id[SUBJECT_MAX + 24];

    if (e->in_flight || (!take && !e->fly))
        return;
    if (!e->fly) {
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
        e->fly_since_ns = clock_monotonic_ns();
    }
    /* Two fences, because a clustered JetStream 2.9 checks the expected
     * subject sequence against what it has stored, not against proposals
     * still in flight: two nodes racing on the same predecessor could both
     * pass it.  The message id <session>:<predecessor's stream seq> is
     * checked against in-flight ones too, so of two batches written after
     * the same message only one is stored, and the other hears it is a
     * duplicate.  A stale writer names a predecessor that already has a
     * successor, so the id catches it inside the duplicate window and the
     * expected sequence after it. */
    snprintf(msg_id, sizeof(msg_id), "%s:%" PRIu64, e->subject + sizeof(JS_FRAMES_PREFIX) - 1,
             e->fly_pred);
    if (js_link_publish_frames(js->link, e->subject, e->fly_first_seq, e->fly_pred, msg_id,
                               e->fly_nonce, e->fly_buf, e->fly_len) != 0) {
        retry_later(js, e); /* unreachable: again once it is back */
        return;
    }
    e->in_flight = 1;
    log_debug("cluster: %s: frames %" PRIu64 "+%u after stream seq %" PRIu64 " sent", e->subject,
              e->fly_first_seq, e->fly_frames, e->fly_pred);
}

static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    uint64_t now = clock_monotonic_ns();
    int waiting = 0, stale = 0;

    for (size_t i = 0; i < TABLE_BUCKETS; i++)
        for (struct js_session *e = js->table[i]; e; e = e->hnext)
            if (e->dup_wait) {
                waiting = 1;
                stale |= now - e->dup_since_ns >= (uint64_t)WATCH_MS * 1000000;
            }
    if (stale) {
        log_warn("cluster: the frames consumer is silent; making it again");
        js_link_refresh(js->link);
        for (size_t i = 0; i < TABLE_BUCKETS; i++)
            for (struct js_session *e = js->table[i]; e; e = e->hnext)
                e->dup_since_ns = now;
    }
    if (waiting)
        watch_later(js);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;

    for (size_t i = 0; i < TABLE_BUCKETS; i++)
        for (struct js_session *e = js->table[i]; e; e = e->hnext)
            if (e->retry && !e->in_flight) {
                e->retry = 0;
                pump(js, e);
            }
}

static int js_writable(void *impl)
{
    struct hub_log_js *js = impl;

    return js->connected && js->caught_up;
}

/* Queues an entry on SUBJECT (of session or Runner ID), with the current
 * origin when it is a frame.  Returns its subject's entry, or NULL when
 * memory is short. */
static struct js_session *enqueue(struct hub_log_js *js, const char *subject, const char *id,
                                  uint8_t kind, const void *data, size_t len, int64_t at)
{
    struct js_session *e = js_session_get(js, subject, id, 1);
    const char *origin = kind == CLUSTER_ENTRY_FRAME ? js->origin : "";
    struct js_entry *entry;
    size_t olen = kind == CLUSTER_ENTRY_RUNNER_RESET ? strlen(id) : strlen(origin);

    if (kind == CLUSTER_ENTRY_RUNNER_RESET)
        origin = id;
    entry = e ? malloc(sizeof(*entry) + olen + len) : NULL;
    if (!entry)
        return NULL;
    entry->next = NULL;
    entry->kind = kind;
    entry->olen = (uint8_t)olen;
    entry->runner_seq = js->origin_seq; /* a reset's: its nonce */
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
    return enqueue(js, subject, session_id(s), kind, data, len, at);
}

static uint64_t js_append(void *impl, struct session *s, const void *frame, size_t len,
                          int64_t at_unix_ms)
{
    struct hub_log_js *js = impl;
    struct js_session *e;
    uint64_t seq;

    if (!js_writable(js) || session_is_ended(s) ||
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
    pump(js, e);
    return seq;
}

static void js_mark(void *impl, struct session *s, enum hub_log_mark mark)
{
    struct hub_log_js *js = impl;
    struct js_session *e;

    /* Unreachable: the mark applies here only, as on one node. */
    if (!js_writable(js) ||
        !(e = enqueue_session(js, s, (uint8_t)mark, NULL, 0, clock_unix_ms()))) {
        if (mark == HUB_LOG_END)
            session_end(s);
        else if (mark == HUB_LOG_TAIL_END)
            session_tail_end(s);
        else
            session_tail_resume(s);
        return;
    }
    pump(js, e);
}

/* --- Runners' marks ------------------------------------------------------------ */

static void js_origin(void *impl, const char *runner_id, uint64_t runner_seq)
{
    struct hub_log_js *js = impl;

    snprintf(js->origin, sizeof(js->origin), "%s", runner_id ? runner_id : "");
    js->origin_seq = runner_id ? runner_seq : 0;
}

static uint64_t js_runner_mark(void *impl, const char *runner_id, uint64_t *generation)
{
    struct hub_log_js *js = impl;

    return runner_marks_get(js->marks, runner_id, generation);
}

/* agenthub.frames.=<runner>: the Runner's new runs, in the frames stream so
 * they are ordered with its frames on every node. */
static void js_runner_reset(void *impl, const char *runner_id)
{
    struct hub_log_js *js = impl;
    uint64_t nonce = ((uint64_t)clock_unix_ms() << 16) ^ clock_monotonic_ns();
    char subject[SUBJECT_MAX];
    struct js_session *e;

    /* Here at once, so this node's next frames are the new run's; the same
     * reset coming back through the stream changes nothing more. */
    runner_marks_reset(js->marks, runner_id, strlen(runner_id), nonce);
    js->origin_seq = nonce;
    cluster_wire_subject(runner_id, 1, subject);
    e = enqueue(js, subject, runner_id, CLUSTER_ENTRY_RUNNER_RESET, NULL, 0, clock_unix_ms());
    js->origin_seq = 0;
    if (e)
        pump(js, e);
}

/* --- reading: the node's copies, as the memory backend reads them ---------------- */

static uint64_t js_publish(void *impl, const void *payload, size_t len, int64_t at_unix_ms)
{
    struct hub_log_js *js = impl;

    if (!js_writable(js) || js_link_publish_bus(js->link, payload, len, at_unix_ms) != 0) {
        js->bus_lost++;
        return 0;
    }
    /* The seq it gets is the stream's: known when it comes back. */
    return bus_newest_seq(js->bus) + 1;
}

static enum bus_status js_open(void *impl, uint64_t since_seq, uint64_t epoch, uint64_t *cursor)
{
    struct hub_log_js *js = impl;

    /* Seen on another node, not here yet: this copy lags by the
     * stream's delivery, and the events come. */
    if (since_seq > bus_newest_seq(js->bus) && epoch == js->epoch && js->epoch != 0) {
        *cursor = since_seq;
        return BUS_OK;
    }
    return bus_cursor_open(js->bus, since_seq, epoch, cursor);
}

static enum bus_status js_next(void *impl, uint64_t cursor, struct bus_event *out)
{
    struct hub_log_js *js = impl;

    return bus_next(js->bus, cursor, out);
}

static void js_subscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_watch(js->bus, w);
}

static void js_unsubscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_unwatch(js->bus, w);
}

static uint64_t js_epoch(void *impl)
{
    struct hub_log_js *js = impl;

    return js->epoch;
}

static void js_write_metrics(void *impl, FILE *out)
{
    struct hub_log_js *js = impl;
    struct js_link_stats st;
    uint64_t waiting = 0, in_flight = 0, retrying = 0;

    js_link_stats(js->link, &st);
    for (size_t i = 0; i < TABLE_BUCKETS; i++)
        for (const struct js_session *e = js->table[i]; e; e = e->hnext) {
            waiting += e->out_frames + e->fly_frames;
            in_flight += e->in_flight;
            retrying += e->retry;
        }
    fprintf(out,
            "# HELP agenthub_cluster_frames_waiting Frames taken and not yet acknowledged by "
            "JetStream.\n"
            "# TYPE agenthub_cluster_frames_waiting gauge\n"
            "agenthub_cluster_frames_waiting %llu\n"
            "# TYPE agenthub_cluster_batches_in_flight gauge\n"
            "agenthub_cluster_batches_in_flight %llu\n"
            "# TYPE agenthub_cluster_sessions_retrying gauge\n"
            "agenthub_cluster_sessions_retrying %llu\n",
            (unsigned long long)waiting, (unsigned long long)in_flight,
            (unsigned long long)retrying);
    fprintf(out,
            "# HELP agenthub_cluster_connected 1 while this node reaches NATS JetStream.\n"
            "# TYPE agenthub_cluster_connected gauge\n"
            "agenthub_cluster_connected %d\n"
            "# HELP agenthub_cluster_caught_up 1 once this node's copies replayed the streams.\n"
            "# TYPE agenthub_cluster_caught_up gauge\n"
            "agenthub_cluster_caught_up %d\n"
            "# TYPE agenthub_cluster_disconnects_total counter\n"
            "agenthub_cluster_disconnects_total %llu\n"
            "# TYPE agenthub_cluster_publishes_total counter\n"
            "agenthub_cluster_publishes_total %llu\n"
            "# HELP agenthub_cluster_publish_seconds Frames batches from publish to "
            "JetStream's ack.\n"
            "# TYPE agenthub_cluster_publish_seconds summary\n"
            "agenthub_cluster_publish_seconds_sum %.6f\n"
            "agenthub_cluster_publish_seconds_count %llu\n"
            "# TYPE agenthub_cluster_publish_seconds_max gauge\n"
            "agenthub_cluster_publish_seconds_max %.6f\n"
            "# HELP agenthub_cluster_writer_changes_total Batches refused because another "
            "node wrote the session first (its writer changed), published again after.\n"
            "# TYPE agenthub_cluster_writer_changes_total counter\n"
            "agenthub_cluster_writer_changes_total %llu\n"
            "# HELP agenthub_cluster_publish_retries_total Batches sent again after JetStream "
            "did not answer in time.\n"
            "# TYPE agenthub_cluster_publish_retries_total counter\n"
            "agenthub_cluster_publish_retries_total %llu\n"
            "# TYPE agenthub_cluster_bus_events_lost_total counter\n"
            "agenthub_cluster_bus_events_lost_total %llu\n"
            "# TYPE agenthub_cluster_apply_gaps_total counter\n"
            "agenthub_cluster_apply_gaps_total %llu\n"
            "# HELP agenthub_cluster_appends_unstored_total Producer calls answered UNAVAILABLE "
            "because JetStream did not store their frames in time.\n"
            "# TYPE agenthub_cluster_appends_unstored_total counter\n"
            "agenthub_cluster_appends_unstored_total %llu\n",
            js->connected, js->caught_up, (unsigned long long)st.disconnects,
            (unsigned long long)st.publishes, (double)js->publish_ns_sum / 1e9,
            (unsigned long long)js->publish_acks, (double)js->publish_ns_max / 1e9,
            (unsigned long long)js->writer_changes, (unsigned long long)js->publish_retries,
            (unsigned long long)js->bus_lost, (unsigned long long)js->apply_gaps,
            (unsigned long long)js->waits_failed);
}

static const struct hub_log_ops js_ops = {
    .append = js_append,
    .read = hub_log_ring_read,
    .check = hub_log_ring_check,
    .mark = js_mark,
    .tail = hub_log_ring_tail,
    .span = hub_log_ring_span,
    .publish = js_publish,
    .open = js_open,
    .next = js_next,
    .subscribe = js_subscribe,
    .unsubscribe = js_unsubscribe,
    .epoch = js_epoch,
    .origin = js_origin,
    .runner_mark = js_runner_mark,
    .runner_reset = js_runner_reset,
    .track = js_track,
    .stored = js_stored,
    .wait = js_wait,
    .writable = js_writable,
    .write_metrics = js_write_metrics,
};

struct hub_log_js *hub_log_jetstream(struct hub_log *log, struct event_base *base,
                                     struct session_registry *reg, struct bus *bus,
                                     const struct hub_log_js_config *config, char *err,
                                     size_t errlen)
{
    static const struct js_link_events events = {
        .ready = on_ready,
        .frames = on_frames,
        .bus = on_bus,
        .ack = on_ack,
        .connection = on_connection,
    };
    struct js_link_config lc = {
        .urls = config->urls,
        .node_id = config->node_id,
        .replicas = config->replicas,
        .frames_max_bytes = config->frames_max_bytes,
        .bus_max_bytes = config->bus_max_bytes,
        .publish_wait_ms = config->publish_wait_ms,
    };
    struct hub_log_js *js = calloc(1, sizeof(*js));

    if (!js) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    js->base = base;
    js->reg = reg;
    js->bus = bus;
    if (getrandom(&js->batches, sizeof(js->batches), 0) != (ssize_t)sizeof(js->batches))
        js->batches = clock_monotonic_ns() ^ ((uint64_t)clock_unix_ms() << 20);
    js->batches &= ~(uint64_t)0 >> 1; /* room to count up */
    js->retry_timer = evtimer_new(base, on_retry, js);
    js->watch_timer = evtimer_new(base, on_watch, js);
    js->wait_timer = evtimer_new(base, hub_log_js_waits_timer, js);
    /* An ack that does not come in time fails the waits at once; this
     * bounds the other ways a batch can stall (sent again and again while
     * the link cannot publish, waiting for a silent consumer). */
    js->wait_ns = ((uint64_t)config->publish_wait_ms * 2 + 1000) * 1000000;
    js->marks = runner_marks_new();
    if (!js->retry_timer || !js->watch_timer || !js->wait_timer || !js->marks) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    js->link = js_link_new(base, &lc, &events, js, err, errlen);
    if (!js->link)
        goto fail;
    js->connected = js_link_connected(js->link);
    log->ops = &js_ops;
    log->impl = js;
    return js;
fail:
    if (js->retry_timer)
        event_free(js->retry_timer);
    if (js->watch_timer)
        event_free(js->watch_timer);
    if (js->wait_timer)
        event_free(js->wait_timer);
    runner_marks_free(js->marks);
    free(js);
    return NULL;
}

void hub_log_js_free(struct hub_log_js *js)
{
    if (!js)
        return;
    js_link_free(js->link);
    event_free(js->retry_timer);
    event_free(js->watch_timer);
    event_free(js->wait_timer);
    runner_marks_free(js->marks);
    for (size_t i = 0; i < TABLE_BUCKETS; i++) {
        struct js_session *e = js->table[i];
        while (e) {
            struct js_session *next = e->hnext;
            /* Their calls are gone (the server closes them first); a wait
             * left behind is only let go, never answered. */
            while (e->waits)
                hub_log_wait_cancel(e->waits);
            entries_free(e->out_head);
            entries_free(e->fly);
            free(e->fly_buf);
            free(e);
            e = next;
        }
    }
    free(js);
}

struct js_link *hub_log_js_link(const struct hub_log_js *js)
{
    return js->link;
}
