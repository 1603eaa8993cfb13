/* The wire shared with compass.v1, held as a table.
 *
 * Every message and enum agenthub defines under a name compass.v1 also
 * uses must carry compass's field numbers, types and meanings; agenthub's
 * own fields (marked " +") sit at numbers compass does not use.  This suite
 * checks the generated protobuf-c descriptors against the table, field by
 * field and with nothing extra, so an edit of proto/ that changes the wire
 * fails here (and the table, and docs/protocol.md, must change with it).
 *
 * A row reads "[repeated ]TYPE NAME = NUMBER[ in ONEOF][ +]".  protobuf-c
 * keeps no oneof names, so for " in ONEOF" only the membership is checked. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"

#define ROWS_MAX 16

struct shared {
    const char *name;
    const ProtobufCMessageDescriptor *message;
    const ProtobufCEnumDescriptor *enumeration;
    const char *rows[ROWS_MAX];
};

static const struct shared shared[] = {
    {"AgentPlanEntry",
     &compass__v1__agent_plan_entry__descriptor,
     NULL,
     {"string content = 1", "AgentPlanEntryStatus status = 2", NULL}},
    {"SessionAssistantText",
     &compass__v1__session_assistant_text__descriptor,
     NULL,
     {"string text = 1", "string message_id = 2", NULL}},
    {"SessionThinking",
     &compass__v1__session_thinking__descriptor,
     NULL,
     {"string text = 1", "string message_id = 2", NULL}},
    {"SessionToolCall",
     &compass__v1__session_tool_call__descriptor,
     NULL,
     {"string tool_call_id = 1", "string title = 2", "AgentToolCallStatus status = 3", NULL}},
    {"SessionToolCallUpdate",
     &compass__v1__session_tool_call_update__descriptor,
     NULL,
     {"string tool_call_id = 1", "AgentToolCallStatus status = 2", "string output = 3", NULL}},
    {"SessionPlan",
     &compass__v1__session_plan__descriptor,
     NULL,
     {"repeated AgentPlanEntry entries = 1", NULL}},
    {"SessionNotice", &compass__v1__session_notice__descriptor, NULL, {"string text = 1", NULL}},
    {"SessionEvent",
     &compass__v1__session_event__descriptor,
     NULL,
     {"string event_id = 1", "int64 at_unix_ms = 2",
      "SessionAssistantText assistant_text = 3 in event", "SessionThinking thinking = 4 in event",
      "SessionToolCall tool_call = 5 in event",
      "SessionToolCallUpdate tool_call_update = 6 in event", "SessionPlan plan = 7 in event",
      "SessionNotice notice = 8 in event", "SessionBatchPending batch_pending = 100 in event +",
      "AgentRecord record = 101 in event +", NULL}},
    {"SessionFrame",
     &compass__v1__session_frame__descriptor,
     NULL,
     {"AgentSessionState state = 1", "SessionEvent typed_event = 2", NULL}},
    {"TranscriptEntry",
     &compass__v1__transcript_entry__descriptor,
     NULL,
     {"string entry_json = 1", "bool checkpoint = 2", "uint64 entry_seq = 3", NULL}},
    {"ReplayCompleteAck", &compass__v1__replay_complete_ack__descriptor, NULL, {NULL}},
    {"ControlAck",
     &compass__v1__control_ack__descriptor,
     NULL,
     {"uint64 acked_seq = 1", "repeated uint64 applied_above = 2", NULL}},
    {"DeliveryAck", &compass__v1__delivery_ack__descriptor, NULL, {"string message_id = 1", NULL}},
    {"AgentFrame",
     &compass__v1__agent_frame__descriptor,
     NULL,
     {"SessionFrame session = 3 in frame", "ReplayCompleteAck replay_complete_ack = 4 in frame",
      "ControlAck control_ack = 5 in frame", "DeliveryAck delivery_ack = 6 in frame",
      "TranscriptEntry transcript_entry = 7 in frame", NULL}},
    {"PromptControl", &compass__v1__prompt_control__descriptor, NULL, {"string input = 1", NULL}},
    {"AgentControl",
     &compass__v1__agent_control__descriptor,
     NULL,
     {"PromptControl prompt = 1 in control", "uint64 control_seq = 8", NULL}},
    {"PublishEventsRequest",
     &compass__v1__publish_events_request__descriptor,
     NULL,
     {"uint64 runner_seq = 1", "string session_id = 2", "AgentFrame frame = 3",
      "string idempotency_key = 4", NULL}},
    {"PublishEventsResponse", &compass__v1__publish_events_response__descriptor, NULL, {NULL}},
    {"AgentSessionFrame",
     &compass__v1__agent_session_frame__descriptor,
     NULL,
     {"string session_id = 1", "SessionEvent event = 2", "AgentSessionState state = 3",
      "uint64 seq = 100 +", "int64 at_unix_ms = 101 +", NULL}},
    {"AgentSessionState",
     NULL,
     &compass__v1__agent_session_state__descriptor,
     {"AGENT_SESSION_STATE_UNSPECIFIED = 0", "AGENT_SESSION_STATE_STARTING = 1",
      "AGENT_SESSION_STATE_READY = 2", "AGENT_SESSION_STATE_WORKING = 3",
      "AGENT_SESSION_STATE_STOPPED = 4", "AGENT_SESSION_STATE_ERRORED = 5",
      "AGENT_SESSION_STATE_DISCONNECTED = 6", "AGENT_SESSION_STATE_BLOCKED = 7 +",
      "AGENT_SESSION_STATE_DONE = 8 +", "AGENT_SESSION_STATE_IDLE = 9 +", NULL}},
    {"AgentToolCallStatus",
     NULL,
     &compass__v1__agent_tool_call_status__descriptor,
     {"AGENT_TOOL_CALL_STATUS_UNSPECIFIED = 0", "AGENT_TOOL_CALL_STATUS_PENDING = 1",
      "AGENT_TOOL_CALL_STATUS_IN_PROGRESS = 2", "AGENT_TOOL_CALL_STATUS_COMPLETED = 3",
      "AGENT_TOOL_CALL_STATUS_FAILED = 4", NULL}},
    {"AgentPlanEntryStatus",
     NULL,
     &compass__v1__agent_plan_entry_status__descriptor,
     {"AGENT_PLAN_ENTRY_STATUS_UNSPECIFIED = 0", "AGENT_PLAN_ENTRY_STATUS_PENDING = 1",
      "AGENT_PLAN_ENTRY_STATUS_IN_PROGRESS = 2", "AGENT_PLAN_ENTRY_STATUS_COMPLETED = 3", NULL}},
    {"SubscribeAgentSessionRequest",
     &compass__v1__subscribe_agent_session_request__descriptor,
     NULL,
     {"string session_id = 1", "uint64 since_seq = 100 +", "uint32 tail = 101 +",
      "bool agenthub_events = 102 +", NULL}},
    {"SubscribeEventsRequest",
     &compass__v1__subscribe_events_request__descriptor,
     NULL,
     {"uint64 since_seq = 1", "uint64 instance_epoch = 2", "bool agenthub_payloads = 100 +", NULL}},
    {"ResyncRequired", &compass__v1__resync_required__descriptor, NULL, {NULL}},
    {"ServerStatus",
     &compass__v1__server_status__descriptor,
     NULL,
     {"ServerState state = 1", NULL}},
    {"ServerState",
     NULL,
     &compass__v1__server_state__descriptor,
     {"SERVER_STATE_UNSPECIFIED = 0", "SERVER_STATE_READY = 1", NULL}},
    {"AgentSessionStatus",
     &compass__v1__agent_session_status__descriptor,
     NULL,
     {"string session_id = 1", "AgentSessionState state = 2", "string agent_account_id = 3",
      "bool caller_may_control = 100 +", "string container = 101 +", "string owner = 102 +",
      "string provider = 103 +", "string native_id = 104 +", "uint64 last_seq = 105 +", NULL}},
    {"AgentMessageChunk",
     &compass__v1__agent_message_chunk__descriptor,
     NULL,
     {"string session_id = 1", "string text = 2", "bool is_thought = 3", NULL}},
    {"AgentToolCall",
     &compass__v1__agent_tool_call__descriptor,
     NULL,
     {"string session_id = 1", "string tool_call_id = 2", "string title = 3",
      "AgentToolCallStatus status = 4", NULL}},
    {"AgentPlan",
     &compass__v1__agent_plan__descriptor,
     NULL,
     {"string session_id = 1", "repeated AgentPlanEntry entries = 2", NULL}},
    {"SubscribeEventsResponse",
     &compass__v1__subscribe_events_response__descriptor,
     NULL,
     {"uint64 seq = 1", "int64 at_unix_ms = 2", "uint64 instance_epoch = 3",
      "ServerStatus server_status = 10 in payload",
      "ResyncRequired resync_required = 11 in payload",
      "AgentSessionStatus agent_session_status = 12 in payload",
      "AgentMessageChunk agent_message_chunk = 13 in payload",
      "AgentToolCall agent_tool_call = 14 in payload", "AgentPlan agent_plan = 15 in payload",
      "SessionBatchPending session_batch_pending = 100 in payload +",
      "AgentRecord agent_record = 101 in payload +", "string session_id = 102 +", NULL}},
    {"StartAgentSessionRequest",
     &compass__v1__start_agent_session_request__descriptor,
     NULL,
     {"string container_name = 1", "string resume_session_id = 3", NULL}},
    {"StartAgentSessionResponse",
     &compass__v1__start_agent_session_response__descriptor,
     NULL,
     {"string session_id = 1", NULL}},
    {"StopAgentSessionRequest",
     &compass__v1__stop_agent_session_request__descriptor,
     NULL,
     {"string session_id = 1", NULL}},
    {"StopAgentSessionResponse",
     &compass__v1__stop_agent_session_response__descriptor,
     NULL,
     {NULL}},
    {"GetAgentStatusRequest",
     &compass__v1__get_agent_status_request__descriptor,
     NULL,
     {"string session_id = 1", NULL}},
    {"GetAgentStatusResponse",
     &compass__v1__get_agent_status_response__descriptor,
     NULL,
     {"repeated AgentSessionStatus statuses = 1", NULL}},
    {"GetServerInfoRequest", &compass__v1__get_server_info_request__descriptor, NULL, {NULL}},
    {"GetServerInfoResponse",
     &compass__v1__get_server_info_response__descriptor,
     NULL,
     {"string version = 1", "string api_version = 2", "uint64 features = 100 +",
      "string product = 101 +", NULL}},
    {"WhoAmIRequest", &compass__v1__who_am_irequest__descriptor, NULL, {NULL}},
    {"WhoAmIResponse",
     &compass__v1__who_am_iresponse__descriptor,
     NULL,
     {"string account_id = 1", NULL}},
    {"IssueTokenRequest",
     &compass__v1__issue_token_request__descriptor,
     NULL,
     {"string account_id = 1", "string runner_id = 100 +", NULL}},
    {"IssueTokenResponse",
     &compass__v1__issue_token_response__descriptor,
     NULL,
     {"string token = 1", NULL}},
    {"RevokeTokenRequest",
     &compass__v1__revoke_token_request__descriptor,
     NULL,
     {"string token = 1", NULL}},
    {"RevokeTokenResponse", &compass__v1__revoke_token_response__descriptor, NULL, {NULL}},
    {"EnrollRequest",
     &compass__v1__enroll_request__descriptor,
     NULL,
     {"string runner_id = 1", "string runner_version = 100 +", "bool resume = 101 +", NULL}},
    {"EnrollResponse",
     &compass__v1__enroll_response__descriptor,
     NULL,
     {"bool reattached = 1", "string runner_id = 100 +", "uint64 last_runner_seq = 101 +", NULL}},
    {"RunnerError",
     &compass__v1__runner_error__descriptor,
     NULL,
     {"RunnerErrorCode code = 1", "string message = 2", NULL}},
    {"DispatchControl",
     &compass__v1__dispatch_control__descriptor,
     NULL,
     {"string session_id = 1", "AgentControl op = 2", NULL}},
    {"SessionsResponse",
     &compass__v1__sessions_response__descriptor,
     NULL,
     {"string request_id = 1", "StartAgentSessionRequest start = 2 in command",
      "StopAgentSessionRequest stop = 3 in command", "GetAgentStatusRequest status = 5 in command",
      "DispatchControl deliver_control = 11 in command",
      "SkipBatchWindowRequest start_now = 100 in command +", "string session_id = 101 +", NULL}},
    {"SessionsRequest",
     &compass__v1__sessions_request__descriptor,
     NULL,
     {"string request_id = 1", "StartAgentSessionResponse start = 2 in result",
      "StopAgentSessionResponse stop = 3 in result", "GetAgentStatusResponse status = 5 in result",
      "RunnerError error = 7 in result", "repeated string live_sessions = 100 +", NULL}},
    {"RunnerErrorCode",
     NULL,
     &compass__v1__runner_error_code__descriptor,
     {"RUNNER_ERROR_CODE_UNSPECIFIED = 0", "RUNNER_ERROR_CODE_ALREADY_RUNNING = 1",
      "RUNNER_ERROR_CODE_NOT_FOUND = 2", "RUNNER_ERROR_CODE_INTERNAL = 3",
      "RUNNER_ERROR_CODE_RESOURCE_EXHAUSTED = 4", "RUNNER_ERROR_CODE_FAILED_PRECONDITION = 5",
      NULL}},
};

#define N_SHARED (sizeof(shared) / sizeof(shared[0]))

/* The proto type name of FIELD. */
static const char *type_name(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
        return "int32";
    case PROTOBUF_C_TYPE_SINT32:
        return "sint32";
    case PROTOBUF_C_TYPE_SFIXED32:
        return "sfixed32";
    case PROTOBUF_C_TYPE_INT64:
        return "int64";
    case PROTOBUF_C_TYPE_SINT64:
        return "sint64";
    case PROTOBUF_C_TYPE_SFIXED64:
        return "sfixed64";
    case PROTOBUF_C_TYPE_UINT32:
        return "uint32";
    case PROTOBUF_C_TYPE_FIXED32:
        return "fixed32";
    case PROTOBUF_C_TYPE_UINT64:
        return "uint64";
    case PROTOBUF_C_TYPE_FIXED64:
        return "fixed64";
    case PROTOBUF_C_TYPE_FLOAT:
        return "float";
    case PROTOBUF_C_TYPE_DOUBLE:
        return "double";
    case PROTOBUF_C_TYPE_BOOL:
        return "bool";
    case PROTOBUF_C_TYPE_STRING:
        return "string";
    case PROTOBUF_C_TYPE_BYTES:
        return "bytes";
    case PROTOBUF_C_TYPE_ENUM:
        return ((const ProtobufCEnumDescriptor *)field->descriptor)->short_name;
    case PROTOBUF_C_TYPE_MESSAGE:
        return ((const ProtobufCMessageDescriptor *)field->descriptor)->short_name;
    }
    return "?";
}

