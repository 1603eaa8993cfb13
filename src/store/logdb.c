/* logdb: see logdb.h. */
#include "store/logdb.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store/logdb_internal.h"
#include "store/logdb_upgrade.h"
#include "store/sqlite_internal.h"

#include "common/failpoint.h"
#include "common/log.h"
#include "common/protowire.h"

/* "AHLG" in the file's header: a file without it is not ours. */
#define LOGDB_APPLICATION_ID 0x41484c47
#define LOGDB_VERSION        4
/* The WAL is written back into the file (an fsync) once it holds this many
 * pages, by a thread and a connection of their own: commits go on into the
 * WAL meanwhile instead of waiting for the fsync. */
#define CHECKPOINT_PAGES 2048
/* ... at most this often (ms): under steady commits a checkpoint never
 * catches up with the newest page, and each one costs an fsync. */
#define CHECKPOINT_EVERY_MS 200
/* A WAL is only started again from its beginning once every page of it is
 * in the file; under steady commits that never happens by itself.  Past
 * this many pages the committing connection finishes the checkpoint
 * between two transactions (little is left by then), so the WAL restarts
 * at the next commit and stays bounded. */
#define WAL_RESTART_PAGES 8192
/* The committing connection's page cache (KiB): a batch's pages stay in
 * memory until its commit instead of being spilled to the WAL and read
 * back while the transaction is still being written. */
#define CACHE_KIB 32768

/* Format 4: a session's entries of one transaction in one row (their
 * records in DATA, seqs FIRST_SEQ..LAST_SEQ, MARKS of them marks, the
 * first at MARK_SEQ), the bus's events of one transaction likewise; each
 * session's frames on disk counted in chunks (a first seq, their bytes,
 * the newest one's time) so that retention and the load at start need no
 * scan of the frames; the rows with marks found without one. */
static const char SCHEMA[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE sessions(sid INTEGER PRIMARY KEY, name BLOB NOT NULL);" LOGDB_ROWS_SCHEMA
    "CREATE TABLE chunks(sid INTEGER NOT NULL, first_seq INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL, newest_at INTEGER NOT NULL, PRIMARY KEY(sid, first_seq))"
    " WITHOUT ROWID;"
    "CREATE TABLE runners(name BLOB PRIMARY KEY, generation INTEGER NOT NULL,"
    " mark INTEGER NOT NULL) WITHOUT ROWID;";

static const char *const STMT_SQL[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SESSION] = "INSERT OR REPLACE INTO sessions(sid, name) VALUES (?, ?)",
    /* ord, sid, first_seq, last_seq, marks, mark_seq, data */
    [S_ENTRIES] = "INSERT INTO entries VALUES (NULL, ?, ?, ?, ?, ?, ?)",
    [S_TRIM] = "DELETE FROM entries WHERE sid = ? AND last_seq < ?",
    [S_DROP_ENTRIES] = "DELETE FROM entries WHERE sid = ?",
    [S_DROP_SESSION] = "DELETE FROM sessions WHERE sid = ?",
    [S_EVENTS] = "INSERT OR REPLACE INTO bus(first_seq, last_seq, data) VALUES (?, ?, ?)",
    [S_BUS_TRIM] = "DELETE FROM bus WHERE first_seq < ?1 AND last_seq < ?1",
    [S_RUNNER] = "INSERT OR REPLACE INTO runners(name, generation, mark) VALUES (?, ?, ?)",
    [S_CHUNK] =
        "INSERT OR REPLACE INTO chunks(sid, first_seq, bytes, newest_at) VALUES (?, ?, ?, ?)",
    [S_TRIM_CHUNKS] = "DELETE FROM chunks WHERE sid = ? AND first_seq < ?",
    [S_DROP_CHUNKS] = "DELETE FROM chunks WHERE sid = ?",
};

const char *logdb_rc_name(enum logdb_rc code)
{
    switch (code) {
    case LOGDB_OK:
        return "ok";
    case LOGDB_FULL:
        return "disk full";
    case LOGDB_READONLY:
        return "not writable";
    case LOGDB_IO:
        return "I/O error";
    case LOGDB_CORRUPT:
        return "damaged";
    case LOGDB_FOREIGN:
        return "not an agenthub session log";
    case LOGDB_NOMEM:
        return "out of memory";
    }
    return "unknown";
}

