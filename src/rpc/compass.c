/* CompassService's unary methods (the public door), and its registration.
 * The streams live in compass_stream.c. */

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc.h"
#include "hub/hub.h"
#include "hub/hub_session.h"
#include "rpc/rpc.h"
#include "hub/runner_control.h"
#include "store/gate.h"
#include "store/store.h"

#define AGENTHUB_API_VERSION    "compass.v1"
#define AGENTHUB_SERVER_VERSION "0.1.0"
#define AGENTHUB_PRODUCT        "agenthubd"
#define FEATURE_RESOURCE_KINDS  0x4000u

/* A unary call waiting for a Runner's acknowledgement. */
struct command_wait {
    struct grpc_call *call;
    struct runner_command *command;
};

/* The status a caller hears for a Runner's refusal with RunnerErrorCode
 * CODE.  Every refusal means the command was not carried out; the classes
 * a Runner tells apart keep their own status, the rest (INTERNAL, none) are
 * UNAVAILABLE: a retry may succeed and cannot duplicate it. */
static int refusal_status(int code)
{
    switch (code) {
    case COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_ALREADY_RUNNING:
        return GRPC_STATUS_ALREADY_EXISTS;
    case COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_NOT_FOUND:
        /* The session exists here; its Runner is not running it. */
        return GRPC_STATUS_FAILED_PRECONDITION;
    case COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_RESOURCE_EXHAUSTED:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_FAILED_PRECONDITION:
        return GRPC_STATUS_FAILED_PRECONDITION;
    default:
        return GRPC_STATUS_UNAVAILABLE;
    }
}

/* What the caller is told, by what became of its command (docs/limits.md):
 * UNAVAILABLE (and a refusal's own status) means it was not carried out and
 * a retry cannot duplicate it; DEADLINE_EXCEEDED and UNKNOWN mean it reached
 * the Runner unanswered and may have been carried out. */
static void command_wait_done(void *arg, enum runner_outcome outcome, int code, const char *detail)
{
    struct command_wait *wait = arg;
    char message[300];

    wait->command = NULL;
    switch (outcome) {
    case RUNNER_ACKED: {
        static const Compass__V1__SkipBatchWindowResponse empty =
            COMPASS__V1__SKIP_BATCH_WINDOW_RESPONSE__INIT;
        /* Every acknowledged command's response is an empty message. */
        grpc_call_send(wait->call, &empty.base);
        grpc_call_finish(wait->call, GRPC_STATUS_OK, NULL);
        return;
    }
    case RUNNER_REFUSED:
        snprintf(message, sizeof(message), "control dispatch failed: %.200s",
                 detail && detail[0] ? detail : "the runner refused the command");
        grpc_call_finish(wait->call, refusal_status(code), message);
        return;
    case RUNNER_NOT_SENT:
        snprintf(message, sizeof(message), "control dispatch failed: not delivered: %.200s",
                 detail);
        grpc_call_finish(wait->call, GRPC_STATUS_UNAVAILABLE, message);
        return;
    case RUNNER_UNANSWERED:
        grpc_call_finish(wait->call, GRPC_STATUS_DEADLINE_EXCEEDED,
                         "control dispatch unconfirmed: sent to the runner, which did not answer "
                         "in time; it may have been delivered");
        return;
    case RUNNER_LOST:
        break;
    }
    grpc_call_finish(wait->call, GRPC_STATUS_UNKNOWN,
                     "control dispatch unconfirmed: sent to the runner, whose control stream "
                     "ended before it answered; it may have been delivered");
}

static void command_wait_on_close(struct grpc_call *call)
{
    struct command_wait *wait = grpc_call_user(call);
    struct hub *ctx = rpc_hub(call);

    if (!wait)
        return;
    if (wait->command)
        runner_command_abandon(ctx, wait->command);
    free(wait);
}

/* Sends COMMAND for ROW's session to its Runner and parks CALL until the
 * Runner answers. */
