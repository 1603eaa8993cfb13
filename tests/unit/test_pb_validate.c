/* Unit tests for the request string check (src/common/pb_validate.c). */
#include "common/pb_validate.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"

static char why[256];

static int check_message(const ProtobufCMessage *message)
{
    uint8_t buf[4096];
    size_t len = protobuf_c_message_get_packed_size(message);

    ck_assert_uint_le(len, sizeof(buf));
    protobuf_c_message_pack(message, buf);
    why[0] = '\0';
    return pb_validate_strings(message->descriptor, buf, len, why, sizeof(why));
}

static int check_bytes(const ProtobufCMessageDescriptor *type, const char *bytes, size_t len)
{
    why[0] = '\0';
    return pb_validate_strings(type, (const uint8_t *)bytes, len, why, sizeof(why));
}

START_TEST(a_nul_inside_an_id_is_refused_though_the_decoder_would_cut_there)
{
    /* SubscribeAgentSessionRequest{session_id = "sess-1\0junk", tail = 5}. */
    static const char wire[] = "\x0a\x0bsess-1\0junk\x18\x05";
    Compass__V1__SubscribeAgentSessionRequest *decoded;

    ck_assert_int_eq(check_bytes(&compass__v1__subscribe_agent_session_request__descriptor, wire,
                                 sizeof(wire) - 1),
                     -1);
    ck_assert_str_eq(why, "session_id holds a NUL byte");
    /* What a handler would otherwise have seen. */
    decoded = compass__v1__subscribe_agent_session_request__unpack(NULL, sizeof(wire) - 1,
                                                                   (const uint8_t *)wire);
    ck_assert_ptr_nonnull(decoded);
    ck_assert_str_eq(decoded->session_id, "sess-1");
    compass__v1__subscribe_agent_session_request__free_unpacked(decoded, NULL);
}
END_TEST

START_TEST(text_may_hold_newlines_and_escapes_but_ids_may_not)
{
    Compass__V1__SendAgentMessageRequest send = COMPASS__V1__SEND_AGENT_MESSAGE_REQUEST__INIT;
    Compass__V1__SessionsRequest report = COMPASS__V1__SESSIONS_REQUEST__INIT;
    Compass__V1__RunnerError error = COMPASS__V1__RUNNER_ERROR__INIT;
    char *live[] = {"sess-1", "sess-\x1b[2J", "sess-3"};

    send.session_id = "sess-1";
    send.text = "line one\nline two\t\x1b[1mbold\x1b[0m \xc3\xa9";
    ck_assert_int_eq(check_message(&send.base), 0);
    send.session_id = "sess-1\n";
    ck_assert_int_eq(check_message(&send.base), -1);
    ck_assert_str_eq(why, "session_id holds a control character");

    error.message = "a multi-line\nerror";
    report.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_ERROR;
    report.error = &error;
    report.request_id = "17";
    report.n_live_sessions = 3;
    report.live_sessions = live;
    ck_assert_int_eq(check_message(&report.base), -1);
    ck_assert_str_eq(why, "live_sessions[1] holds a control character");
    live[1] = "sess-2";
    report.request_id = "17\xc2\x9b"; /* U+009B, a C1 control (CSI) */
    ck_assert_int_eq(check_message(&report.base), -1);
    ck_assert_str_eq(why, "request_id holds a control character");
    report.request_id = "17";
    ck_assert_int_eq(check_message(&report.base), 0);
}
END_TEST

START_TEST(invalid_utf8_is_refused_in_any_string_and_named_by_its_path)
{
    Compass__V1__PublishEventsRequest request = COMPASS__V1__PUBLISH_EVENTS_REQUEST__INIT;
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__SessionFrame session = COMPASS__V1__SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__SessionPlan plan = COMPASS__V1__SESSION_PLAN__INIT;
    Compass__V1__AgentPlanEntry e0 = COMPASS__V1__AGENT_PLAN_ENTRY__INIT;
    Compass__V1__AgentPlanEntry e1 = COMPASS__V1__AGENT_PLAN_ENTRY__INIT;
    Compass__V1__AgentPlanEntry *entries[] = {&e0, &e1};
    Compass__V1__EnrollRequest enroll = COMPASS__V1__ENROLL_REQUEST__INIT;

    e0.content = "fine";
    e1.content = "cut \xe2\x82";
    plan.n_entries = 2;
    plan.entries = entries;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_PLAN;
    event.plan = &plan;
    session.typed_event = &event;
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    frame.session = &session;
    request.runner_seq = 1;
    request.session_id = "sess-1";
    request.frame = &frame;
    ck_assert_int_eq(check_message(&request.base), -1);
    ck_assert_str_eq(why, "frame.session.typed_event.plan.entries[1].content is not valid UTF-8");
    e1.content = "also fine \xf0\x9f\x99\x82";
    ck_assert_int_eq(check_message(&request.base), 0);

    enroll.runner_version = "v1 \xed\xa0\x80"; /* a surrogate */
    ck_assert_int_eq(check_message(&enroll.base), -1);
    ck_assert_str_eq(why, "runner_version is not valid UTF-8");
}
END_TEST

