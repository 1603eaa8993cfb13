/* protowire and the hub's delivery prefixes: what they write decodes with
 * protobuf-c as the full message, and the field numbers match proto/. */
#include "common/protowire.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "hub/hub_wire.h"

START_TEST(varint_round_trips_at_every_length)
{
    static const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, UINT32_MAX, UINT64_MAX};

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        uint8_t buf[10];
        const uint8_t *p = buf;
        uint64_t out = 0;
        size_t n = protowire_put_varint(buf, values[i]);
        ck_assert_int_eq(protowire_read_varint(&p, buf + n, &out), 0);
        ck_assert_uint_eq(out, values[i]);
        ck_assert_ptr_eq(p, buf + n);
        p = buf;
        if (n > 1)
            ck_assert_int_eq(protowire_read_varint(&p, buf + n - 1, &out), -1);
    }
}
END_TEST

START_TEST(varint_longer_than_ten_bytes_is_refused)
{
    uint8_t buf[11];
    const uint8_t *p = buf;
    uint64_t out;

    memset(buf, 0x80, sizeof(buf));
    buf[10] = 0;
    ck_assert_int_eq(protowire_read_varint(&p, buf + sizeof(buf), &out), -1);
}
END_TEST

START_TEST(next_walks_fields_and_refuses_bad_framing)
{
    /* field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64 */
    static const uint8_t msg[] = {0x08, 0x96, 0x01, 0x12, 0x02, 'h', 'i', 0x1d, 1, 2, 3,
                                  4,    0x21, 1,    2,    3,    4,   5,   6,    7, 8};
    static const uint8_t field0[] = {0x00, 0x01};
    static const uint8_t group[] = {0x0b};
    static const uint8_t overrun[] = {0x12, 0x05, 'a'};
    struct protowire_reader r;
    struct protowire_field f;

    protowire_reader_init(&r, msg, sizeof(msg));
    ck_assert_int_eq(protowire_next(&r, &f), 1);
    ck_assert_uint_eq(f.number, 1);
    ck_assert_uint_eq(f.varint, 150);
    ck_assert_int_eq(protowire_next(&r, &f), 1);
    ck_assert_int_eq(f.type, PROTOWIRE_LEN);
    ck_assert_uint_eq(f.len, 2);
    ck_assert_int_eq(memcmp(f.data, "hi", 2), 0);
    ck_assert_int_eq(protowire_next(&r, &f), 1);
    ck_assert_int_eq(f.type, PROTOWIRE_FIXED32);
    ck_assert_int_eq(protowire_next(&r, &f), 1);
    ck_assert_int_eq(f.type, PROTOWIRE_FIXED64);
    ck_assert_int_eq(protowire_next(&r, &f), 0);
    protowire_reader_init(&r, field0, sizeof(field0));
    ck_assert_int_eq(protowire_next(&r, &f), -1);
    protowire_reader_init(&r, group, sizeof(group));
    ck_assert_int_eq(protowire_next(&r, &f), -1);
    protowire_reader_init(&r, overrun, sizeof(overrun));
    ck_assert_int_eq(protowire_next(&r, &f), -1);
    protowire_reader_init(&r, NULL, 0);
    ck_assert_int_eq(protowire_next(&r, &f), 0);
}
END_TEST

START_TEST(hub_field_numbers_match_the_descriptors)
{
    char why[128] = "";

    ck_assert_msg(hub_wire_check(why, sizeof(why)) == 0, "%s", why);
}
END_TEST

START_TEST(pane_prefix_plus_entry_decodes_as_the_frame)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    Compass__V1__AgentSessionFrame *out;
    uint8_t buf[256];
    size_t n, len;

    frame.session_id = "sess-1";
    len = compass__v1__agent_session_frame__get_packed_size(&frame);
    ck_assert_uint_lt(len, sizeof(buf) - HUB_PREFIX_MAX);
    n = hub_pane_prefix(buf, 42, 1700000000123);
    compass__v1__agent_session_frame__pack(&frame, buf + n);
    out = compass__v1__agent_session_frame__unpack(NULL, n + len, buf);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out->seq, 42);
    ck_assert_int_eq(out->at_unix_ms, 1700000000123);
    ck_assert_str_eq(out->session_id, "sess-1");
    compass__v1__agent_session_frame__free_unpacked(out, NULL);
}
END_TEST

