/* Unit tests for the log: escaping, field caps, and a stderr nobody reads. */
#include "common/log.h"

#include <check.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_escaped(const char *in, size_t len, const char *want)
{
    char out[256];

    log_escape(in, len, out, sizeof(out));
    ck_assert_str_eq(out, want);
}

START_TEST(escape_keeps_text_and_escapes_what_could_forge_a_line)
{
    static const char in[] = "ok \xc3\xa9\n"
                             "agenthubd: error: forged\r\t\x1b[31m\\\x7f";

    expect_escaped(in, sizeof(in) - 1,
                   "ok \xc3\xa9\\nagenthubd: error: forged\\r\\t\\x1b[31m\\\\\\x7f");
}
END_TEST

START_TEST(escape_shows_each_invalid_byte)
{
    /* A stray continuation, an overlong '/', a surrogate, a cut sequence. */
    static const char in[] = "a\x80"
                             "b\xc0\xaf"
                             "c\xed\xa0\x80"
                             "d\xe2\x82";

    expect_escaped(in, sizeof(in) - 1, "a\\x80b\\xc0\\xafc\\xed\\xa0\\x80d\\xe2\\x82");
    expect_escaped("nul\0byte", 8, "nul\\x00byte");
}
END_TEST

START_TEST(escape_shows_c1_separators_and_bidi_controls_as_code_points)
{
    /* U+009B (CSI), U+2028, U+202E (right-to-left override), U+2066. */
    static const char in[] = "\xc2\x9b|\xe2\x80\xa8|\xe2\x80\xae|\xe2\x81\xa6|\xe2\x82\xac";

    expect_escaped(in, sizeof(in) - 1, "\\u009b|\\u2028|\\u202e|\\u2066|\xe2\x82\xac");
}
END_TEST

START_TEST(escape_stops_before_an_escape_that_does_not_fit)
{
    char out[6];

    ck_assert_uint_eq(log_escape("ab\ncd", 5, out, sizeof(out)), 5);
    ck_assert_str_eq(out, "ab\\nc");
    ck_assert_uint_eq(log_escape("abc\xff", 4, out, sizeof(out)), 3);
    ck_assert_str_eq(out, "abc");
}
END_TEST

/* Runs FN with stderr going into a pipe and returns what it wrote. */
static char *capture(void (*fn)(void))
{
    static char buf[65536];
    int fds[2], saved;
    ssize_t n, total = 0;

    ck_assert_int_eq(pipe(fds), 0);
    saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    while ((n = read(fds[0], buf + total, sizeof(buf) - 1 - (size_t)total)) > 0)
        total += n;
    close(fds[0]);
    buf[total] = '\0';
    return buf;
}

static void log_hostile_fields(void)
{
    log_setup("agenthubd", LOG_LEVEL_INFO);
    log_info("runner %s enrolled (version %s)", "runner-1",
             "v1\nagenthubd: error: forged\x1b[2J\xff");
}

START_TEST(one_call_writes_exactly_one_escaped_line)
{
    const char *out = capture(log_hostile_fields);

    ck_assert_str_eq(out, "agenthubd: info: runner runner-1 enrolled (version "
                          "v1\\nagenthubd: error: forged\\x1b[2J\\xff)\n");
}
END_TEST

static void log_long_fields(void)
{
    char big[5000];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_setup("t", LOG_LEVEL_INFO);
    log_info("[%s] [%.3s] [%-4s] [%s]", big, "precision kept", "w", "z");
    log_warn("%s%s%s%s%s%s%s", big, big, big, big, big, big, big);
}

START_TEST(each_string_field_is_capped_and_a_long_line_is_marked)
{
    const char *out = capture(log_long_fields);
    char want[LOG_FIELD_MAX + 64];
    const char *second;

    memcpy(want, "t: info: [", 10);
    memset(want + 10, 'a', LOG_FIELD_MAX);
    snprintf(want + 10 + LOG_FIELD_MAX, sizeof(want) - 10 - LOG_FIELD_MAX, "] [pre] [w   ] [z]\n");
    second = strchr(out, '\n') + 1;
    ck_assert_int_eq(strncmp(out, want, strlen(want)), 0);
    /* Seven capped fields fit in the message: no cut. */
    ck_assert_uint_eq(strlen(second), strlen("t: warn: ") + 7 * LOG_FIELD_MAX + 1);
}
END_TEST

