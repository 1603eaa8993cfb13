/* runner_control: Sessions control streams and the commands they carry. */
#include "rpc/runner_control.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/arbiter.h"
#include "grpc/grpc.h"
#include "rpc/hub.h"
#include "store/gate.h"
#include "store/store.h"

struct runner_link {
    char id[STORE_ID_MAX];
    struct grpc_call *call;
    struct runner_link *prev, *next;
};

struct pending_command {
    uint64_t id;
    struct runner_link *runner;
    runner_command_done done;
    void *arg;
    struct event *timer;
    struct rpc_context *ctx;
    struct pending_command *prev, *next;
};

struct runner_seq {
    char id[STORE_ID_MAX];
    uint64_t last;
    uint64_t persisted;
    struct runner_seq *next;
};

struct runner_registry {
    struct event_base *base;
    struct runner_link *links;
    struct runner_seq *seqs;
    struct pending_command *pending;
    uint64_t next_id;
};

struct runner_registry *runner_registry_new(struct event_base *base)
{
    struct runner_registry *runners = calloc(1, sizeof(*runners));

    if (runners)
        runners->base = base;
    return runners;
}

static void pending_free(struct runner_registry *runners, struct pending_command *command)
{
    if (command->prev)
        command->prev->next = command->next;
    else
        runners->pending = command->next;
    if (command->next)
        command->next->prev = command->prev;
    if (command->timer)
        event_free(command->timer);
    free(command);
}

/* Completes COMMAND once: its waiter hears OK/ERROR, then it is freed. */
static void pending_complete(struct runner_registry *runners, struct pending_command *command,
                             int ok, const char *error)
{
    runner_command_done done = command->done;
    void *arg = command->arg;

    pending_free(runners, command);
    if (done)
        done(arg, ok, error);
}

void runner_registry_free(struct runner_registry *runners)
{
    if (!runners)
        return;
    for (struct pending_command *c = runners->pending, *next; c; c = next) {
        next = c->next;
        pending_complete(runners, c, 0, "server stopping");
    }
    while (runners->links) {
        struct runner_link *link = runners->links;
        runners->links = link->next;
        free(link);
    }
    while (runners->seqs) {
        struct runner_seq *seq = runners->seqs;
        runners->seqs = seq->next;
        free(seq);
    }
    free(runners);
}

static struct runner_link *link_find(const struct runner_registry *runners, const char *runner_id)
{
    for (struct runner_link *link = runners->links; link; link = link->next)
        if (strcmp(link->id, runner_id) == 0)
            return link;
    return NULL;
}

int runner_connected(const struct runner_registry *runners, const char *runner_id)
{
    return link_find(runners, runner_id) != NULL;
}

int runner_seq_slot(struct rpc_context *ctx, const char *runner_id, uint64_t **slot)
{
    struct runner_seq *seq;
    uint64_t stored = 0;

    for (seq = ctx->runners->seqs; seq; seq = seq->next)
        if (strcmp(seq->id, runner_id) == 0) {
            *slot = &seq->last;
            return 0;
        }
    if (ctx->store->ops->runner_seq_get(ctx->store->impl, runner_id, &stored) == STORE_FAULT)
        return -1;
    seq = calloc(1, sizeof(*seq));
    if (!seq)
        return -1;
    snprintf(seq->id, sizeof(seq->id), "%s", runner_id);
    seq->last = seq->persisted = stored;
    seq->next = ctx->runners->seqs;
    ctx->runners->seqs = seq;
    *slot = &seq->last;
    return 0;
}

void runner_seq_persist(struct rpc_context *ctx, const char *runner_id)
{
    for (struct runner_seq *seq = ctx->runners->seqs; seq; seq = seq->next) {
        if (strcmp(seq->id, runner_id) != 0 || seq->last == seq->persisted)
            continue;
        if (ctx->store->ops->runner_seq_set(ctx->store->impl, runner_id, seq->last) == STORE_OK)
            seq->persisted = seq->last;
        else
            log_warn("runner %s: cannot persist runner_seq %llu yet", runner_id,
                     (unsigned long long)seq->last);
        return;
    }
}

static void on_command_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct pending_command *command = arg;

    pending_complete(command->ctx->runners, command, 0, "the runner did not answer in time");
}

uint64_t runner_command_send(struct rpc_context *ctx, const char *runner_id,
                             Compass__V1__SessionsResponse *message, runner_command_done done,
                             void *arg)
{
    struct runner_registry *runners = ctx->runners;
    struct runner_link *link = link_find(runners, runner_id);
    struct pending_command *command;
    char request_id[24];
    struct timeval timeout;

    if (!link)
        return 0;
    command = calloc(1, sizeof(*command));
    if (!command)
        return 0;
    command->id = ++runners->next_id;
    command->runner = link;
    command->done = done;
    command->arg = arg;
    command->ctx = ctx;
    command->timer = evtimer_new(runners->base, on_command_timeout, command);
    snprintf(request_id, sizeof(request_id), "%" PRIu64, command->id);
    message->request_id = request_id;
    if (!command->timer || grpc_call_send(link->call, &message->base) != 0) {
        if (command->timer)
            event_free(command->timer);
        free(command);
        return 0;
    }
    timeout.tv_sec = ctx->config.command_timeout_ms / 1000;
    timeout.tv_usec = (ctx->config.command_timeout_ms % 1000) * 1000;
    event_add(command->timer, &timeout);
    command->next = runners->pending;
    if (command->next)
        command->next->prev = command;
    runners->pending = command;
    return command->id;
}

