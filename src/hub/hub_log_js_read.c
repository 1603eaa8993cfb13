/* hub_log_js_read: the node's copies of the JetStream streams.  The two
 * ordered consumers (js_link.h) deliver every frames batch and bus event;
 * they are applied to the same structures a single node uses (each
 * session's core ring, the core bus), and the bus is read from that copy
 * as the memory backend reads it.  The node is caught up once it has
 * applied every message that existed when it started. */
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/js_link.h"
#include "core/keyset.h"
#include "common/clock.h"
#include "common/failpoint.h"
#include "common/log.h"
#include "hub/cluster_wire.h"
#include "hub/hub_log_js_internal.h"
#include "hub/hub_wire.h"
#include "hub/runner_marks.h"

void hub_log_js_check_caught_up(struct hub_log_js *js)
{
    if (!js->caught_up && js->got_ready && js->frames_applied >= js->frames_target &&
        js->bus_applied >= js->bus_target && (!js->on_demand || js->runners_caught)) {
        js->caught_up = 1;
        log_info("cluster: caught up with JetStream (frames %" PRIu64 ", bus %" PRIu64 ")",
                 js->frames_applied, js->bus_applied);
        hub_log_js_state_changed(js);
    }
}

/* --- what a copy takes: each origin's entries once ------------------------ */

struct keyset_fp hub_log_js_key_fp(const uint8_t *key, size_t len)
{
    return keyset_fingerprint("k", 1, key, len);
}

static struct js_key_seen *key_find(const struct js_session *e, struct keyset_fp fp)
{
    if (!e->keys)
        return NULL;
    for (uint32_t i = 0; i < KEYS_KEPT; i++)
        if (e->keys[i].fp.a == fp.a && e->keys[i].fp.b == fp.b)
            return &e->keys[i];
    return NULL;
}

int hub_log_js_key_recall(const struct js_session *e, struct keyset_fp fp, uint64_t *first_seq,
                          uint64_t *last_seq)
{
    const struct js_key_seen *k = key_find(e, fp);

    if (!k)
        return 0;
    *first_seq = k->first_seq;
    *last_seq = k->last_seq;
    return 1;
}

static struct js_origin_seen *origin_find(struct js_session *e, const struct cluster_wire_origin *o,
                                          int create)
{
    struct js_origin_seen *victim = NULL;

    for (unsigned i = 0; i < ORIGINS_KEPT; i++) {
        struct js_origin_seen *r = &e->origins[i];
        if (r->in_use && r->nonce == o->nonce && r->id_len == o->id_len &&
            memcmp(r->id, o->id, o->id_len) == 0)
            return r;
        if (!victim || !r->in_use || (victim->in_use && r->used < victim->used))
            victim = r;
    }
    if (!create)
        return NULL;
    memset(victim, 0, sizeof(*victim));
    victim->in_use = 1;
    victim->nonce = o->nonce;
    victim->id_len = (uint8_t)o->id_len;
    memcpy(victim->id, o->id, o->id_len);
    return victim;
}

/* A Runner's entries of one run reach a session in runner_seq order (the
 * Runner sends in order, and one batch per session is in flight), so an
 * entry at or below the newest taken is a copy: a frame sent again after a
 * move, or a batch a stale writer stored after another's.  A keyed call's
 * records likewise: parts at or below the highest taken are a retry. */
int hub_log_js_origin_admit(struct js_session *e, const struct cluster_wire_origin *o,
                            uint64_t runner_seq, int take, uint64_t seq)
{
    if (o->kind == CLUSTER_ORIGIN_RUNNER) {
        struct js_origin_seen *r = origin_find(e, o, take);
        if (r && (runner_seq < r->runner_seq ||
                  (runner_seq == r->runner_seq && o->part <= r->part && r->used)))
            return 0;
        if (take && r) {
            r->runner_seq = runner_seq;
            r->part = o->part;
            r->used = ++e->origins_used;
        }
        return 1;
    }
    if (o->kind == CLUSTER_ORIGIN_KEY) {
        struct keyset_fp fp = hub_log_js_key_fp(o->id, o->id_len);
        struct js_key_seen *k = key_find(e, fp);
        uint32_t part = o->part & ~CLUSTER_PART_DERIVED;
        if (k && part <= k->part)
            return 0;
        if (!take)
            return 1;
        if (!k) {
            if (!e->keys && !(e->keys = calloc(KEYS_KEPT, sizeof(*e->keys))))
                return 1; /* not remembered: a retry would be taken again */
            k = &e->keys[e->keys_next];
            e->keys_next = (e->keys_next + 1) % KEYS_KEPT;
            k->fp = fp;
            k->first_seq = seq;
        }
        k->part = part;
        if (!(o->part & CLUSTER_PART_DERIVED))
            k->last_seq = seq;
        return 1;
    }
    return 1;
}

