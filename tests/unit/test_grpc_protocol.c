/* grpc_protocol: content types, the grpc-web trailer frame, and the
 * streaming base64 of grpc-web-text, with malformed input. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/byte_queue.h"
#include "grpc/grpc_protocol.h"
#include "grpc/grpc_wire.h"

static int protocol_of(const char *content_type)
{
    const struct grpc_protocol *p = grpc_protocol_find(content_type);
    return p ? (int)p->id : -1;
}

START_TEST(test_content_types_select_their_protocol)
{
    ck_assert_int_eq(protocol_of("application/grpc"), GRPC_PROTOCOL_GRPC);
    ck_assert_int_eq(protocol_of("application/grpc+proto"), GRPC_PROTOCOL_GRPC);
    ck_assert_int_eq(protocol_of("application/grpc-web"), GRPC_PROTOCOL_GRPC_WEB);
    ck_assert_int_eq(protocol_of("Application/GRPC-Web+proto"), GRPC_PROTOCOL_GRPC_WEB);
    ck_assert_int_eq(protocol_of("application/grpc-web; charset=utf-8"), GRPC_PROTOCOL_GRPC_WEB);
    ck_assert_int_eq(protocol_of("application/grpc-web-text"), GRPC_PROTOCOL_GRPC_WEB_TEXT);
    ck_assert_int_eq(protocol_of("application/grpc-web-text+proto"), GRPC_PROTOCOL_GRPC_WEB_TEXT);
    ck_assert_int_eq(protocol_of("application/grpc-web+json"), -1);
    ck_assert_int_eq(protocol_of("application/grpc-webx"), -1);
    ck_assert_int_eq(protocol_of("application/grpcx"), -1);
    ck_assert_int_eq(protocol_of("text/plain"), -1);
    ck_assert_int_eq(protocol_of(""), -1);
    ck_assert_int_eq(protocol_of(NULL), -1);
}
END_TEST

START_TEST(test_trailer_frame_has_flag_0x80_and_lines)
{
    struct byte_queue q = {0};
    const char *names[] = {"grpc-status", "grpc-message", "Agenthub-Last-Seq"};
    const char *values[] = {"5", "session not found", "42"};
    static const char want[] =
        "grpc-status:5\r\ngrpc-message:session not found\r\nagenthub-last-seq:42\r\n";
    size_t len = sizeof(want) - 1;

    ck_assert_int_eq(grpc_web_trailer_frame(&q, names, values, 3), 0);
    ck_assert_uint_eq(byte_queue_length(&q), 5 + len);
    ck_assert_uint_eq(q.data[0], 0x80);
    ck_assert_uint_eq((size_t)q.data[3] << 8 | q.data[4], len);
    ck_assert_mem_eq(q.data + 5, want, len);
    byte_queue_free(&q);
}
END_TEST

/* Decodes TEXT fed in pieces of STEP characters.  Returns the decoder's
 * result (0, or -1) and the bytes in OUT. */
static int decode_in_steps(const char *text, size_t step, struct byte_queue *out)
{
    struct grpc_base64_decoder dec = {0};
    size_t len = strlen(text);

    for (size_t at = 0; at < len; at += step) {
        size_t n = len - at < step ? len - at : step;
        if (grpc_base64_decoder_feed(&dec, (const uint8_t *)text + at, n, out) != 0)
            return -1;
    }
    return grpc_base64_decoder_done(&dec) ? 0 : -1;
}

START_TEST(test_base64_decoder_takes_any_split_and_padded_chunks)
{
    for (size_t step = 1; step <= 9; step++) {
        struct byte_queue q = {0};
        ck_assert_int_eq(decode_in_steps("aGVsbG8gd29ybGQ=", step, &q), 0);
        ck_assert_uint_eq(byte_queue_length(&q), 11);
        ck_assert_mem_eq(q.data + q.start, "hello world", 11);
        byte_queue_free(&q);
    }
    /* "he" and "llo" encoded separately, each padded. */
    struct byte_queue q = {0};
    ck_assert_int_eq(decode_in_steps("aGU=bGxv", 3, &q), 0);
    ck_assert_uint_eq(byte_queue_length(&q), 5);
    ck_assert_mem_eq(q.data + q.start, "hello", 5);
    byte_queue_free(&q);
}
END_TEST

