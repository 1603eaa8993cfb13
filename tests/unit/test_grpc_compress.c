/* Unit tests for gRPC message compression (src/grpc/grpc_compress.c). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "grpc/grpc_compress.h"

static void round_trip(enum grpc_encoding encoding, const uint8_t *data, size_t len)
{
    uint8_t *packed, *unpacked;
    size_t packed_len, unpacked_len;

    ck_assert_int_eq(grpc_deflate(encoding, data, len, &packed, &packed_len), 0);
    ck_assert_int_eq(grpc_inflate(encoding, packed, packed_len, len, &unpacked, &unpacked_len),
                     GRPC_INFLATE_OK);
    ck_assert_uint_eq(unpacked_len, len);
    if (len)
        ck_assert_mem_eq(unpacked, data, len);
    free(packed);
    free(unpacked);
}

START_TEST(gzip_and_deflate_round_trip_at_every_size)
{
    static const size_t sizes[] = {0, 1, 255, 256, 257, 1024, 70000, 1 << 20};
    uint8_t *data = malloc(1 << 20);

    for (size_t i = 0; i < (1 << 20); i++)
        data[i] = (uint8_t)(i * 7 + (i >> 9));
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        round_trip(GRPC_ENCODING_GZIP, data, sizes[i]);
        round_trip(GRPC_ENCODING_DEFLATE, data, sizes[i]);
    }
    free(data);
}
END_TEST

START_TEST(a_bomb_stops_at_the_limit)
{
    size_t big = 64u << 20; /* 64 MiB of zeros: about 64 KiB compressed */
    uint8_t *zeros = calloc(1, big), *packed, *out;
    size_t packed_len, out_len;

    ck_assert_int_eq(grpc_deflate(GRPC_ENCODING_GZIP, zeros, big, &packed, &packed_len), 0);
    free(zeros);
    ck_assert_uint_lt(packed_len, big / 100);
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_GZIP, packed, packed_len, 4u << 20, &out, &out_len),
                     GRPC_INFLATE_TOO_LARGE);
    ck_assert_ptr_null(out);
    /* Exactly at the limit is fine; one byte under is not. */
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_GZIP, packed, packed_len, big, &out, &out_len),
                     GRPC_INFLATE_OK);
    ck_assert_uint_eq(out_len, big);
    free(out);
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_GZIP, packed, packed_len, big - 1, &out, &out_len),
                     GRPC_INFLATE_TOO_LARGE);
    free(packed);
}
END_TEST

START_TEST(corrupt_truncated_and_trailing_input_is_refused)
{
    static const uint8_t text[] = "hello hello hello hello hello";
    uint8_t *packed, *out, *longer;
    size_t packed_len, out_len;

    ck_assert_int_eq(grpc_deflate(GRPC_ENCODING_DEFLATE, text, sizeof(text), &packed, &packed_len),
                     0);
    /* Truncated at every length. */
    for (size_t n = 0; n < packed_len; n++)
        ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_DEFLATE, packed, n, 1024, &out, &out_len),
                         GRPC_INFLATE_CORRUPT);
    /* A byte after the end of the stream. */
    longer = malloc(packed_len + 1);
    memcpy(longer, packed, packed_len);
    longer[packed_len] = 0;
    ck_assert_int_eq(
        grpc_inflate(GRPC_ENCODING_DEFLATE, longer, packed_len + 1, 1024, &out, &out_len),
        GRPC_INFLATE_CORRUPT);
    /* The wrong wrapper: a zlib stream is not gzip. */
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_GZIP, packed, packed_len, 1024, &out, &out_len),
                     GRPC_INFLATE_CORRUPT);
    /* Garbage. */
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_GZIP, text, sizeof(text), 1024, &out, &out_len),
                     GRPC_INFLATE_CORRUPT);
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_IDENTITY, text, sizeof(text), 1024, &out, &out_len),
                     GRPC_INFLATE_CORRUPT);
    free(longer);
    free(packed);
}
END_TEST

START_TEST(zlib_gzip_output_of_another_writer_inflates)
{
    /* compress2 writes a zlib stream the way other implementations do. */
    static const uint8_t text[] = "a message compressed by someone else";
    uint8_t packed[256], *out;
    uLongf packed_len = sizeof(packed);
    size_t out_len;

    ck_assert_int_eq(compress2(packed, &packed_len, text, sizeof(text), 9), Z_OK);
    ck_assert_int_eq(grpc_inflate(GRPC_ENCODING_DEFLATE, packed, packed_len, 1024, &out, &out_len),
                     GRPC_INFLATE_OK);
    ck_assert_uint_eq(out_len, sizeof(text));
    ck_assert_mem_eq(out, text, sizeof(text));
    free(out);
}
END_TEST

START_TEST(encoding_names_and_accept_lists)
{
    ck_assert_int_eq(grpc_encoding_parse("gzip", 4), GRPC_ENCODING_GZIP);
    ck_assert_int_eq(grpc_encoding_parse("deflate", 7), GRPC_ENCODING_DEFLATE);
    ck_assert_int_eq(grpc_encoding_parse("identity", 8), GRPC_ENCODING_IDENTITY);
    ck_assert_int_eq(grpc_encoding_parse("snappy", 6), GRPC_ENCODING_UNSUPPORTED);
    ck_assert_int_eq(grpc_encoding_parse("GZIP", 4), GRPC_ENCODING_UNSUPPORTED);
    ck_assert_str_eq(grpc_encoding_name(GRPC_ENCODING_DEFLATE), "deflate");
    ck_assert_uint_eq(grpc_accept_encoding_parse("", 0), GRPC_ENCODING_BIT(GRPC_ENCODING_IDENTITY));
    ck_assert_uint_eq(grpc_accept_encoding_parse("identity, deflate ,gzip", 23),
                      GRPC_ENCODING_BIT(GRPC_ENCODING_IDENTITY) |
                          GRPC_ENCODING_BIT(GRPC_ENCODING_GZIP) |
                          GRPC_ENCODING_BIT(GRPC_ENCODING_DEFLATE));
    ck_assert_uint_eq(grpc_accept_encoding_parse("snappy,gzip", 11),
                      GRPC_ENCODING_BIT(GRPC_ENCODING_IDENTITY) |
                          GRPC_ENCODING_BIT(GRPC_ENCODING_GZIP));
}
END_TEST

Suite *grpc_compress_suite(void)
{
    Suite *s = suite_create("grpc_compress");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, gzip_and_deflate_round_trip_at_every_size);
    tcase_add_test(tc, a_bomb_stops_at_the_limit);
    tcase_add_test(tc, corrupt_truncated_and_trailing_input_is_refused);
    tcase_add_test(tc, zlib_gzip_output_of_another_writer_inflates);
    tcase_add_test(tc, encoding_names_and_accept_lists);
    suite_add_tcase(s, tc);
    return s;
}