static void dispatch_and_wait(struct grpc_call *call, const struct store_session *row,
                              Compass__V1__SessionsResponse *command)
{
    struct hub *ctx = rpc_hub(call);
    struct command_wait *wait = calloc(1, sizeof(*wait));
    enum runner_send_rc rv;

    if (!wait) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    wait->call = call;
    rv = runner_command_send(ctx, row->runner_id, command, command_wait_done, wait, &wait->command);
    if (rv != RUNNER_SEND_QUEUED) {
        free(wait);
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE,
                         rv == RUNNER_SEND_NOT_CONNECTED
                             ? "control dispatch failed: the session's runner is not connected"
                         : rv == RUNNER_SEND_QUEUE_FULL
                             ? "control dispatch failed: not delivered: the runner's command "
                               "queue is full"
                             : "control dispatch failed: not delivered: out of memory");
        return;
    }
    grpc_call_set_user(call, wait);
}

static int require_runner_door(struct grpc_call *call)
{
    if (!rpc_config(call)->has_runner_door) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "this server has no Runner door");
        return -1;
    }
    return 0;
}

/* The checks every owner's control call makes, in this order: the
 * Runner door, the caller, a session id, then owner-or-admin (NOT_FOUND for
 * unknown and forbidden alike).  Returns 0 with *ROW filled; 1, the call
 * still open, when the gate says NOT_FOUND and UNKNOWN_OK is set; else -1
 * after finishing the call. */
static int control_precheck(struct grpc_call *call, const char *session_id,
                            struct store_session *row, int unknown_ok)
{
    struct hub *ctx = rpc_hub(call);
    struct store_subject subject;
    int rv;

    if (require_runner_door(call) != 0 || rpc_authenticate(call, &subject) != 0)
        return -1;
    if (session_id[0] == '\0') {
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, "session_id is required");
        return -1;
    }
    rv = gate_may_control(ctx->store, &subject, session_id, row);
    if (rv == GATE_NOT_FOUND && unknown_ok)
        return 1;
    if (rv != GATE_ALLOWED) {
        rpc_finish_gate_refusal(call, rv);
        return -1;
    }
    return 0;
}

static void skip_batch_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__SkipBatchWindowRequest *request =
        (const Compass__V1__SkipBatchWindowRequest *)message;
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__SkipBatchWindowRequest start_now = COMPASS__V1__SKIP_BATCH_WINDOW_REQUEST__INIT;
    struct store_session row;

    if (control_precheck(call, request->session_id, &row, 0) != 0)
        return;
    start_now.session_id = row.session_id;
    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START_NOW;
    command.start_now = &start_now;
    dispatch_and_wait(call, &row, &command);
}

static void send_message_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__SendAgentMessageRequest *request =
        (const Compass__V1__SendAgentMessageRequest *)message;
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__DispatchControl dispatch = COMPASS__V1__DISPATCH_CONTROL__INIT;
    Compass__V1__AgentControl op = COMPASS__V1__AGENT_CONTROL__INIT;
    Compass__V1__PromptControl prompt = COMPASS__V1__PROMPT_CONTROL__INIT;
    struct store_session row;

    if (control_precheck(call, request->session_id, &row, 0) != 0)
        return;
    /* The owner's text is input for the agent, as its user would type it:
     * a prompt (docs/protocol.md says why not a steer or a deliver). */
    prompt.input = request->text;
    op.control_case = COMPASS__V1__AGENT_CONTROL__CONTROL_PROMPT;
    op.prompt = &prompt;
    dispatch.session_id = row.session_id;
    dispatch.op = &op;
    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_DELIVER_CONTROL;
    command.deliver_control = &dispatch;
    dispatch_and_wait(call, &row, &command);
}