/* ROW without its " in ONEOF" and " +" marks, into OUT; *IN_ONEOF says
 * whether it had the first. */
static void row_core(const char *row, char *out, size_t size, int *in_oneof)
{
    const char *oneof = strstr(row, " in ");
    size_t len = oneof ? (size_t)(oneof - row) : strlen(row);

    if (!oneof && len >= 2 && strcmp(row + len - 2, " +") == 0)
        len -= 2;
    *in_oneof = oneof != NULL;
    snprintf(out, size, "%.*s", (int)len, row);
}

START_TEST(every_shared_message_has_exactly_its_fields)
{
    const struct shared *sh = &shared[_i];
    const ProtobufCMessageDescriptor *d = sh->message;
    size_t n = 0;
    unsigned oneof_offset = 0;

    if (!d)
        return; /* an enum: the next test */
    ck_assert_str_eq(d->short_name, sh->name);
    ck_assert_str_eq(d->package_name, "compass.v1");
    while (n < ROWS_MAX && sh->rows[n])
        n++;
    ck_assert_msg(d->n_fields == n, "%s has %u fields, the table %zu", sh->name, d->n_fields, n);
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        char want[160], got[160];
        int in_oneof;

        row_core(sh->rows[i], want, sizeof(want), &in_oneof);
        snprintf(got, sizeof(got), "%s%s %s = %u",
                 f->label == PROTOBUF_C_LABEL_REPEATED ? "repeated " : "", type_name(f), f->name,
                 f->id);
        ck_assert_msg(strcmp(got, want) == 0, "%s: field %u is \"%s\", the table says \"%s\"",
                      sh->name, i, got, want);
        ck_assert_msg(!!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) == in_oneof,
                      "%s.%s: oneof membership differs from the table", sh->name, f->name);
        /* The shared messages have one oneof each at most. */
        if (in_oneof) {
            if (!oneof_offset)
                oneof_offset = f->quantifier_offset;
            ck_assert_uint_eq(f->quantifier_offset, oneof_offset);
        }
    }
}
END_TEST

