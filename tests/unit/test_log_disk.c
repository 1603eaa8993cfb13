/* Unit tests for the session log on disk: store/logdb (the file) and
 * hub/hub_log_disk (the backend): entries reach the rings only once
 * committed, and a new backend on the same file has every log, seq, mark,
 * bus event and the epoch back. */
#include "hub/hub_log_disk.h"

#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/logdb.h"

struct fixture {
    char dir[64], path[96];
    struct event_base *base;
    struct session_registry reg;
    struct bus bus;
    struct hub_log log;
    struct hub_log_disk *disk;
};

static void fixture_open(struct fixture *f)
{
    struct hub_log_disk_config config = {
        .path = f->path,
        .pending_bytes = 1 << 20,
    };
    enum logdb_rc rc;
    char err[256];

    f->base = event_base_new();
    session_registry_init(&f->reg, 0);
    bus_init(&f->bus, 0, 0);
    f->disk = hub_log_disk_open(&f->log, f->base, &f->reg, &f->bus, &config, &rc, err, sizeof(err));
    ck_assert_msg(f->disk != NULL, "%s", err);
}

static void fixture_close(struct fixture *f)
{
    hub_log_disk_free(f->disk);
    session_registry_free(&f->reg);
    bus_free(&f->bus);
    event_base_free(f->base);
}

static void fixture_init(struct fixture *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/agenthub-logdb-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/log.db", f->dir);
}

static void fixture_remove(struct fixture *f)
{
    char p[128];

    snprintf(p, sizeof(p), "%s-wal", f->path);
    unlink(p);
    snprintf(p, sizeof(p), "%s-shm", f->path);
    unlink(p);
    unlink(f->path);
    rmdir(f->dir);
}

static int waited;

static void on_done(struct hub_log_wait *w, int ok)
{
    waited = ok ? 1 : -1;
}

/* Runs the loop until W's frames are committed. */
static void wait_stored(struct fixture *f, struct session *s, struct hub_log_wait *w)
{
    waited = 0;
    if (hub_log_stored(&f->log, s, w))
        return;
    w->done = on_done;
    hub_log_wait(&f->log, s, w);
    while (waited == 0)
        event_base_loop(f->base, EVLOOP_ONCE);
    ck_assert_int_eq(waited, 1);
}