/* 1 when message BATCH (its Agenthub-Batch) was applied to E already: the
 * same batch stored twice.  Else remembers it and returns 0. */
static int batch_seen(struct js_session *e, uint64_t batch)
{
    if (batch == 0)
        return 0;
    for (unsigned i = 0; i < BATCHES_KEPT; i++)
        if (e->batches_seen[i] == batch)
            return 1;
    e->batches_seen[e->batches_next] = batch;
    e->batches_next = (e->batches_next + 1) % BATCHES_KEPT;
    return 0;
}

/* --- applying a batch -------------------------------------------------------- */

/* The node's copy of session ID, opened again when it ended.  NULL when it
 * cannot be opened. */
static struct session *copy_of(struct hub_log_js *js, const char *id)
{
    size_t n = strlen(id);
    struct session *s = session_lookup(js->reg, id, n);

    if (!s || session_is_ended(s)) {
        if (session_open(js->reg, id, n, &s) < 0)
            return NULL;
    }
    return s;
}

/* Applies a mark entry to the node's copy of session ID. */
static void apply_mark(struct hub_log_js *js, const char *id, uint8_t kind)
{
    struct session *s = session_lookup(js->reg, id, strlen(id));

    if (kind == HUB_LOG_END) {
        if (s && !session_is_ended(s))
            session_end(s);
        return;
    }
    if (!(s = copy_of(js, id)))
        return;
    if (kind == HUB_LOG_TAIL_END)
        session_tail_end(s);
    else if (kind == HUB_LOG_TAIL_RESUME)
        session_tail_resume(s);
}

/* Appends frame SEQ to the node's copy of session ID.  The copy's ring
 * follows the subject's numbering: a seq past its newest + 1 (older frames
 * gone from the stream, or never read here) leaves readers behind
 * OUT_OF_RANGE, never a silent skip. */
