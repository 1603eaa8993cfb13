/* Unit tests for the log and events rendering (src/cli/render.c). */
#include "../../src/cli/client.c"
#include "../../src/cli/render.c"

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

int main(void)
{
    Suite *s = suite_create("cli_render");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, record_renders_as_itself);
    tcase_add_test(tc, typed_frames_render_with_their_field_name);
    tcase_add_test(tc, state_change_renders_as_state);
    tcase_add_test(tc, bus_events_render);
    tcase_add_test(tc, targets_parse);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
