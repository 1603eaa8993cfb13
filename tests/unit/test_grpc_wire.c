/* grpc_wire: framing, grpc-message percent-encoding, grpc-timeout, base64. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/byte_queue.h"
#include "grpc/grpc_wire.h"

static const char spec_message[] =
    "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and non-BMP \xf0\x9f\x98\x88\t\n";

START_TEST(test_message_encoding_matches_the_spec_example)
{
    char encoded[512], decoded[512];
    size_t n = grpc_message_encode(spec_message, strlen(spec_message), encoded, sizeof(encoded));

    ck_assert_str_eq(encoded, "%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA and "
                              "non-BMP %F0%9F%98%88%09%0A");
    ck_assert_uint_eq(n, strlen(encoded));
    n = grpc_message_decode(encoded, strlen(encoded), decoded);
    ck_assert_uint_eq(n, strlen(spec_message));
    ck_assert_mem_eq(decoded, spec_message, n);
}
END_TEST

START_TEST(test_message_encoding_escapes_percent_and_reports_needed_size)
{
    char small[4];
    size_t n = grpc_message_encode("a%b", 3, small, sizeof(small));

    ck_assert_uint_eq(n, 5); /* a %25 b */
    ck_assert_str_eq(small, "a");
}
END_TEST

START_TEST(test_message_decoding_keeps_malformed_escapes)
{
    char out[16];
    size_t n = grpc_message_decode("%zz%4", 5, out);

    ck_assert_uint_eq(n, 5);
    ck_assert_mem_eq(out, "%zz%4", 5);
}
END_TEST

START_TEST(test_timeout_parses_all_six_units)
{
    uint64_t ns;

    ck_assert_int_eq(grpc_timeout_parse("2H", 2, &ns), 0);
    ck_assert_uint_eq(ns, 2ull * 3600 * 1000000000ull);
    ck_assert_int_eq(grpc_timeout_parse("3M", 2, &ns), 0);
    ck_assert_uint_eq(ns, 180ull * 1000000000ull);
    ck_assert_int_eq(grpc_timeout_parse("4S", 2, &ns), 0);
    ck_assert_uint_eq(ns, 4000000000ull);
    ck_assert_int_eq(grpc_timeout_parse("5m", 2, &ns), 0);
    ck_assert_uint_eq(ns, 5000000ull);
    ck_assert_int_eq(grpc_timeout_parse("6u", 2, &ns), 0);
    ck_assert_uint_eq(ns, 6000ull);
    ck_assert_int_eq(grpc_timeout_parse("7n", 2, &ns), 0);
    ck_assert_uint_eq(ns, 7ull);
    ck_assert_int_eq(grpc_timeout_parse("99999999H", 9, &ns), 0);
    ck_assert_uint_eq(ns, UINT64_MAX);
}
END_TEST