void runner_command_abandon(struct rpc_context *ctx, uint64_t command_id)
{
    for (struct pending_command *c = ctx->runners->pending; c; c = c->next)
        if (c->id == command_id) {
            pending_free(ctx->runners, c);
            return;
        }
}

/* --- RunnerService/Sessions --------------------------------------------- */

static void link_drop(struct rpc_context *ctx, struct runner_link *link, const char *why)
{
    struct runner_registry *runners = ctx->runners;
    struct pending_command *command, *next;

    for (command = runners->pending; command; command = next) {
        next = command->next;
        if (command->runner == link)
            pending_complete(runners, command, 0, why);
    }
    if (link->prev)
        link->prev->next = link->next;
    else
        runners->links = link->next;
    if (link->next)
        link->next->prev = link->prev;
}

static void sessions_on_start(struct grpc_call *call)
{
    struct rpc_context *ctx = grpc_call_door_data(call);
    struct store_subject subject;
    struct runner_link *link, *old;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    link = calloc(1, sizeof(*link));
    if (!link) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    old = link_find(ctx->runners, subject.id);
    if (old) {
        /* One control stream per Runner: the newest wins. */
        log_info("runner %s opened a second Sessions stream; closing the first", subject.id);
        link_drop(ctx, old, "the runner's control stream was replaced");
        grpc_call_set_user(old->call, NULL);
        grpc_call_finish(old->call, GRPC_STATUS_ABORTED,
                         "replaced by a newer Sessions stream from the same runner");
        free(old);
    }
    snprintf(link->id, sizeof(link->id), "%s", subject.id);
    link->call = call;
    link->next = ctx->runners->links;
    if (link->next)
        link->next->prev = link;
    ctx->runners->links = link;
    grpc_call_set_user(call, link);
    log_info("runner %s connected its Sessions stream", link->id);
}

/* The Runner's report of the sessions it hosts: each bound one is live
 * again, and its subscribers hear its current state. */
static void sessions_report(struct rpc_context *ctx, struct runner_link *link,
                            const Compass__V1__SessionsRequest *report)
{
    for (size_t i = 0; i < report->n_live_sessions; i++) {
        const char *sid = report->live_sessions[i];
        struct session *s;
        if (gate_session_bound(ctx->store, link->id, sid) != GATE_BOUND)
            continue; /* not this Runner's (or unverifiable): never adopt it */
        if (hub_live_session(ctx, sid, &s) != HUB_LIVE)
            continue; /* ended (never reopened), or unverifiable */
        session_bind(s, link->id);
        hub_announce_derived(ctx, s);
    }
}

static void sessions_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    struct rpc_context *ctx = grpc_call_door_data(call);
    const Compass__V1__SessionsRequest *request = (const Compass__V1__SessionsRequest *)message;
    struct runner_link *link = grpc_call_user(call);
    char *end;
    uint64_t id;

    if (!link)
        return;
    if (request->request_id[0] == '\0') {
        sessions_report(ctx, link, request);
        return;
    }
    id = strtoull(request->request_id, &end, 10);
    for (struct pending_command *c = ctx->runners->pending; c; c = c->next)
        if (*end == '\0' && c->id == id && c->runner == link) {
            pending_complete(ctx->runners, c, request->ok, request->error);
            return;
        }
    log_debug("runner %s answered unknown request %s", link->id, request->request_id);
}

static void sessions_on_half_close(struct grpc_call *call)
{
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void sessions_on_close(struct grpc_call *call)
{
    struct rpc_context *ctx = grpc_call_door_data(call);
    struct runner_link *link = grpc_call_user(call);

    if (!link)
        return;
    log_info("runner %s disconnected its Sessions stream", link->id);
    link_drop(ctx, link, "the runner disconnected");
    /* Every session this Runner hosts is now unreachable, except those
     * whose agent already stopped: "stopped" stays their last word. */
    for (struct session *s = session_first(ctx->sessions); s; s = session_next(s)) {
        const char *binding = session_binding(s);
        enum arbiter_state state = arbiter_state(session_arbiter(s));
        if (binding && strcmp(binding, link->id) == 0 && state != ARBITER_STOPPED &&
            state != ARBITER_ERRORED)
            hub_announce_state(ctx, s, ARBITER_DISCONNECTED);
    }
    free(link);
}

const struct grpc_method runner_sessions_method = {
    .path = "/compass.v1.RunnerService/Sessions",
    .kind = GRPC_METHOD_BIDI_STREAMING,
    .request_type = &compass__v1__sessions_request__descriptor,
    .on_start = sessions_on_start,
    .on_message = sessions_on_message,
    .on_half_close = sessions_on_half_close,
    .on_close = sessions_on_close,
    .needs_caller = 1,
};
