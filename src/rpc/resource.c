/* ResourceService, the producer door: hook shims and Runners spawn
 * terminals and agent sessions and append AgentEventsJsonlV1 records.
 * Served on both doors.  Errors carry a stable name first in grpc-message
 * ("RECORD_INVALID: ..."), see docs/protocol.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/services.pb-c.h"
#include "grpc/grpc.h"
#include "hub/hub.h"
#include "hub/hub_session.h"
#include "rpc/rpc.h"
#include "store/gate.h"
#include "store/store.h"

#define NATIVE_ID_MAX 128

static int native_id_valid(const char *id)
{
    size_t len = strlen(id);

    if (len == 0 || len > NATIVE_ID_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

static void finish_store_fault(struct grpc_call *call)
{
    grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
}

static void finish_produce_refusal(struct grpc_call *call, int gate_result)
{
    const struct gate_refusal *refusal = gate_produce_refusal(gate_result);

    if (!refusal)
        grpc_call_finish(call, GRPC_STATUS_INTERNAL, "internal error");
    else
        grpc_call_finish(call, refusal->status, refusal->message);
}

static void spawn_reply(struct grpc_call *call, uint64_t resource_id, const char *session_id)
{
    Compass__V1__SpawnResourceResponse response = COMPASS__V1__SPAWN_RESOURCE_RESPONSE__INIT;

    response.resource_id = resource_id;
    response.session_id = (char *)session_id;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void spawn_terminal(struct grpc_call *call, const Compass__V1__SpawnResourceRequest *request,
                           const struct store_subject *subject)
{
    struct hub *ctx = rpc_hub(call);
    struct store_container container;
    uint64_t id;
    int rv;

    if (request->container_name[0] == '\0') {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT",
                         "field 10 (container_name) is required for TERMINAL");
        return;
    }
    rv = store_container_get(ctx->store, request->container_name, &container);
    if (rv == STORE_FAULT) {
        finish_store_fault(call);
        return;
    }
    /* A terminal is registered by the Runner hosting its container. */
    if (rv != STORE_OK || !(subject->is_admin || (subject->kind == STORE_SUBJECT_RUNNER &&
                                                  strcmp(subject->id, container.runner_id) == 0))) {
        rpc_finish_named(call, GRPC_STATUS_PERMISSION_DENIED, "NOT_PRODUCER",
                         "only the runner hosting the container registers its terminals");
        return;
    }
    rv = store_terminal_create(ctx->store, request->container_name, &id);
    if (rv != STORE_OK) {
        finish_store_fault(call);
        return;
    }
    spawn_reply(call, id, "");
}

/* Names the first terminal-only field set on an AGENT_SESSION request. */
static const char *forbidden_field(const Compass__V1__SpawnResourceRequest *request)
{
    if (request->command[0])
        return "field 3 (command) is not allowed for AGENT_SESSION";
    if (request->cwd[0])
        return "field 4 (cwd) is not allowed for AGENT_SESSION";
    if (request->cols)
        return "field 5 (cols) is not allowed for AGENT_SESSION";
    if (request->rows)
        return "field 6 (rows) is not allowed for AGENT_SESSION";
    if (request->container_name[0])
        return "field 10 (container_name) is not allowed for AGENT_SESSION";
    if (request->parent == 0)
        return "field 12 (parent) is required for AGENT_SESSION";
    if (request->provider[0] == '\0')
        return "field 13 (provider) is required for AGENT_SESSION";
    return NULL;
}

