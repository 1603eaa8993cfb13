/* Unit tests for the hook shim's spool segments (src/cli/hook_spool.c):
 * appends, sealing, windows and offsets, the cap, a writer killed mid-line,
 * and appenders racing a sealer in other processes. */
#include "cli/client.h"
#include "cli/hook_spool.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];
static char path[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/agenthub-spool-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/spool.jsonl", dir);
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char file[400];

    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(file, sizeof(file), "%s/%s", dir, e->d_name);
        unlink(file);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static uint64_t later(void)
{
    return cli_now_ms() + 5000;
}

/* One op line naming N. */
static void op_line(char *out, size_t size, long n)
{
    snprintf(out, size, "{\"op\":\"append\",\"n\":%ld}\n", n);
}

static void append_op(struct hook_spool *sp, long n)
{
    char line[64];

    op_line(line, sizeof(line), n);
    ck_assert_int_eq(hook_spool_append(sp, line, strlen(line), later()), 0);
}

/* Every pending op's n, in delivery order, read the way a deliverer does
 * (the sealed segments, after sealing the open one).  Returns the count. */
static size_t drain_ops(struct hook_spool *sp, long *out, size_t max)
{
    struct hook_spool_segment seg;
    size_t count = 0;

    ck_assert_int_eq(hook_spool_lock(sp, later(), 0), 0);
    hook_spool_seal(sp, 1, later());
    while (hook_spool_oldest(sp, &seg, later()) == 1) {
        while (seg.offset < seg.size) {
            struct hook_spool_window win;
            ck_assert_int_eq(hook_spool_read(&seg, &win), 0);
            for (size_t i = 0; i < json_array_size(win.ops); i++) {
                json_t *n = json_object_get(json_array_get(win.ops, i), "n");
                ck_assert(count < max);
                out[count++] = (long)json_integer_value(n);
            }
            ck_assert_int_eq(hook_spool_advance(sp, &seg, win.end), 0);
            hook_spool_window_free(&win);
        }
        ck_assert_int_eq(hook_spool_advance(sp, &seg, seg.size), 0);
        hook_spool_segment_close(&seg);
    }
    hook_spool_unlock(sp);
    return count;
}

START_TEST(appends_seal_into_ordered_segments)
{
    struct hook_spool sp;
    char sealed[200];
    long got[16];
    struct stat st;

    ck_assert_int_eq(hook_spool_init(&sp, path, 0), 0);
    append_op(&sp, 1);
    append_op(&sp, 2);
    ck_assert_int_eq(hook_spool_lock(&sp, later(), 0), 0);
    ck_assert_int_eq(hook_spool_seal(&sp, 1, later()), 1);
    snprintf(sealed, sizeof(sealed), "%s.1-0", path);
    ck_assert_int_eq(stat(sealed, &st), 0);
    ck_assert_int_ne(stat(path, &st), 0); /* the open segment starts afresh */
    ck_assert_int_eq(hook_spool_seal(&sp, 1, later()), 0);
    hook_spool_unlock(&sp);
    append_op(&sp, 3);
    ck_assert_uint_eq(drain_ops(&sp, got, 16), 3);
    ck_assert(got[0] == 1 && got[1] == 2 && got[2] == 3);
    ck_assert_int_ne(stat(sealed, &st), 0); /* delivered: removed */
    ck_assert_uint_eq(drain_ops(&sp, got, 16), 0);
    hook_spool_close(&sp);
}
END_TEST

START_TEST(advance_records_the_offset_in_the_name)
{
    struct hook_spool sp;
    struct hook_spool_segment seg;
    struct hook_spool_window win;
    char name[200];
    struct stat st;

    ck_assert_int_eq(hook_spool_init(&sp, path, 0), 0);
    for (long i = 0; i < 3; i++)
        append_op(&sp, i);
    ck_assert_int_eq(hook_spool_lock(&sp, later(), 0), 0);
    hook_spool_seal(&sp, 1, later());
    ck_assert_int_eq(hook_spool_oldest(&sp, &seg, later()), 1);
    ck_assert_int_eq(hook_spool_read(&seg, &win), 0);
    ck_assert_uint_eq(json_array_size(win.ops), 3);
    ck_assert_uint_eq(win.end, seg.size);
    ck_assert_int_eq(hook_spool_advance(&sp, &seg, win.ends[0]), 0);
    snprintf(name, sizeof(name), "%s.1-%llu", path, (unsigned long long)win.ends[0]);
    ck_assert_int_eq(stat(name, &st), 0);
    hook_spool_window_free(&win);
    hook_spool_segment_close(&seg);
    /* A later hook resumes after the delivered op. */
    ck_assert_int_eq(hook_spool_oldest(&sp, &seg, later()), 1);
    ck_assert_int_eq(hook_spool_read(&seg, &win), 0);
    ck_assert_uint_eq(json_array_size(win.ops), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(win.ops, 0), "n")), 1);
    hook_spool_window_free(&win);
    hook_spool_segment_close(&seg);
    hook_spool_close(&sp);
}
END_TEST

