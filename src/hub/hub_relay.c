/* hub_relay: see hub_relay.h. */
#include "hub/hub_relay.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/container_of.h"
#include "common/log.h"
#include "core/jsonl.h"
#include "hub/runner_seq.h"
#include "store/gate.h"

int hub_relay_verdict_ends_stream(enum hub_relay_verdict verdict)
{
    switch (verdict) {
    case HUB_RELAY_ACCEPTED:
    case HUB_RELAY_RETRY:
    case HUB_RELAY_DUPLICATE:
    case HUB_RELAY_UNKNOWN:
    case HUB_RELAY_UNBOUND:
    case HUB_RELAY_TRANSCRIPT:
    case HUB_RELAY_ACK:
    case HUB_RELAY_ENDED:
    case HUB_RELAY_BAD_RECORD:
        return 0;
    case HUB_RELAY_SEQ_RANGE:
    case HUB_RELAY_STALE:
    case HUB_RELAY_LOG_DOWN:
    case HUB_RELAY_STORE_FAULT:
    case HUB_RELAY_NOMEM:
        return 1;
    }
    return 1;
}

/* The store changed: a revoked Runner token ends the stream
 * UNAUTHENTICATED; a binding that moved is noticed by the next frame,
 * which is checked afresh instead of trusting the last answer. */
static void relay_recheck(struct stream_guard *guard)
{
    struct hub_relay *relay = container_of(guard, struct hub_relay, guard);

    relay->bound_session[0] = '\0';
    if (relay->stream.ops->finished(relay->stream.call))
        return;
    if (stream_guard_reauthenticate(relay->ctx->guards, relay->stream, &relay->subject) != 0) {
        log_info("runner %s: its PublishEvents stream is no longer authorized; ended",
                 relay->runner_id);
        stream_guard_remove(relay->ctx->guards, &relay->guard);
    }
}

int hub_relay_open(struct hub *ctx, struct hub_relay *relay, struct hub_stream stream,
                   const struct store_subject *subject)
{
    memset(relay, 0, sizeof(*relay));
    if (runner_run_get(ctx, subject->id, &relay->run) != 0)
        return -1;
    relay->ctx = ctx;
    relay->stream = stream;
    snprintf(relay->runner_id, sizeof(relay->runner_id), "%s", subject->id);
    relay->subject = *subject;
    relay->run_number = runner_run_number(relay->run);
    relay->guard.recheck = relay_recheck;
    stream_guard_add(ctx->guards, &relay->guard);
    return 0;
}

/* Checks the binding, trusting a recent positive answer for the same
 * session.  Returns GATE_BOUND, GATE_NOT_BOUND or GATE_FAULT. */
static int relay_binding(struct hub_relay *relay, const char *session_id)
{
    int64_t now = clock_monotonic_ms();
    int rv;

    if (relay->bound_session[0] && strcmp(relay->bound_session, session_id) == 0 &&
        now - relay->bound_at_ms < HUB_RELAY_BINDING_TRUST_MS)
        return GATE_BOUND;
    rv = gate_session_bound(relay->ctx->store, relay->runner_id, session_id);
    if (rv == GATE_BOUND) {
        snprintf(relay->bound_session, sizeof(relay->bound_session), "%s", session_id);
        relay->bound_at_ms = now;
    }
    return rv;
}

/* Relays FRAME (the Runner's runner_seq RUNNER_SEQ) into S.  Returns
 * ACCEPTED with *TAKEN the frames the session log took for it, or
 * BAD_RECORD (nothing taken). */
static enum hub_relay_verdict relay_accept(struct hub_relay *relay, struct session *s,
                                           const Compass__V1__SessionFrame *frame,
                                           uint64_t runner_seq, uint32_t *taken)
{
    struct hub *ctx = relay->ctx;
    const Compass__V1__SessionEvent *event = frame->typed_event;
    Compass__V1__SessionEvent checked_event;
    Compass__V1__AgentRecord checked_record;
    struct jsonl_record rec = {0};
    int evidence = ARBITER_NONE;

    if (event && event->event_case == COMPASS__V1__SESSION_EVENT__EVENT_RECORD) {
        /* A record is what one appended line would be: the same codec
         * checks it, and its compact data_json is what gets relayed. */
        const Compass__V1__AgentRecord *record = event->record;
        if (jsonl_parse_record(record->type, strlen(record->type), record->data_json,
                               strlen(record->data_json), &rec, NULL) != JSONL_OK) {
            ctx->counters.relay_invalid_records++;
            log_warn("runner %s: runner_seq %llu carries an invalid record; dropped",
                     relay->runner_id, (unsigned long long)runner_seq);
            return HUB_RELAY_BAD_RECORD;
        }
        evidence = arbiter_evidence_for_record(&rec);
        checked_record = *record;
        checked_record.data_json = rec.data_json;
        checked_event = *event;
        checked_event.record = &checked_record;
        event = &checked_event;
    }
    /* What the log takes now is this frame's: a cluster's nodes learn the
     * Runner's mark from it. */
    hub_log_origin(&ctx->log, relay->runner_id, runner_seq);
    if (event)
        hub_append_event(ctx, s, event, evidence);
    free(rec.data_json);
    if (frame->state != COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_UNSPECIFIED)
        hub_observe(ctx, s, ARBITER_RANK_STREAM, arbiter_evidence_for_frame_state(frame->state),
                    ARBITER_LIVE_UNCHANGED);
    ctx->counters.frames_accepted++;
    *taken = hub_log_origin(&ctx->log, NULL, 0);
    return HUB_RELAY_ACCEPTED;
}