START_TEST(test_frames_reach_the_ring_once_committed_and_come_back_after_a_restart)
{
    struct fixture f;
    struct hub_log_wait w = {0};
    struct session *s;
    struct ring_entry e;
    struct bus_event ev;
    uint64_t epoch, gen, seq = 0, cursor;
    char frame[32];

    fixture_init(&f);
    fixture_open(&f);
    epoch = hub_log_epoch(&f.log);
    ck_assert_uint_ne(epoch, 0);
    ck_assert_int_eq(session_open(&f.reg, "s1", 2, &s), SESSION_CREATED);
    hub_log_runner_reset(&f.log, "r1");
    for (int i = 1; i <= 5; i++) {
        snprintf(frame, sizeof(frame), "frame-%d", i);
        hub_log_origin(&f.log, "r1", (uint64_t)i);
        seq = hub_log_append(&f.log, s, frame, strlen(frame), 1000 + i);
        hub_log_origin(&f.log, NULL, 0);
        ck_assert_uint_eq(seq, (uint64_t)i);
        hub_log_track(&f.log, s, &w, seq);
        hub_log_publish(&f.log, frame, strlen(frame), 1000 + i);
    }
    /* Taken, not committed: no reader sees them, the mark has not moved. */
    ck_assert_int_eq(hub_log_read(&f.log, s, 0, &e), RING_NONE);
    ck_assert_uint_eq(bus_newest_seq(&f.bus), 0);
    ck_assert_uint_eq(hub_log_runner_mark(&f.log, "r1", &gen), 0);
    wait_stored(&f, s, &w);
    ck_assert_uint_eq(w.first_seq, 1);
    ck_assert_uint_eq(w.last_seq, 5);
    ck_assert_int_eq(hub_log_read(&f.log, s, 4, &e), RING_OK);
    ck_assert_uint_eq(e.seq, 5);
    ck_assert_uint_eq(hub_log_runner_mark(&f.log, "r1", &gen), 5);
    ck_assert_uint_eq(gen, 1);
    ck_assert_uint_eq(bus_newest_seq(&f.bus), 5);
    hub_log_mark(&f.log, s, HUB_LOG_TAIL_END);
    fixture_close(&f); /* a clean stop commits the mark */

    fixture_open(&f);
    ck_assert_uint_eq(hub_log_epoch(&f.log), epoch);
    s = session_lookup(&f.reg, "s1", 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(session_tail_over(s), 1);
    for (uint64_t i = 0; i < 5; i++) {
        ck_assert_int_eq(hub_log_read(&f.log, s, i, &e), RING_OK);
        snprintf(frame, sizeof(frame), "frame-%d", (int)i + 1);
        ck_assert_uint_eq(e.seq, i + 1);
        ck_assert_int_eq(e.at_unix_ms, 1001 + (int64_t)i);
        ck_assert_mem_eq(e.data, frame, strlen(frame));
    }
    ck_assert_uint_eq(hub_log_runner_mark(&f.log, "r1", &gen), 5);
    ck_assert_uint_eq(gen, 1);
    /* The bus resumes in the same epoch and carries on from its seq. */
    ck_assert_int_eq(hub_log_open(&f.log, 3, epoch, &cursor), BUS_OK);
    ck_assert_int_eq(hub_log_next(&f.log, cursor, &ev), BUS_OK);
    ck_assert_uint_eq(ev.seq, 4);
    ck_assert_uint_eq(hub_log_publish(&f.log, "x", 1, 2000), 6);
    hub_log_mark(&f.log, s, HUB_LOG_TAIL_RESUME);
    memset(&w, 0, sizeof(w));
    seq = hub_log_append(&f.log, s, "next", 4, 2001);
    ck_assert_uint_eq(seq, 6);
    hub_log_track(&f.log, s, &w, seq);
    wait_stored(&f, s, &w);
    fixture_close(&f);
    fixture_remove(&f);
}
END_TEST

START_TEST(test_a_file_that_is_not_a_log_is_refused_and_left_alone)
{
    struct fixture f;
    struct logdb *db;
    uint64_t epoch;
    char err[256];
    FILE *out;

    fixture_init(&f);
    out = fopen(f.path, "wb");
    ck_assert_ptr_nonnull(out);
    for (int i = 0; i < 200; i++)
        fputs("not a database at all ", out);
    fclose(out);
    ck_assert_int_eq(logdb_open(f.path, LOGDB_SYNC_NORMAL, 7, &db, &epoch, err, sizeof(err)),
                     LOGDB_FOREIGN);
    ck_assert_ptr_null(db);
    /* An empty file is a new log. */
    out = fopen(f.path, "wb");
    fclose(out);
    ck_assert_int_eq(logdb_open(f.path, LOGDB_SYNC_NORMAL, 7, &db, &epoch, err, sizeof(err)),
                     LOGDB_OK);
    ck_assert_uint_eq(epoch, 7);
    logdb_close(db);
    ck_assert_int_eq(logdb_open(f.path, LOGDB_SYNC_FULL, 8, &db, &epoch, err, sizeof(err)),
                     LOGDB_OK);
    ck_assert_uint_eq(epoch, 7); /* the file's, not a new one */
    logdb_close(db);
    fixture_remove(&f);
}
END_TEST

Suite *log_disk_suite(void)
{
    Suite *suite = suite_create("log_disk");
    TCase *tc = tcase_create("log_disk");

    tcase_add_test(tc, test_frames_reach_the_ring_once_committed_and_come_back_after_a_restart);
    tcase_add_test(tc, test_a_file_that_is_not_a_log_is_refused_and_left_alone);
    suite_add_tcase(suite, tc);
    return suite;
}
