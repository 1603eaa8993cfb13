/* base64: common/base64.h, the encoder and the one decoder with its
 * options, malformed input included. */
#include <check.h>
#include <string.h>

#include "common/base64.h"

/* Decodes TEXT under OPTIONS; returns the result, the bytes in OUT and
 * their count in *LEN. */
static enum base64_result decode(const char *text, enum base64_options options, uint8_t *out,
                                 size_t *len)
{
    *len = (size_t)-1;
    return base64_decode(text, strlen(text), options, out, len);
}

START_TEST(test_every_length_goes_round_trip_padded)
{
    uint8_t raw[40], back[64];
    char text[64];

    for (size_t i = 0; i < sizeof(raw); i++)
        raw[i] = (uint8_t)(i * 37 + 250);
    for (size_t n = 0; n <= sizeof(raw); n++) {
        size_t len;
        ck_assert_uint_eq(base64_encode(raw, n, text, sizeof(text)), base64_encoded_length(n));
        ck_assert_uint_le(n, base64_decoded_max_length(strlen(text)));
        ck_assert_int_eq(decode(text, BASE64_STRICT, back, &len), BASE64_OK);
        ck_assert_uint_eq(len, n);
        ck_assert_mem_eq(back, raw, n);
        ck_assert_int_eq(decode(text, BASE64_URL_ALPHABET | BASE64_PADDING_OPTIONAL, back, &len),
                         BASE64_OK);
        ck_assert_uint_eq(len, n);
        ck_assert_mem_eq(back, raw, n);
    }
}
END_TEST

START_TEST(test_the_published_vectors_decode)
{
    static const char *const text[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                       "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    uint8_t out[16];
    size_t len;

    for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
        ck_assert_int_eq(decode(text[i], BASE64_STRICT, out, &len), BASE64_OK);
        ck_assert_uint_eq(len, strlen(plain[i]));
        ck_assert_mem_eq(out, plain[i], len);
    }
}
END_TEST

START_TEST(test_strict_wants_the_standard_alphabet_and_whole_groups)
{
    uint8_t out[16];
    size_t len;

    ck_assert_int_eq(decode("Zm9", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zg=", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zg===", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zm9*", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("-_-_", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zg==Zg==", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zm 9v", BASE64_STRICT, out, &len), BASE64_MALFORMED);
    /* a failed decode leaves the length alone */
    ck_assert_uint_eq(len, (size_t)-1);
    ck_assert_int_eq(base64_decode("Zm\0v", 4, BASE64_STRICT, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("+/+/", BASE64_STRICT, out, &len), BASE64_OK);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(out[0], 0xfb);
    ck_assert_int_eq(out[1], 0xff);
    ck_assert_int_eq(out[2], 0xbf);
}
END_TEST

START_TEST(test_the_lenient_options_take_url_characters_and_missing_padding)
{
    uint8_t out[16];
    size_t len;

    ck_assert_int_eq(decode("-_+/", BASE64_URL_ALPHABET, out, &len), BASE64_OK);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(out[0], 0xfb);
    ck_assert_int_eq(out[1], 0xff);
    ck_assert_int_eq(out[2], 0xbf);
    ck_assert_int_eq(decode("Zm9", BASE64_PADDING_OPTIONAL, out, &len), BASE64_OK);
    ck_assert_uint_eq(len, 2);
    ck_assert_mem_eq(out, "fo", 2);
    ck_assert_int_eq(decode("Zg=====", BASE64_PADDING_OPTIONAL, out, &len), BASE64_OK);
    ck_assert_uint_eq(len, 1);
    /* one character left over is never a byte */
    ck_assert_int_eq(decode("a", BASE64_PADDING_OPTIONAL, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zm9vY", BASE64_PADDING_OPTIONAL, out, &len), BASE64_MALFORMED);
    ck_assert_int_eq(decode("a!bc", BASE64_URL_ALPHABET | BASE64_PADDING_OPTIONAL, out, &len),
                     BASE64_MALFORMED);
    ck_assert_int_eq(decode("Zg=a", BASE64_PADDING_OPTIONAL, out, &len), BASE64_MALFORMED);
}
END_TEST

START_TEST(test_a_group_decodes_with_padding_only_at_its_end)
{
    uint8_t out[3];

    ck_assert_int_eq(base64_decode_group("Zm9v", out), 3);
    ck_assert_mem_eq(out, "foo", 3);
    ck_assert_int_eq(base64_decode_group("Zm8=", out), 2);
    ck_assert_mem_eq(out, "fo", 2);
    ck_assert_int_eq(base64_decode_group("Zg==", out), 1);
    ck_assert_mem_eq(out, "f", 1);
    ck_assert_int_eq(base64_decode_group("Z===", out), -1);
    ck_assert_int_eq(base64_decode_group("====", out), -1);
    ck_assert_int_eq(base64_decode_group("Zg=v", out), -1);
    ck_assert_int_eq(base64_decode_group("Zm9*", out), -1);
    ck_assert_int_eq(base64_decode_group("Zm9-", out), -1);
}
END_TEST

Suite *base64_suite(void)
{
    Suite *suite = suite_create("base64");
    TCase *tc = tcase_create("codec");

    tcase_add_test(tc, test_every_length_goes_round_trip_padded);
    tcase_add_test(tc, test_the_published_vectors_decode);
    tcase_add_test(tc, test_strict_wants_the_standard_alphabet_and_whole_groups);
    tcase_add_test(tc, test_the_lenient_options_take_url_characters_and_missing_padding);
    tcase_add_test(tc, test_a_group_decodes_with_padding_only_at_its_end);
    suite_add_tcase(suite, tc);
    return suite;
}
