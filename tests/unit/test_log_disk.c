/* Unit tests for the session log on disk: store/logdb (the file) and
 * hub/hub_log_disk (the backend): entries reach the rings only once
 * committed, a new backend on the same file has every log, seq, mark,
 * bus event and the epoch back, a reader behind a ring is served from
 * disk, and files of older formats are upgraded in place. */
#include "hub/hub_log_disk.h"

#include <check.h>
#include <event2/event.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "store/logdb.h"
#include "store/logdb_upgrade.h"

struct fixture {
    char dir[64], path[96];
    struct event_base *base;
    struct session_registry reg;
    struct bus bus;
    struct hub_log log;
    struct hub_log_disk *disk;
};

/* RING_BYTES bounds each session's ring (0: the default). */
static void fixture_open_ring(struct fixture *f, size_t ring_bytes)
{
    struct hub_log_disk_config config = {
        .path = f->path,
        .pending_bytes = 1 << 20,
        .memory_bytes = ring_bytes,
        .session_bytes = 1 << 20, /* chunks of 64 KiB */
        .budget_bytes = 1 << 30,
    };
    enum logdb_rc rc;
    char err[256];

    f->base = event_base_new();
    session_registry_init(&f->reg, ring_bytes);
    bus_init(&f->bus, 0, 0);
    f->disk = hub_log_disk_open(&f->log, f->base, &f->reg, &f->bus, &config, &rc, err, sizeof(err));
    ck_assert_msg(f->disk != NULL, "%s", err);
}

