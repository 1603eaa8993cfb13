/* CompassService's streams: SubscribeAgentSession (a session's pane) and
 * SubscribeEvents (the bus).
 *
 * A subscriber is a cursor, not a queue: the data provider pulls frames at
 * the cursor when HTTP/2 wants bytes and defers when caught up.  Appends only
 * wake subscribers; the broadcast path never waits on one.  A subscriber that
 * falls behind the ring (or past --subscriber-buffer-bytes) ends cleanly with
 * OK and the last delivered seq in the agenthub-last-seq trailer.
 *
 * A pane ends with its agent: once the session's tail is over (its agent
 * stopped or errored, or the session was closed) and the pane has delivered
 * the last frame, it ends OK with the same trailer.  A pane opened on an
 * ended session whose log is retained replays it and ends the same way; a
 * resumed agent starts a new tail, which panes opened before it do not
 * follow.
 *
 * Both are guarded (stream_guard.h): when the ownership store changes, an
 * open stream whose token was revoked ends UNAUTHENTICATED, and a pane
 * whose caller may no longer view its session ends with the very NOT_FOUND
 * a fresh SubscribeAgentSession gets, so it reveals nothing more. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "common/clock.h"
#include "common/container_of.h"
#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc.h"
#include "rpc/rpc.h"
#include "hub/hub_session.h"
#include "hub/hub_snapshot.h"
#include "hub/hub_wire.h"
#include "hub/stream_guard.h"
#include "store/gate.h"
#include "store/store.h"

/* Pull at most this much per data-provider round: enough to fill frames,
 * small enough that a lag drop loses little already-queued output. */
#define PULL_CHUNK_BYTES (64 * 1024)

struct pane_subscriber {
    struct watcher watcher;
    struct grpc_call *call;
    struct hub *ctx;
    size_t buffer_bytes;     /* --subscriber-buffer-bytes */
    struct session *session; /* NULL once detached */
    uint64_t cursor;         /* seq of the last frame queued to the call, or skipped */
    uint64_t tail_start;     /* the session's tail when the pane began */
    int agenthub_events;     /* the request's: agenthub's own events too */
    struct store_subject subject;
    struct stream_guard guard;
    char session_id[STORE_ID_MAX];
    /* Until the node's copy of the session is current (hub_log_prepare):
     * the request's start and what the store said of the session. */
    struct hub_log_wait ready;
    uint64_t since_seq, tail;
    int closed;
    char runner_id[STORE_ID_MAX];
};

static void pane_detach(struct pane_subscriber *sub)
{
    stream_guard_remove(sub->ctx->guards, &sub->guard);
    if (sub->session) {
        hub_pane_detach(sub->ctx, sub->session, &sub->watcher);
        sub->session = NULL;
    }
}

/* Ends the stream cleanly, telling the client where to resume. */
static void pane_finish(struct pane_subscriber *sub, int lagged)
{
    char last[24];

    snprintf(last, sizeof(last), "%" PRIu64, sub->cursor);
    grpc_call_add_trailer(sub->call, "agenthub-last-seq", (const uint8_t *)last, strlen(last));
    if (lagged)
        hub_pane_lagged(sub->ctx);
    pane_detach(sub);
    grpc_call_finish(sub->call, GRPC_STATUS_OK, NULL);
}

/* Bytes of ring between the cursor and the newest frame of SPAN, estimated
 * from the ring's mean entry size (the ring keeps no per-entry prefix
 * sums). */
static size_t pane_backlog_bytes(const struct pane_subscriber *sub, const struct hub_log_span *span)
{
    uint64_t behind = span->readable > sub->cursor ? span->readable - sub->cursor : 0;

    if (behind == 0 || span->count == 0)
        return 0;
    return (size_t)(behind * (span->bytes / span->count));
}

/* 1 when SUB has delivered the last frame of the tail it follows: the
 * session's tail is over and SUB is caught up, or a new tail began and SUB
 * delivered everything before it. */
static int pane_tail_done(const struct pane_subscriber *sub)
{
    struct session *s = sub->session;
    uint64_t start = session_tail_start(s);

    if (sub->tail_start != start)
        return sub->cursor + 1 >= start;
    struct hub_log_span span;

    if (!session_tail_over(s))
        return 0;
    hub_log_span(&sub->ctx->log, s, &span);
    return sub->cursor >= span.newest;
}

