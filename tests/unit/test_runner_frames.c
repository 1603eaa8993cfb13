/* Unit tests for the Runner's agent protocol: JSON lines and varint-delimited
 * AgentFrames to compass.v1, and the frames the Runner makes itself. */
#include "runner/agent_frames.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"

#define NOW 1700000000123LL

/* Parses LINE (must succeed) and unpacks its frame. */
static Compass__V1__AgentFrame *parse_frame(const char *line, int *state)
{
    struct agent_line out;
    char err[256];
    Compass__V1__AgentFrame *frame;

    ck_assert_msg(agent_line_parse_json(line, strlen(line), NOW, &out, err, sizeof(err)) == 0,
                  "%s: %s", line, err);
    ck_assert_int_eq(out.kind, AGENT_LINE_FRAME);
    frame = compass__v1__agent_frame__unpack(NULL, out.frame_len, out.frame);
    ck_assert_ptr_nonnull(frame);
    if (state)
        *state = out.state;
    agent_line_clear(&out);
    return frame;
}

static int parse_fails(const char *line)
{
    struct agent_line out;
    char err[256];

    return agent_line_parse_json(line, strlen(line), NOW, &out, err, sizeof(err)) == -1 &&
           err[0] != '\0' && out.frame == NULL && out.entry == NULL;
}

START_TEST(assistant_text_and_thinking)
{
    Compass__V1__AgentFrame *f = parse_frame("{\"assistant_text\":{\"text\":\"hi\",\"message_id\":"
                                             "\"m1\"},\"event_id\":\"e1\"}",
                                             NULL);
    Compass__V1__SessionEvent *ev;

    ck_assert_int_eq(f->frame_case, COMPASS__V1__AGENT_FRAME__FRAME_SESSION);
    ev = f->session->typed_event;
    ck_assert_int_eq(ev->event_case, COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT);
    ck_assert_str_eq(ev->assistant_text->text, "hi");
    ck_assert_str_eq(ev->assistant_text->message_id, "m1");
    ck_assert_str_eq(ev->event_id, "e1");
    ck_assert_int_eq(ev->at_unix_ms, NOW);
    compass__v1__agent_frame__free_unpacked(f, NULL);

    f = parse_frame("{\"thinking\":{\"text\":\"hmm\"},\"at_unix_ms\":42}", NULL);
    ev = f->session->typed_event;
    ck_assert_int_eq(ev->event_case, COMPASS__V1__SESSION_EVENT__EVENT_THINKING);
    ck_assert_str_eq(ev->thinking->text, "hmm");
    ck_assert_int_eq(ev->at_unix_ms, 42);
    compass__v1__agent_frame__free_unpacked(f, NULL);
}
END_TEST

START_TEST(tool_calls_take_short_full_and_numeric_statuses)
{
    Compass__V1__AgentFrame *f = parse_frame(
        "{\"tool_call\":{\"tool_call_id\":\"t1\",\"title\":\"Read\",\"status\":\"IN_PROGRESS\"}}",
        NULL);

    ck_assert_int_eq(f->session->typed_event->event_case,
                     COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL);
    ck_assert_str_eq(f->session->typed_event->tool_call->tool_call_id, "t1");
    ck_assert_int_eq(f->session->typed_event->tool_call->status,
                     COMPASS__V1__AGENT_TOOL_CALL_STATUS__AGENT_TOOL_CALL_STATUS_IN_PROGRESS);
    compass__v1__agent_frame__free_unpacked(f, NULL);

    f = parse_frame("{\"tool_call_update\":{\"tool_call_id\":\"t1\",\"status\":"
                    "\"AGENT_TOOL_CALL_STATUS_COMPLETED\",\"output\":\"ok\"}}",
                    NULL);
    ck_assert_int_eq(f->session->typed_event->tool_call_update->status,
                     COMPASS__V1__AGENT_TOOL_CALL_STATUS__AGENT_TOOL_CALL_STATUS_COMPLETED);
    ck_assert_str_eq(f->session->typed_event->tool_call_update->output, "ok");
    compass__v1__agent_frame__free_unpacked(f, NULL);

    f = parse_frame("{\"tool_call\":{\"tool_call_id\":\"t2\",\"status\":4}}", NULL);
    ck_assert_int_eq(f->session->typed_event->tool_call->status, 4);
    compass__v1__agent_frame__free_unpacked(f, NULL);

    ck_assert(parse_fails("{\"tool_call\":{\"tool_call_id\":\"t1\",\"status\":\"SPINNING\"}}"));
}
END_TEST

START_TEST(plan_entries)
{
    Compass__V1__AgentFrame *f =
        parse_frame("{\"plan\":{\"entries\":[{\"content\":\"a\",\"status\":\"COMPLETED\"},"
                    "{\"content\":\"b\",\"status\":\"pending\"},{\"content\":\"c\"}]}}",
                    NULL);
    Compass__V1__SessionPlan *plan = f->session->typed_event->plan;

    ck_assert_uint_eq(plan->n_entries, 3);
    ck_assert_str_eq(plan->entries[0]->content, "a");
    ck_assert_int_eq(plan->entries[0]->status, 3);
    ck_assert_int_eq(plan->entries[1]->status, 1);
    ck_assert_int_eq(plan->entries[2]->status, 0);
    compass__v1__agent_frame__free_unpacked(f, NULL);
    ck_assert(parse_fails("{\"plan\":{\"entries\":{}}}"));
}
END_TEST

