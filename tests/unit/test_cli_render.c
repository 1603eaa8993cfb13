/* Unit tests for the log and events rendering (src/cli/render.c). */
#include "cli/client.h"
#include "cli/render.h"

#include <check.h>
#include <stdlib.h>

static char *frame_dump(const Compass__V1__AgentSessionFrame *frame)
{
    json_t *o = render_frame_json(frame);
    char *text;

    ck_assert_ptr_nonnull(o);
    text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

START_TEST(record_renders_as_itself)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;
    char *text;

    record.type = "tool_start";
    record.data_json = "{\"tool_name\":\"Bash\"}";
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
    event.record = &record;
    frame.event = &event;
    frame.seq = 7;
    frame.at_unix_ms = 1700000000123;
    text = frame_dump(&frame);
    ck_assert_str_eq(text, "{\"seq\":7,\"ts_ms\":1700000000123,\"type\":\"tool_start\","
                           "\"data\":{\"tool_name\":\"Bash\"}}");
    free(text);
}
END_TEST

START_TEST(typed_frames_render_with_their_field_name)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__SessionToolCall call = COMPASS__V1__SESSION_TOOL_CALL__INIT;
    Compass__V1__SessionAssistantText said = COMPASS__V1__SESSION_ASSISTANT_TEXT__INIT;
    Compass__V1__SessionPlan plan = COMPASS__V1__SESSION_PLAN__INIT;
    Compass__V1__AgentPlanEntry entry = COMPASS__V1__AGENT_PLAN_ENTRY__INIT, *entries[1] = {&entry};
    Compass__V1__SessionBatchPending pending = COMPASS__V1__SESSION_BATCH_PENDING__INIT;
    char *text, line[256];
    json_t *o;

    frame.event = &event;
    frame.seq = 1;
    call.tool_call_id = "t1";
    call.title = "Run tests";
    call.status = COMPASS__V1__AGENT_TOOL_CALL_STATUS__AGENT_TOOL_CALL_STATUS_IN_PROGRESS;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL;
    event.tool_call = &call;
    text = frame_dump(&frame);
    ck_assert_str_eq(text,
                     "{\"seq\":1,\"ts_ms\":0,\"type\":\"tool_call\",\"data\":{\"tool_call_id\":"
                     "\"t1\",\"title\":\"Run tests\",\"status\":\"in_progress\"}}");
    free(text);
    o = render_frame_json(&frame);
    render_line(o, line, sizeof(line));
    ck_assert_ptr_nonnull(strstr(line, "tool_call"));
    ck_assert_ptr_nonnull(strstr(line, "Run tests [in_progress]"));
    json_decref(o);

    said.text = "first line\nsecond line";
    said.message_id = "m1";
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT;
    event.assistant_text = &said;
    o = render_frame_json(&frame);
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "assistant_text");
    render_line(o, line, sizeof(line));
    ck_assert_ptr_nonnull(strstr(line, "first line..."));
    ck_assert_ptr_null(strstr(line, "second"));
    json_decref(o);

    entry.content = "write code";
    entry.status = COMPASS__V1__AGENT_PLAN_ENTRY_STATUS__AGENT_PLAN_ENTRY_STATUS_PENDING;
    plan.n_entries = 1;
    plan.entries = entries;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_PLAN;
    event.plan = &plan;
    text = frame_dump(&frame);
    ck_assert_ptr_nonnull(strstr(text, "\"type\":\"plan\",\"data\":{\"entries\":[{\"content\":"
                                       "\"write code\",\"status\":\"pending\"}]}"));
    free(text);

    pending.count = 2;
    pending.fires_at_unix_ms = 5;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING;
    event.batch_pending = &pending;
    text = frame_dump(&frame);
    ck_assert_ptr_nonnull(
        strstr(text, "\"type\":\"batch_pending\",\"data\":{\"count\":2,\"fires_at_unix_ms\":5}"));
    free(text);
}
END_TEST

START_TEST(state_change_renders_as_state)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    char *text, line[256];
    json_t *o;

    frame.seq = 3;
    frame.state = COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_BLOCKED;
    text = frame_dump(&frame);
    ck_assert_str_eq(text,
                     "{\"seq\":3,\"ts_ms\":0,\"type\":\"state\",\"data\":{\"state\":\"blocked\"}}");
    free(text);
    o = render_frame_json(&frame);
    render_line(o, line, sizeof(line));
    ck_assert_ptr_nonnull(strstr(line, "blocked"));
    json_decref(o);
}
END_TEST