/* 1 when SUB was dropped for lag (and finished).  A subscriber only the
 * newest frame behind is caught up, however large that frame: otherwise one
 * frame over --subscriber-buffer-bytes would end every live subscriber. */
static int pane_check_lag(struct pane_subscriber *sub)
{
    struct hub_log_span span;

    hub_log_span(&sub->ctx->log, sub->session, &span);
    /* Frames still being stored are not behind it yet: only what it could
     * read now counts. */
    if ((span.oldest > 0 && sub->cursor + 1 < span.oldest) ||
        (span.readable > sub->cursor + 1 && pane_backlog_bytes(sub, &span) > sub->buffer_bytes)) {
        pane_finish(sub, 1);
        return 1;
    }
    return 0;
}

static void pane_pump(struct pane_subscriber *sub)
{
    struct ring_entry entry;
    uint8_t prefix[HUB_PREFIX_MAX];

    while (sub->session && grpc_call_pending_bytes(sub->call) < PULL_CHUNK_BYTES) {
        enum ring_status status;
        if (pane_tail_done(sub)) {
            pane_finish(sub, 0);
            return;
        }
        status = hub_log_read(&sub->ctx->log, sub->session, sub->cursor, &entry);
        if (status == RING_EVICTED) {
            pane_finish(sub, 1);
            return;
        }
        if (status == RING_NONE)
            return;
        /* A compass reader would decode agenthub's own events as empty
         * frames: it is not sent them (docs/protocol.md, "What a compass reader receives"). */
        if (!sub->agenthub_events && hub_frame_agenthub_only(entry.data, entry.len)) {
            sub->cursor = entry.seq;
            continue;
        }
        size_t n = hub_pane_prefix(prefix, entry.seq, entry.at_unix_ms);
        if (grpc_call_send_encoded(sub->call, prefix, n, entry.data, entry.len) != 0)
            return;
        sub->cursor = entry.seq;
    }
}

static void pane_wake(struct watcher *watcher)
{
    struct pane_subscriber *sub = container_of(watcher, struct pane_subscriber, watcher);

    /* The log went unreachable (a cluster node cut off from JetStream):
     * the pane ends where it is, so its client resumes on another node.
     * A single node's disk that refuses commits leaves its readers be. */
    if (!hub_log_writable(&sub->ctx->log) && !sub->ctx->config.log_on_disk) {
        pane_finish(sub, 0);
        return;
    }

    if (pane_check_lag(sub))
        return;
    if (grpc_call_pending_bytes(sub->call) == 0 && pane_tail_done(sub)) {
        pane_finish(sub, 0);
        return;
    }
    grpc_call_want_writable(sub->call);
}

static void pane_on_writable(struct grpc_call *call)
{
    struct pane_subscriber *sub = grpc_call_user(call);

    if (sub)
        pane_pump(sub);
}

/* The store changed: may the caller still view the session? */
static void pane_recheck(struct stream_guard *guard)
{
    struct pane_subscriber *sub = container_of(guard, struct pane_subscriber, guard);
    const struct gate_refusal *refusal;
    int rv;

    if (grpc_call_finished(sub->call))
        return;
    if (stream_guard_reauthenticate(sub->ctx->guards, rpc_stream(sub->call), &sub->subject) != 0) {
        pane_detach(sub);
        return;
    }
    rv = gate_may_view(sub->ctx->store, &sub->subject, sub->session_id, NULL);
    refusal = gate_refusal(rv);
    if (!refusal)
        return;
    pane_detach(sub);
    stream_guard_end(sub->ctx->guards, rpc_stream(sub->call), refusal->status, refusal->message);
}

/* A pane of a closed session no log is retained of: nothing to replay, so
 * it ends at once, OK, at the point the client asked to resume from. */
