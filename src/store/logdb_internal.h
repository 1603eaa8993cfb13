/* logdb internals shared by its files: logdb.c (opening, the schema,
 * commits, checkpoints), logdb_load.c (reading back) and logdb_upgrade.c
 * (older formats).  Not for other modules: they use logdb.h. */
#ifndef AGENTHUB_STORE_LOGDB_INTERNAL_H
#define AGENTHUB_STORE_LOGDB_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store/logdb.h"

enum logdb_stmt_id {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_SESSION,
    S_ENTRIES,
    S_TRIM,
    S_DROP_ENTRIES,
    S_DROP_SESSION,
    S_EVENTS,
    S_BUS_TRIM,
    S_RUNNER,
    S_CHUNK,
    S_TRIM_CHUNKS,
    S_DROP_CHUNKS,
    S_COUNT
};

struct logdb {
    sqlite3 *db;
    sqlite3_stmt *stmts[S_COUNT];
    enum logdb_sync sync;
    atomic_uint_fast64_t fsyncs;
    /* the checkpointer */
    sqlite3 *ckpt_db;
    pthread_t ckpt_thread;
    pthread_mutex_t ckpt_mu;
    pthread_cond_t ckpt_cv;
    int ckpt_started, ckpt_due, ckpt_quit;
    struct timespec ckpt_last; /* the committing thread's last wake-up of it */
    /* the reader of older frames: a connection of its own */
    sqlite3 *read_db;
    sqlite3_stmt *read_stmt;
};

/* One record of an entries or events blob. */
struct logdb_record {
    uint8_t kind; /* entries: 0 a frame, else the caller's mark */
    uint64_t seq;
    int64_t at_unix_ms;
    const uint8_t *data;
    size_t len;
};

/* The record at *AT of entries blob BLOB[0..LEN) (events: EVENTS 1), *AT
 * advanced past it.  Returns 1 with *R, 0 at the end, -1 when the bytes
 * are not records (a damaged row). */
int logdb_next_record(const uint8_t *blob, size_t len, int events, size_t *at,
                      struct logdb_record *r);

/* The code SQLite's RC maps to. */
enum logdb_rc logdb_rc_of(int rc);
/* Fills ERR from HANDLE's last error (RC's text when HANDLE is NULL).
 * Returns the code RC maps to. */
enum logdb_rc logdb_fail(sqlite3 *handle, int rc, char *err, size_t errlen);

/* Format 4's rows of entries and bus events (logdb.h). */
#define LOGDB_ROWS_SCHEMA                                                                          \
    "CREATE TABLE entries(ord INTEGER PRIMARY KEY, sid INTEGER NOT NULL,"                          \
    " first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL, marks INTEGER NOT NULL,"              \
    " mark_seq INTEGER NOT NULL, data BLOB NOT NULL);"                                             \
    "CREATE INDEX entries_sid_seq ON entries(sid, last_seq);"                                      \
    "CREATE INDEX entries_marks ON entries(sid, mark_seq) WHERE marks > 0;"                        \
    "CREATE TABLE bus(first_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL,"                   \
    " data BLOB NOT NULL);"

/* The SQL of the reading connection's statement: a session's rows of
 * entries that reach past a seq, in order. */
#define LOGDB_READ_SQL                                                                             \
    "SELECT data FROM entries WHERE sid = ?1 AND last_seq > ?2 ORDER BY last_seq, ord"

#endif
