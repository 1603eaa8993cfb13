#include "hub/hub.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "hub/hub_snapshot.h"
#include "hub/runner_control.h"
#include "hub/stream_guard.h"
#include "store/gate.h"
#include "store/store.h"

struct session *hub_session(struct hub *ctx, const char *session_id)
{
    struct session *s = NULL;

    session_open(ctx->sessions, session_id, strlen(session_id), &s);
    return s;
}

int hub_session_quota(struct hub *ctx, struct hub_stream stream, const char *agent_account_id)
{
    char message[200];
    uint64_t open = 0;
    int rv;

    if (ctx->config.max_account_sessions == 0)
        return 0;
    rv = store_session_count_open(ctx->store, agent_account_id, &open);
    if (rv != STORE_OK) {
        stream.ops->finish(stream.call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return -1;
    }
    if (open < ctx->config.max_account_sessions)
        return 0;
    ctx->counters.session_quota_refusals++;
    snprintf(message, sizeof(message),
             "the agent account has %llu open sessions, the most allowed; close one first",
             (unsigned long long)open);
    stream.ops->finish(stream.call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
    return -1;
}

/* Prometheus text for the retained logs of ended sessions. */
static void write_retention_metrics(struct session_registry *reg, FILE *out)
{
    static const char *const reasons[SESSION_EVICT_REASONS] = {"bytes", "age", "budget"};

    /* What a scrape reports is what a reader would find now. */
    session_registry_expire(reg, clock_monotonic_ms());
    fprintf(out,
            "# HELP agenthub_ended_session_logs Sessions whose agent ended and whose log is "
            "still readable.\n"
            "# TYPE agenthub_ended_session_logs gauge\n"
            "agenthub_ended_session_logs %zu\n"
            "# TYPE agenthub_ended_session_log_bytes gauge\n"
            "agenthub_ended_session_log_bytes %zu\n"
            "# TYPE agenthub_ended_session_log_retain_bytes gauge\n"
            "agenthub_ended_session_log_retain_bytes %zu\n"
            "# HELP agenthub_ended_session_log_evictions_total Ended sessions' logs given up: "
            "past --ended-log-bytes, older than --ended-log-age-ms, or trimmed away by "
            "--session-log-budget-bytes.\n"
            "# TYPE agenthub_ended_session_log_evictions_total counter\n",
            reg->retained_count, reg->retained_bytes, reg->retain_bytes);
    for (int i = 0; i < SESSION_EVICT_REASONS; i++)
        fprintf(out, "agenthub_ended_session_log_evictions_total{reason=\"%s\"} %llu\n", reasons[i],
                (unsigned long long)reg->evictions[i]);
}

void hub_write_counters(const struct hub *ctx, FILE *out)
{
    const struct hub_counters *c = &ctx->counters;

    fprintf(out,
            "# TYPE agenthub_frames_accepted_total counter\n"
            "agenthub_frames_accepted_total %llu\n"
            "# HELP agenthub_relay_gaps_total runner_seq jumps (frames lost in transit).\n"
            "# TYPE agenthub_relay_gaps_total counter\n"
            "agenthub_relay_gaps_total %llu\n"
            "# HELP agenthub_relay_retries_total repeated or older runner_seq, dropped.\n"
            "# TYPE agenthub_relay_retries_total counter\n"
            "agenthub_relay_retries_total %llu\n"
            "# HELP agenthub_relay_duplicates_total frames whose idempotency_key was seen "
            "before, dropped.\n"
            "# TYPE agenthub_relay_duplicates_total counter\n"
            "agenthub_relay_duplicates_total %llu\n"
            "# HELP agenthub_relay_stale_streams_total PublishEvents streams of a Runner's "
            "previous run, ended ABORTED.\n"
            "# TYPE agenthub_relay_stale_streams_total counter\n"
            "agenthub_relay_stale_streams_total %llu\n"
            "# HELP agenthub_relay_acks_total agent acks relayed by a Runner, by kind "
            "(counted, relayed no further).\n"
            "# TYPE agenthub_relay_acks_total counter\n"
            "agenthub_relay_acks_total{kind=\"replay_complete\"} %llu\n"
            "agenthub_relay_acks_total{kind=\"control\"} %llu\n"
            "agenthub_relay_acks_total{kind=\"delivery\"} %llu\n"
            "# HELP agenthub_relay_unknown_frames_total frames with an unset or unknown variant.\n"
            "# TYPE agenthub_relay_unknown_frames_total counter\n"
            "agenthub_relay_unknown_frames_total %llu\n"
            "# HELP agenthub_relay_unbound_frames_total frames for a session not bound to the "
            "sender.\n"
            "# TYPE agenthub_relay_unbound_frames_total counter\n"
            "agenthub_relay_unbound_frames_total %llu\n"
            "# HELP agenthub_relay_ended_frames_total frames for a session that has ended.\n"
            "# TYPE agenthub_relay_ended_frames_total counter\n"
            "agenthub_relay_ended_frames_total %llu\n"
            "# TYPE agenthub_relay_invalid_records_total counter\n"
            "agenthub_relay_invalid_records_total %llu\n"
            "# TYPE agenthub_relay_transcript_entries_total counter\n"
            "agenthub_relay_transcript_entries_total %llu\n"
            "# TYPE agenthub_subscriber_lag_drops_total counter\n"
            "agenthub_subscriber_lag_drops_total %llu\n"
            "# TYPE agenthub_records_appended_total counter\n"
            "agenthub_records_appended_total %llu\n"
            "# HELP agenthub_records_retried_total AppendResourceOutput calls whose "
            "idempotency_key the log held already: answered, nothing stored.\n"
            "# TYPE agenthub_records_retried_total counter\n"
            "agenthub_records_retried_total %llu\n"
            "# TYPE agenthub_status_changes_total counter\n"
            "agenthub_status_changes_total %llu\n"
            "# TYPE agenthub_session_subscribers gauge\n"
            "agenthub_session_subscribers %llu\n"
            "# TYPE agenthub_bus_subscribers gauge\n"
            "agenthub_bus_subscribers %llu\n"
            "# TYPE agenthub_sessions_live gauge\n"
            "agenthub_sessions_live %zu\n",
            (unsigned long long)c->frames_accepted, (unsigned long long)c->relay_gaps,
            (unsigned long long)c->relay_retries, (unsigned long long)c->relay_duplicates,
            (unsigned long long)c->relay_stale_streams,
            (unsigned long long)c->relay_acks[HUB_ACK_REPLAY_COMPLETE],
            (unsigned long long)c->relay_acks[HUB_ACK_CONTROL],
            (unsigned long long)c->relay_acks[HUB_ACK_DELIVERY],
            (unsigned long long)c->relay_unknown_frames,
            (unsigned long long)c->relay_unbound_frames, (unsigned long long)c->relay_ended_frames,
            (unsigned long long)c->relay_invalid_records, (unsigned long long)c->transcript_entries,
            (unsigned long long)c->subscriber_lag_drops, (unsigned long long)c->records_appended,
            (unsigned long long)c->records_retried, (unsigned long long)c->status_changes,
            (unsigned long long)c->subscribers_open, (unsigned long long)c->bus_subscribers_open,
            ctx->sessions ? session_registry_count(ctx->sessions) : (size_t)0);
}

void hub_write_metrics(const struct hub *ctx, FILE *out)
{
    const struct session_registry *reg = ctx->sessions;

    if (reg)
        write_retention_metrics(ctx->sessions, out);
    if (reg)
        fprintf(out,
                "# HELP agenthub_session_log_bytes Memory held by every session's log.\n"
                "# TYPE agenthub_session_log_bytes gauge\n"
                "agenthub_session_log_bytes %zu\n"
                "# TYPE agenthub_session_log_budget_bytes gauge\n"
                "agenthub_session_log_budget_bytes %zu\n"
                "# HELP agenthub_session_log_trimmed_bytes_total Log bytes of idle sessions "
                "given back to stay within --session-log-budget-bytes.\n"
                "# TYPE agenthub_session_log_trimmed_bytes_total counter\n"
                "agenthub_session_log_trimmed_bytes_total %llu\n"
                "# TYPE agenthub_session_log_trims_total counter\n"
                "agenthub_session_log_trims_total %llu\n",
                reg->log_bytes, reg->log_budget, (unsigned long long)reg->trimmed_bytes,
                (unsigned long long)reg->trimmed_sessions);
    fprintf(out,
            "# HELP agenthub_session_quota_refusals_total New sessions refused by "
            "--max-sessions-per-account.\n"
            "# TYPE agenthub_session_quota_refusals_total counter\n"
            "agenthub_session_quota_refusals_total %llu\n",
            (unsigned long long)ctx->counters.session_quota_refusals);
    if (ctx->snapshot)
        fprintf(out,
                "# HELP agenthub_bus_snapshot_sessions Sessions whose latest status a "
                "since_seq 0 subscriber is told first.\n"
                "# TYPE agenthub_bus_snapshot_sessions gauge\n"
                "agenthub_bus_snapshot_sessions %zu\n"
                "# TYPE agenthub_bus_snapshot_bytes gauge\n"
                "agenthub_bus_snapshot_bytes %zu\n"
                "# HELP agenthub_bus_snapshot_losses_total Statuses left out of the snapshot "
                "for want of memory.\n"
                "# TYPE agenthub_bus_snapshot_losses_total counter\n"
                "agenthub_bus_snapshot_losses_total %llu\n",
                hash_map_count(&ctx->snapshot->by_id), ctx->snapshot->bytes,
                (unsigned long long)ctx->snapshot->losses);
    if (ctx->runners)
        runner_registry_write_metrics(ctx->runners, out);
    stream_guards_write_metrics(ctx->guards, out);
    hub_log_write_metrics(&ctx->log, out);
}

enum hub_live hub_live_session(struct hub *ctx, const char *session_id, struct session **out)
{
    struct store_session row;
    int rv;

    *out = session_find(ctx->sessions, session_id, strlen(session_id));
    if (*out)
        return HUB_LIVE;
    rv = store_session_get(ctx->store, session_id, &row);
    if (rv == STORE_FAULT)
        return HUB_FAULT;
    if (rv != STORE_OK || row.closed)
        return HUB_ENDED;
    *out = hub_session(ctx, session_id);
    return *out ? HUB_LIVE : HUB_NOMEM;
}

/* Packs MESSAGE into a stack buffer when it fits, else the heap.  Returns
 * the bytes (free with pack_release) or NULL when memory is short. */
static uint8_t *pack(const ProtobufCMessage *message, uint8_t *stack, size_t stack_size,
                     size_t *len)
{
    uint8_t *out;

    *len = protobuf_c_message_get_packed_size(message);
    out = *len <= stack_size ? stack : malloc(*len);
    if (out)
        protobuf_c_message_pack(message, out);
    return out;
}

static void pack_release(uint8_t *bytes, uint8_t *stack)
{
    if (bytes != stack)
        free(bytes);
}

static uint64_t hub_ring_append(struct hub *ctx, struct session *s,
                                const Compass__V1__AgentSessionFrame *frame)
{
    uint8_t stack[1024];
    size_t len;
    uint8_t *bytes = pack(&frame->base, stack, sizeof(stack), &len);
    uint64_t seq;

    if (!bytes)
        return 0;
    seq = hub_log_append(&ctx->log, s, bytes, len, clock_unix_ms());
    pack_release(bytes, stack);
    return seq;
}

static void hub_bus_publish(struct hub *ctx, const Compass__V1__SubscribeEventsResponse *event)
{
    uint8_t stack[1024];
    size_t len;
    uint8_t *bytes = pack(&event->base, stack, sizeof(stack), &len);

    if (!bytes)
        return;
    hub_log_publish(&ctx->log, bytes, len, clock_unix_ms());
    pack_release(bytes, stack);
}

/* STOPPED and ERRORED end the agent's run: its panes end after them. */
static int state_is_terminal(int state)
{
    return state == ARBITER_STOPPED || state == ARBITER_ERRORED;
}

/* Appends the state frame of S and publishes AgentSessionStatus, when
 * STATE is not what S's last status said: a status is a transition, so
 * announcing a session again (a Runner's report of every session it hosts,
 * sent whenever its stream opens) tells nothing twice, while the first
 * announcement of a session this server has not told yet always goes out.
 * A terminal state ends S's current tail after its frame (its panes drain
 * and end); any other state after one starts a new tail with its frame. */
static void publish_status(struct hub *ctx, struct session *s, int state)
{
    Compass__V1__SubscribeEventsResponse event = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__AgentSessionStatus status = COMPASS__V1__AGENT_SESSION_STATUS__INIT;
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    struct hub_log_span span;
    struct store_session row;

    if (s->told && s->told_state == state)
        return;
    s->told = 1;
    s->told_state = (uint8_t)state;
    if (!state_is_terminal(state))
        hub_log_mark(&ctx->log, s, HUB_LOG_TAIL_RESUME);
    frame.session_id = (char *)session_id(s);
    frame.state = (Compass__V1__AgentSessionState)state;
    hub_ring_append(ctx, s, &frame);
    if (state_is_terminal(state))
        hub_log_mark(&ctx->log, s, HUB_LOG_TAIL_END);

    status.session_id = (char *)session_id(s);
    status.state = (Compass__V1__AgentSessionState)state;
    hub_log_span(&ctx->log, s, &span);
    status.last_seq = span.newest;
    /* The agent account is attribution, not authorization: a store fault
     * leaves it empty rather than holding the event back. */
    if (ctx->store && store_session_get(ctx->store, session_id(s), &row) == STORE_OK) {
        status.agent_account_id = row.agent_account_id;
        status.provider = row.provider;
        status.native_id = row.native_id;
        /* Subscribers receive this event only for sessions they may view
         * (the events stream's gate), so the row's names go with it. */
        status.container = row.container_name;
        status.owner = row.owner_account_id;
    }
    event.session_id = (char *)session_id(s);
    event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_SESSION_STATUS;
    event.agent_session_status = &status;
    hub_bus_publish(ctx, &event);
    ctx->counters.status_changes++;
}

void hub_observe(struct hub *ctx, struct session *s, enum arbiter_rank rank, int evidence,
                 int live_child)
{
    enum arbiter_state state;

    if (arbiter_observe(session_arbiter(s), rank, evidence, live_child, &state))
        publish_status(ctx, s, (int)state);
}

void hub_announce_state(struct hub *ctx, struct session *s, int state)
{
    /* What subscribers were last told is the session's state from now on
     * (GetAgentStatus reads it), and the next evidence that derives another
     * state is reported as a change. */
    arbiter_announce(session_arbiter(s), (enum arbiter_state)state);
    publish_status(ctx, s, state);
}

void hub_announce_derived(struct hub *ctx, struct session *s)
{
    enum arbiter_state state;

    arbiter_observe(session_arbiter(s), ARBITER_RANK_STREAM, ARBITER_NONE, ARBITER_LIVE_UNCHANGED,
                    &state);
    publish_status(ctx, s, (int)state);
}

/* The bus projection of a typed event (none for notices). */
static void project_event(struct hub *ctx, const char *sid, const Compass__V1__SessionEvent *event)
{
    Compass__V1__SubscribeEventsResponse out = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__AgentMessageChunk chunk = COMPASS__V1__AGENT_MESSAGE_CHUNK__INIT;
    Compass__V1__AgentToolCall tool = COMPASS__V1__AGENT_TOOL_CALL__INIT;
    Compass__V1__AgentPlan plan = COMPASS__V1__AGENT_PLAN__INIT;

    out.session_id = (char *)sid;
    switch (event->event_case) {
    case COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT:
    case COMPASS__V1__SESSION_EVENT__EVENT_THINKING:
        chunk.session_id = (char *)sid;
        chunk.is_thought = event->event_case == COMPASS__V1__SESSION_EVENT__EVENT_THINKING;
        chunk.text = chunk.is_thought ? event->thinking->text : event->assistant_text->text;
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_MESSAGE_CHUNK;
        out.agent_message_chunk = &chunk;
        break;
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL:
        tool.session_id = (char *)sid;
        tool.tool_call_id = event->tool_call->tool_call_id;
        tool.title = event->tool_call->title;
        tool.status = event->tool_call->status;
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_TOOL_CALL;
        out.agent_tool_call = &tool;
        break;
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL_UPDATE:
        tool.session_id = (char *)sid;
        tool.tool_call_id = event->tool_call_update->tool_call_id;
        tool.status = event->tool_call_update->status;
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_TOOL_CALL;
        out.agent_tool_call = &tool;
        break;
    case COMPASS__V1__SESSION_EVENT__EVENT_PLAN:
        plan.session_id = (char *)sid;
        plan.n_entries = event->plan->n_entries;
        plan.entries = event->plan->entries;
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_PLAN;
        out.agent_plan = &plan;
        break;
    case COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING:
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_SESSION_BATCH_PENDING;
        out.session_batch_pending = event->batch_pending;
        break;
    case COMPASS__V1__SESSION_EVENT__EVENT_RECORD:
        out.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_RECORD;
        out.agent_record = event->record;
        break;
    default:
        return;
    }
    hub_bus_publish(ctx, &out);
}

/* The Stream evidence EVENT carries (a state, RETRACT or NONE). */
static int event_evidence(const Compass__V1__SessionEvent *event)
{
    switch (event->event_case) {
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL:
        return arbiter_evidence_for_tool_status(event->tool_call->status);
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL_UPDATE:
        return arbiter_evidence_for_tool_status(event->tool_call_update->status);
    default:
        return ARBITER_NONE;
    }
}

uint64_t hub_append_event(struct hub *ctx, struct session *s,
                          const Compass__V1__SessionEvent *event, int record_evidence)
{
    return hub_append_tracked(ctx, s, event, record_evidence, NULL);
}

uint64_t hub_append_tracked(struct hub *ctx, struct session *s,
                            const Compass__V1__SessionEvent *event, int record_evidence,
                            struct hub_log_wait *w)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    uint64_t seq;
    int evidence;

    frame.session_id = (char *)session_id(s);
    frame.event = (Compass__V1__SessionEvent *)event;
    seq = hub_ring_append(ctx, s, &frame);
    if (seq == 0)
        return 0;
    /* Before the state frame its evidence may add: W waits for this one. */
    if (w)
        hub_log_track(&ctx->log, s, w, seq);
    project_event(ctx, session_id(s), event);
    evidence = event->event_case == COMPASS__V1__SESSION_EVENT__EVENT_RECORD
                   ? record_evidence
                   : event_evidence(event);
    if (evidence != ARBITER_NONE) {
        /* A state frame the record implies is the call's too, but not one
         * of its records: a retry is answered with the records' seqs. */
        hub_log_derive(&ctx->log, 1);
        hub_observe(ctx, s, ARBITER_RANK_STREAM, evidence, ARBITER_LIVE_UNCHANGED);
        hub_log_derive(&ctx->log, 0);
    }
    return seq;
}

void hub_end_session(struct hub *ctx, struct session *s)
{
    /* A closed session is over: its last state frame says STOPPED, as
     * GetAgentStatus does from then on (once only: a session_end record
     * before the close already said it). */
    hub_observe(ctx, s, ARBITER_RANK_STREAM, ARBITER_STOPPED, ARBITER_LIVE_UNCHANGED);
    hub_log_mark(&ctx->log, s, HUB_LOG_END);
}