/* 1 when FRAME has no variant this server knows, or a session frame
 * carries nothing. */
static int frame_is_unknown(const Compass__V1__AgentFrame *frame)
{
    const Compass__V1__SessionFrame *session;

    if (!frame || frame->frame_case == COMPASS__V1__AGENT_FRAME__FRAME__NOT_SET)
        return 1;
    if (frame->frame_case != COMPASS__V1__AGENT_FRAME__FRAME_SESSION)
        return 0;
    session = frame->session;
    if (!session->typed_event)
        return session->state == COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_UNSPECIFIED;
    return session->typed_event->event_case == COMPASS__V1__SESSION_EVENT__EVENT__NOT_SET;
}

/* Counts FRAME when it is an agent's ack.  Returns 1 if it was one. */
static int count_ack(struct hub *ctx, const Compass__V1__AgentFrame *frame)
{
    switch (frame->frame_case) {
    case COMPASS__V1__AGENT_FRAME__FRAME_REPLAY_COMPLETE_ACK:
        ctx->counters.relay_acks[HUB_ACK_REPLAY_COMPLETE]++;
        return 1;
    case COMPASS__V1__AGENT_FRAME__FRAME_CONTROL_ACK:
        ctx->counters.relay_acks[HUB_ACK_CONTROL]++;
        return 1;
    case COMPASS__V1__AGENT_FRAME__FRAME_DELIVERY_ACK:
        ctx->counters.relay_acks[HUB_ACK_DELIVERY]++;
        return 1;
    default:
        return 0;
    }
}

/* The checks up to the binding that end the stream, in order.  Returns
 * ACCEPTED when none refuses the frame. */
static enum hub_relay_verdict relay_stream_checks(struct hub_relay *relay, uint64_t seq)
{
    struct hub *ctx = relay->ctx;

    /* The store keeps runner_seq as a signed 64-bit integer. */
    if (seq == 0 || seq > (uint64_t)INT64_MAX)
        return HUB_RELAY_SEQ_RANGE;
    runner_run_sync(ctx, relay->run);
    if (runner_run_number(relay->run) != relay->run_number) {
        ctx->counters.relay_stale_streams++;
        log_info("runner %s: a PublishEvents stream of its previous run sent runner_seq %llu; "
                 "ended",
                 relay->runner_id, (unsigned long long)seq);
        return HUB_RELAY_STALE;
    }
    if (!hub_log_writable(&ctx->log)) {
        /* Not accepted: a resuming Runner resends from last_runner_seq. */
        runner_run_persist(ctx, relay->run);
        return HUB_RELAY_LOG_DOWN;
    }
    return HUB_RELAY_ACCEPTED;
}

/* Decides a frame the Runner may send (not a retry, a duplicate or an
 * unknown variant) at SEQ for REQUEST's session, and relays it.  *TAKEN
 * is what the log took for it. */