static void pane_end_unretained(struct grpc_call *call, uint64_t since_seq)
{
    char last[24];

    snprintf(last, sizeof(last), "%" PRIu64, since_seq);
    grpc_call_add_trailer(call, "agenthub-last-seq", (const uint8_t *)last, strlen(last));
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* The node's copy of the pane's session is current (OK), or cannot be
 * made so now: the pane starts where the request asked, or the call ends
 * UNAVAILABLE so the client retries (perhaps on another node). */
static void pane_ready(struct hub_log_wait *w, int ok)
{
    struct pane_subscriber *sub = container_of(w, struct pane_subscriber, ready);
    struct grpc_call *call = sub->call;
    struct hub *ctx = sub->ctx;
    struct session *s;

    if (!ok) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    }
    /* Looked up again: the session may have ended meanwhile. */
    switch (hub_session_for_pane(ctx, sub->session_id, sub->closed, sub->runner_id, &s)) {
    case HUB_PANE_OPEN:
        break;
    case HUB_PANE_UNRETAINED:
        pane_end_unretained(call, sub->since_seq);
        return;
    case HUB_PANE_NOMEM:
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (sub->since_seq > 0) {
        if (hub_log_check(&ctx->log, s, sub->since_seq) != RING_OK) {
            grpc_call_finish(call, GRPC_STATUS_OUT_OF_RANGE,
                             "since_seq is not in the session's retained log");
            return;
        }
        sub->cursor = sub->since_seq;
    } else {
        sub->cursor = hub_log_tail(&ctx->log, s, sub->tail);
    }
    sub->tail_start = session_tail_start(s);
    sub->session = s;
    hub_pane_attach(ctx, s, &sub->watcher);
    stream_guard_add(ctx->guards, &sub->guard);
    /* Response headers go out now, so the client knows it is subscribed. */
    grpc_call_add_initial_metadata(call, "agenthub-session", (const uint8_t *)session_id(s),
                                   strlen(session_id(s)));
    grpc_call_start_response(call);
    pane_pump(sub);
}

static void pane_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__SubscribeAgentSessionRequest *request =
        (const Compass__V1__SubscribeAgentSessionRequest *)message;
    struct hub *ctx = rpc_hub(call);
    struct store_subject subject;
    struct store_session row;
    struct pane_subscriber *sub;
    struct session *s;
    int rv;

    if (!rpc_config(call)->has_runner_door) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "this server has no Runner door");
        return;
    }
    if (rpc_authenticate(call, &subject) != 0)
        return;
    if (!hub_log_writable(&ctx->log) && !ctx->config.log_on_disk) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    }
    rv = gate_may_view(ctx->store, &subject, request->session_id, &row);
    if (rv != GATE_ALLOWED) {
        rpc_finish_gate_refusal(call, rv);
        return;
    }
    switch (hub_session_for_pane(ctx, request->session_id, row.closed, row.runner_id, &s)) {
    case HUB_PANE_OPEN:
        break;
    case HUB_PANE_UNRETAINED:
        pane_end_unretained(call, request->since_seq);
        return;
    case HUB_PANE_NOMEM:
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sub = calloc(1, sizeof(*sub));
    if (!sub) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sub->call = call;
    sub->ctx = ctx;
    sub->buffer_bytes = rpc_config(call)->subscriber_buffer_bytes;
    sub->agenthub_events = request->agenthub_events;
    sub->watcher.wake = pane_wake;
    sub->subject = subject;
    sub->guard.recheck = pane_recheck;
    snprintf(sub->session_id, sizeof(sub->session_id), "%s", row.session_id);
    snprintf(sub->runner_id, sizeof(sub->runner_id), "%s", row.runner_id);
    sub->closed = row.closed;
    sub->since_seq = request->since_seq;
    sub->tail = request->tail;
    sub->ready.done = pane_ready;
    grpc_call_set_user(call, sub);
    /* A cluster node reading sessions on demand first makes its copy
     * current; every other log answers at once. */
    hub_log_prepare(&ctx->log, s, &sub->ready);
}

static void pane_on_close(struct grpc_call *call)
{
    struct pane_subscriber *sub = grpc_call_user(call);

    if (!sub)
        return;
    hub_log_wait_cancel(&sub->ready);
    pane_detach(sub);
    free(sub);
}