static void log_overlong_message(void)
{
    char big[LOG_MESSAGE_MAX + 100];

    memset(big, 'b', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_setup("t", LOG_LEVEL_INFO);
    log_info("%.3000s", big); /* an explicit precision is the caller's word */
}

START_TEST(a_message_over_the_limit_ends_in_dots)
{
    const char *out = capture(log_overlong_message);
    size_t len = strlen(out);

    ck_assert_uint_eq(len, strlen("t: info: ") + LOG_MESSAGE_MAX - 1 + 1);
    ck_assert_int_eq(strcmp(out + len - 4, "...\n"), 0);
}
END_TEST

/* Reads what is in FD now (non-blocking) onto the end of OUT. */
static void read_available(int fd, char *out, size_t cap, size_t *len)
{
    ssize_t n;

    while (*len + 1 < cap && (n = read(fd, out + *len, cap - 1 - *len)) > 0)
        *len += (size_t)n;
    out[*len] = '\0';
}

static size_t count_lines(const char *s)
{
    size_t n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(a_stderr_nobody_reads_never_blocks_and_drops_are_reported)
{
    enum { LINES = 3000 };
    static char got[1 << 20];
    struct event_base *base = event_base_new();
    int fds[2], saved;
    size_t len = 0;
    unsigned long long reported = 0;
    const char *summary;

    ck_assert_ptr_nonnull(base);
    ck_assert_int_eq(pipe(fds), 0);
    fcntl(fds[1], F_SETPIPE_SZ, 4096);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    log_setup("t", LOG_LEVEL_INFO);
    ck_assert_int_eq(log_attach(base), 0);
    /* Nobody reads: every call returns (a blocking write would hang here). */
    for (int i = 0; i < LINES; i++)
        log_info("line %d of a stalled stderr, padded to about a hundred bytes ......... %s", i,
                 "........");
    ck_assert_uint_gt(log_dropped_lines(), 0);
    ck_assert_uint_lt(log_dropped_lines(), LINES);
    /* The shared description stays blocking for everyone else. */
    ck_assert_int_eq(fcntl(STDERR_FILENO, F_GETFL) & O_NONBLOCK, 0);

    /* A reader comes back: the loop drains the buffer, then says how many
     * lines were lost, then carries on. */
    for (int spins = 0; spins < 100000 && !strstr(got, "dropped"); spins++) {
        read_available(fds[0], got, sizeof(got), &len);
        event_base_loop(base, EVLOOP_NONBLOCK);
    }
    log_info("after");
    read_available(fds[0], got, sizeof(got), &len);
    summary = strstr(got, "t: warn: ");
    ck_assert_ptr_nonnull(summary);
    ck_assert_int_eq(sscanf(summary, "t: warn: %llu log line(s) dropped", &reported), 1);
    ck_assert_uint_eq(reported, log_dropped_lines());
    ck_assert_uint_eq(count_lines(got), LINES - reported + 2);
    ck_assert_int_eq(strcmp(got + len - strlen("t: info: after\n"), "t: info: after\n"), 0);

    log_detach(100);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[0]);
    event_base_free(base);
}
END_TEST

Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("log");

    tcase_add_test(tc, escape_keeps_text_and_escapes_what_could_forge_a_line);
    tcase_add_test(tc, escape_shows_each_invalid_byte);
    tcase_add_test(tc, escape_shows_c1_separators_and_bidi_controls_as_code_points);
    tcase_add_test(tc, escape_stops_before_an_escape_that_does_not_fit);
    tcase_add_test(tc, one_call_writes_exactly_one_escaped_line);
    tcase_add_test(tc, each_string_field_is_capped_and_a_long_line_is_marked);
    tcase_add_test(tc, a_message_over_the_limit_ends_in_dots);
    tcase_add_test(tc, a_stderr_nobody_reads_never_blocks_and_drops_are_reported);
    suite_add_tcase(s, tc);
    return s;
}
