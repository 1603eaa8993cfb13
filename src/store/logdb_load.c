/* logdb_load: reading the session log back (see logdb.h): everything but
 * the sessions' entries at start, a session's newest entries, and older
 * frames for a reader behind a ring.  Rows of entries and bus events hold
 * the records of one transaction each; these functions hand the records
 * on one by one, as if each were a row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protowire.h"
#include "store/logdb_internal.h"

/* What a reader of older frames (logdb_read) takes at most per call. */
#define READ_MAX_FRAMES 4096

/* A row handler's answers besides 0. */
#define ROW_STOPPED (-1) /* the caller's callback returned nonzero */
#define ROW_DAMAGED (-2) /* the row's blob is not records */

int logdb_next_record(const uint8_t *blob, size_t len, int events, size_t *at,
                      struct logdb_record *r)
{
    const uint8_t *p = blob + *at, *end = blob + len;
    uint64_t at_ms, n;

    if (p >= end)
        return 0;
    r->kind = 0;
    if (!events)
        r->kind = *p++;
    if (protowire_read_varint(&p, end, &r->seq) != 0 ||
        protowire_read_varint(&p, end, &at_ms) != 0 || protowire_read_varint(&p, end, &n) != 0 ||
        n > (uint64_t)(end - p))
        return -1;
    r->at_unix_ms = (int64_t)at_ms;
    r->data = p;
    r->len = (size_t)n;
    *at = (size_t)(p + n - blob);
    return 1;
}

struct load_ctx {
    const struct logdb_load_fns *fns;
    void *arg;
    uint64_t sid, from_seq;
};

/* Runs SQL, with its parameters ?1..?N bound to BINDS[0..N), and hands
 * each row to ROW.  Returns LOGDB_OK, LOGDB_NOMEM when ROW stopped,
 * LOGDB_CORRUPT when a row is damaged, or the error with ERR. */
static enum logdb_rc each_row_bound(struct logdb *db, const char *sql, const uint64_t *binds, int n,
                                    int (*row)(sqlite3_stmt *stmt, struct load_ctx *c),
                                    struct load_ctx *c, char *err, size_t errlen)
{
    sqlite3_stmt *stmt;
    int rc = sqlite3_prepare_v2(db->db, sql, -1, &stmt, NULL), rv = 0;

    if (rc != SQLITE_OK)
        return logdb_fail(db->db, rc, err, errlen);
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(stmt, i + 1, (sqlite3_int64)binds[i]);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
        if ((rv = row(stmt, c)) != 0)
            break;
    sqlite3_finalize(stmt);
    if (rv == ROW_STOPPED) {
        snprintf(err, errlen, "out of memory");
        return LOGDB_NOMEM;
    }
    if (rv == ROW_DAMAGED) {
        snprintf(err, errlen, "a row of entries or bus events is not well-formed");
        return LOGDB_CORRUPT;
    }
    if (rc != SQLITE_DONE)
        return logdb_fail(db->db, rc, err, errlen);
    return LOGDB_OK;
}

static enum logdb_rc each_row(struct logdb *db, const char *sql,
                              int (*row)(sqlite3_stmt *stmt, struct load_ctx *c),
                              struct load_ctx *c, char *err, size_t errlen)
{
    return each_row_bound(db, sql, NULL, 0, row, c, err, errlen);
}

static int stopped(int rv)
{
    return rv != 0 ? ROW_STOPPED : 0;
}

static int session_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    return stopped(c->fns->session(c->arg, (uint64_t)sqlite3_column_int64(stmt, 0),
                                   (const char *)sqlite3_column_blob(stmt, 1),
                                   (size_t)sqlite3_column_bytes(stmt, 1)));
}

static int runner_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    return stopped(c->fns->runner(
        c->arg, (const char *)sqlite3_column_blob(stmt, 0), (size_t)sqlite3_column_bytes(stmt, 0),
        (uint64_t)sqlite3_column_int64(stmt, 1), (uint64_t)sqlite3_column_int64(stmt, 2)));
}

static int chunk_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    return stopped(c->fns->chunk(
        c->arg, (uint64_t)sqlite3_column_int64(stmt, 0), (uint64_t)sqlite3_column_int64(stmt, 1),
        (uint64_t)sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3)));
}

static int order_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    return stopped(c->fns->last_mark(c->arg, (uint64_t)sqlite3_column_int64(stmt, 0),
                                     (uint64_t)sqlite3_column_int64(stmt, 1)));
}

/* A row of bus events: each of them. */
static int bus_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    const uint8_t *blob = sqlite3_column_blob(stmt, 0);
    size_t len = (size_t)sqlite3_column_bytes(stmt, 0), at = 0;
    struct logdb_record r;
    int rv;

    while ((rv = logdb_next_record(blob, len, 1, &at, &r)) == 1)
        if (c->fns->bus(c->arg, r.seq, r.at_unix_ms, r.data, r.len) != 0)
            return ROW_STOPPED;
    return rv < 0 ? ROW_DAMAGED : 0;
}