static void spawn_agent_session(struct grpc_call *call,
                                const Compass__V1__SpawnResourceRequest *request,
                                const struct store_subject *subject)
{
    struct hub *ctx = rpc_hub(call);
    const char *problem = forbidden_field(request);
    struct store_resource parent;
    struct store_session existing;
    char session_id[STORE_ID_MAX];
    uint64_t id;
    int rv;

    if (problem) {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT", problem);
        return;
    }
    if (!store_id_valid(request->provider)) {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT",
                         "field 13 (provider) is not a valid identifier");
        return;
    }
    if (request->native_id[0] && !native_id_valid(request->native_id)) {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT",
                         "field 14 (native_id) must be at most 128 bytes of [A-Za-z0-9._:-]");
        return;
    }
    rv = store_resource_get(ctx->store, request->parent, &parent);
    if (rv == STORE_FAULT) {
        finish_store_fault(call);
        return;
    }
    if (rv != STORE_OK) {
        rpc_finish_named(call, GRPC_STATUS_NOT_FOUND, "PARENT_NOT_FOUND",
                         "no resource with that parent id");
        return;
    }
    if (parent.kind != STORE_RESOURCE_TERMINAL) {
        rpc_finish_named(call, GRPC_STATUS_FAILED_PRECONDITION, "PARENT_KIND_MISMATCH",
                         "the parent is not a terminal");
        return;
    }
    rv = gate_may_produce(ctx->store, subject, request->parent, NULL);
    if (rv != GATE_ALLOWED) {
        finish_produce_refusal(call, rv);
        return;
    }
    if (request->native_id[0]) {
        /* (provider, native_id) is unique: a resumed agent reuses its session. */
        rv =
            store_session_find_native(ctx->store, request->provider, request->native_id, &existing);
        if (rv == STORE_FAULT) {
            finish_store_fault(call);
            return;
        }
        if (rv == STORE_OK) {
            if (strcmp(existing.container_name, parent.container_name) != 0) {
                rpc_finish_named(call, GRPC_STATUS_ALREADY_EXISTS, "ALREADY_EXISTS",
                                 "that (provider, native_id) lives in another container");
                return;
            }
            /* A resumed agent (claude --resume) continues its session. */
            if (existing.closed &&
                hub_session_quota(ctx, rpc_stream(call), existing.agent_account_id) != 0)
                return;
            if (existing.closed &&
                store_session_reopen(ctx->store, existing.session_id) != STORE_OK) {
                finish_store_fault(call);
                return;
            }
            hub_session_bind(hub_session(ctx, existing.session_id), parent.runner_id,
                             HUB_BIND_IF_UNBOUND);
            spawn_reply(call, existing.resource_id, existing.session_id);
            return;
        }
    }
    if (hub_session_quota(ctx, rpc_stream(call), parent.agent_account_id) != 0)
        return;
    rv = store_agent_session_create(
        ctx->store, request->parent, request->provider, request->native_id,
        subject->kind == STORE_SUBJECT_ACCOUNT ? subject->id : "", &id, session_id);
    if (rv == STORE_CONFLICT) {
        rpc_finish_named(call, GRPC_STATUS_ALREADY_EXISTS, "ALREADY_EXISTS",
                         "that (provider, native_id) is taken");
        return;
    }
    if (rv != STORE_OK) {
        finish_store_fault(call);
        return;
    }
    hub_session_bind(hub_session(ctx, session_id), parent.runner_id, HUB_BIND_ALWAYS);
    spawn_reply(call, id, session_id);
}

static void spawn_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__SpawnResourceRequest *request =
        (const Compass__V1__SpawnResourceRequest *)message;
    struct store_subject subject;
    char detail[64];

    if (rpc_authenticate(call, &subject) != 0)
        return;
    switch (request->kind) {
    case COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_TERMINAL:
        spawn_terminal(call, request, &subject);
        return;
    case COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_AGENT_SESSION:
        spawn_agent_session(call, request, &subject);
        return;
    default:
        snprintf(detail, sizeof(detail), "resource kind %d", (int)request->kind);
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "UNSUPPORTED_KIND", detail);
    }
}

/* Resolves the target of a producer call: resource id, else session id,
 * else (provider, native_id).  Returns 0 with *ID set, or -1 after
 * finishing the call. */
static int resolve_target(struct grpc_call *call, uint64_t resource_id, const char *session_id,
                          const char *provider, const char *native_id, uint64_t *id)
{
    struct hub *ctx = rpc_hub(call);
    struct store_session row;
    int rv;

    if (resource_id) {
        *id = resource_id;
        return 0;
    }
    if (session_id && session_id[0])
        rv = store_session_get(ctx->store, session_id, &row);
    else if (provider && provider[0] && native_id && native_id[0])
        rv = store_session_find_native(ctx->store, provider, native_id, &row);
    else {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT",
                         "name the target: resource_id, session_id, or provider and native_id");
        return -1;
    }
    if (rv == STORE_FAULT) {
        finish_store_fault(call);
        return -1;
    }
    if (rv != STORE_OK || row.resource_id == 0) {
        finish_produce_refusal(call, GATE_NOT_FOUND);
        return -1;
    }
    *id = row.resource_id;
    return 0;
}

/* Authorizes SUBJECT to produce into ID and checks it is an open agent
 * session.  Returns 0 with *RESOURCE set, or -1 after finishing the call. */
