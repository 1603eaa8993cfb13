/* hostport: HOST:PORT splitting for listeners and clients. */
#include <check.h>
#include <string.h>

#include "common/hostport.h"

START_TEST(test_splits_name_v4_and_bracketed_v6)
{
    char host[64], port[16];

    ck_assert_int_eq(hostport_split("localhost:50051", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "localhost");
    ck_assert_str_eq(port, "50051");
    ck_assert_int_eq(hostport_split("127.0.0.1:0", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_str_eq(port, "0");
    ck_assert_int_eq(hostport_split("[::1]:9090", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_str_eq(port, "9090");
}
END_TEST

START_TEST(test_unbracketed_v6_splits_at_last_colon_and_host_may_be_empty)
{
    char host[64], port[16];

    ck_assert_int_eq(hostport_split("::1:8080", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_str_eq(port, "8080");
    ck_assert_int_eq(hostport_split(":8080", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "");
    ck_assert_str_eq(port, "8080");
}
END_TEST

START_TEST(test_refuses_missing_port_bad_brackets_and_overflow)
{
    char host[8], port[6];

    ck_assert_int_eq(hostport_split("localhost", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("host:", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("[::1:80", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("[::1]80", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("[::1]", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("longhostname:80", host, sizeof(host), port, sizeof(port)), -1);
    ck_assert_int_eq(hostport_split("h:123456", host, sizeof(host), port, sizeof(port)), -1);
    /* exactly fitting parts are taken */
    ck_assert_int_eq(hostport_split("1234567:12345", host, sizeof(host), port, sizeof(port)), 0);
    ck_assert_str_eq(host, "1234567");
    ck_assert_str_eq(port, "12345");
}
END_TEST

Suite *hostport_suite(void)
{
    Suite *suite = suite_create("hostport");
    TCase *tc = tcase_create("split");

    tcase_add_test(tc, test_splits_name_v4_and_bracketed_v6);
    tcase_add_test(tc, test_unbracketed_v6_splits_at_last_colon_and_host_may_be_empty);
    tcase_add_test(tc, test_refuses_missing_port_bad_brackets_and_overflow);
    suite_add_tcase(suite, tc);
    return suite;
}