START_TEST(bytes_that_do_not_parse_are_left_to_the_decoder)
{
    /* A length running past the end, a truncated varint, a group: the
     * decoder refuses these itself (INTERNAL), the check passes them. */
    ck_assert_int_eq(
        check_bytes(&compass__v1__send_agent_message_request__descriptor, "\x0a\x10sess", 6), 0);
    ck_assert_int_eq(
        check_bytes(&compass__v1__send_agent_message_request__descriptor, "\x08\xff", 2), 0);
    ck_assert_int_eq(check_bytes(&compass__v1__send_agent_message_request__descriptor, "\x0b", 1),
                     0);
    /* Unknown fields and bytes fields are not strings. */
    ck_assert_int_eq(
        check_bytes(&compass__v1__send_agent_message_request__descriptor, "\x7a\x02\xff\x00", 4),
        0);
    ck_assert_int_eq(
        check_bytes(&compass__v1__upload_session_blob_request__descriptor, "\x1a\x02\xff\x00", 4),
        0);
    ck_assert_int_eq(check_bytes(&compass__v1__send_agent_message_request__descriptor, "", 0), 0);
}
END_TEST

/* The check skips printable ASCII eight bytes at a time: a bad byte is
 * found at every position of a long string, word boundaries included, and
 * every printable byte in every position passes. */
START_TEST(a_bad_byte_is_found_at_every_position_of_a_long_string)
{
    Compass__V1__SendAgentMessageRequest send = COMPASS__V1__SEND_AGENT_MESSAGE_REQUEST__INIT;
    static const struct {
        char byte;
        int in_id, in_text; /* 0 passes, -1 refused */
    } cases[] = {{'\0', -1, -1},   {'\x1f', -1, 0}, {'\x7f', -1, 0}, {'\x80', -1, -1},
                 {'\xff', -1, -1}, {' ', 0, 0},     {'~', 0, 0}};
    char id[40], text[40];

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (size_t at = 0; at < sizeof(id) - 1; at++) {
            memset(id, 'a', sizeof(id) - 1);
            id[sizeof(id) - 1] = '\0';
            memcpy(text, id, sizeof(text));
            send.session_id = id;
            send.text = text;
            if (cases[c].byte == '\0') {
                /* protobuf-c packs a C string up to its NUL: hand-made bytes. */
                char wire[64];
                size_t len = 0;
                wire[len++] = 0x0a; /* session_id */
                wire[len++] = (char)(sizeof(id) - 1);
                memcpy(wire + len, id, sizeof(id) - 1);
                wire[len + at] = '\0';
                len += sizeof(id) - 1;
                ck_assert_int_eq(
                    check_bytes(&compass__v1__send_agent_message_request__descriptor, wire, len),
                    -1);
                ck_assert_str_eq(why, "session_id holds a NUL byte");
                continue;
            }
            id[at] = cases[c].byte;
            ck_assert_msg(check_message(&send.base) == cases[c].in_id, "id byte 0x%02x at %zu",
                          (unsigned char)cases[c].byte, at);
            id[at] = 'a';
            text[at] = cases[c].byte;
            ck_assert_msg(check_message(&send.base) == cases[c].in_text, "text byte 0x%02x at %zu",
                          (unsigned char)cases[c].byte, at);
        }
    }
}
END_TEST

Suite *pb_validate_suite(void)
{
    Suite *s = suite_create("pb_validate");
    TCase *tc = tcase_create("pb_validate");

    tcase_add_test(tc, a_nul_inside_an_id_is_refused_though_the_decoder_would_cut_there);
    tcase_add_test(tc, text_may_hold_newlines_and_escapes_but_ids_may_not);
    tcase_add_test(tc, invalid_utf8_is_refused_in_any_string_and_named_by_its_path);
    tcase_add_test(tc, bytes_that_do_not_parse_are_left_to_the_decoder);
    tcase_add_test(tc, a_bad_byte_is_found_at_every_position_of_a_long_string);
    suite_add_tcase(s, tc);
    return s;
}