/* A row of a session's entries: those from FROM_SEQ on. */
static int entries_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    const uint8_t *blob = sqlite3_column_blob(stmt, 0);
    size_t len = (size_t)sqlite3_column_bytes(stmt, 0), at = 0;
    struct logdb_record r;
    int rv;

    while ((rv = logdb_next_record(blob, len, 0, &at, &r)) == 1)
        if (r.seq >= c->from_seq &&
            c->fns->entry(c->arg, c->sid, r.kind, r.seq, r.at_unix_ms, r.data, r.len) != 0)
            return ROW_STOPPED;
    return rv < 0 ? ROW_DAMAGED : 0;
}

/* The row holding a session's newest mark below FROM_SEQ: that mark. */
static int mark_row(sqlite3_stmt *stmt, struct load_ctx *c)
{
    const uint8_t *blob = sqlite3_column_blob(stmt, 0);
    size_t len = (size_t)sqlite3_column_bytes(stmt, 0), at = 0;
    struct logdb_record r, mark = {0};
    int rv, found = 0;

    while ((rv = logdb_next_record(blob, len, 0, &at, &r)) == 1)
        if (r.kind != 0 && r.seq < c->from_seq) {
            mark = r;
            found = 1;
        }
    if (rv < 0)
        return ROW_DAMAGED;
    if (found && c->fns->entry(c->arg, c->sid, mark.kind, mark.seq, mark.at_unix_ms, mark.data,
                               mark.len) != 0)
        return ROW_STOPPED;
    return 0;
}

enum logdb_rc logdb_load(struct logdb *db, const struct logdb_load_fns *fns, void *arg, char *err,
                         size_t errlen)
{
    struct load_ctx c = {.fns = fns, .arg = arg};
    enum logdb_rc rc;

    if ((rc = each_row(db, "SELECT sid, name FROM sessions", session_row, &c, err, errlen)) !=
            LOGDB_OK ||
        (rc = each_row(db, "SELECT name, generation, mark FROM runners", runner_row, &c, err,
                       errlen)) != LOGDB_OK ||
        (rc = each_row(db,
                       "SELECT sid, first_seq, bytes, newest_at FROM chunks ORDER BY sid, "
                       "first_seq",
                       chunk_row, &c, err, errlen)) != LOGDB_OK ||
        (rc = each_row(db, "SELECT sid, max(ord) FROM entries WHERE marks > 0 GROUP BY sid",
                       order_row, &c, err, errlen)) != LOGDB_OK)
        return rc;
    return each_row(db, "SELECT data FROM bus ORDER BY first_seq", bus_row, &c, err, errlen);
}

enum logdb_rc logdb_load_session(struct logdb *db, uint64_t sid, uint64_t from_seq,
                                 const struct logdb_load_fns *fns, void *arg, char *err,
                                 size_t errlen)
{
    const uint64_t binds[2] = {sid, from_seq};
    struct load_ctx c = {.fns = fns, .arg = arg, .sid = sid, .from_seq = from_seq};
    enum logdb_rc rc = LOGDB_OK;

    /* A session's rows are in the order of their seqs, so the newest row
     * with a mark below FROM_SEQ holds the newest such mark. */
    if (from_seq > 0)
        rc = each_row_bound(db,
                            "SELECT data FROM entries WHERE sid = ?1 AND marks > 0 AND "
                            "mark_seq < ?2 ORDER BY mark_seq DESC, ord DESC LIMIT 1",
                            binds, 2, mark_row, &c, err, errlen);
    if (rc != LOGDB_OK)
        return rc;
    return each_row_bound(db,
                          "SELECT data FROM entries WHERE sid = ?1 AND last_seq >= ?2 "
                          "ORDER BY last_seq, ord",
                          binds, 2, entries_row, &c, err, errlen);
}

enum logdb_rc logdb_read(struct logdb *db, uint64_t sid, uint64_t after_seq, size_t max_bytes,
                         int (*row)(void *arg, uint64_t seq, int64_t at_unix_ms, const void *data,
                                    size_t len),
                         void *arg, char *err, size_t errlen)
{
    sqlite3_stmt *stmt = db->read_stmt;
    size_t bytes = 0, frames = 0;
    int rc = SQLITE_DONE, full = 0;

    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)sid);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)after_seq);
    while (!full && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const uint8_t *blob = sqlite3_column_blob(stmt, 0);
        size_t len = (size_t)sqlite3_column_bytes(stmt, 0), at = 0;
        struct logdb_record r;
        int rv = 0;

        while (!full && (rv = logdb_next_record(blob, len, 0, &at, &r)) == 1) {
            if (r.kind != 0 || r.seq <= after_seq)
                continue;
            if (row(arg, r.seq, r.at_unix_ms, r.data, r.len) != 0) {
                rc = SQLITE_NOMEM;
                break;
            }
            bytes += r.len;
            full = ++frames >= READ_MAX_FRAMES || bytes >= max_bytes;
        }
        if (rc == SQLITE_NOMEM)
            break;
        if (rv < 0) {
            rc = SQLITE_CORRUPT;
            break;
        }
    }
    if (full)
        rc = SQLITE_DONE;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    if (rc == SQLITE_CORRUPT) {
        snprintf(err, errlen, "a row of entries of session %llu is not well-formed",
                 (unsigned long long)sid);
        return LOGDB_CORRUPT;
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db->read_db));
        return logdb_rc_of(rc);
    }
    return LOGDB_OK;
}
