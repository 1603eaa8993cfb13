/* hex: common/hex.h, digit values and lowercase encoding. */
#include <check.h>
#include <string.h>

#include "common/hex.h"

START_TEST(test_every_digit_reads_in_either_case_and_nothing_else_does)
{
    for (int c = -128; c < 128; c++) {
        int want = -1;
        if (c >= '0' && c <= '9')
            want = c - '0';
        else if (c >= 'a' && c <= 'f')
            want = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            want = c - 'A' + 10;
        ck_assert_int_eq(hex_value((char)c), want);
    }
}
END_TEST

START_TEST(test_encoding_is_lowercase_and_terminated)
{
    static const uint8_t raw[] = {0x00, 0x0f, 0xa5, 0xff, 0x10};
    char out[2 * sizeof(raw) + 1];

    memset(out, 'x', sizeof(out));
    hex_encode(raw, sizeof(raw), out);
    ck_assert_str_eq(out, "000fa5ff10");
    hex_encode(raw, 0, out);
    ck_assert_str_eq(out, "");
    /* what is written reads back */
    hex_encode(raw, sizeof(raw), out);
    for (size_t i = 0; i < sizeof(raw); i++)
        ck_assert_int_eq(hex_value(out[2 * i]) << 4 | hex_value(out[2 * i + 1]), raw[i]);
}
END_TEST

Suite *hex_suite(void)
{
    Suite *suite = suite_create("hex");
    TCase *tc = tcase_create("hex");

    tcase_add_test(tc, test_every_digit_reads_in_either_case_and_nothing_else_does);
    tcase_add_test(tc, test_encoding_is_lowercase_and_terminated);
    suite_add_tcase(suite, tc);
    return suite;
}