static int producer_target(struct grpc_call *call, const struct store_subject *subject, uint64_t id,
                           struct store_resource *resource)
{
    struct hub *ctx = rpc_hub(call);
    int rv = gate_may_produce(ctx->store, subject, id, resource);

    if (rv != GATE_ALLOWED) {
        finish_produce_refusal(call, rv);
        return -1;
    }
    if (resource->kind != STORE_RESOURCE_AGENT_SESSION) {
        rpc_finish_named(call, GRPC_STATUS_FAILED_PRECONDITION, "WRONG_RESOURCE_KIND",
                         "a terminal does not take appended records");
        return -1;
    }
    if (resource->closed) {
        rpc_finish_named(call, GRPC_STATUS_FAILED_PRECONDITION, "WRONG_RESOURCE_KIND",
                         "the agent session is closed");
        return -1;
    }
    return 0;
}

/* The live session SESSION_ID of an open resource.  Returns 0 with *S set,
 * or -1 after finishing the call: a session stopped with StopAgentSession
 * takes no more records (WRONG_RESOURCE_KIND, as a closed resource). */
static int live_session_or_finish(struct grpc_call *call, const char *session_id,
                                  struct session **s)
{
    switch (hub_live_session(rpc_hub(call), session_id, s)) {
    case HUB_LIVE:
        return 0;
    case HUB_ENDED:
        rpc_finish_named(call, GRPC_STATUS_FAILED_PRECONDITION, "WRONG_RESOURCE_KIND",
                         "the agent session is closed");
        return -1;
    case HUB_FAULT:
        finish_store_fault(call);
        return -1;
    case HUB_NOMEM:
        break;
    }
    rpc_finish_named(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "OVERFLOW", "out of memory");
    return -1;
}

static void append_reply(struct grpc_call *call, const struct hub_log_wait *w)
{
    Compass__V1__AppendResourceOutputResponse response =
        COMPASS__V1__APPEND_RESOURCE_OUTPUT_RESPONSE__INIT;

    response.first_seq = w->first_seq;
    response.last_seq = w->last_seq;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* A call whose records a replicated log has not acknowledged yet: it is
 * answered when they are stored, never before (the shim then forgets
 * them), and freed by append_on_close. */
struct append_pending {
    struct hub_log_wait w; /* first: done gets it */
    struct grpc_call *call;
};

static void append_stored(struct hub_log_wait *w, int ok)
{
    struct append_pending *p = (struct append_pending *)w;

    if (ok)
        append_reply(p->call, w);
    else
        grpc_call_finish(p->call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
}

static void append_on_close(struct grpc_call *call)
{
    struct append_pending *p = grpc_call_user(call);

    if (!p)
        return;
    hub_log_wait_cancel(&p->w);
    grpc_call_set_user(call, NULL);
    free(p);
}

/* An AppendResourceOutput idempotency_key's longest form. */
#define RESOURCE_KEY_MAX 128

static void append_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__AppendResourceOutputRequest *request =
        (const Compass__V1__AppendResourceOutputRequest *)message;
    struct hub *ctx = rpc_hub(call);
    struct hub_log_wait w = {0};
    struct store_subject subject;
    struct store_resource resource;
    struct append_pending *p;
    struct jsonl_batch batch;
    char error[JSONL_ERR_SIZE];
    struct session *s;
    size_t key_len;
    uint64_t id;
    int rv;

    if (rpc_authenticate(call, &subject) != 0 ||
        resolve_target(call, request->resource_id, request->session_id, request->provider,
                       request->native_id, &id) != 0 ||
        producer_target(call, &subject, id, &resource) != 0)
        return;
    key_len = strlen(request->idempotency_key);
    if (key_len > RESOURCE_KEY_MAX) {
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT,
                         "idempotency_key is longer than 128 bytes");
        return;
    }
    if (request->bytes.len > JSONL_MAX_CALL) {
        rpc_finish_named(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "OVERFLOW",
                         "a call carries at most 65536 bytes");
        return;
    }
    rv = jsonl_parse_batch(request->bytes.data, request->bytes.len, &batch, error);
    if (rv == JSONL_OVERFLOW) {
        rpc_finish_named(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "OVERFLOW", error);
        return;
    }
    if (rv != JSONL_OK) {
        rpc_finish_named(
            call, rv == JSONL_NOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INVALID_ARGUMENT,
            rv == JSONL_NOMEM ? "OVERFLOW" : "RECORD_INVALID", error);
        return;
    }
    rv = live_session_or_finish(call, resource.session_id, &s);
    if (rv != 0) {
        jsonl_batch_free(&batch);
        return;
    }
    if (!hub_log_writable(&ctx->log)) {
        jsonl_batch_free(&batch);
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    }
    if (key_len && hub_records_recall(ctx, s, request->idempotency_key, key_len, &w)) {
        /* A retry of a call the log holds: nothing more is stored. */
        jsonl_batch_free(&batch);
        append_reply(call, &w);
        return;
    }
    if (key_len)
        hub_log_origin_key(&ctx->log, request->idempotency_key, key_len);
    rv = hub_append_records(ctx, s, &batch, &w);
    if (key_len)
        hub_log_origin(&ctx->log, NULL, 0);
    jsonl_batch_free(&batch);
    if (rv != 0) {
        rpc_finish_named(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "OVERFLOW", "out of memory");
        return;
    }
    hub_session_bind(s, resource.runner_id, HUB_BIND_IF_UNBOUND);
    if (hub_log_stored(&ctx->log, s, &w)) {
        append_reply(call, &w);
        return;
    }
    /* A replicated log: OK only once JetStream holds the records. */
    p = malloc(sizeof(*p));
    if (!p) {
        rpc_finish_named(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "OVERFLOW", "out of memory");
        return;
    }
    p->w = w;
    p->w.done = append_stored;
    p->call = call;
    grpc_call_set_user(call, p);
    hub_log_wait(&ctx->log, s, &p->w);
}

