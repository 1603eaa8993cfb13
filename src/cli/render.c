/* render: frames and bus events as JSON and one-line summaries (render.h). */
#include "cli/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/client.h"

#define SUMMARY_MAX 120

static json_t *plan_entries_json(Compass__V1__AgentPlanEntry **entries, size_t n)
{
    json_t *array = json_array();

    for (size_t i = 0; array && i < n; i++)
        json_array_append_new(array, json_pack("{s:s, s:s}", "content", entries[i]->content,
                                               "status", cli_plan_status_name(entries[i]->status)));
    return array;
}

/* The type name and data object of EVENT.  Returns data (a new reference),
 * or NULL for an unset event or when memory ran out. */
static json_t *event_data(const Compass__V1__SessionEvent *event, const char **type)
{
    json_t *data;
    json_error_t error;

    switch (event->event_case) {
    case COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT:
        *type = "assistant_text";
        return json_pack("{s:s, s:s}", "text", event->assistant_text->text, "message_id",
                         event->assistant_text->message_id);
    case COMPASS__V1__SESSION_EVENT__EVENT_THINKING:
        *type = "thinking";
        return json_pack("{s:s, s:s}", "text", event->thinking->text, "message_id",
                         event->thinking->message_id);
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL:
        *type = "tool_call";
        return json_pack("{s:s, s:s, s:s}", "tool_call_id", event->tool_call->tool_call_id, "title",
                         event->tool_call->title, "status",
                         cli_tool_status_name(event->tool_call->status));
    case COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL_UPDATE:
        *type = "tool_call_update";
        return json_pack("{s:s, s:s, s:s}", "tool_call_id", event->tool_call_update->tool_call_id,
                         "status", cli_tool_status_name(event->tool_call_update->status), "output",
                         event->tool_call_update->output);
    case COMPASS__V1__SESSION_EVENT__EVENT_PLAN:
        *type = "plan";
        return json_pack("{s:o}", "entries",
                         plan_entries_json(event->plan->entries, event->plan->n_entries));
    case COMPASS__V1__SESSION_EVENT__EVENT_NOTICE:
        *type = "notice";
        return json_pack("{s:s}", "text", event->notice->text);
    case COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING:
        *type = "batch_pending";
        return json_pack("{s:i, s:I}", "count", (int)event->batch_pending->count,
                         "fires_at_unix_ms", (json_int_t)event->batch_pending->fires_at_unix_ms);
    case COMPASS__V1__SESSION_EVENT__EVENT_RECORD:
        *type = event->record->type;
        data = json_loads(event->record->data_json, JSON_DECODE_ANY, &error);
        return data ? data : json_string(event->record->data_json);
    default:
        return NULL;
    }
}

json_t *render_frame_json(const Compass__V1__AgentSessionFrame *frame)
{
    const char *type = "state";
    json_t *data = NULL;

    if (frame->event)
        data = event_data(frame->event, &type);
    if (!data) {
        type = "state";
        data = json_pack("{s:s}", "state", cli_state_name(frame->state));
    }
    return json_pack("{s:I, s:I, s:s, s:o}", "seq", (json_int_t)frame->seq, "ts_ms",
                     (json_int_t)frame->at_unix_ms, "type", type, "data", data);
}

json_t *render_event_json(const Compass__V1__SubscribeEventsResponse *event)
{
    const char *type = "unknown";
    json_t *data = NULL;
    json_error_t error;
    char epoch[24];

    switch (event->payload_case) {
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_RESYNC_REQUIRED:
        type = "resync_required";
        data = json_object();
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_SERVER_STATUS:
        type = "server_status";
        data =
            json_pack("{s:s}", "state",
                      event->server_status->state == COMPASS__V1__SERVER_STATE__SERVER_STATE_READY
                          ? "READY"
                          : "UNSPECIFIED");
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_SESSION_STATUS:
        type = "agent_session_status";
        data = json_pack("{s:s, s:s, s:s}", "session_id", event->agent_session_status->session_id,
                         "state", cli_state_name(event->agent_session_status->state),
                         "agent_account_id", event->agent_session_status->agent_account_id);
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_MESSAGE_CHUNK:
        type = "agent_message_chunk";
        data = json_pack("{s:s, s:s, s:b}", "session_id", event->agent_message_chunk->session_id,
                         "text", event->agent_message_chunk->text, "is_thought",
                         (int)event->agent_message_chunk->is_thought);
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_TOOL_CALL:
        type = "agent_tool_call";
        data = json_pack("{s:s, s:s, s:s, s:s}", "session_id", event->agent_tool_call->session_id,
                         "tool_call_id", event->agent_tool_call->tool_call_id, "title",
                         event->agent_tool_call->title, "status",
                         cli_tool_status_name(event->agent_tool_call->status));
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_PLAN:
        type = "agent_plan";
        data =
            json_pack("{s:s, s:o}", "session_id", event->agent_plan->session_id, "entries",
                      plan_entries_json(event->agent_plan->entries, event->agent_plan->n_entries));
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_SESSION_BATCH_PENDING:
        type = "session_batch_pending";
        data = json_pack("{s:i, s:I}", "count", (int)event->session_batch_pending->count,
                         "fires_at_unix_ms",
                         (json_int_t)event->session_batch_pending->fires_at_unix_ms);
        break;
    case COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_RECORD:
        type = "agent_record";
        data = json_loads(event->agent_record->data_json, JSON_DECODE_ANY, &error);
        data = json_pack("{s:s, s:o}", "type", event->agent_record->type, "data",
                         data ? data : json_string(event->agent_record->data_json));
        break;
    default:
        data = json_object();
        break;
    }
    snprintf(epoch, sizeof(epoch), "%llu", (unsigned long long)event->instance_epoch);
    return json_pack("{s:I, s:I, s:s, s:s, s:o, s:s}", "seq", (json_int_t)event->seq, "ts_ms",
                     (json_int_t)event->at_unix_ms, "session_id", event->session_id, "type", type,
                     "data", data ? data : json_object(), "epoch", epoch);
}