static void start_session_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__StartAgentSessionRequest *request =
        (const Compass__V1__StartAgentSessionRequest *)message;
    struct hub *ctx = rpc_hub(call);
    Compass__V1__StartAgentSessionResponse response =
        COMPASS__V1__START_AGENT_SESSION_RESPONSE__INIT;
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__StartAgentSessionRequest start = COMPASS__V1__START_AGENT_SESSION_REQUEST__INIT;
    struct store_session_spec spec;
    struct store_container container;
    struct store_subject subject;
    char session_id[STORE_ID_MAX];
    int rv;

    if (require_runner_door(call) != 0 || rpc_authenticate(call, &subject) != 0)
        return;
    if (request->container_name[0] == '\0') {
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, "container_name is required");
        return;
    }
    if (request->resume_session_id[0] != '\0') {
        grpc_call_finish(call, GRPC_STATUS_UNIMPLEMENTED,
                         "resume_session_id is not supported by this server");
        return;
    }
    rv = gate_may_start(ctx->store, &subject, request->container_name, &container);
    if (rv == GATE_FAULT) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
    if (rv != GATE_ALLOWED) {
        grpc_call_finish(call, GRPC_STATUS_NOT_FOUND, "container not found");
        return;
    }
    if (hub_session_quota(ctx, rpc_stream(call), container.agent_account_id) != 0)
        return;
    memset(&spec, 0, sizeof(spec));
    snprintf(spec.container_name, sizeof(spec.container_name), "%s", request->container_name);
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "%s", subject.id);
    rv = store_session_create(ctx->store, &spec, session_id);
    if (rv != STORE_OK) {
        grpc_call_finish(call, rv == STORE_FAULT ? GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_INTERNAL,
                         rv == STORE_FAULT ? GATE_FAULT_MESSAGE : "cannot create the session");
        return;
    }
    hub_session_bind(hub_session(ctx, session_id), container.runner_id, HUB_BIND_ALWAYS);
    /* The Runner learns at once when it is connected; otherwise from its
     * next report.  The session exists either way. */
    start.container_name = request->container_name;
    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START;
    command.start = &start;
    command.session_id = session_id;
    runner_command_send(ctx, container.runner_id, &command, NULL, NULL, NULL);
    response.session_id = session_id;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void stop_session_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__StopAgentSessionRequest *request =
        (const Compass__V1__StopAgentSessionRequest *)message;
    struct hub *ctx = rpc_hub(call);
    static const Compass__V1__StopAgentSessionResponse response =
        COMPASS__V1__STOP_AGENT_SESSION_RESPONSE__INIT;
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__StopAgentSessionRequest stop = COMPASS__V1__STOP_AGENT_SESSION_REQUEST__INIT;
    struct store_session row;
    int rv;

    /* Stop is idempotent, as compass has it: afterwards no session of that
     * id that the caller controls runs.  One the caller may not control is
     * answered as an unknown one, so both succeed and nothing is stopped
     * (docs/protocol.md says why not NOT_FOUND). */
    rv = control_precheck(call, request->session_id, &row, 1);
    if (rv < 0)
        return;
    if (rv > 0) {
        grpc_call_send(call, &response.base);
        grpc_call_finish(call, GRPC_STATUS_OK, NULL);
        return;
    }
    rv = store_session_close(ctx->store, row.session_id);
    if (rv == STORE_FAULT) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
    stop.session_id = row.session_id;
    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STOP;
    command.stop = &stop;
    runner_command_send(ctx, row.runner_id, &command, NULL, NULL, NULL);
    hub_session_stop(ctx, row.session_id);
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* Fills STATUS for ROW: the live derived state when the session is in the
 * registry, STOPPED when closed, else UNSPECIFIED; last_seq from the live or
 * retained log (0 when none is held); caller_may_control from the gate's
 * control decision for SUBJECT.  ROW passed the view gate, so its container
 * and owner may be shown to SUBJECT. */
static void status_from_row(struct hub *ctx, const struct store_subject *subject,
                            const struct store_session *row,
                            Compass__V1__AgentSessionStatus *status)
{
    struct hub_session_view view;

    status->session_id = (char *)row->session_id;
    status->agent_account_id = (char *)row->agent_account_id;
    status->provider = (char *)row->provider;
    status->native_id = (char *)row->native_id;
    status->container = (char *)row->container_name;
    status->owner = (char *)row->owner_account_id;
    status->caller_may_control = gate_may_control_loaded(subject, row) == GATE_ALLOWED;
    hub_session_view(ctx, row->session_id, row->closed, &view);
    status->last_seq = view.last_seq;
    status->state = view.state;
}