static enum hub_relay_verdict relay_decide(struct hub_relay *relay,
                                           const Compass__V1__PublishEventsRequest *request,
                                           uint64_t seq, uint32_t *taken)
{
    struct hub *ctx = relay->ctx;
    const Compass__V1__AgentFrame *frame = request->frame;
    const char *runner_id = relay->runner_id;
    struct session *s;
    int rv;

    rv = relay_binding(relay, request->session_id);
    if (rv == GATE_FAULT) {
        /* Not accepted: a resuming Runner resends from last_runner_seq. */
        runner_run_persist(ctx, relay->run);
        return HUB_RELAY_STORE_FAULT;
    }
    if (rv != GATE_BOUND) {
        ctx->counters.relay_unbound_frames++;
        log_warn("runner %s: runner_seq %llu is for a session not bound to it; dropped", runner_id,
                 (unsigned long long)seq);
        return HUB_RELAY_UNBOUND;
    }
    if (frame->frame_case == COMPASS__V1__AGENT_FRAME__FRAME_TRANSCRIPT_ENTRY) {
        /* Transcript entries feed blob uploads on the Runner; the pane and
         * the bus carry session frames only. */
        ctx->counters.transcript_entries++;
        return HUB_RELAY_TRANSCRIPT;
    }
    if (count_ack(ctx, frame))
        return HUB_RELAY_ACK; /* between the agent and its Runner: counted only */
    switch (hub_live_session(ctx, request->session_id, &s)) {
    case HUB_LIVE:
        break;
    case HUB_ENDED:
        ctx->counters.relay_ended_frames++;
        log_info("runner %s: runner_seq %llu is for a session that has ended; dropped", runner_id,
                 (unsigned long long)seq);
        return HUB_RELAY_ENDED;
    case HUB_FAULT:
        runner_run_persist(ctx, relay->run);
        return HUB_RELAY_STORE_FAULT;
    case HUB_NOMEM:
        return HUB_RELAY_NOMEM;
    }
    if (!session_binding(s) || strcmp(session_binding(s), runner_id) != 0)
        session_bind(s, runner_id);
    return relay_accept(relay, s, frame->session, seq, taken);
}

enum hub_relay_verdict hub_relay_frame(struct hub_relay *relay,
                                       const Compass__V1__PublishEventsRequest *request,
                                       uint64_t *skipped)
{
    struct hub *ctx = relay->ctx;
    const char *runner_id = relay->runner_id;
    uint64_t seq = request->runner_seq, gap;
    struct keyset_fp key, *fp = NULL;
    enum hub_relay_verdict verdict;
    uint32_t taken = 0;

    if (skipped)
        *skipped = 0;
    verdict = relay_stream_checks(relay, seq);
    if (verdict != HUB_RELAY_ACCEPTED)
        return verdict;
    if (request->idempotency_key[0]) {
        key = keyset_fingerprint(request->session_id, strlen(request->session_id),
                                 request->idempotency_key, strlen(request->idempotency_key));
        fp = &key;
    }
    switch (runner_run_check(relay->run, seq, fp)) {
    case RUNNER_FRAME_RETRY:
        ctx->counters.relay_retries++;
        log_debug("runner %s: runner_seq %llu repeats one of this run; dropped as a retry",
                  runner_id, (unsigned long long)seq);
        return HUB_RELAY_RETRY;
    case RUNNER_FRAME_DUPLICATE:
        ctx->counters.relay_duplicates++;
        log_debug("runner %s: runner_seq %llu carries an idempotency_key already seen for "
                  "session %.128s; dropped as a duplicate",
                  runner_id, (unsigned long long)seq, request->session_id);
        verdict = HUB_RELAY_DUPLICATE;
        break;
    case RUNNER_FRAME_NEW:
        if (frame_is_unknown(request->frame)) {
            ctx->counters.relay_unknown_frames++;
            log_warn("runner %s: runner_seq %llu for session %.128s has an unset or "
                     "unrecognized variant; counted, not relayed",
                     runner_id, (unsigned long long)seq, request->session_id);
            verdict = HUB_RELAY_UNKNOWN;
            break;
        }
        verdict = relay_decide(relay, request, seq, &taken);
        if (hub_relay_verdict_ends_stream(verdict))
            return verdict;
        break;
    }
    gap = runner_run_advance(ctx, relay->run, seq, fp);
    /* The log's mark covers only runner_seq values it holds a frame for or
     * was told of: so a Runner is never told a frame is stored that is
     * not (runner_marks.h). */
    if (gap || !taken)
        hub_log_runner_dealt(&ctx->log, runner_id, seq - gap, taken ? seq - 1 : seq);
    if (gap) {
        ctx->counters.relay_gaps++;
        log_warn("runner %s: runner_seq gap: expected %llu, got %llu (%llu lost in transit)",
                 runner_id, (unsigned long long)(seq - gap), (unsigned long long)seq,
                 (unsigned long long)gap);
    }
    if (skipped)
        *skipped = gap;
    return verdict;
}

int hub_relay_sync(struct hub_relay *relay, struct hub_log_wait *w)
{
    /* On a log that commits on its own thread, the Runner's OK means every
     * frame it sent is on disk: the wait covers all that was taken. */
    if (!relay->ctx->config.log_on_disk)
        return 1;
    return hub_log_runner_sync(&relay->ctx->log, relay->runner_id, w);
}

void hub_relay_close(struct hub_relay *relay)
{
    stream_guard_remove(relay->ctx->guards, &relay->guard);
    runner_run_persist(relay->ctx, relay->run);
}