START_TEST(the_cap_drops_the_oldest_lines_and_counts_them)
{
    struct hook_spool sp;
    char line[64];
    long got[64];
    size_t n, len;

    op_line(line, sizeof(line), 10);
    len = strlen(line);
    /* Room for 10 lines; 40 are spooled. */
    ck_assert_int_eq(hook_spool_init(&sp, path, 10 * len), 0);
    for (long i = 0; i < 40; i++)
        append_op(&sp, 10 + i); /* two digits: every line is LEN bytes */
    ck_assert_int_eq(hook_spool_lock(&sp, later(), 0), 0);
    /* One more line is about to be appended: 9 may stay. */
    ck_assert_int_eq(hook_spool_enforce_cap(&sp, len, later()), 31);
    hook_spool_unlock(&sp);
    ck_assert_uint_eq(hook_spool_dropped(&sp), 31);
    append_op(&sp, 99);
    n = drain_ops(&sp, got, 64);
    ck_assert_uint_eq(n, 10);
    for (size_t i = 0; i < 9; i++)
        ck_assert_int_eq(got[i], 41 + (long)i);
    ck_assert_int_eq(got[9], 99);
    ck_assert_int_eq(hook_spool_reported(&sp, 30), 0);
    ck_assert_uint_eq(hook_spool_dropped(&sp), 1);
    ck_assert_int_eq(hook_spool_reported(&sp, 1), 0);
    ck_assert_uint_eq(hook_spool_dropped(&sp), 0);
    hook_spool_close(&sp);
}
END_TEST

START_TEST(a_line_left_unfinished_does_not_swallow_the_next)
{
    struct hook_spool sp;
    long got[8];
    int fd;

    ck_assert_int_eq(hook_spool_init(&sp, path, 0), 0);
    append_op(&sp, 1);
    fd = open(path, O_WRONLY | O_APPEND);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "{\"op\":\"app", 10), 10); /* a writer killed mid-line */
    close(fd);
    append_op(&sp, 2);
    ck_assert_uint_eq(drain_ops(&sp, got, 8), 2);
    ck_assert(got[0] == 1 && got[1] == 2);
    hook_spool_close(&sp);
}
END_TEST

START_TEST(a_line_longer_than_a_window_is_passed_over)
{
    struct hook_spool sp;
    size_t big = HOOK_SPOOL_WINDOW + 100;
    char *junk = malloc(big + 1);
    long got[8];

    ck_assert_int_eq(hook_spool_init(&sp, path, 0), 0);
    append_op(&sp, 1);
    memset(junk, 'x', big);
    junk[big] = '\n';
    ck_assert_int_eq(hook_spool_append(&sp, junk, big + 1, later()), 0);
    append_op(&sp, 2);
    ck_assert_uint_eq(drain_ops(&sp, got, 8), 2);
    ck_assert(got[0] == 1 && got[1] == 2);
    free(junk);
    hook_spool_close(&sp);
}
END_TEST

START_TEST(appenders_racing_a_sealer_lose_nothing)
{
    enum { WRITERS = 4, EACH = 1000 };
    static long got[WRITERS * EACH + 1];
    static int seen[WRITERS * EACH];
    struct hook_spool sp;
    pid_t pids[WRITERS];
    size_t n = 0;
    int sealed = 0, status;

    ck_assert_int_eq(hook_spool_init(&sp, path, 0), 0);
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        ck_assert_int_ge(pids[w], 0);
        if (pids[w] == 0) {
            struct hook_spool mine;
            hook_spool_init(&mine, path, 0);
            for (long i = 0; i < EACH; i++) {
                char line[64];
                op_line(line, sizeof(line), w * EACH + i);
                if (hook_spool_append(&mine, line, strlen(line), later()) != 0)
                    _exit(1);
            }
            _exit(0);
        }
    }
    /* Seal as often as possible until every writer is done. */
    for (int done = 0; done < WRITERS;) {
        pid_t pid;
        ck_assert_int_eq(hook_spool_lock(&sp, later(), 0), 0);
        sealed += hook_spool_seal(&sp, 1, later()) == 1;
        hook_spool_unlock(&sp);
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            done++;
        }
    }
    ck_assert_int_ge(sealed, 1);
    n = drain_ops(&sp, got, WRITERS * EACH + 1);
    ck_assert_uint_eq(n, WRITERS * EACH);
    for (size_t i = 0; i < n; i++) {
        ck_assert(got[i] >= 0 && got[i] < WRITERS * EACH);
        ck_assert_int_eq(seen[got[i]]++, 0);
    }
    /* Each writer's own ops keep their order. */
    for (int w = 0; w < WRITERS; w++) {
        long last = -1;
        for (size_t i = 0; i < n; i++)
            if (got[i] / EACH == w) {
                ck_assert_int_gt(got[i], last);
                last = got[i];
            }
    }
    hook_spool_close(&sp);
}
END_TEST

Suite *cli_hook_spool_suite(void)
{
    Suite *s = suite_create("cli_hook_spool");
    TCase *tc = tcase_create("spool");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, appends_seal_into_ordered_segments);
    tcase_add_test(tc, advance_records_the_offset_in_the_name);
    tcase_add_test(tc, the_cap_drops_the_oldest_lines_and_counts_them);
    tcase_add_test(tc, a_line_left_unfinished_does_not_swallow_the_next);
    tcase_add_test(tc, a_line_longer_than_a_window_is_passed_over);
    tcase_add_test(tc, appenders_racing_a_sealer_lose_nothing);
    suite_add_tcase(s, tc);
    return s;
}