static void close_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__CloseResourceRequest *request =
        (const Compass__V1__CloseResourceRequest *)message;
    struct hub *ctx = rpc_hub(call);
    static const Compass__V1__CloseResourceResponse response =
        COMPASS__V1__CLOSE_RESOURCE_RESPONSE__INIT;
    struct store_subject subject;
    struct store_resource resource;
    uint64_t id;
    int rv;

    if (rpc_authenticate(call, &subject) != 0 ||
        resolve_target(call, request->resource_id, request->session_id, request->provider,
                       request->native_id, &id) != 0)
        return;
    rv = gate_may_produce(ctx->store, &subject, id, &resource);
    if (rv != GATE_ALLOWED) {
        finish_produce_refusal(call, rv);
        return;
    }
    if (store_resource_close(ctx->store, id) == STORE_FAULT) {
        finish_store_fault(call);
        return;
    }
    if (resource.kind == STORE_RESOURCE_AGENT_SESSION)
        hub_session_close(ctx, resource.session_id);
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void report_state_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__ReportAgentStateRequest *request =
        (const Compass__V1__ReportAgentStateRequest *)message;
    struct hub *ctx = rpc_hub(call);
    static const Compass__V1__ReportAgentStateResponse response =
        COMPASS__V1__REPORT_AGENT_STATE_RESPONSE__INIT;
    struct store_subject subject;
    struct store_resource resource;
    struct session *s;
    uint64_t id;
    int state = arbiter_state_from_word(request->state);

    if (rpc_authenticate(call, &subject) != 0 ||
        resolve_target(call, request->resource_id, request->session_id, NULL, NULL, &id) != 0 ||
        producer_target(call, &subject, id, &resource) != 0)
        return;
    if (state < 0) {
        rpc_finish_named(call, GRPC_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT",
                         "unknown state word");
        return;
    }
    if (live_session_or_finish(call, resource.session_id, &s) != 0)
        return;
    hub_report_hook_state(ctx, s, state);
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static const struct grpc_method resource_methods[] = {
    {
        .path = "/compass.v1.ResourceService/SpawnResource",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__spawn_resource_request__descriptor,
        .response_type = &compass__v1__spawn_resource_response__descriptor,
        .on_message = spawn_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.ResourceService/AppendResourceOutput",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__append_resource_output_request__descriptor,
        .response_type = &compass__v1__append_resource_output_response__descriptor,
        .on_message = append_on_message,
        .on_close = append_on_close,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.ResourceService/CloseResource",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__close_resource_request__descriptor,
        .response_type = &compass__v1__close_resource_response__descriptor,
        .on_message = close_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.ResourceService/ReportAgentState",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__report_agent_state_request__descriptor,
        .response_type = &compass__v1__report_agent_state_response__descriptor,
        .on_message = report_state_on_message,
        .needs_caller = 1,
    },
};

int resource_register(struct rpc_context *rpc, struct grpc_door *door)
{
    for (size_t i = 0; i < sizeof(resource_methods) / sizeof(resource_methods[0]); i++)
        if (grpc_door_register(door, &resource_methods[i]) != 0)
            return -1;
    return 0;
}