/* Copies TEXT's first line into OUT, at most SUMMARY_MAX bytes, with "..."
 * when cut. */
static void one_line(const char *text, char *out, size_t out_size)
{
    size_t n = strcspn(text, "\r\n");
    size_t max = out_size - 1 < SUMMARY_MAX ? out_size - 1 : SUMMARY_MAX;
    int cut = n < strlen(text);

    if (n > max) {
        n = max > 3 ? max - 3 : 0;
        cut = 1;
    }
    memcpy(out, text, n);
    if (cut && n + 3 <= max)
        memcpy(out + n, "...", 3), n += 3;
    out[n] = '\0';
}

static const char *str_field(const json_t *data, const char *key)
{
    const char *value = json_string_value(json_object_get(data, key));

    return value ? value : "";
}

void render_line(const json_t *object, char *out, size_t out_size)
{
    const char *type = str_field(object, "type");
    const json_t *data = json_object_get(object, "data");
    char when[32], summary[SUMMARY_MAX + 1];
    char *dumped = NULL;

    cli_format_time((int64_t)json_integer_value(json_object_get(object, "ts_ms")), when,
                    sizeof(when));
    if (strcmp(type, "assistant_text") == 0 || strcmp(type, "thinking") == 0 ||
        strcmp(type, "notice") == 0) {
        one_line(str_field(data, "text"), summary, sizeof(summary));
    } else if (strcmp(type, "tool_call") == 0) {
        char both[SUMMARY_MAX * 2];
        snprintf(both, sizeof(both), "%s [%s]", str_field(data, "title"),
                 str_field(data, "status"));
        one_line(both, summary, sizeof(summary));
    } else if (strcmp(type, "tool_call_update") == 0) {
        char both[SUMMARY_MAX * 2];
        snprintf(both, sizeof(both), "%s [%s] %s", str_field(data, "tool_call_id"),
                 str_field(data, "status"), str_field(data, "output"));
        one_line(both, summary, sizeof(summary));
    } else if (strcmp(type, "plan") == 0) {
        snprintf(summary, sizeof(summary), "%zu entries",
                 json_array_size(json_object_get(data, "entries")));
    } else if (strcmp(type, "state") == 0 && json_is_string(json_object_get(data, "state"))) {
        snprintf(summary, sizeof(summary), "%s", str_field(data, "state"));
    } else {
        dumped = data ? json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        one_line(dumped ? dumped : "", summary, sizeof(summary));
    }
    free(dumped);
    snprintf(out, out_size, "%s  %6lld  %-16s %s", when,
             (long long)json_integer_value(json_object_get(object, "seq")), type, summary);
}

/* Writes agent TEXT, control characters other than newline and tab shown as
 * '?' (an escape sequence from an agent must not reach the terminal). */
static void write_agent_text(const char *text, FILE *out)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        fputc((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f ? '?' : *c, out);
}

static int is_delta_type(const char *type)
{
    return strcmp(type, "thinking") == 0 || strcmp(type, "assistant_text") == 0;
}

void render_pane_end(struct render_pane *pane, FILE *out)
{
    if (pane->kind[0] == '\0')
        return;
    fputc('\n', out);
    pane->kind[0] = '\0';
    pane->message_id[0] = '\0';
}

void render_pane_frame(struct render_pane *pane, const json_t *object, FILE *out)
{
    const char *type = str_field(object, "type");
    const json_t *data = json_object_get(object, "data");
    char line[512], when[32];

    if (pane->hide_state && strcmp(type, "state") == 0)
        return;
    if (!is_delta_type(type)) {
        render_pane_end(pane, out);
        render_line(object, line, sizeof(line));
        write_agent_text(line, out);
        fputc('\n', out);
        return;
    }
    if (strcmp(pane->kind, type) != 0 ||
        strcmp(pane->message_id, str_field(data, "message_id")) != 0) {
        render_pane_end(pane, out);
        snprintf(pane->kind, sizeof(pane->kind), "%s", type);
        snprintf(pane->message_id, sizeof(pane->message_id), "%s", str_field(data, "message_id"));
        cli_format_time((int64_t)json_integer_value(json_object_get(object, "ts_ms")), when,
                        sizeof(when));
        fprintf(out, "%s  %6lld  %-16s ", when,
                (long long)json_integer_value(json_object_get(object, "seq")), type);
    }
    write_agent_text(str_field(data, "text"), out);
}