START_TEST(every_shared_enum_has_exactly_its_values)
{
    const struct shared *sh = &shared[_i];
    const ProtobufCEnumDescriptor *d = sh->enumeration;
    size_t n = 0;

    if (!d)
        return; /* a message: the test above */
    ck_assert_str_eq(d->short_name, sh->name);
    while (n < ROWS_MAX && sh->rows[n])
        n++;
    ck_assert_msg(d->n_values == n, "%s has %u values, the table %zu", sh->name, d->n_values, n);
    for (unsigned i = 0; i < d->n_values; i++) {
        char want[160], got[160];
        int in_oneof;

        row_core(sh->rows[i], want, sizeof(want), &in_oneof);
        snprintf(got, sizeof(got), "%s = %d", d->values[i].name, d->values[i].value);
        ck_assert_msg(strcmp(got, want) == 0, "%s: value %u is \"%s\", the table says \"%s\"",
                      sh->name, i, got, want);
    }
}
END_TEST

/* agenthub's own fields in every message compass also defines sit at 100
 * and up, where compass will not add fields of its own.  (Enum values are
 * not fields: AgentSessionState's 7 to 9 are agenthub's, docs/protocol.md.) */
START_TEST(agenthub_fields_of_shared_messages_are_at_100_and_up)
{
    for (size_t i = 0; i < N_SHARED; i++) {
        if (!shared[i].message)
            continue;
        for (size_t r = 0; r < ROWS_MAX && shared[i].rows[r]; r++) {
            const char *row = shared[i].rows[r];
            size_t len = strlen(row);
            const char *eq = strstr(row, " = ");
            if (len >= 2 && strcmp(row + len - 2, " +") == 0)
                ck_assert_msg(eq && atoi(eq + 3) >= 100, "%s: %s", shared[i].name, row);
        }
    }
}
END_TEST

Suite *wire_numbering_suite(void)
{
    Suite *s = suite_create("wire_numbering");
    TCase *tc = tcase_create("compass.v1");

    tcase_add_loop_test(tc, every_shared_message_has_exactly_its_fields, 0, (int)N_SHARED);
    tcase_add_loop_test(tc, every_shared_enum_has_exactly_its_values, 0, (int)N_SHARED);
    tcase_add_test(tc, agenthub_fields_of_shared_messages_are_at_100_and_up);
    suite_add_tcase(s, tc);
    return s;
}
