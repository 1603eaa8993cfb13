/* web: the pane page's responder, on a small table of its own. */
#include <check.h>
#include <string.h>

#include "web/web.h"

static const unsigned char page[] = "<!doctype html>";
static const unsigned char script[] = "console.log(1)";

static const struct web_asset assets[] = {
    {"/", "text/html; charset=utf-8", page, sizeof(page) - 1, "\"0123abcd\"", 0},
    {"/app-0123456789abcdef.js", "text/javascript; charset=utf-8", script, sizeof(script) - 1,
     "\"feed\"", 1},
};
static const struct web_site site = {assets, 2};

static const char *header(const struct web_response *r, const char *name)
{
    for (size_t i = 0; i < r->header_count; i++)
        if (strcmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

START_TEST(test_the_page_is_revalidated_and_carries_the_security_headers)
{
    struct web_response r;

    web_respond(&site, "GET", "/", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header(&r, "content-security-policy"), "default-src 'self'");
    ck_assert_str_eq(header(&r, "x-content-type-options"), "nosniff");
    ck_assert_str_eq(header(&r, "cache-control"), "no-cache");
    ck_assert_str_eq(header(&r, "etag"), "\"0123abcd\"");
    ck_assert_str_eq(header(&r, "content-type"), "text/html; charset=utf-8");
    ck_assert_str_eq(header(&r, "content-length"), "15");
    ck_assert_uint_eq(r.body_len, 15);
    ck_assert_int_eq(memcmp(r.body, page, 15), 0);
    /* A query string does not change what is served. */
    web_respond(&site, "GET", "/?x=1", NULL, &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

START_TEST(test_hashed_assets_are_immutable)
{
    struct web_response r;

    web_respond(&site, "GET", "/app-0123456789abcdef.js", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(header(&r, "cache-control"), "public, max-age=31536000, immutable");
    ck_assert_str_eq(header(&r, "content-type"), "text/javascript; charset=utf-8");
}
END_TEST

START_TEST(test_if_none_match_answers_304_without_a_body)
{
    struct web_response r;

    web_respond(&site, "GET", "/", "\"0123abcd\"", &r);
    ck_assert_int_eq(r.status, 304);
    ck_assert_ptr_null(r.body);
    ck_assert_str_eq(header(&r, "etag"), "\"0123abcd\"");
    ck_assert_ptr_null(header(&r, "content-length"));
    web_respond(&site, "GET", "/", "\"other\", W/\"0123abcd\"", &r);
    ck_assert_int_eq(r.status, 304);
    web_respond(&site, "GET", "/", "*", &r);
    ck_assert_int_eq(r.status, 304);
    web_respond(&site, "GET", "/", "\"0123abc\"", &r);
    ck_assert_int_eq(r.status, 200);
}
END_TEST

START_TEST(test_malformed_if_none_match_matches_nothing)
{
    static const char *const bad[] = {
        "0123abcd",  "\"0123abcd",     "\"0123abcd\" x", "W/0123abcd",
        "\"01 23\"", "\"0123abcd\"\"", "W\"0123abcd\"",  "",
        ",,,",       "\"\x01\"",
    };
    struct web_response r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(web_etag_matches(bad[i], "\"0123abcd\""), 0);
        web_respond(&site, "GET", "/", bad[i], &r);
        ck_assert_int_eq(r.status, 200);
    }
    ck_assert_int_eq(web_etag_matches(NULL, "\"0123abcd\""), 0);
    ck_assert_int_eq(web_etag_matches("\"x\"", NULL), 0);
}
END_TEST

START_TEST(test_head_has_the_headers_and_no_body)
{
    struct web_response r;

    web_respond(&site, "HEAD", "/", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(r.body);
    ck_assert_uint_eq(r.body_len, 0);
    ck_assert_str_eq(header(&r, "content-length"), "15");
    web_respond(&site, "HEAD", "/nope", NULL, &r);
    ck_assert_int_eq(r.status, 404);
    ck_assert_ptr_null(r.body);
}
END_TEST

START_TEST(test_unknown_paths_404_other_methods_405)
{
    struct web_response r;
    static const char *const paths[] = {"/index.htm", "",     "/app-0123456789abcdef.js/",
                                        "//",         "/../", "/%2e"};

    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        web_respond(&site, "GET", paths[i], NULL, &r);
        ck_assert_int_eq(r.status, 404);
        ck_assert_str_eq(header(&r, "content-security-policy"), "default-src 'self'");
        ck_assert_str_eq(header(&r, "x-content-type-options"), "nosniff");
    }
    web_respond(&site, "GET", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 404);
    web_respond(&site, "PUT", "/", NULL, &r);
    ck_assert_int_eq(r.status, 405);
    ck_assert_str_eq(header(&r, "allow"), "GET, HEAD");
    /* An empty site (--web off) answers 404 everywhere. */
    struct web_site none = {NULL, 0};
    web_respond(&none, "GET", "/", NULL, &r);
    ck_assert_int_eq(r.status, 404);
}
END_TEST

Suite *web_suite(void)
{
    Suite *suite = suite_create("web");
    TCase *tc = tcase_create("respond");

    tcase_add_test(tc, test_the_page_is_revalidated_and_carries_the_security_headers);
    tcase_add_test(tc, test_hashed_assets_are_immutable);
    tcase_add_test(tc, test_if_none_match_answers_304_without_a_body);
    tcase_add_test(tc, test_malformed_if_none_match_matches_nothing);
    tcase_add_test(tc, test_head_has_the_headers_and_no_body);
    tcase_add_test(tc, test_unknown_paths_404_other_methods_405);
    suite_add_tcase(suite, tc);
    return suite;
}