static const struct grpc_method subscribe_agent_session_method = {
    .path = "/compass.v1.CompassService/SubscribeAgentSession",
    .kind = GRPC_METHOD_SERVER_STREAMING,
    .request_type = &compass__v1__subscribe_agent_session_request__descriptor,
    .response_type = &compass__v1__agent_session_frame__descriptor,
    .on_message = pane_on_message,
    .on_writable = pane_on_writable,
    .on_close = pane_on_close,
    .needs_caller = 1,
    .door_flags = RPC_NEEDS_RUNNER_DOOR,
};

/* --- SubscribeEvents ----------------------------------------------------- */

/* A since_seq = 0 subscriber is first told the snapshot (hub_snapshot.h):
 * ServerStatus, then each session's latest status it may view, each with
 * the seq and time of the bus event that said it, ascending; then the live
 * tail after the seq the snapshot stands at.  Every event sent is thus one
 * the bus holds at that seq, and a client resuming after any of them with
 * since_seq hears every later one (or resync_required): no gap when the
 * stream breaks inside the snapshot, and nothing told twice. */
struct events_subscriber {
    struct watcher watcher;
    struct grpc_call *call;
    struct hub *ctx;
    struct store_subject subject;
    struct stream_guard guard;
    uint64_t cursor;
    uint64_t *snap; /* the snapshot's seqs still to send (snap_i on) */
    size_t snap_n, snap_i;
    int status_due; /* ServerStatus is still to be sent, at seq status_seq */
    uint64_t status_seq;
    int told_ready; /* what the last ServerStatus said (or would have) */
    /* Pending while this node's copy of the bus has not read up to the
     * cursor (a cluster node resuming a client that came from a node
     * ahead of it): the events exist and come, but not forever. */
    struct event *catch_up;
    int attached;
    int agenthub_payloads; /* the request's: agenthub's own events too */
};

/* How long a subscriber waits for this node's copy of the bus to reach
 * its since_seq before it is told to retry (elsewhere, or later). */
#define EVENTS_CATCH_UP_MS    10000
#define EVENTS_BEHIND_MESSAGE "this node has not read the bus up to since_seq yet; retry"

static void events_detach(struct events_subscriber *sub)
{
    stream_guard_remove(sub->ctx->guards, &sub->guard);
    if (sub->attached) {
        hub_log_unsubscribe(&sub->ctx->log, &sub->watcher);
        sub->attached = 0;
        hub_bus_subscriber(sub->ctx, 0);
    }
}