START_TEST(test_timeout_rejects_malformed_values)
{
    uint64_t ns;
    const char *bad[] = {"", "S", "1", "1x", "-1S", "123456789S", "1 S", "1.5S"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(grpc_timeout_parse(bad[i], strlen(bad[i]), &ns) == -1, "%s", bad[i]);
}
END_TEST

START_TEST(test_base64_round_trips_padded_and_unpadded)
{
    uint8_t data[] = {0x00, 0x01, 0xfe, 0xff, 0x10};
    uint8_t out[16];
    char text[16];

    for (size_t len = 0; len <= sizeof(data); len++) {
        size_t n = base64_encode(data, len, text, sizeof(text));
        ck_assert_int_eq(grpc_base64_decode(text, n, out), (long)len);
        ck_assert_mem_eq(out, data, len);
        while (n > 0 && text[n - 1] == '=')
            n--;
        ck_assert_int_eq(grpc_base64_decode(text, n, out), (long)len);
        ck_assert_mem_eq(out, data, len);
    }
    ck_assert_int_eq(grpc_base64_decode("a", 1, out), -1);
    ck_assert_int_eq(grpc_base64_decode("a!bc", 4, out), -1);
}
END_TEST

START_TEST(test_reader_reassembles_messages_split_byte_by_byte)
{
    const uint8_t wire[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'z'};
    const char *expect[] = {"abc", "", "z"};
    struct grpc_reader reader;
    size_t got = 0;

    grpc_reader_init(&reader, 100);
    for (size_t i = 0; i < sizeof(wire); i++) {
        size_t consumed;
        int rv = grpc_reader_feed(&reader, wire + i, 1, &consumed);
        ck_assert_uint_eq(consumed, 1);
        if (rv == GRPC_READER_MESSAGE) {
            size_t len;
            const uint8_t *message = grpc_reader_message(&reader, &len);
            ck_assert_uint_eq(len, strlen(expect[got]));
            ck_assert_mem_eq(message, expect[got], len);
            grpc_reader_take(&reader);
            got++;
        } else {
            ck_assert_int_eq(rv, GRPC_READER_NEED_MORE);
        }
    }
    ck_assert_uint_eq(got, 3);
    ck_assert(grpc_reader_idle(&reader));
    grpc_reader_free(&reader);
}
END_TEST

START_TEST(test_reader_refuses_oversized_length_before_buffering)
{
    const uint8_t header[] = {0, 0, 0, 0, 101};
    struct grpc_reader reader;
    size_t consumed;

    grpc_reader_init(&reader, 100);
    ck_assert_int_eq(grpc_reader_feed(&reader, header, 5, &consumed), GRPC_READER_TOO_LARGE);
    ck_assert_ptr_null(reader.body);
    grpc_reader_free(&reader);
}
END_TEST

START_TEST(test_reader_flags_compression_and_bad_flag_bytes)
{
    const uint8_t compressed[] = {1, 0, 0, 0, 1, 'x'};
    const uint8_t bad[] = {7, 0, 0, 0, 1, 'x'};
    struct grpc_reader reader;
    size_t consumed;

    grpc_reader_init(&reader, 100);
    ck_assert_int_eq(grpc_reader_feed(&reader, compressed, 6, &consumed), GRPC_READER_COMPRESSED);
    grpc_reader_free(&reader);
    grpc_reader_init(&reader, 100);
    ck_assert_int_eq(grpc_reader_feed(&reader, bad, 6, &consumed), GRPC_READER_BAD_FLAG);
    grpc_reader_free(&reader);
}
END_TEST

START_TEST(test_reader_takes_compressed_messages_once_allowed)
{
    struct byte_queue queue;
    struct grpc_reader reader;
    size_t consumed, len;
    const uint8_t *body;

    memset(&queue, 0, sizeof(queue));
    ck_assert_int_eq(grpc_frame_append(&queue, (const uint8_t *)"abc", 3, 1), 0);
    ck_assert_int_eq(grpc_frame_append(&queue, (const uint8_t *)"de", 2, 0), 0);
    ck_assert_uint_eq(byte_queue_length(&queue), 5 + 3 + 5 + 2);
    ck_assert_uint_eq(queue.data[queue.start], 1);
    ck_assert_uint_eq(queue.data[queue.start + 8], 0);
    grpc_reader_init(&reader, 16);
    reader.allow_compressed = 1;
    ck_assert_int_eq(grpc_reader_feed(&reader, queue.data + queue.start, 15, &consumed),
                     GRPC_READER_MESSAGE);
    body = grpc_reader_message(&reader, &len);
    ck_assert_int_eq(reader.compressed, 1);
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(body, "abc", 3);
    grpc_reader_take(&reader);
    ck_assert_int_eq(
        grpc_reader_feed(&reader, queue.data + queue.start + consumed, 15 - consumed, &consumed),
        GRPC_READER_MESSAGE);
    ck_assert_int_eq(reader.compressed, 0);
    grpc_reader_free(&reader);
    byte_queue_free(&queue);
}
END_TEST

START_TEST(test_reader_survives_random_bytes)
{
    uint8_t buf[256];
    srand(7);
    for (int round = 0; round < 2000; round++) {
        struct grpc_reader reader;
        size_t len = (size_t)(rand() % (int)sizeof(buf));
        size_t off = 0;
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)(rand() % 4 == 0 ? 0 : rand());
        grpc_reader_init(&reader, 64);
        while (off < len) {
            size_t consumed;
            int rv = grpc_reader_feed(&reader, buf + off, len - off, &consumed);
            off += consumed;
            if (rv == GRPC_READER_MESSAGE)
                grpc_reader_take(&reader);
            else if (rv < 0 || consumed == 0)
                break;
        }
        grpc_reader_free(&reader);
    }
}
END_TEST

START_TEST(test_status_names_round_trip)
{
    for (int i = 0; i < GRPC_STATUS_COUNT; i++)
        ck_assert_int_eq(grpc_status_from_name(grpc_status_name(i)), i);
    ck_assert_str_eq(grpc_status_name(99), "UNKNOWN");
    ck_assert_int_eq(grpc_status_from_name("NOPE"), -1);
}
END_TEST

Suite *grpc_wire_suite(void)
{
    Suite *suite = suite_create("grpc_wire");
    TCase *tc = tcase_create("wire");

    tcase_add_test(tc, test_message_encoding_matches_the_spec_example);
    tcase_add_test(tc, test_message_encoding_escapes_percent_and_reports_needed_size);
    tcase_add_test(tc, test_message_decoding_keeps_malformed_escapes);
    tcase_add_test(tc, test_timeout_parses_all_six_units);
    tcase_add_test(tc, test_timeout_rejects_malformed_values);
    tcase_add_test(tc, test_base64_round_trips_padded_and_unpadded);
    tcase_add_test(tc, test_reader_reassembles_messages_split_byte_by_byte);
    tcase_add_test(tc, test_reader_refuses_oversized_length_before_buffering);
    tcase_add_test(tc, test_reader_flags_compression_and_bad_flag_bytes);
    tcase_add_test(tc, test_reader_takes_compressed_messages_once_allowed);
    tcase_add_test(tc, test_reader_survives_random_bytes);
    tcase_add_test(tc, test_status_names_round_trip);
    suite_add_tcase(suite, tc);
    return suite;
}