START_TEST(bus_events_render)
{
    Compass__V1__SubscribeEventsResponse event = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;
    json_t *o;

    event.seq = 4;
    event.instance_epoch = 18446744073709551615ull;
    event.session_id = "s-1";
    record.type = "prompt";
    record.data_json = "{\"length\":2}";
    event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_RECORD;
    event.agent_record = &record;
    o = render_event_json(&event);
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "agent_record");
    ck_assert_str_eq(json_string_value(json_object_get(o, "epoch")), "18446744073709551615");
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(json_object_get(o, "data"), "data"), "length")),
                     2);
    json_decref(o);
}
END_TEST

START_TEST(targets_parse)
{
    struct cli_target t;

    ck_assert_int_eq(cli_target_parse("s-1", &t), 0);
    ck_assert_str_eq(t.session_id, "s-1");
    ck_assert_int_eq(cli_target_parse("claude:abc:def", &t), 0);
    ck_assert_str_eq(t.session_id, "");
    ck_assert_str_eq(t.provider, "claude");
    ck_assert_str_eq(t.native_id, "abc:def");
    ck_assert_int_eq(cli_target_parse("", &t), -1);
    ck_assert_int_eq(cli_target_parse(":x", &t), -1);
    ck_assert_int_eq(cli_target_parse("x:", &t), -1);
}
END_TEST

static json_t *delta(const char *type, uint64_t seq, const char *text, const char *message_id)
{
    return json_pack("{s:I, s:I, s:s, s:{s:s, s:s}}", "seq", (json_int_t)seq, "ts_ms",
                     (json_int_t)0, "type", type, "data", "text", text, "message_id", message_id);
}

/* Renders OBJECTS (stolen) through one render_pane; returns the output. */
static char *pane_output(json_t **objects, size_t n, int hide_state)
{
    struct render_pane pane;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    memset(&pane, 0, sizeof(pane));
    pane.hide_state = hide_state;
    for (size_t i = 0; i < n; i++) {
        render_pane_frame(&pane, objects[i], out);
        json_decref(objects[i]);
    }
    render_pane_end(&pane, out);
    fclose(out);
    return text;
}

START_TEST(consecutive_deltas_of_one_message_read_as_one_paragraph)
{
    json_t *objects[] = {
        delta("thinking", 1, "The user wants the ", "m1"),
        delta("thinking", 2, "tests fixed.", "m1"),
        delta("assistant_text", 3, "Running ", "m2"),
        delta("assistant_text", 4, "them now.", "m2"),
        delta("assistant_text", 5, "Done.", "m3"),
        json_pack("{s:I, s:I, s:s, s:{s:s}}", "seq", (json_int_t)6, "ts_ms", (json_int_t)0, "type",
                  "state", "data", "state", "idle"),
    };
    char *text = pane_output(objects, 6, 0);
    char *first = strstr(text, "thinking");
    char *lines[8];
    size_t n = 0;

    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(strstr(first, "The user wants the tests fixed.\n"));
    ck_assert_ptr_nonnull(strstr(text, "assistant_text   Running them now.\n"));
    ck_assert_ptr_nonnull(strstr(text, "assistant_text   Done.\n"));
    for (char *line = strtok(text, "\n"); line && n < 8; line = strtok(NULL, "\n"))
        lines[n++] = line;
    ck_assert_uint_eq(n, 4); /* two paragraphs of m1/m2, one of m3, the state */
    ck_assert_ptr_nonnull(strstr(lines[0], "     1  thinking"));
    ck_assert_ptr_nonnull(strstr(lines[1], "     3  assistant_text"));
    ck_assert_ptr_nonnull(strstr(lines[3], "     6  state"));
    free(text);
}
END_TEST

START_TEST(no_state_hides_state_frames_and_agent_text_cannot_escape)
{
    json_t *objects[] = {
        json_pack("{s:I, s:I, s:s, s:{s:s}}", "seq", (json_int_t)1, "ts_ms", (json_int_t)0, "type",
                  "state", "data", "state", "working"),
        delta("assistant_text", 2, "red \x1b[31mtext\x07", "m1"),
    };
    char *text = pane_output(objects, 2, 1);

    ck_assert_ptr_null(strstr(text, "working"));
    ck_assert_ptr_null(strchr(text, 0x1b));
    ck_assert_ptr_null(strchr(text, 0x07));
    ck_assert_ptr_nonnull(strstr(text, "red ?[31mtext?\n"));
    free(text);
}
END_TEST

Suite *cli_render_suite(void)
{
    Suite *s = suite_create("cli_render");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, record_renders_as_itself);
    tcase_add_test(tc, typed_frames_render_with_their_field_name);
    tcase_add_test(tc, state_change_renders_as_state);
    tcase_add_test(tc, bus_events_render);
    tcase_add_test(tc, targets_parse);
    tcase_add_test(tc, consecutive_deltas_of_one_message_read_as_one_paragraph);
    tcase_add_test(tc, no_state_hides_state_frames_and_agent_text_cannot_escape);
    suite_add_tcase(s, tc);
    return s;
}
