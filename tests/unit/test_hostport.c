/* hostport: HOST:PORT splitting for listeners and clients. */
#include <check.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

START_TEST(test_a_listen_address_resolves_and_its_bound_name_reads_back)
{
    struct addrinfo *res;
    char err[128], name[80], expect[80];
    int fd;

    ck_assert_int_eq(hostport_resolve_listen("127.0.0.1:0", &res, err, sizeof(err)), 0);
    fd = socket(res->ai_family, res->ai_socktype, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, res->ai_addr, res->ai_addrlen), 0);
    freeaddrinfo(res);
    hostport_format_bound(fd, name, sizeof(name), "fallback");
    ck_assert_int_eq(strncmp(name, "127.0.0.1:", 10), 0);
    ck_assert_str_ne(name, "127.0.0.1:0"); /* the port the kernel picked */
    close(fd);
    hostport_format_bound(-1, name, sizeof(name), "fallback");
    ck_assert_str_eq(name, "fallback");

    ck_assert_int_eq(hostport_resolve_listen("nope", &res, err, sizeof(err)), -1);
    ck_assert_ptr_null(res);
    snprintf(expect, sizeof(expect), "%s: expected HOST:PORT", "nope");
    ck_assert_str_eq(err, expect);
    ck_assert_int_eq(hostport_resolve_listen("256.0.0.1:1", &res, err, sizeof(err)), -1);
    ck_assert_int_eq(strncmp(err, "256.0.0.1:1: ", 13), 0);
}
END_TEST

START_TEST(test_an_address_list_rotates_and_refuses_empty_or_oversized_elements)
{
    char out[32];

    ck_assert_uint_eq(hostport_list_nth("a:1", 0, out, sizeof(out)), 1);
    ck_assert_str_eq(out, "a:1");
    ck_assert_uint_eq(hostport_list_nth("a:1, b:2 ,c:3", 1, out, sizeof(out)), 3);
    ck_assert_str_eq(out, "b:2");
    ck_assert_uint_eq(hostport_list_nth("a:1,b:2,c:3", 5, out, sizeof(out)), 3);
    ck_assert_str_eq(out, "c:3");
    ck_assert_uint_eq(hostport_list_nth("a:1,,c:3", 1, out, sizeof(out)), 0);
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(hostport_list_nth("", 0, out, sizeof(out)), 0);
    ck_assert_uint_eq(hostport_list_nth(NULL, 0, out, sizeof(out)), 0);
    ck_assert_uint_eq(
        hostport_list_nth("a:1,bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb:2", 1, out, sizeof(out)),
        0);
}
END_TEST

Suite *hostport_suite(void)
{
    Suite *suite = suite_create("hostport");
    TCase *tc = tcase_create("split");

    tcase_add_test(tc, test_splits_name_v4_and_bracketed_v6);
    tcase_add_test(tc, test_unbracketed_v6_splits_at_last_colon_and_host_may_be_empty);
    tcase_add_test(tc, test_a_listen_address_resolves_and_its_bound_name_reads_back);
    tcase_add_test(tc, test_refuses_missing_port_bad_brackets_and_overflow);
    tcase_add_test(tc, test_an_address_list_rotates_and_refuses_empty_or_oversized_elements);
    suite_add_tcase(suite, tc);
    return suite;
}