enum logdb_rc logdb_rc_of(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return LOGDB_FULL;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
        return LOGDB_READONLY;
    case SQLITE_CORRUPT:
        return LOGDB_CORRUPT;
    case SQLITE_NOTADB:
        return LOGDB_FOREIGN;
    case SQLITE_NOMEM:
        return LOGDB_NOMEM;
    default:
        return LOGDB_IO;
    }
}

enum logdb_rc logdb_fail(sqlite3 *handle, int rc, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc));
    return logdb_rc_of(rc);
}

/* The connection's last error into ERR.  Returns the code RC maps to. */
static enum logdb_rc fail(struct logdb *db, int rc, char *err, size_t errlen)
{
    return logdb_fail(db->db, rc, err, errlen);
}

/* A checkpoint on HANDLE.  Returns 1 when it wrote pages back (an fsync). */
static int checkpoint(sqlite3 *handle)
{
    int log = 0, done = 0;

    return sqlite3_wal_checkpoint_v2(handle, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done) ==
               SQLITE_OK &&
           done > 0;
}

/* After each commit: past CHECKPOINT_PAGES the checkpointer is woken (at
 * most every CHECKPOINT_EVERY_MS), past WAL_RESTART_PAGES the committing
 * connection checkpoints itself.  A checkpoint that cannot finish (a full
 * disk) is tried again after a later commit; the WAL keeps the data
 * meanwhile. */
static int on_wal(void *arg, sqlite3 *handle, const char *name, int pages)
{
    struct logdb *db = arg;
    struct timespec now;
    int64_t ms;

    if (pages >= WAL_RESTART_PAGES) {
        if (checkpoint(handle))
            atomic_fetch_add(&db->fsyncs, 1);
        return SQLITE_OK;
    }
    if (pages < CHECKPOINT_PAGES || !db->ckpt_started)
        return SQLITE_OK;
    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (int64_t)(now.tv_sec - db->ckpt_last.tv_sec) * 1000 +
         (now.tv_nsec - db->ckpt_last.tv_nsec) / 1000000;
    if (ms >= CHECKPOINT_EVERY_MS) {
        db->ckpt_last = now;
        pthread_mutex_lock(&db->ckpt_mu);
        db->ckpt_due = 1;
        pthread_cond_signal(&db->ckpt_cv);
        pthread_mutex_unlock(&db->ckpt_mu);
    }
    return SQLITE_OK;
}

static void *ckpt_main(void *arg)
{
    struct logdb *db = arg;

    pthread_mutex_lock(&db->ckpt_mu);
    for (;;) {
        while (!db->ckpt_due && !db->ckpt_quit)
            pthread_cond_wait(&db->ckpt_cv, &db->ckpt_mu);
        if (db->ckpt_quit)
            break;
        db->ckpt_due = 0;
        pthread_mutex_unlock(&db->ckpt_mu);
        if (checkpoint(db->ckpt_db))
            atomic_fetch_add(&db->fsyncs, 1);
        pthread_mutex_lock(&db->ckpt_mu);
    }
    pthread_mutex_unlock(&db->ckpt_mu);
    return NULL;
}

/* Opens the checkpointer's connection and starts its thread.  Returns
 * SQLITE_OK, or the error (nothing started). */
