/* hub_session: see hub_session.h. */
#include "hub/hub_session.h"

#include <stdio.h>
#include <string.h>

void hub_session_bind(struct session *s, const char *runner_id, enum hub_bind how)
{
    const char *bound;

    if (!s || !runner_id || !runner_id[0])
        return;
    bound = session_binding(s);
    if (how == HUB_BIND_IF_UNBOUND && bound)
        return;
    if (!bound || strcmp(bound, runner_id) != 0)
        session_bind(s, runner_id);
}

void hub_session_stop(struct hub *ctx, const char *session_id)
{
    struct session *s = session_find(ctx->sessions, session_id, strlen(session_id));

    if (!s)
        return;
    /* STOPPED is the last word: ending without retracting the Stream
     * evidence, so no fallback state is published after it. */
    hub_announce_state(ctx, s, ARBITER_STOPPED);
    hub_log_mark(&ctx->log, s, HUB_LOG_END);
}

void hub_session_close(struct hub *ctx, const char *session_id)
{
    struct session *s = session_find(ctx->sessions, session_id, strlen(session_id));

    if (s)
        hub_end_session(ctx, s);
}

void hub_session_view(struct hub *ctx, const char *session_id, int closed,
                      struct hub_session_view *out)
{
    struct session *s = session_lookup(ctx->sessions, session_id, strlen(session_id));

    out->last_seq = 0;
    if (s) {
        struct hub_log_span span;
        uint64_t newest;
        hub_log_span(&ctx->log, s, &span);
        out->last_seq = span.newest;
        /* A cluster node that does not read S now: the bus said more. */
        if (!hub_log_reads(&ctx->log, s, &newest) && newest > out->last_seq)
            out->last_seq = newest;
    }
    /* Closed in the store is STOPPED, even while the log is storing the end. */
    if (s && !session_is_ended(s) && !closed)
        out->state = (Compass__V1__AgentSessionState)arbiter_state(session_arbiter(s));
    else
        out->state = closed ? COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED
                            : COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_UNSPECIFIED;
}

enum hub_pane hub_session_for_pane(struct hub *ctx, const char *session_id, int closed,
                                   const char *runner_id, struct session **out)
{
    *out = NULL;
    if (closed)
        *out = session_lookup(ctx->sessions, session_id, strlen(session_id));
    else if (session_open(ctx->sessions, session_id, strlen(session_id), out) < 0)
        return HUB_PANE_NOMEM;
    if (!*out)
        return HUB_PANE_UNRETAINED; /* ended, its log evicted */
    /* Bound to the Runner hosting its container, so that Runner's stream
     * dropping tells this subscriber DISCONNECTED. */
    hub_session_bind(*out, runner_id, HUB_BIND_IF_UNBOUND);
    return HUB_PANE_OPEN;
}

void hub_pane_attach(struct hub *ctx, struct session *s, struct watcher *watcher)
{
    session_watch(s, watcher);
    ctx->counters.subscribers_open++;
}

void hub_pane_detach(struct hub *ctx, struct session *s, struct watcher *watcher)
{
    session_unwatch(s, watcher);
    ctx->counters.subscribers_open--;
}

void hub_pane_lagged(struct hub *ctx)
{
    ctx->counters.subscriber_lag_drops++;
}

void hub_bus_subscriber(struct hub *ctx, int open)
{
    if (open)
        ctx->counters.bus_subscribers_open++;
    else
        ctx->counters.bus_subscribers_open--;
}

enum hub_live hub_report_evidence(struct hub *ctx, const char *session_id, const char *runner_id,
                                  enum arbiter_rank rank, int evidence, int live_child)
{
    struct session *s;
    enum hub_live rv = hub_live_session(ctx, session_id, &s);

    if (rv != HUB_LIVE)
        return rv; /* evidence about an ended session changes nothing */
    session_bind(s, runner_id);
    hub_observe(ctx, s, rank, evidence, live_child);
    return HUB_LIVE;
}

void hub_report_hook_state(struct hub *ctx, struct session *s, int state)
{
    if (arbiter_live_child(session_arbiter(s))) {
        /* With a live child session the fallback state becomes a record. */
        Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
        Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;
        char data[96];
        snprintf(data, sizeof(data), "{\"state\":\"%s\"}",
                 arbiter_state_name((enum arbiter_state)state));
        record.type = "state";
        record.data_json = data;
        event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
        event.record = &record;
        hub_append_event(ctx, s, &event, state);
        ctx->counters.records_appended++;
    } else {
        hub_observe(ctx, s, ARBITER_RANK_HOOK, state, ARBITER_LIVE_UNCHANGED);
    }
}

int hub_append_records(struct hub *ctx, struct session *s, const struct jsonl_batch *batch,
                       struct hub_log_wait *w)
{
    for (size_t i = 0; i < batch->count; i++) {
        Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
        Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;

        record.type = (char *)jsonl_type_name(batch->records[i].type);
        record.data_json = batch->records[i].data_json;
        event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
        event.record = &record;
        if (hub_append_tracked(ctx, s, &event, arbiter_evidence_for_record(&batch->records[i]),
                               w) == 0)
            return -1;
        ctx->counters.records_appended++;
    }
    return 0;
}

int hub_records_recall(struct hub *ctx, struct session *s, const char *key, size_t len,
                       struct hub_log_wait *w)
{
    if (!hub_log_recall(&ctx->log, s, key, len, &w->first_seq, &w->last_seq))
        return 0;
    ctx->counters.records_retried++;
    return 1;
}