START_TEST(state_alone_and_next_to_an_event)
{
    int state = 0;
    Compass__V1__AgentFrame *f = parse_frame("{\"state\":\"WORKING\"}", &state);

    ck_assert_int_eq(state, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_WORKING);
    ck_assert_int_eq(f->session->state, state);
    ck_assert_ptr_null(f->session->typed_event);
    compass__v1__agent_frame__free_unpacked(f, NULL);

    f = parse_frame("{\"notice\":{\"text\":\"wait\"},\"state\":\"blocked\"}", &state);
    ck_assert_int_eq(state, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_BLOCKED);
    ck_assert_str_eq(f->session->typed_event->notice->text, "wait");
    compass__v1__agent_frame__free_unpacked(f, NULL);

    ck_assert(parse_fails("{\"state\":\"SLEEPY\"}"));
    ck_assert(parse_fails("{\"state\":\"UNSPECIFIED\"}"));
    ck_assert_int_eq(agent_frames_state_from_word("AGENT_SESSION_STATE_READY"), 2);
    ck_assert_int_eq(agent_frames_state_from_word("idle"), 9);
}
END_TEST

START_TEST(record_carries_its_data_as_json_text)
{
    Compass__V1__AgentFrame *f =
        parse_frame("{\"record\":{\"type\":\"ask\",\"data\":{\"tool_name\":\"Bash\"}}}", NULL);
    Compass__V1__AgentRecord *rec = f->session->typed_event->record;

    ck_assert_str_eq(rec->type, "ask");
    ck_assert_str_eq(rec->data_json, "{\"tool_name\":\"Bash\"}");
    compass__v1__agent_frame__free_unpacked(f, NULL);
    f = parse_frame("{\"record\":{\"type\":\"stop\"}}", NULL);
    ck_assert_str_eq(f->session->typed_event->record->data_json, "{}");
    compass__v1__agent_frame__free_unpacked(f, NULL);
    ck_assert(parse_fails("{\"record\":{\"data\":{}}}"));
}
END_TEST

START_TEST(transcript_and_resume_entries)
{
    struct agent_line out;
    char err[256];
    const char *obj = "{\"transcript_entry\":{\"entry\":{\"role\":\"user\"},\"checkpoint\":true,"
                      "\"entry_seq\":7}}";
    const char *text = "{\"transcript_entry\":{\"entry_json\":\"{\\\"role\\\":\\\"x\\\"}\"}}";
    const char *resume = "{\"resume_entry\":{\"id\":\"r1\",\"entry\":{\"a\":1}}}";

    ck_assert_int_eq(agent_line_parse_json(obj, strlen(obj), NOW, &out, err, sizeof(err)), 0);
    ck_assert_int_eq(out.kind, AGENT_LINE_TRANSCRIPT);
    ck_assert_int_eq(out.checkpoint, 1);
    ck_assert_uint_eq(out.entry_seq, 7);
    ck_assert_str_eq(json_string_value(json_object_get(out.entry, "role")), "user");
    agent_line_clear(&out);
    ck_assert_int_eq(agent_line_parse_json(text, strlen(text), NOW, &out, err, sizeof(err)), 0);
    ck_assert_str_eq(json_string_value(json_object_get(out.entry, "role")), "x");
    agent_line_clear(&out);
    ck_assert_int_eq(agent_line_parse_json(resume, strlen(resume), NOW, &out, err, sizeof(err)), 0);
    ck_assert_int_eq(out.kind, AGENT_LINE_RESUME);
    ck_assert_str_eq(out.id, "r1");
    agent_line_clear(&out);
    ck_assert(parse_fails("{\"transcript_entry\":{\"checkpoint\":true}}"));
}
END_TEST

START_TEST(garbage_is_refused)
{
    ck_assert(parse_fails("not json"));
    ck_assert(parse_fails("[1,2]"));
    ck_assert(parse_fails("{}"));
    ck_assert(parse_fails("{\"mystery\":{}}"));
    ck_assert(parse_fails("{\"assistant_text\":\"flat\"}"));
}
END_TEST