static int ckpt_start(struct logdb *db, const char *path)
{
    sigset_t all, old;
    int rc = sqlite3_open_v2(path, &db->ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

    if (rc != SQLITE_OK)
        return rc;
    sqlite3_busy_timeout(db->ckpt_db, 1000);
    /* A connection sees the WAL once it has read the file. */
    rc = sqlite3_exec(db->ckpt_db, "PRAGMA journal_mode", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return rc;
    pthread_mutex_init(&db->ckpt_mu, NULL);
    pthread_cond_init(&db->ckpt_cv, NULL);
    /* Signals are the event loop's. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&db->ckpt_thread, NULL, ckpt_main, db);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&db->ckpt_cv);
        pthread_mutex_destroy(&db->ckpt_mu);
        return SQLITE_NOMEM;
    }
    db->ckpt_started = 1;
    return SQLITE_OK;
}

/* Opens the connection logdb_read uses, read-only: in WAL mode it reads
 * what is committed while commits go on.  Returns SQLite's code. */
static int reader_open(struct logdb *db, const char *path)
{
    int rc = sqlite3_open_v2(path, &db->read_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);

    if (rc != SQLITE_OK)
        return rc;
    sqlite3_busy_timeout(db->read_db, 1000);
    return sqlite3_prepare_v3(db->read_db, LOGDB_READ_SQL, -1, SQLITE_PREPARE_PERSISTENT,
                              &db->read_stmt, NULL);
}

/* Makes a new file's schema and epoch, or checks an existing file is a
 * log of this version.  Returns LOGDB_OK with *EPOCH, or a code with ERR. */
static enum logdb_rc check_or_create(struct logdb *db, uint64_t new_epoch, uint64_t *epoch,
                                     char *err, size_t errlen)
{
    int64_t app = 0, version = 0, tables = 0, value = 0;
    char sql[160];
    int rc;

    if ((rc = sq_query_int(db->db, "PRAGMA application_id", &app)) != SQLITE_OK ||
        (rc = sq_query_int(db->db, "SELECT count(*) FROM sqlite_master", &tables)) != SQLITE_OK)
        return fail(db, rc, err, errlen);
    if (app == 0 && tables == 0) {
        snprintf(sql, sizeof(sql),
                 "INSERT INTO meta VALUES ('epoch', %lld); PRAGMA application_id = %d;"
                 " PRAGMA user_version = %d; COMMIT",
                 (long long)new_epoch, LOGDB_APPLICATION_ID, LOGDB_VERSION);
        if ((rc = sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK ||
            (rc = sqlite3_exec(db->db, SCHEMA, NULL, NULL, NULL)) != SQLITE_OK ||
            (rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL)) != SQLITE_OK) {
            enum logdb_rc out = fail(db, rc, err, errlen);
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return out;
        }
        *epoch = new_epoch;
        return LOGDB_OK;
    }
    if (app != LOGDB_APPLICATION_ID) {
        snprintf(err, errlen, "an SQLite database of another program (application_id %lld)",
                 (long long)app);
        return LOGDB_FOREIGN;
    }
    if ((rc = sq_query_int(db->db, "PRAGMA user_version", &version)) != SQLITE_OK)
        return fail(db, rc, err, errlen);
    if (version >= 1 && version < LOGDB_VERSION) {
        /* An older format is upgraded in place, all of it in one
         * transaction: a crash meanwhile leaves the old file as it was. */
        log_info("session log: upgrading format %lld to %d", (long long)version, LOGDB_VERSION);
        snprintf(sql, sizeof(sql), "PRAGMA user_version = %d; COMMIT", LOGDB_VERSION);
        if ((rc = sqlite3_exec(db->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK ||
            (rc = logdb_upgrade(db->db, (int)version)) != SQLITE_OK ||
            (rc = sqlite3_exec(db->db, sql, NULL, NULL, NULL)) != SQLITE_OK) {
            enum logdb_rc out = fail(db, rc, err, errlen);
            sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
            return out;
        }
        version = LOGDB_VERSION;
    }
    if (version != LOGDB_VERSION) {
        snprintf(err, errlen, "a session log of format %lld; this agenthubd reads format %d",
                 (long long)version, LOGDB_VERSION);
        return LOGDB_FOREIGN;
    }
    rc = sq_query_int(db->db, "SELECT value FROM meta WHERE key = 'epoch'", &value);
    if (rc != SQLITE_OK || value == 0) {
        snprintf(err, errlen, "its instance epoch is missing (%s)",
                 rc == SQLITE_OK ? "no row" : sqlite3_errmsg(db->db));
        return LOGDB_CORRUPT;
    }
    *epoch = (uint64_t)value;
    return LOGDB_OK;
}

enum logdb_rc logdb_open(const char *path, enum logdb_sync sync, uint64_t new_epoch,
                         struct logdb **out, uint64_t *epoch, char *err, size_t errlen)
{
    struct logdb *db = calloc(1, sizeof(*db));
    enum logdb_rc lrc;
    char pragmas[160];
    int rc;

    *out = NULL;
    if (!db) {
        snprintf(err, errlen, "out of memory");
        return LOGDB_NOMEM;
    }
    db->sync = sync;
    rc = sqlite3_open_v2(path, &db->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        lrc = fail(db, rc, err, errlen);
        goto fail_db;
    }
    sqlite3_extended_result_codes(db->db, 1);
    /* A lock held by another process (a second agenthubd on the same file)
     * is waited for briefly, then reported. */
    sqlite3_busy_timeout(db->db, 1000);
    snprintf(pragmas, sizeof(pragmas), "PRAGMA cache_size = -%d", CACHE_KIB);
    if ((rc = sqlite3_exec(db->db, pragmas, NULL, NULL, NULL)) != SQLITE_OK) {
        lrc = fail(db, rc, err, errlen);
        goto fail_db;
    }
    lrc = check_or_create(db, new_epoch, epoch, err, errlen);
    if (lrc != LOGDB_OK)
        goto fail_db;
    snprintf(pragmas, sizeof(pragmas),
             "PRAGMA journal_mode = WAL; PRAGMA synchronous = %s;"
             " PRAGMA journal_size_limit = 67108864",
             sync == LOGDB_SYNC_FULL ? "FULL" : "NORMAL");
    rc = sqlite3_exec(db->db, pragmas, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        lrc = fail(db, rc, err, errlen);
        goto fail_db;
    }
    rc = ckpt_start(db, path);
    if (rc != SQLITE_OK) {
        lrc = fail(db, rc, err, errlen);
        goto fail_db;
    }
    sqlite3_wal_hook(db->db, on_wal, db);
    rc = reader_open(db, path);
    if (rc != SQLITE_OK) {
        lrc = fail(db, rc, err, errlen);
        goto fail_db;
    }
    for (int i = 0; i < S_COUNT; i++) {
        rc = sqlite3_prepare_v3(db->db, STMT_SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &db->stmts[i],
                                NULL);
        if (rc != SQLITE_OK) {
            lrc = fail(db, rc, err, errlen);
            goto fail_db;
        }
    }
    *out = db;
    return LOGDB_OK;
fail_db:
    logdb_close(db);
    return lrc;
}

void logdb_close(struct logdb *db)
{
    if (!db)
        return;
    if (db->ckpt_started) {
        pthread_mutex_lock(&db->ckpt_mu);
        db->ckpt_quit = 1;
        pthread_cond_signal(&db->ckpt_cv);
        pthread_mutex_unlock(&db->ckpt_mu);
        pthread_join(db->ckpt_thread, NULL);
        pthread_cond_destroy(&db->ckpt_cv);
        pthread_mutex_destroy(&db->ckpt_mu);
    }
    sqlite3_close(db->ckpt_db);
    sqlite3_finalize(db->read_stmt);
    sqlite3_close(db->read_db);
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(db->stmts[i]);
    sqlite3_close(db->db);
    free(db);
}

/* Steps STMT once, then resets it.  Returns the step's SQLite code. */
static int step(sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);

    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

static void bind_bytes(sqlite3_stmt *stmt, int i, const void *data, size_t len)
{
    /* A NULL pointer would bind SQL NULL: an empty entry is an empty blob. */
    sqlite3_bind_blob64(stmt, i, data ? data : "", len, SQLITE_STATIC);
}

static int write_op(struct logdb *db, const struct logdb_op *op);

/* A single entry or bus event, written as a row of its own.  Returns
 * SQLite's code (SQLITE_DONE on success). */
static int write_one(struct logdb *db, const struct logdb_op *op)
{
    struct logdb_op row = *op;
    uint8_t *blob = malloc(LOGDB_HEADER_MAX + op->len);
    size_t at;
    int rc;

    if (!blob)
        return SQLITE_NOMEM;
    if (op->op == LOGDB_OP_ENTRY) {
        at = logdb_entry_header(blob, op->kind, op->seq, op->at_unix_ms, op->len);
        row.op = LOGDB_OP_ENTRIES;
        row.marks = op->kind != 0;
        row.mark_seq = op->kind != 0 ? op->seq : 0;
    } else {
        at = logdb_event_header(blob, op->seq, op->at_unix_ms, op->len);
        row.op = LOGDB_OP_EVENTS;
    }
    if (op->len)
        memcpy(blob + at, op->data, op->len);
    row.aux = op->seq;
    row.data = blob;
    row.len = at + op->len;
    rc = write_op(db, &row);
    free(blob);
    return rc;
}

/* Writes one operation.  Returns SQLite's code (SQLITE_DONE on success). */
static int write_op(struct logdb *db, const struct logdb_op *op)
{
    sqlite3_stmt *stmt;

    switch ((enum logdb_op_kind)op->op) {
    case LOGDB_OP_SESSION:
        stmt = db->stmts[S_SESSION];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        bind_bytes(stmt, 2, op->data, op->len);
        return step(stmt);
    case LOGDB_OP_ENTRY:
    case LOGDB_OP_BUS:
        return write_one(db, op);
    case LOGDB_OP_ENTRIES:
        stmt = db->stmts[S_ENTRIES];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->seq);
        sqlite3_bind_int64(stmt, 3, (sqlite3_int64)op->aux);
        sqlite3_bind_int64(stmt, 4, (sqlite3_int64)op->marks);
        sqlite3_bind_int64(stmt, 5, (sqlite3_int64)op->mark_seq);
        bind_bytes(stmt, 6, op->data, op->len);
        return step(stmt);
    case LOGDB_OP_EVENTS:
        stmt = db->stmts[S_EVENTS];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->seq);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->aux);
        bind_bytes(stmt, 3, op->data, op->len);
        return step(stmt);
    case LOGDB_OP_TRIM: {
        int rc;
        stmt = db->stmts[S_TRIM];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->seq);
        if ((rc = step(stmt)) != SQLITE_DONE)
            return rc;
        stmt = db->stmts[S_TRIM_CHUNKS];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->seq);
        return step(stmt);
    }
    case LOGDB_OP_DROP: {
        int rc;
        stmt = db->stmts[S_DROP_ENTRIES];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        if ((rc = step(stmt)) != SQLITE_DONE)
            return rc;
        stmt = db->stmts[S_DROP_CHUNKS];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        if ((rc = step(stmt)) != SQLITE_DONE)
            return rc;
        stmt = db->stmts[S_DROP_SESSION];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        return step(stmt);
    }
    case LOGDB_OP_BUS_TRIM:
        stmt = db->stmts[S_BUS_TRIM];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->seq);
        return step(stmt);
    case LOGDB_OP_RUNNER:
        stmt = db->stmts[S_RUNNER];
        bind_bytes(stmt, 1, op->data, op->len);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->seq);
        sqlite3_bind_int64(stmt, 3, (sqlite3_int64)op->aux);
        return step(stmt);
    case LOGDB_OP_CHUNK:
        stmt = db->stmts[S_CHUNK];
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)op->sid);
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)op->seq);
        sqlite3_bind_int64(stmt, 3, (sqlite3_int64)op->aux);
        sqlite3_bind_int64(stmt, 4, op->at_unix_ms);
        return step(stmt);
    }
    return SQLITE_MISUSE;
}

