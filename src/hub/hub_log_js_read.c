/* hub_log_js_read: the node's copies of the JetStream streams.  The two
 * ordered consumers (js_link.h) deliver every frames batch and bus event;
 * they are applied to the same structures a single node uses (each
 * session's core ring, the core bus), and the bus is read from that copy
 * as the memory backend reads it.  The node is caught up once it has
 * applied every message that existed when it started. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/js_link.h"
#include "common/clock.h"
#include "common/log.h"
#include "hub/cluster_wire.h"
#include "hub/hub_log_js_internal.h"
#include "hub/hub_wire.h"
#include "hub/runner_marks.h"

static void check_caught_up(struct hub_log_js *js)
{
    if (!js->caught_up && js->got_ready && js->frames_applied >= js->frames_target &&
        js->bus_applied >= js->bus_target) {
        js->caught_up = 1;
        log_info("cluster: caught up with JetStream (frames %" PRIu64 ", bus %" PRIu64 ")",
                 js->frames_applied, js->bus_applied);
        hub_log_js_state_changed(js);
    }
}

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

void hub_log_js_on_frames(void *arg, const struct js_link_msg *m)
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
    e = hub_log_js_session_get(js, m->subject, is_session ? id : "", 1);
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
    if (e) {
        int moved = m->stream_seq > e->last_stream_seq;

        if (moved)
            e->last_stream_seq = m->stream_seq;
        /* First whether M settles the batch in flight: a refused batch
         * is renumbered after another node's message, not sent again
         * after its old predecessor. */
        hub_log_js_fly_check(js, e, m);
        if (moved && e->retry && !e->in_flight) {
            e->retry = 0;
            hub_log_js_pump(js, e);
        }
    }
    check_caught_up(js);
}

void hub_log_js_on_bus(void *arg, const struct js_link_msg *m)
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

void hub_log_js_on_ready(void *arg, uint64_t epoch, uint64_t frames_last, uint64_t bus_last)
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

enum bus_status hub_log_js_bus_open(void *impl, uint64_t since_seq, uint64_t epoch,
                                    uint64_t *cursor)
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

enum bus_status hub_log_js_bus_next(void *impl, uint64_t cursor, struct bus_event *out)
{
    struct hub_log_js *js = impl;

    return bus_next(js->bus, cursor, out);
}

void hub_log_js_bus_subscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_watch(js->bus, w);
}

void hub_log_js_bus_unsubscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_unwatch(js->bus, w);
}

uint64_t hub_log_js_epoch(void *impl)
{
    struct hub_log_js *js = impl;

    return js->epoch;
}