START_TEST(test_base64_decoder_refuses_what_is_not_base64)
{
    static const char *const bad[] = {"aGV!", "a===", "=aGV", "aG=V", "aGVsb G8=", "\x80\x81xx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct byte_queue q = {0};
        ck_assert_int_eq(decode_in_steps(bad[i], 4, &q), -1);
        byte_queue_free(&q);
    }
    /* A text that stops inside a group is not done. */
    struct byte_queue q = {0};
    ck_assert_int_eq(decode_in_steps("aGVsbG8", 4, &q), -1);
    byte_queue_free(&q);
}
END_TEST

START_TEST(test_base64_encoder_output_concatenates_to_one_text)
{
    static const char input[] = "the pane streams frames";
    struct grpc_base64_encoder enc = {0};
    char out[64];
    size_t written = 0;
    size_t cuts[] = {1, 2, 3, 5, 8, 23};
    size_t at = 0;

    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        size_t n = cuts[i] - at;
        written += grpc_base64_encoder_feed(&enc, (const uint8_t *)input + at, n, cuts[i] == 23,
                                            (uint8_t *)out + written);
        at = cuts[i];
    }
    out[written] = '\0';
    ck_assert_str_eq(out, "dGhlIHBhbmUgc3RyZWFtcyBmcmFtZXM=");
    /* Room: whole groups only, one group kept for the padded end. */
    ck_assert_uint_eq(grpc_base64_encoder_room(&enc, 4), 0);
    ck_assert_uint_eq(grpc_base64_encoder_room(&enc, 16), 9);
}
END_TEST

/* The streaming encoder (whole input, and one byte a call) and the one-shot
 * -bin encoder write the same text for every length and every padding. */
START_TEST(test_base64_streaming_and_one_shot_agree)
{
    uint8_t input[64];
    char one_shot[96], whole[96], bytewise[96];

    for (size_t i = 0; i < sizeof(input); i++)
        input[i] = (uint8_t)(i * 37 + 251 - (i >> 2)); /* every bit pattern soon */
    for (size_t len = 0; len <= sizeof(input); len++) {
        struct grpc_base64_encoder enc = {0};
        size_t n = base64_encode(input, len, one_shot, sizeof(one_shot));
        size_t w = grpc_base64_encoder_feed(&enc, input, len, 1, (uint8_t *)whole);

        ck_assert_uint_eq(n, (len + 2) / 3 * 4);
        ck_assert_uint_eq(w, n);
        ck_assert(memcmp(whole, one_shot, n) == 0);
        memset(&enc, 0, sizeof(enc));
        w = 0;
        for (size_t i = 0; i < len; i++)
            w +=
                grpc_base64_encoder_feed(&enc, input + i, 1, i + 1 == len, (uint8_t *)bytewise + w);
        ck_assert_uint_eq(w, n);
        ck_assert(memcmp(bytewise, one_shot, n) == 0);
    }
}
END_TEST

Suite *grpc_protocol_suite(void)
{
    Suite *suite = suite_create("grpc_protocol");
    TCase *tc = tcase_create("protocol");

    tcase_add_test(tc, test_content_types_select_their_protocol);
    tcase_add_test(tc, test_trailer_frame_has_flag_0x80_and_lines);
    tcase_add_test(tc, test_base64_decoder_takes_any_split_and_padded_chunks);
    tcase_add_test(tc, test_base64_decoder_refuses_what_is_not_base64);
    tcase_add_test(tc, test_base64_encoder_output_concatenates_to_one_text);
    tcase_add_test(tc, test_base64_streaming_and_one_shot_agree);
    suite_add_tcase(suite, tc);
    return suite;
}