static void apply_frame(struct hub_log_js *js, const char *id, uint64_t seq, const uint8_t *data,
                        size_t len, int64_t at, int from_self)
{
    struct session *s = copy_of(js, id);
    uint64_t newest;

    if (!s)
        return;
    newest = ring_newest_seq(session_ring(s));
    if (seq <= newest)
        return;
    if (seq > newest + 1) {
        if (newest > 0) {
            js->apply_gaps++;
            log_warn("cluster: session %s: seq %" PRIu64 " follows %" PRIu64
                     " in this copy: readers behind get OUT_OF_RANGE",
                     id, seq, newest);
        }
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

/* What the log says of a Runner through entry W of its subject: new runs,
 * and runner_seq values dealt with.  A Runner's frames in sessions'
 * subjects are not counted: their writer says they are dealt with, on the
 * Runner's subject, once they are stored (hub_log_js_write.c), so the mark
 * is read from the Runner's subject alone and never runs ahead of the
 * store. */
static void note_runner(struct hub_log_js *js, const struct cluster_wire_entry *w)
{
    if (w->kind == CLUSTER_ENTRY_RUNNER_RESET && w->origin_len)
        runner_marks_reset(js->marks, (const char *)w->origin, w->origin_len, w->runner_seq);
    else if (w->kind == CLUSTER_ENTRY_RUNNER_DEALT && w->origin_len && w->frame_len == 16) {
        uint64_t nonce = 0, last = 0;
        for (int i = 7; i >= 0; i--) {
            nonce = nonce << 8 | w->frame[i];
            last = last << 8 | w->frame[8 + i];
        }
        runner_marks_dealt(js->marks, (const char *)w->origin, w->origin_len, nonce, w->runner_seq,
                           last);
    }
}

/* Readers number a subject's frames themselves, in stream order, and take
 * each origin's entries once (hub_log_js_origin_admit): so every node's
 * copy holds the same frames under the same seqs whatever the writers did,
 * and a frame sent twice is stored at most once.  A batch's Agenthub-Seq
 * is its writer's view and only places the first message a copy reads (a
 * node that started after older messages were evicted) or a jump over
 * messages this copy never got. */
/* --- tests: a consumer held back -------------------------------------------- */

struct js_held {
    struct js_held *next;
    struct js_link_msg m;
    char *subject, *seq, *at, *batch, *node;
    uint8_t data[];
};

static char *held_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void held_free(struct js_held *h)
{
    free(h->subject);
    free(h->seq);
    free(h->at);
    free(h->batch);
    free(h->node);
    free(h);
}

static void apply_frames(struct hub_log_js *js, const struct js_link_msg *m);
static void apply_batch(struct hub_log_js *js, const struct js_link_msg *m);

/* Each consumer's failpoint, by its held queue. */
static const char *const hold_names[2] = {"cluster.hold_frames", "cluster.hold_bus"};

void hub_log_js_on_hold(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    int held = 0;

    for (int q = 0; q < 2; q++) {
        if (failpoint_active(hold_names[q])) {
            held |= js->held_head[q] != NULL;
            continue;
        }
        while (js->held_head[q]) {
            struct js_held *h = js->held_head[q];
            js->held_head[q] = h->next;
            if (!js->held_head[q])
                js->held_tail[q] = NULL;
            if (q == 0)
                apply_frames(js, &h->m);
            else
                hub_log_js_bus_apply(js, &h->m);
            held_free(h);
        }
    }
    if (held)
        event_add(js->hold_timer, &(struct timeval){0, 10 * 1000});
}

/* Holds M back on queue Q while its failpoint is set (or older messages
 * are held).  Returns 1 when it did. */
static int hold(struct hub_log_js *js, int q, const struct js_link_msg *m)
{
    struct js_held *h;

    if (!js->held_head[q] && !failpoint_active(hold_names[q]))
        return 0;
    h = calloc(1, sizeof(*h) + m->len);
    if (!h)
        return 0;
    h->m = *m;
    h->m.subject = h->subject = held_str(m->subject);
    h->m.seq_header = h->seq = held_str(m->seq_header);
    h->m.at_header = h->at = held_str(m->at_header);
    h->m.batch_header = h->batch = held_str(m->batch_header);
    h->m.node_header = h->node = held_str(m->node_header);
    memcpy(h->data, m->data, m->len);
    h->m.data = h->data;
    if (js->held_tail[q])
        js->held_tail[q]->next = h;
    else
        js->held_head[q] = h;
    js->held_tail[q] = h;
    if (js->hold_timer && !evtimer_pending(js->hold_timer, NULL))
        event_add(js->hold_timer, &(struct timeval){0, 10 * 1000});
    return 1;
}

void hub_log_js_held_free(struct hub_log_js *js)
{
    for (int q = 0; q < 2; q++) {
        while (js->held_head[q]) {
            struct js_held *h = js->held_head[q];
            js->held_head[q] = h->next;
            held_free(h);
        }
        js->held_tail[q] = NULL;
    }
}

void hub_log_js_on_frames(void *arg, const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;

    if (!hold(js, 0, m))
        apply_frames(js, m);
}

/* Tests (failpoint cluster.deaf_consumer): the consumer reading M's
 * session now delivers nothing from here on, as one that died without a
 * word; a consumer made anew for the session delivers again. */
static int deaf(struct hub_log_js *js, const struct js_link_msg *m)
{
    struct js_session *e;

    if (!js->on_demand || !(e = hub_log_js_session_get(js, m->subject, NULL, 0)) || !e->watch_id)
        return 0;
    if (failpoint_active("cluster.deaf_consumer"))
        e->deaf_watch = e->watch_id;
    return e->deaf_watch == e->watch_id;
}

static void apply_frames(struct hub_log_js *js, const struct js_link_msg *m)
{
    if (deaf(js, m))
        return;
    if (m->subject[sizeof(CLUSTER_FRAMES_PREFIX) - 1] != '=') {
        js->frames_messages++; /* a session's: what reading on demand saves */
        js->frames_bytes += m->len;
    }
    if (m->stream_seq > js->frames_applied)
        js->frames_applied = m->stream_seq;
    apply_batch(js, m);
    hub_log_js_check_caught_up(js);
}

void hub_log_js_apply_head(struct hub_log_js *js, const struct js_link_msg *m)
{
    apply_batch(js, m);
}

static void apply_batch(struct hub_log_js *js, const struct js_link_msg *m)
{
    char id[SESSION_MAX_ID + 1];
    struct cluster_wire_entry w;
    struct js_session *e;
    struct js_entry *mine = NULL;
    uint64_t header, seq, batch;
    size_t off = 0;
    int is_session, own, copy;

    if (!m->seq_header)
        return;
    is_session = cluster_wire_session_id(m->subject, id) == 0;
    e = hub_log_js_session_get(js, m->subject, is_session ? id : "", 1);
    if (!e || m->stream_seq <= e->last_stream_seq)
        return; /* delivered again (a consumer made again) */
    header = strtoull(m->seq_header, NULL, 10);
    batch = m->batch_header ? strtoull(m->batch_header, NULL, 10) : 0;
    own = m->from_self && e->fly && batch == e->fly_nonce;
    copy = batch_seen(e, batch);
    if (e->last_stream_seq == 0 || header > e->last_seq + 1) {
        if (e->last_stream_seq != 0)
            log_warn("cluster: %s: stream seq %" PRIu64 " starts at seq %" PRIu64 " after %" PRIu64
                     " (stream seq %" PRIu64 "): frames between were "
                     "not read here",
                     m->subject, m->stream_seq, header, e->last_seq, e->last_stream_seq);
        seq = header ? header - 1 : 0;
    } else {
        seq = e->last_seq;
        if (header != seq + 1)
            js->renumbered++;
    }
    if (own)
        mine = e->fly;
    /* A malformed rest (rv -1) is dropped; the entries before it stand. */
    while (cluster_wire_next(m->data, m->len, &off, &w) == 1) {
        struct cluster_wire_origin o = {0};
        uint64_t first = 0, last = 0;
        int take = !copy;

        if (w.kind == CLUSTER_ENTRY_TAGGED)
            cluster_wire_origin_parse(w.origin, w.origin_len, &o);
        if (!is_session)
            note_runner(js, &w);
        if (take && o.kind != CLUSTER_ORIGIN_NONE)
            take = hub_log_js_origin_admit(e, &o, w.runner_seq, 1, seq + 1);
        if (!take)
            js->copies_dropped++;
        if (w.kind == CLUSTER_ENTRY_FRAME || w.kind == CLUSTER_ENTRY_TAGGED) {
            if (take) {
                first = last = ++seq;
                if (is_session)
                    apply_frame(js, id, seq, w.frame, w.frame_len, w.at_unix_ms, m->from_self);
            } else if (o.kind == CLUSTER_ORIGIN_KEY) {
                hub_log_js_key_recall(e, hub_log_js_key_fp(o.id, o.id_len), &first, &last);
            }
        } else if (entry_counts(w.kind)) {
            seq++;
        } else if (take && is_session) {
            apply_mark(js, id, w.kind);
        }
        if (mine) {
            if (!list_is_empty(&e->waits))
                hub_log_js_waits_number(e, mine->ord, first, last);
            mine = mine->next;
        }
    }
    if (seq > e->last_seq || e->last_stream_seq == 0)
        e->last_seq = seq;
    e->last_stream_seq = m->stream_seq;
    if (own)
        hub_log_js_fly_done(js, e);
    else
        hub_log_js_fly_check(js, e, m);
    if (e->retry && !e->in_flight) {
        e->retry = 0;
        hub_log_js_pump(js, e);
    }
    hub_log_js_demand_applied(js, e, m->stream_seq);
}

void hub_log_js_on_bus(void *arg, const struct js_link_msg *m)
{
    struct hub_log_js *js = arg;

    if (!hold(js, 1, m))
        hub_log_js_bus_apply(js, m);
}

void hub_log_js_on_ready(void *arg, uint64_t epoch, uint64_t frames_last, uint64_t bus_last)
{
    struct hub_log_js *js = arg;

    js->epoch = epoch;
    js->bus->epoch = epoch;
    js->frames_target = frames_last;
    js->bus_target = bus_last;
    js->got_ready = 1;
    log_info("cluster: JetStream streams ready (epoch %" PRIu64 "); replaying frames up to %" PRIu64
             ", bus up to %" PRIu64,
             epoch, frames_last, bus_last);
    js->catchup_applied = 0;
    hub_log_js_demand_ready(js);
    hub_log_js_watch_later(js);
    hub_log_js_check_caught_up(js);
}

uint64_t hub_log_js_epoch(void *impl)
{
    struct hub_log_js *js = impl;

    return js->epoch;
}