/* Sends resync_required (seq 0) and ends the stream cleanly. */
static void events_resync(struct grpc_call *call, struct hub *ctx)
{
    Compass__V1__SubscribeEventsResponse response = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__ResyncRequired resync = COMPASS__V1__RESYNC_REQUIRED__INIT;

    response.instance_epoch = hub_log_epoch(&ctx->log);
    response.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_RESYNC_REQUIRED;
    response.resync_required = &resync;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* 1 when the subscriber may see EVENT, 0 when not, -1 on a store fault.
 * An event whose payload is agenthub's own goes only to a subscriber that
 * asked for those: a compass reader would see an event with no payload and
 * no session (docs/protocol.md, "What a compass reader receives"). */
static int events_visible(struct events_subscriber *sub, const struct bus_event *event)
{
    char sid[STORE_ID_MAX];
    const char *id;
    size_t len;
    int rv;

    if (!sub->agenthub_payloads && hub_event_agenthub_only(event->payload, event->len))
        return 0;
    if (sub->subject.is_admin)
        return 1;
    if (hub_event_session_id(event->payload, event->len, &id, &len) != 0 || len == 0 ||
        len >= sizeof(sid))
        return 0;
    memcpy(sid, id, len);
    sid[len] = '\0';
    rv = gate_may_view(sub->ctx->store, &sub->subject, sid, NULL);
    return rv == GATE_ALLOWED ? 1 : rv == GATE_FAULT ? -1 : 0;
}

/* Sends EVENT when SUB may see it.  Returns 0, or -1 when the stream
 * ended (a store fault, or the call could not send). */
static int events_send(struct events_subscriber *sub, const struct bus_event *event)
{
    uint8_t prefix[HUB_PREFIX_MAX];
    int visible = events_visible(sub, event);
    size_t n;

    if (visible < 0) {
        events_detach(sub);
        grpc_call_finish(sub->call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return -1;
    }
    if (!visible)
        return 0;
    n = hub_event_prefix(prefix, event->seq, event->at_unix_ms, hub_log_epoch(&sub->ctx->log));
    return grpc_call_send_encoded(sub->call, prefix, n, event->payload, event->len) != 0 ? -1 : 0;
}

/* Is this server serving the bus now?  READY while its log takes events;
 * a cluster node cut off from JetStream (or a disk log that cannot write)
 * publishes nothing until it can again, and says so. */
static int events_serving(const struct events_subscriber *sub)
{
    return hub_log_writable(&sub->ctx->log);
}

static int send_server_status(struct events_subscriber *sub, uint64_t seq)
{
    Compass__V1__SubscribeEventsResponse response = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__ServerStatus status = COMPASS__V1__SERVER_STATUS__INIT;

    status.state = sub->told_ready ? COMPASS__V1__SERVER_STATE__SERVER_STATE_READY
                                   : COMPASS__V1__SERVER_STATE__SERVER_STATE_UNSPECIFIED;
    response.seq = seq;
    response.at_unix_ms = clock_unix_ms();
    response.instance_epoch = hub_log_epoch(&sub->ctx->log);
    response.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_SERVER_STATUS;
    response.server_status = &status;
    return grpc_call_send(sub->call, &response.base) != 0 ? -1 : 0;
}

/* The snapshot's next part, ServerStatus first.  Returns 1 while there is
 * more of it, 0 when it is all sent, -1 when the stream ended. */
static int snapshot_pump(struct events_subscriber *sub)
{
    struct bus_event event;

    if (sub->status_due) {
        sub->status_due = 0;
        return send_server_status(sub, sub->status_seq) != 0 ? -1 : 1;
    }
    while (sub->snap_i < sub->snap_n) {
        uint64_t seq = sub->snap[sub->snap_i++];
        /* A session whose status changed since has it in the tail. */
        if (hub_snapshot_get(sub->ctx->snapshot, seq, &event) != 0)
            continue;
        return events_send(sub, &event) != 0 ? -1 : 1;
    }
    free(sub->snap);
    sub->snap = NULL;
    sub->snap_n = sub->snap_i = 0;
    return 0;
}

static void events_pump(struct events_subscriber *sub)
{
    struct bus_event event;

    if (sub->catch_up && hub_log_bus_newest(&sub->ctx->log) >= sub->cursor)
        event_del(sub->catch_up);
    while (sub->attached && grpc_call_pending_bytes(sub->call) < PULL_CHUNK_BYTES) {
        if (sub->status_due || sub->snap) {
            if (snapshot_pump(sub) < 0)
                return;
            continue;
        }
        if (events_serving(sub) != sub->told_ready) {
            /* A change is no bus event: seq 0, as compass gives the
             * signals that are not a position (a client keeps its cursor). */
            sub->told_ready = !sub->told_ready;
            if (send_server_status(sub, 0) != 0)
                return;
            continue;
        }
        enum bus_status status = hub_log_next(&sub->ctx->log, sub->cursor, &event);
        if (status == BUS_NONE)
            return;
        if (status == BUS_RESYNC) {
            events_detach(sub);
            events_resync(sub->call, sub->ctx);
            return;
        }
        sub->cursor = event.seq;
        if (events_send(sub, &event) != 0)
            return;
    }
}

static void events_wake(struct watcher *watcher)
{
    struct events_subscriber *sub = container_of(watcher, struct events_subscriber, watcher);

    grpc_call_want_writable(sub->call);
}

static void events_on_writable(struct grpc_call *call)
{
    struct events_subscriber *sub = grpc_call_user(call);

    if (sub)
        events_pump(sub);
}

/* The store changed: is the caller's token still good?  Which events it
 * may see is decided per event already (events_visible), so a removed
 * membership needs nothing here: a fresh call would be accepted too. */
static void events_recheck(struct stream_guard *guard)
{
    struct events_subscriber *sub = container_of(guard, struct events_subscriber, guard);

    if (grpc_call_finished(sub->call))
        return;
    if (stream_guard_reauthenticate(sub->ctx->guards, rpc_stream(sub->call), &sub->subject) != 0)
        events_detach(sub);
}

static void events_catch_up_expired(evutil_socket_t fd, short what, void *arg)
{
    struct events_subscriber *sub = arg;

    if (!sub->attached || hub_log_bus_newest(&sub->ctx->log) >= sub->cursor)
        return;
    events_detach(sub);
    grpc_call_finish(sub->call, GRPC_STATUS_UNAVAILABLE, EVENTS_BEHIND_MESSAGE);
}

/* Bounds the wait of a subscriber whose cursor is past this node's copy
 * of the bus (only a cluster's log opens such a cursor: one seen on
 * another node).  Returns 0, or -1 when memory is short. */
static int events_wait_for_copy(struct events_subscriber *sub)
{
    const struct timeval bound = {EVENTS_CATCH_UP_MS / 1000, (EVENTS_CATCH_UP_MS % 1000) * 1000};

    if (!sub->ctx->base || hub_log_bus_newest(&sub->ctx->log) >= sub->cursor)
        return 0;
    sub->catch_up = evtimer_new(sub->ctx->base, events_catch_up_expired, sub);
    return sub->catch_up && evtimer_add(sub->catch_up, &bound) == 0 ? 0 : -1;
}

/* Takes the snapshot SUB is told first; the tail goes on after the seq it
 * stands at.  Returns 0, or -1 when memory is short. */
static int events_take_snapshot(struct events_subscriber *sub)
{
    uint64_t at = sub->cursor;

    if (sub->ctx->snapshot &&
        hub_snapshot_take(sub->ctx->snapshot, &sub->snap, &sub->snap_n, &at) != 0)
        return -1;
    sub->cursor = at;
    sub->status_due = 1;
    /* Resuming after ServerStatus replays from the snapshot's first event
     * on, which tells the rest of it; with no status to tell, the tail. */
    sub->status_seq = sub->snap_n ? sub->snap[0] - 1 : at;
    return 0;
}

static void events_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__SubscribeEventsRequest *request =
        (const Compass__V1__SubscribeEventsRequest *)message;
    struct hub *ctx = rpc_hub(call);
    struct events_subscriber *sub;
    struct store_subject subject;
    uint64_t cursor;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    if (!hub_log_writable(&ctx->log) && !ctx->config.log_on_disk) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    }
    if (hub_log_open(&ctx->log, request->since_seq, request->instance_epoch, &cursor) != BUS_OK) {
        events_resync(call, ctx);
        return;
    }
    sub = calloc(1, sizeof(*sub));
    if (!sub) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sub->call = call;
    sub->ctx = ctx;
    sub->subject = subject;
    sub->cursor = cursor;
    sub->agenthub_payloads = request->agenthub_payloads;
    sub->told_ready = events_serving(sub);
    if ((request->since_seq == 0 ? events_take_snapshot(sub) : events_wait_for_copy(sub)) != 0) {
        if (sub->catch_up)
            event_free(sub->catch_up);
        free(sub->snap);
        free(sub);
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    sub->watcher.wake = events_wake;
    sub->guard.recheck = events_recheck;
    sub->attached = 1;
    hub_bus_subscriber(ctx, 1);
    hub_log_subscribe(&ctx->log, &sub->watcher);
    stream_guard_add(ctx->guards, &sub->guard);
    grpc_call_set_user(call, sub);
    grpc_call_start_response(call);
    events_pump(sub);
}

static void events_on_close(struct grpc_call *call)
{
    struct events_subscriber *sub = grpc_call_user(call);

    if (!sub)
        return;
    events_detach(sub);
    if (sub->catch_up)
        event_free(sub->catch_up);
    free(sub->snap);
    free(sub);
}

static const struct grpc_method subscribe_events_method = {
    .path = "/compass.v1.CompassService/SubscribeEvents",
    .kind = GRPC_METHOD_SERVER_STREAMING,
    .request_type = &compass__v1__subscribe_events_request__descriptor,
    .response_type = &compass__v1__subscribe_events_response__descriptor,
    .on_message = events_on_message,
    .on_writable = events_on_writable,
    .on_close = events_on_close,
    .needs_caller = 1,
};

int compass_stream_register(struct rpc_context *rpc, struct grpc_door *door)
{
    if (grpc_door_register(door, &subscribe_agent_session_method) != 0 ||
        grpc_door_register(door, &subscribe_events_method) != 0)
        return -1;
    return 0;
}