struct status_list {
    struct hub *ctx;
    const struct store_subject *subject;
    struct store_session *rows;
    size_t count;
    size_t cap;
    int fault;
};

static int collect_visible(const struct store_session *row, void *arg)
{
    struct status_list *list = arg;
    int rv = gate_may_view_loaded(list->ctx->store, list->subject, row);

    if (rv == GATE_FAULT) {
        list->fault = 1;
        return 1;
    }
    if (rv != GATE_ALLOWED)
        return 0;
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        struct store_session *rows = realloc(list->rows, cap * sizeof(*rows));
        if (!rows) {
            list->fault = 1;
            return 1;
        }
        list->rows = rows;
        list->cap = cap;
    }
    list->rows[list->count++] = *row;
    return 0;
}

/* Answers GetAgentStatus with ROW's status. */
static void status_reply_one(struct grpc_call *call, struct hub *ctx,
                             const struct store_subject *subject, const struct store_session *row)
{
    Compass__V1__GetAgentStatusResponse response = COMPASS__V1__GET_AGENT_STATUS_RESPONSE__INIT;
    Compass__V1__AgentSessionStatus status = COMPASS__V1__AGENT_SESSION_STATUS__INIT;
    Compass__V1__AgentSessionStatus *pointer = &status;

    status_from_row(ctx, subject, row, &status);
    response.n_statuses = 1;
    response.statuses = &pointer;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* A GetAgentStatus of one session whose copy this cluster node does not
 * read now: answered once the copy is current (or, when it cannot be, from
 * what the bus said), freed by get_status_on_close. */
struct status_pending {
    struct hub_log_wait w; /* first: done gets it */
    struct grpc_call *call;
    struct hub *ctx;
    struct store_subject subject;
    struct store_session row;
};

static void status_ready(struct hub_log_wait *w, int ok)
{
    struct status_pending *p = (struct status_pending *)w;

    status_reply_one(p->call, p->ctx, &p->subject, &p->row);
}

static void get_status_on_close(struct grpc_call *call)
{
    struct status_pending *p = grpc_call_user(call);

    if (!p)
        return;
    hub_log_wait_cancel(&p->w);
    grpc_call_set_user(call, NULL);
    free(p);
}

/* 1 when ROW's session is read first (the call then answers later). */
static int status_prepare(struct grpc_call *call, struct hub *ctx,
                          const struct store_subject *subject, const struct store_session *row)
{
    size_t n = strlen(row->session_id);
    struct session *s = session_lookup(ctx->sessions, row->session_id, n);
    struct status_pending *p;
    uint64_t newest;

    /* A live session this node holds nothing of yet still has a log. */
    if (!s && !row->closed && session_open(ctx->sessions, row->session_id, n, &s) < 0)
        s = NULL;
    if (!s || hub_log_reads(&ctx->log, s, &newest) || !(p = calloc(1, sizeof(*p))))
        return 0;
    p->call = call;
    p->ctx = ctx;
    p->subject = *subject;
    p->row = *row;
    p->w.done = status_ready;
    grpc_call_set_user(call, p);
    hub_log_prepare(&ctx->log, s, &p->w);
    return 1;
}

static void get_status_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__GetAgentStatusRequest *request =
        (const Compass__V1__GetAgentStatusRequest *)message;
    struct hub *ctx = rpc_hub(call);
    Compass__V1__GetAgentStatusResponse response = COMPASS__V1__GET_AGENT_STATUS_RESPONSE__INIT;
    struct status_list list = {ctx, NULL, NULL, 0, 0, 0};
    struct store_session_filter filter;
    Compass__V1__AgentSessionStatus *statuses = NULL, **pointers = NULL;
    struct store_subject subject;
    int rv;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    list.subject = &subject;
    if (request->session_id[0]) {
        struct store_session row;
        rv = gate_may_view(ctx->store, &subject, request->session_id, &row);
        if (rv != GATE_ALLOWED) {
            rpc_finish_gate_refusal(call, rv);
            return;
        }
        /* One session asked for: a cluster node reading sessions on demand
         * answers from a current copy. */
        if (status_prepare(call, ctx, &subject, &row))
            return;
        collect_visible(&row, &list);
    } else {
        memset(&filter, 0, sizeof(filter));
        rv = store_session_list(ctx->store, &filter, collect_visible, &list);
        if (rv == STORE_FAULT)
            list.fault = 1;
    }
    if (list.fault) {
        free(list.rows);
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
    if (list.count) {
        statuses = calloc(list.count, sizeof(*statuses));
        pointers = calloc(list.count, sizeof(*pointers));
    }
    if (list.count && (!statuses || !pointers)) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        for (size_t i = 0; i < list.count; i++) {
            compass__v1__agent_session_status__init(&statuses[i]);
            status_from_row(ctx, &subject, &list.rows[i], &statuses[i]);
            pointers[i] = &statuses[i];
        }
        response.n_statuses = list.count;
        response.statuses = pointers;
        grpc_call_send(call, &response.base);
        grpc_call_finish(call, GRPC_STATUS_OK, NULL);
    }
    free(statuses);
    free(pointers);
    free(list.rows);
}