static void fixture_open(struct fixture *f)
{
    fixture_open_ring(f, 0);
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

static int woken;

static void on_wake(struct watcher *w)
{
    woken++;
}

/* Reads S's frames after AFTER_SEQ up to LAST_SEQ like a pane: a read that
 * answers RING_NONE waits for a wake-up.  Returns how many frames came,
 * checking each one's seq and bytes. */
static uint64_t read_all(struct fixture *f, struct session *s, uint64_t after_seq,
                         uint64_t last_seq)
{
    struct watcher w = {.wake = on_wake};
    uint64_t got = 0;
    char want[64];

    session_watch(s, &w);
    while (after_seq < last_seq) {
        struct ring_entry e;
        enum ring_status status = hub_log_read(&f->log, s, after_seq, &e);
        if (status == RING_NONE) {
            woken = 0;
            while (woken == 0)
                event_base_loop(f->base, EVLOOP_ONCE);
            continue;
        }
        ck_assert_int_eq(status, RING_OK);
        ck_assert_uint_eq(e.seq, after_seq + 1);
        snprintf(want, sizeof(want), "frame-%04d-padding-padding-padding", (int)e.seq);
        ck_assert_uint_eq(e.len, strlen(want));
        ck_assert_mem_eq(e.data, want, e.len);
        after_seq = e.seq;
        got++;
    }
    session_unwatch(s, &w);
    return got;
}

START_TEST(test_a_reader_behind_the_ring_is_served_from_disk_also_after_a_restart)
{
    struct fixture f;
    struct hub_log_wait w = {0};
    struct hub_log_span span;
    struct session *s;
    struct ring_entry e;
    char frame[64];
    uint64_t seq = 0;

    fixture_init(&f);
    fixture_open_ring(&f, 16 << 10);
    ck_assert_int_eq(session_open(&f.reg, "s1", 2, &s), SESSION_CREATED);
    for (int i = 1; i <= 3000; i++) {
        snprintf(frame, sizeof(frame), "frame-%04d-padding-padding-padding", i);
        seq = hub_log_append(&f.log, s, frame, strlen(frame), 1000 + i);
        hub_log_track(&f.log, s, &w, seq);
    }
    wait_stored(&f, s, &w);
    /* The ring holds the newest few hundred; the disk every one. */
    ck_assert_uint_gt(ring_oldest_seq(session_ring(s)), 1);
    ck_assert_int_eq(hub_log_check(&f.log, s, 0), RING_OK);
    hub_log_span(&f.log, s, &span);
    ck_assert_uint_eq(span.oldest, 1);
    ck_assert_uint_eq(span.newest, 3000);
    ck_assert_uint_eq(hub_log_tail(&f.log, s, 2500), 500);
    ck_assert_int_eq(hub_log_read(&f.log, s, 0, &e), RING_NONE); /* being read */
    ck_assert_uint_eq(read_all(&f, s, 0, 3000), 3000);
    ck_assert_uint_eq(read_all(&f, s, 1234, 3000), 3000 - 1234);
    fixture_close(&f);

    /* Back: only the newest chunks are read, the rest is served again. */
    fixture_open_ring(&f, 16 << 10);
    s = session_lookup(&f.reg, "s1", 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_gt(ring_oldest_seq(session_ring(s)), 1);
    ck_assert_uint_eq(read_all(&f, s, 0, 3000), 3000);
    fixture_close(&f);
    fixture_remove(&f);
}
END_TEST

START_TEST(test_a_large_batch_of_one_session_is_several_rows_read_back_in_order)
{
    struct hub_log_disk_config config = {
        .pending_bytes = 1 << 26,
        .memory_bytes = 16 << 10,
        .session_bytes = 1 << 30,
        .budget_bytes = 1 << 30,
    };
    struct fixture f;
    struct hub_log_wait w = {0};
    struct session *s;
    sqlite3 *db;
    sqlite3_stmt *stmt;
    enum logdb_rc rc;
    char frame[64], err[256];
    uint64_t seq = 0;

    fixture_init(&f);
    config.path = f.path;
    for (int round = 0; round < 2; round++) {
        f.base = event_base_new();
        session_registry_init(&f.reg, config.memory_bytes);
        bus_init(&f.bus, 0, 0);
        f.disk = hub_log_disk_open(&f.log, f.base, &f.reg, &f.bus, &config, &rc, err, sizeof(err));
        ck_assert_msg(f.disk != NULL, "%s", err);
        if (round == 0) {
            /* More than a row holds, taken in one turn: one batch. */
            ck_assert_int_eq(session_open(&f.reg, "s1", 2, &s), SESSION_CREATED);
            for (int i = 1; i <= 40000; i++) {
                snprintf(frame, sizeof(frame), "frame-%04d-padding-padding-padding", i);
                seq = hub_log_append(&f.log, s, frame, strlen(frame), 1000 + i);
                hub_log_track(&f.log, s, &w, seq);
            }
            wait_stored(&f, s, &w);
        } else {
            s = session_lookup(&f.reg, "s1", 2);
            ck_assert_ptr_nonnull(s);
        }
        /* Served from disk behind the ring, in order, every one. */
        ck_assert_uint_eq(read_all(&f, s, 0, 40000), 40000);
        fixture_close(&f);
    }
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_prepare_v2(db, "SELECT count(*), max(length(data)) FROM entries", -1, &stmt, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
    ck_assert_int_ge(sqlite3_column_int(stmt, 0), 2);
    ck_assert_int_le(sqlite3_column_int(stmt, 1), (1 << 20) + 1024);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    fixture_remove(&f);
}
END_TEST

START_TEST(test_a_log_of_the_first_format_is_upgraded_with_its_frames_counted)
{
    static const char v1[] =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE sessions(sid INTEGER PRIMARY KEY, name BLOB NOT NULL);"
        "CREATE TABLE entries(ord INTEGER PRIMARY KEY, sid INTEGER NOT NULL, seq INTEGER NOT "
        "NULL, kind INTEGER NOT NULL, at INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE INDEX entries_sid_seq ON entries(sid, seq);"
        "CREATE TABLE bus(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, data BLOB NOT NULL);"
        "CREATE TABLE runners(name BLOB PRIMARY KEY, generation INTEGER NOT NULL, mark INTEGER "
        "NOT NULL) WITHOUT ROWID;"
        "INSERT INTO meta VALUES ('epoch', 42); INSERT INTO sessions VALUES (1, 's1');"
        "INSERT INTO entries(sid, seq, kind, at, data) VALUES (1, 7, 0, 10, 'abcd'),"
        " (1, 8, 0, 11, 'efghij'), (1, 8, 1, unixepoch() * 1000, '');"
        "PRAGMA application_id = 1095257159; PRAGMA user_version = 1;";
    struct fixture f;
    sqlite3 *db;
    sqlite3_stmt *stmt;
    struct session *s;
    struct ring_entry e;

    fixture_init(&f);
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    fixture_open(&f);
    ck_assert_uint_eq(hub_log_epoch(&f.log), 42);
    s = session_lookup(&f.reg, "s1", 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(session_tail_over(s), 1); /* its mark came back */
    ck_assert_int_eq(hub_log_read(&f.log, s, 6, &e), RING_OK);
    ck_assert_uint_eq(e.seq, 7);
    fixture_close(&f);
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT first_seq, bytes, (SELECT user_version FROM "
                                        "pragma_user_version) FROM chunks",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(stmt, 0), 7);
    ck_assert_int_eq(sqlite3_column_int(stmt, 1), 10);
    ck_assert_int_eq(sqlite3_column_int(stmt, 2), 4);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    fixture_remove(&f);
}
END_TEST

/* Formats 2 and 3 (2 kept agenthub's fields at their old numbers): a row
 * per entry and a row per bus event. */
#define FORMAT_3_SCHEMA                                                                            \
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"               \
    "CREATE TABLE sessions(sid INTEGER PRIMARY KEY, name BLOB NOT NULL);"                          \
    "CREATE TABLE entries(ord INTEGER PRIMARY KEY, sid INTEGER NOT NULL, seq INTEGER NOT NULL,"    \
    " kind INTEGER NOT NULL, at INTEGER NOT NULL, data BLOB NOT NULL);"                            \
    "CREATE INDEX entries_sid_seq ON entries(sid, seq);"                                           \
    "CREATE TABLE chunks(sid INTEGER NOT NULL, first_seq INTEGER NOT NULL,"                        \
    " bytes INTEGER NOT NULL, newest_at INTEGER NOT NULL, PRIMARY KEY(sid, first_seq))"            \
    " WITHOUT ROWID;"                                                                              \
    "CREATE INDEX entries_marks ON entries(sid, seq) WHERE kind <> 0;"                             \
    "CREATE TABLE bus(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, data BLOB NOT NULL);"          \
    "CREATE TABLE runners(name BLOB PRIMARY KEY, generation INTEGER NOT NULL,"                     \
    " mark INTEGER NOT NULL) WITHOUT ROWID;"                                                       \
    "PRAGMA application_id = 1095257159;"

/* Format 2's numbers, by hand: AgentSessionFrame {session_id 1 "s1",
 * event 2 {event_id 1 "e", batch_pending 9 {count 1: 3}}, state 3: 2,
 * seq 4: 7} and a bus event {agent_session_status 12 {session_id 1 "s1",
 * provider 4 "claude", last_seq 6: 9}, agent_record 18 {type 1 "ask"},
 * session_id 19 "s1"}. */
static const uint8_t OLD_FRAME[] = {0x0a, 2, 's',  '1', 0x12, 7, 0x0a, 1, 'e',
                                    0x4a, 2, 0x08, 3,   0x18, 2, 0x20, 7};
static const uint8_t OLD_BUS[] = {0x62, 14,  0x0a, 2,   's',  '1', 0x22, 6,   'c', 'l',
                                  'a',  'u', 'd',  'e', 0x30, 9,   0x92, 1,   5,   0x0a,
                                  3,    'a', 's',  'k', 0x9a, 1,   2,    's', '1'};

START_TEST(test_format_2s_field_numbers_are_rewritten_to_format_3s)
{
    Compass__V1__AgentSessionFrame *frame;
    Compass__V1__SubscribeEventsResponse *bus;
    uint8_t *out;
    size_t len;

    ck_assert_int_eq(logdb_renumber(LOGDB_BLOB_FRAME, OLD_FRAME, sizeof(OLD_FRAME), &out, &len), 0);
    frame = compass__v1__agent_session_frame__unpack(NULL, len, out);
    free(out);
    ck_assert_ptr_nonnull(frame);
    ck_assert_str_eq(frame->session_id, "s1");
    ck_assert_uint_eq(frame->seq, 7);
    ck_assert_int_eq(frame->state, 2);
    ck_assert_ptr_nonnull(frame->event);
    ck_assert_str_eq(frame->event->event_id, "e");
    ck_assert_int_eq(frame->event->event_case, COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING);
    ck_assert_uint_eq(frame->event->batch_pending->count, 3);
    compass__v1__agent_session_frame__free_unpacked(frame, NULL);

    ck_assert_int_eq(logdb_renumber(LOGDB_BLOB_BUS, OLD_BUS, sizeof(OLD_BUS), &out, &len), 0);
    bus = compass__v1__subscribe_events_response__unpack(NULL, len, out);
    free(out);
    ck_assert_ptr_nonnull(bus);
    ck_assert_str_eq(bus->session_id, "s1");
    /* The oneof keeps its last member on the wire: the record. */
    ck_assert_int_eq(bus->payload_case,
                     COMPASS__V1__SUBSCRIBE_EVENTS_RESPONSE__PAYLOAD_AGENT_RECORD);
    ck_assert_str_eq(bus->agent_record->type, "ask");
    compass__v1__subscribe_events_response__free_unpacked(bus, NULL);
    /* The status alone, as a bus event holds it. */
    ck_assert_int_eq(logdb_renumber(LOGDB_BLOB_BUS, OLD_BUS, 16, &out, &len), 0);
    bus = compass__v1__subscribe_events_response__unpack(NULL, len, out);
    free(out);
    ck_assert_ptr_nonnull(bus);
    ck_assert_str_eq(bus->agent_session_status->provider, "claude");
    ck_assert_uint_eq(bus->agent_session_status->last_seq, 9);
    compass__v1__subscribe_events_response__free_unpacked(bus, NULL);
    /* Bytes that are not a message are refused (the upgrade keeps them). */
    ck_assert_int_eq(logdb_renumber(LOGDB_BLOB_FRAME, OLD_FRAME, 5, &out, &len), -1);
}
END_TEST

START_TEST(test_a_log_of_format_2_comes_back_with_its_records_at_the_new_numbers)
{
    struct fixture f;
    sqlite3 *db;
    sqlite3_stmt *stmt;
    struct session *s;
    struct ring_entry e;
    Compass__V1__AgentSessionFrame *frame;

    fixture_init(&f);
    /* Made a format 2 file by hand: one frame of the old numbering. */
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  FORMAT_3_SCHEMA "INSERT INTO meta VALUES ('epoch', 42);"
                                                  "INSERT INTO sessions VALUES (1, 's1');"
                                                  "INSERT INTO chunks VALUES (1, 1, 17, 10);"
                                                  "PRAGMA user_version = 2;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "INSERT INTO entries(sid, seq, kind, at, data) "
                                        "VALUES (1, 1, 0, 10, ?)",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(stmt, 1, OLD_FRAME, sizeof(OLD_FRAME), SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_DONE);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    fixture_open(&f);
    s = session_lookup(&f.reg, "s1", 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(hub_log_read(&f.log, s, 0, &e), RING_OK);
    frame = compass__v1__agent_session_frame__unpack(NULL, e.len, e.data);
    ck_assert_ptr_nonnull(frame);
    ck_assert_int_eq(frame->event->event_case, COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING);
    ck_assert_uint_eq(frame->event->batch_pending->count, 3);
    compass__v1__agent_session_frame__free_unpacked(frame, NULL);
    fixture_close(&f);
    fixture_remove(&f);
}
END_TEST

/* Reads S's frame after AFTER_SEQ and checks it is SEQ with bytes WANT. */
static void expect_frame(struct fixture *f, struct session *s, uint64_t after_seq, uint64_t seq,
                         const char *want)
{
    struct ring_entry e;

    ck_assert_int_eq(hub_log_read(&f->log, s, after_seq, &e), RING_OK);
    ck_assert_uint_eq(e.seq, seq);
    ck_assert_uint_eq(e.len, strlen(want));
    ck_assert_mem_eq(e.data, want, e.len);
}

START_TEST(test_a_log_of_format_3_is_upgraded_to_rows_per_batch_and_keeps_everything)
{
    /* Two sessions' entries interleaved, a mark, bus events, a Runner. */
    static const char v3[] = FORMAT_3_SCHEMA
        "INSERT INTO meta VALUES ('epoch', 42);"
        "INSERT INTO sessions VALUES (1, 's1'), (2, 's2');"
        "INSERT INTO entries(sid, seq, kind, at, data) VALUES (1, 1, 0, 10, 'a1'),"
        " (2, 1, 0, 11, 'b1'), (1, 2, 0, 12, 'a2'), (1, 2, 1, unixepoch() * 1000, ''),"
        " (2, 2, 0, 13, 'b2'), (2, 3, 0, 14, 'b3');"
        "INSERT INTO chunks VALUES (1, 1, 4, 12), (2, 1, 6, 14);"
        "INSERT INTO bus VALUES (1, 10, 'e1'), (2, 11, 'e2'), (3, 12, 'e3');"
        "INSERT INTO runners VALUES ('r1', 1, 2);"
        "PRAGMA user_version = 3;";
    struct fixture f;
    struct hub_log_wait w = {0};
    struct bus_event ev;
    struct session *s1, *s2;
    sqlite3 *db;
    sqlite3_stmt *stmt;
    uint64_t cursor, gen, seq;

    fixture_init(&f);
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, v3, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    for (int round = 0; round < 2; round++) {
        fixture_open(&f);
        ck_assert_uint_eq(hub_log_epoch(&f.log), 42);
        s1 = session_lookup(&f.reg, "s1", 2);
        s2 = session_lookup(&f.reg, "s2", 2);
        ck_assert_ptr_nonnull(s1);
        ck_assert_ptr_nonnull(s2);
        ck_assert_int_eq(session_tail_over(s1), 1);
        ck_assert_int_eq(session_tail_over(s2), 0);
        expect_frame(&f, s1, 0, 1, "a1");
        expect_frame(&f, s1, 1, 2, "a2");
        expect_frame(&f, s2, 0, 1, "b1");
        expect_frame(&f, s2, 2, 3, "b3");
        ck_assert_uint_eq(hub_log_runner_mark(&f.log, "r1", &gen), 2);
        ck_assert_uint_eq(gen, 1);
        ck_assert_int_eq(hub_log_open(&f.log, 1, 42, &cursor), BUS_OK);
        ck_assert_int_eq(hub_log_next(&f.log, cursor, &ev), BUS_OK);
        ck_assert_uint_eq(ev.seq, 2);
        ck_assert_uint_eq(ev.len, 2);
        ck_assert_mem_eq(ev.payload, "e2", 2);
        if (round == 0) {
            /* New frames and events carry on from the old seqs. */
            hub_log_mark(&f.log, s1, HUB_LOG_TAIL_RESUME);
            seq = hub_log_append(&f.log, s1, "a3", 2, 20);
            ck_assert_uint_eq(seq, 3);
            hub_log_track(&f.log, s1, &w, seq);
            ck_assert_uint_eq(hub_log_publish(&f.log, "e4", 2, 21), 4);
            wait_stored(&f, s1, &w);
            hub_log_mark(&f.log, s1, HUB_LOG_TAIL_END);
        } else {
            expect_frame(&f, s1, 2, 3, "a3");
            ck_assert_int_eq(hub_log_open(&f.log, 3, 42, &cursor), BUS_OK);
            ck_assert_int_eq(hub_log_next(&f.log, cursor, &ev), BUS_OK);
            ck_assert_uint_eq(ev.seq, 4);
        }
        fixture_close(&f);
    }
    /* Format 4 now, the old tables gone, a row per run of a session's
     * entries. */
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db,
                                        "SELECT (SELECT user_version FROM pragma_user_version),"
                                        " (SELECT count(*) FROM sqlite_master WHERE name LIKE "
                                        "'%_v3'), (SELECT count(*) FROM entries WHERE sid = 2)",
                                        -1, &stmt, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(stmt), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(stmt, 0), 4);
    ck_assert_int_eq(sqlite3_column_int(stmt, 1), 0);
    ck_assert_int_eq(sqlite3_column_int(stmt, 2), 2);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    fixture_remove(&f);
}
END_TEST

START_TEST(test_a_damaged_row_of_entries_is_refused_at_start)
{
    struct fixture f;
    sqlite3 *db;
    enum logdb_rc rc;
    char err[256];
    struct hub_log_disk_config config = {
        .path = f.path,
        .pending_bytes = 1 << 20,
        .session_bytes = 1 << 20,
        .budget_bytes = 1 << 30,
    };

    fixture_init(&f);
    fixture_open(&f);
    fixture_close(&f);
    ck_assert_int_eq(sqlite3_open(f.path, &db), SQLITE_OK);
    /* A record claiming more bytes than the row has. */
    ck_assert_int_eq(sqlite3_exec(db,
                                  "INSERT INTO sessions VALUES (1, 's1');"
                                  "INSERT INTO entries(sid, first_seq, last_seq, marks, mark_seq,"
                                  " data) VALUES (1, 1, 1, 0, 0, x'00010a7f6162');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    f.base = event_base_new();
    session_registry_init(&f.reg, 0);
    bus_init(&f.bus, 0, 0);
    config.path = f.path;
    ck_assert_ptr_null(
        hub_log_disk_open(&f.log, f.base, &f.reg, &f.bus, &config, &rc, err, sizeof(err)));
    ck_assert_int_eq(rc, LOGDB_CORRUPT);
    session_registry_free(&f.reg);
    bus_free(&f.bus);
    event_base_free(f.base);
    fixture_remove(&f);
}
END_TEST

Suite *log_disk_suite(void)
{
    Suite *suite = suite_create("log_disk");
    TCase *tc = tcase_create("log_disk");

    tcase_add_test(tc, test_frames_reach_the_ring_once_committed_and_come_back_after_a_restart);
    tcase_add_test(tc, test_a_file_that_is_not_a_log_is_refused_and_left_alone);
    tcase_add_test(tc, test_a_reader_behind_the_ring_is_served_from_disk_also_after_a_restart);
    tcase_add_test(tc, test_a_large_batch_of_one_session_is_several_rows_read_back_in_order);
    tcase_add_test(tc, test_a_log_of_the_first_format_is_upgraded_with_its_frames_counted);
    tcase_add_test(tc, test_format_2s_field_numbers_are_rewritten_to_format_3s);
    tcase_add_test(tc, test_a_log_of_format_2_comes_back_with_its_records_at_the_new_numbers);
    tcase_add_test(tc, test_a_log_of_format_3_is_upgraded_to_rows_per_batch_and_keeps_everything);
    tcase_add_test(tc, test_a_damaged_row_of_entries_is_refused_at_start);
    suite_add_tcase(suite, tc);
    return suite;
}