START_TEST(batch_pending_and_state_frames)
{
    Compass__V1__AgentFrame *f;
    uint8_t *buf;
    size_t len;

    ck_assert_int_eq(agent_frames_batch_pending(2, 5000, NOW, &buf, &len), 0);
    f = compass__v1__agent_frame__unpack(NULL, len, buf);
    ck_assert_int_eq(f->session->typed_event->event_case,
                     COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING);
    ck_assert_uint_eq(f->session->typed_event->batch_pending->count, 2);
    ck_assert_uint_eq(f->session->typed_event->batch_pending->fires_at_unix_ms, 5000);
    compass__v1__agent_frame__free_unpacked(f, NULL);
    free(buf);

    ck_assert_int_eq(agent_frames_batch_pending(0, 5000, NOW, &buf, &len), 0);
    f = compass__v1__agent_frame__unpack(NULL, len, buf);
    ck_assert_uint_eq(f->session->typed_event->batch_pending->count, 0);
    ck_assert_uint_eq(f->session->typed_event->batch_pending->fires_at_unix_ms, 0);
    compass__v1__agent_frame__free_unpacked(f, NULL);
    free(buf);

    ck_assert_int_eq(agent_frames_state(4, &buf, &len), 0);
    f = compass__v1__agent_frame__unpack(NULL, len, buf);
    ck_assert_int_eq(f->session->state, 4);
    compass__v1__agent_frame__free_unpacked(f, NULL);
    free(buf);
}
END_TEST

START_TEST(publish_request_encodes_like_protobuf_c)
{
    Compass__V1__PublishEventsRequest *req;
    uint8_t *frame, *buf;
    size_t frame_len, len;

    ck_assert_int_eq(agent_frames_state(3, &frame, &frame_len), 0);
    ck_assert_int_eq(agent_frames_publish_request(300000, "sess-1", frame, frame_len, &buf, &len),
                     0);
    req = compass__v1__publish_events_request__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(req);
    ck_assert_uint_eq(req->runner_seq, 300000);
    ck_assert_str_eq(req->session_id, "sess-1");
    ck_assert_int_eq(req->frame->session->state, 3);
    compass__v1__publish_events_request__free_unpacked(req, NULL);
    free(buf);
    free(frame);
}
END_TEST

START_TEST(varint_delimited_stream)
{
    uint8_t frame[] = {0x1a, 0x02, 0x08, 0x03}; /* AgentFrame{session{state: WORKING}} */
    uint8_t stream[16];
    const uint8_t *at;
    size_t consumed, len;
    struct agent_line out;
    char err[128];

    stream[0] = sizeof(frame);
    memcpy(stream + 1, frame, sizeof(frame));
    ck_assert_int_eq(agent_frames_pb_next(stream, 3, &consumed, &at, &len), 0);
    ck_assert_int_eq(agent_frames_pb_next(stream, 5, &consumed, &at, &len), 1);
    ck_assert_uint_eq(consumed, 5);
    ck_assert_uint_eq(len, 4);
    ck_assert_int_eq(agent_line_from_pb(at, len, &out, err, sizeof(err)), 0);
    ck_assert_int_eq(out.kind, AGENT_LINE_FRAME);
    ck_assert_int_eq(out.state, 3);
    agent_line_clear(&out);
    memset(stream, 0xff, 11);
    ck_assert_int_eq(agent_frames_pb_next(stream, 11, &consumed, &at, &len), -1);
    ck_assert_int_eq(agent_line_from_pb((const uint8_t *)"\xff\xff", 2, &out, err, sizeof(err)),
                     -1);
}
END_TEST

START_TEST(frames_the_server_would_refuse_are_skipped_here)
{
    /* An id with a control character (JSON can carry one), and a pb frame
     * whose text is not UTF-8: resending either would wedge the relay. */
    static const uint8_t bad_text[] = {0x1a, 0x08, 0x12, 0x06, 0x1a, 0x04, 0x0a, 0x02, 'h', 0xff};
    struct agent_line out;
    char err[256];

    ck_assert_int_eq(agent_line_parse_json("{\"assistant_text\":{\"text\":\"a\\nb\","
                                           "\"message_id\":\"m\\u001b[2J\"}}",
                                           strlen("{\"assistant_text\":{\"text\":\"a\\nb\","
                                                  "\"message_id\":\"m\\u001b[2J\"}}"),
                                           NOW, &out, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "frame refused: session.typed_event.assistant_text.message_id holds a "
                          "control character");
    ck_assert_ptr_null(out.frame);
    ck_assert_int_eq(agent_line_from_pb(bad_text, sizeof(bad_text), &out, err, sizeof(err)), -1);
    ck_assert_str_eq(err,
                     "frame refused: session.typed_event.assistant_text.text is not valid UTF-8");
    ck_assert_ptr_null(out.frame);
}
END_TEST

Suite *runner_frames_suite(void)
{
    Suite *s = suite_create("runner_frames");
    TCase *tc = tcase_create("frames");

    tcase_add_test(tc, assistant_text_and_thinking);
    tcase_add_test(tc, tool_calls_take_short_full_and_numeric_statuses);
    tcase_add_test(tc, plan_entries);
    tcase_add_test(tc, state_alone_and_next_to_an_event);
    tcase_add_test(tc, record_carries_its_data_as_json_text);
    tcase_add_test(tc, transcript_and_resume_entries);
    tcase_add_test(tc, garbage_is_refused);
    tcase_add_test(tc, batch_pending_and_state_frames);
    tcase_add_test(tc, publish_request_encodes_like_protobuf_c);
    tcase_add_test(tc, varint_delimited_stream);
    tcase_add_test(tc, frames_the_server_would_refuse_are_skipped_here);
    suite_add_tcase(s, tc);
    return s;
}