START_TEST(event_prefix_plus_payload_decodes_and_names_its_session)
{
    Compass__V1__SubscribeEventsResponse event = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__SubscribeEventsResponse *out;
    uint8_t buf[256];
    const char *id;
    size_t n, len, id_len;

    event.session_id = "sess-2";
    len = compass__v1__subscribe_events_response__get_packed_size(&event);
    n = hub_event_prefix(buf, 7, 99, UINT64_MAX);
    compass__v1__subscribe_events_response__pack(&event, buf + n);
    ck_assert_int_eq(hub_event_session_id(buf + n, len, &id, &id_len), 0);
    ck_assert_uint_eq(id_len, 6);
    ck_assert_int_eq(memcmp(id, "sess-2", 6), 0);
    out = compass__v1__subscribe_events_response__unpack(NULL, n + len, buf);
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(out->seq, 7);
    ck_assert_int_eq(out->at_unix_ms, 99);
    ck_assert_uint_eq(out->instance_epoch, UINT64_MAX);
    ck_assert_str_eq(out->session_id, "sess-2");
    compass__v1__subscribe_events_response__free_unpacked(out, NULL);
    ck_assert_int_eq(hub_event_session_id(buf, 0, &id, &id_len), -1);
}
END_TEST

/* What a compass reader must not be sent: an event whose only payload is
 * agenthub's own.  Compass's payloads, and a bare session id, are not. */
START_TEST(only_an_agenthub_payload_marks_a_bus_entry_agenthub_only)
{
    Compass__V1__SubscribeEventsResponse event = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__INIT;
    Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;
    Compass__V1__SessionBatchPending pending = COMPASS__V1__SESSION_BATCH_PENDING__INIT;
    Compass__V1__AgentSessionStatus status = COMPASS__V1__AGENT_SESSION_STATUS__INIT;
    static const uint8_t truncated[] = {0x9a};
    uint8_t buf[256];
    size_t len;

    event.session_id = "sess-1";
    event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_SESSION_STATUS;
    event.agent_session_status = &status;
    len = compass__v1__subscribe_events_response__pack(&event, buf);
    ck_assert_int_eq(hub_event_agenthub_only(buf, len), 0);
    event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_RECORD;
    event.agent_record = &record;
    len = compass__v1__subscribe_events_response__pack(&event, buf);
    ck_assert_int_eq(hub_event_agenthub_only(buf, len), 1);
    event.payload_case = COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_SESSION_BATCH_PENDING;
    event.session_batch_pending = &pending;
    len = compass__v1__subscribe_events_response__pack(&event, buf);
    ck_assert_int_eq(hub_event_agenthub_only(buf, len), 1);
    ck_assert_int_eq(hub_event_agenthub_only(truncated, sizeof(truncated)), 1);
}
END_TEST

/* The pane's counterpart: a frame whose event is agenthub's own and that
 * carries no state.  Compass's events and any state frame are not. */
START_TEST(only_an_agenthub_event_without_a_state_marks_a_frame_agenthub_only)
{
    Compass__V1__AgentSessionFrame frame = COMPASS__V1__AGENT_SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__AgentRecord record = COMPASS__V1__AGENT_RECORD__INIT;
    Compass__V1__SessionNotice notice = COMPASS__V1__SESSION_NOTICE__INIT;
    uint8_t buf[256];
    size_t len;

    frame.session_id = "sess-1";
    frame.event = &event;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_NOTICE;
    event.notice = &notice;
    len = compass__v1__agent_session_frame__pack(&frame, buf);
    ck_assert_int_eq(hub_frame_agenthub_only(buf, len), 0);
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
    event.record = &record;
    len = compass__v1__agent_session_frame__pack(&frame, buf);
    ck_assert_int_eq(hub_frame_agenthub_only(buf, len), 1);
    frame.state = COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_WORKING;
    len = compass__v1__agent_session_frame__pack(&frame, buf);
    ck_assert_int_eq(hub_frame_agenthub_only(buf, len), 0);
    frame.event = NULL;
    len = compass__v1__agent_session_frame__pack(&frame, buf);
    ck_assert_int_eq(hub_frame_agenthub_only(buf, len), 0);
}
END_TEST

Suite *protowire_suite(void)
{
    Suite *s = suite_create("protowire");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, varint_round_trips_at_every_length);
    tcase_add_test(tc, varint_longer_than_ten_bytes_is_refused);
    tcase_add_test(tc, next_walks_fields_and_refuses_bad_framing);
    tcase_add_test(tc, hub_field_numbers_match_the_descriptors);
    tcase_add_test(tc, pane_prefix_plus_entry_decodes_as_the_frame);
    tcase_add_test(tc, event_prefix_plus_payload_decodes_and_names_its_session);
    tcase_add_test(tc, only_an_agenthub_payload_marks_a_bus_entry_agenthub_only);
    tcase_add_test(tc, only_an_agenthub_event_without_a_state_marks_a_frame_agenthub_only);
    suite_add_tcase(s, tc);
    return s;
}