static void server_info_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    Compass__V1__GetServerInfoResponse response = COMPASS__V1__GET_SERVER_INFO_RESPONSE__INIT;
    struct store_subject subject;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    response.version = AGENTHUB_SERVER_VERSION;
    response.api_version = AGENTHUB_API_VERSION;
    response.features = FEATURE_RESOURCE_KINDS;
    response.product = AGENTHUB_PRODUCT;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void whoami_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    Compass__V1__WhoAmIResponse response = COMPASS__V1__WHO_AM_IRESPONSE__INIT;
    struct store_subject subject;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    response.account_id = subject.id;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static const struct grpc_method compass_unary_methods[] = {
    {
        .path = "/compass.v1.CompassService/SkipBatchWindow",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__skip_batch_window_request__descriptor,
        .response_type = &compass__v1__skip_batch_window_response__descriptor,
        .on_message = skip_batch_on_message,
        .on_close = command_wait_on_close,
        .needs_caller = 1,
        .door_flags = RPC_NEEDS_RUNNER_DOOR,
    },
    {
        .path = "/compass.v1.CompassService/SendAgentMessage",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__send_agent_message_request__descriptor,
        .response_type = &compass__v1__send_agent_message_response__descriptor,
        .on_message = send_message_on_message,
        .on_close = command_wait_on_close,
        .needs_caller = 1,
        .door_flags = RPC_NEEDS_RUNNER_DOOR,
    },
    {
        .path = "/compass.v1.CompassService/StartAgentSession",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__start_agent_session_request__descriptor,
        .response_type = &compass__v1__start_agent_session_response__descriptor,
        .on_message = start_session_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.CompassService/StopAgentSession",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__stop_agent_session_request__descriptor,
        .response_type = &compass__v1__stop_agent_session_response__descriptor,
        .on_message = stop_session_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.CompassService/GetAgentStatus",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__get_agent_status_request__descriptor,
        .response_type = &compass__v1__get_agent_status_response__descriptor,
        .on_message = get_status_on_message,
        .on_close = get_status_on_close,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.CompassService/GetServerInfo",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__get_server_info_request__descriptor,
        .response_type = &compass__v1__get_server_info_response__descriptor,
        .on_message = server_info_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.CompassService/WhoAmI",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__who_am_irequest__descriptor,
        .response_type = &compass__v1__who_am_iresponse__descriptor,
        .on_message = whoami_on_message,
        .needs_caller = 1,
    },
};

int compass_register(struct rpc_context *rpc, struct grpc_door *door)
{
    if (compass_stream_register(rpc, door) != 0 || compass_tokens_register(rpc, door) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(compass_unary_methods) / sizeof(compass_unary_methods[0]); i++)
        if (grpc_door_register(door, &compass_unary_methods[i]) != 0)
            return -1;
    return 0;
}