enum logdb_rc logdb_commit(struct logdb *db, const struct logdb_op *ops, size_t n, char *err,
                           size_t errlen)
{
    enum logdb_rc lrc;
    int rc;

    /* Tests: the disk refuses the batch, as a full one does. */
    if (failpoint_active("log.commit")) {
        snprintf(err, errlen, "database or disk is full (failpoint log.commit)");
        return LOGDB_FULL;
    }
    rc = step(db->stmts[S_BEGIN]);
    if (rc != SQLITE_DONE)
        return fail(db, rc, err, errlen);
    for (size_t i = 0; i < n; i++) {
        rc = write_op(db, &ops[i]);
        if (rc != SQLITE_DONE)
            goto fail_tx;
    }
    rc = step(db->stmts[S_COMMIT]);
    if (rc != SQLITE_DONE)
        goto fail_tx;
    if (db->sync == LOGDB_SYNC_FULL)
        atomic_fetch_add(&db->fsyncs, 1);
    return LOGDB_OK;
fail_tx:
    lrc = fail(db, rc, err, errlen);
    if (sqlite3_get_autocommit(db->db) == 0)
        step(db->stmts[S_ROLLBACK]);
    return lrc;
}

size_t logdb_entry_header(uint8_t *out, uint8_t kind, uint64_t seq, int64_t at, size_t len)
{
    size_t n = 0;

    out[n++] = kind;
    n += protowire_put_varint(out + n, seq);
    n += protowire_put_varint(out + n, (uint64_t)at);
    n += protowire_put_varint(out + n, len);
    return n;
}

size_t logdb_event_header(uint8_t *out, uint64_t seq, int64_t at, size_t len)
{
    size_t n = 0;

    n += protowire_put_varint(out, seq);
    n += protowire_put_varint(out + n, (uint64_t)at);
    n += protowire_put_varint(out + n, len);
    return n;
}

uint64_t logdb_fsyncs(struct logdb *db)
{
    return atomic_load(&db->fsyncs);
}

uint64_t logdb_disk_bytes(const char *path)
{
    char wal[4096];
    struct stat st;
    uint64_t total = 0;

    if (stat(path, &st) == 0)
        total += (uint64_t)st.st_blocks * 512;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (stat(wal, &st) == 0)
        total += (uint64_t)st.st_blocks * 512;
    return total;
}
