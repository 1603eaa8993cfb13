#include "store/logdb_upgrade.h"

#include <stdlib.h>
#include <string.h>

#include "common/protowire.h"
#include "store/logdb_internal.h"

/* One message's moves: FROM becomes TO; a length-delimited field NESTED
 * (its number before the move) holds a message renumbered by INNER. */
struct wire_move {
    uint32_t from, to;
};

struct wire_map {
    const struct wire_move *moves;
    size_t n_moves;
    uint32_t nested;
    const struct wire_map *inner;
};

/* SessionEvent: batch_pending 9 -> 100, record 10 -> 101. */
static const struct wire_move EVENT_MOVES[] = {{9, 100}, {10, 101}};
static const struct wire_map EVENT_MAP = {EVENT_MOVES, 2, 0, NULL};
/* AgentSessionFrame: seq 4 -> 100, at_unix_ms 5 -> 101; event (2) nested. */
static const struct wire_move FRAME_MOVES[] = {{4, 100}, {5, 101}};
static const struct wire_map FRAME_MAP = {FRAME_MOVES, 2, 2, &EVENT_MAP};
/* AgentSessionStatus: provider 4 -> 103, native_id 5 -> 104, last_seq 6 -> 105. */
static const struct wire_move STATUS_MOVES[] = {{4, 103}, {5, 104}, {6, 105}};
static const struct wire_map STATUS_MAP = {STATUS_MOVES, 3, 0, NULL};
/* SubscribeEventsResponse: session_batch_pending 17 -> 100, agent_record
 * 18 -> 101, session_id 19 -> 102; agent_session_status (12) nested. */
static const struct wire_move BUS_MOVES[] = {{17, 100}, {18, 101}, {19, 102}};
static const struct wire_map BUS_MAP = {BUS_MOVES, 3, 12, &STATUS_MAP};

static uint32_t moved(const struct wire_map *map, uint32_t number)
{
    for (size_t i = 0; i < map->n_moves; i++)
        if (map->moves[i].from == number)
            return map->moves[i].to;
    return number;
}

static int renumber_with(const struct wire_map *map, const uint8_t *bytes, size_t len,
                         uint8_t **out, size_t *out_len);

/* Appends field F, renumbered by MAP, at OUT + *AT; VALUE and VALUE_LEN
 * are a fixed field's raw bytes.  OUT has room (renumber_with's bound).
 * Returns 0, or -1 on malformed nested bytes or memory. */
static int put_field(const struct wire_map *map, const struct protowire_field *f,
                     const uint8_t *value, size_t value_len, uint8_t *out, size_t *at)
{
    const uint8_t *data = f->data;
    size_t len = f->len;
    uint8_t *inner = NULL;

    *at +=
        protowire_put_varint(out + *at, ((uint64_t)moved(map, f->number) << 3) | (uint64_t)f->type);
    switch (f->type) {
    case PROTOWIRE_VARINT:
        *at += protowire_put_varint(out + *at, f->varint);
        return 0;
    case PROTOWIRE_FIXED64:
    case PROTOWIRE_FIXED32:
        memcpy(out + *at, value, value_len);
        *at += value_len;
        return 0;
    case PROTOWIRE_LEN:
        if (map->inner && f->number == map->nested) {
            if (renumber_with(map->inner, data, len, &inner, &len) != 0)
                return -1;
            data = inner;
        }
        *at += protowire_put_varint(out + *at, len);
        if (len)
            memcpy(out + *at, data, len);
        *at += len;
        free(inner);
        return 0;
    }
    return -1;
}

static int renumber_with(const struct wire_map *map, const uint8_t *bytes, size_t len,
                         uint8_t **out, size_t *out_len)
{
    struct protowire_reader r;
    struct protowire_field f;
    /* A key grows by at most 4 bytes and a length by at most 4 (moves only
     * raise numbers; a nested message grows by the same rule), and every
     * field is at least 2 bytes: 5 times the input bounds the output. */
    size_t cap = 5 * len + 16, at = 0;
    uint8_t *buf = malloc(cap);
    int rv;

    if (!buf)
        return -1;
    protowire_reader_init(&r, bytes, len);
    for (;;) {
        rv = protowire_next(&r, &f);
        if (rv != 1)
            break;
        size_t fixed = f.type == PROTOWIRE_FIXED64 ? 8 : f.type == PROTOWIRE_FIXED32 ? 4 : 0;
        if (put_field(map, &f, r.at - fixed, fixed, buf, &at) != 0) {
            rv = -1;
            break;
        }
    }
    if (rv != 0) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = at;
    return 0;
}

int logdb_renumber(enum logdb_blob what, const uint8_t *bytes, size_t len, uint8_t **out,
                   size_t *out_len)
{
    return renumber_with(what == LOGDB_BLOB_BUS ? &BUS_MAP : &FRAME_MAP, bytes, len, out, out_len);
}

/* SQL agenthub_renumber(blob, what): the blob in format 3's numbers, or
 * the blob itself when it is not a well-formed message. */
static void renumber_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const uint8_t *bytes = sqlite3_value_blob(argv[0]);
    size_t len = (size_t)sqlite3_value_bytes(argv[0]);
    int what = sqlite3_value_int(argv[1]);
    uint8_t *out;
    size_t out_len;

    (void)argc;
    if (!bytes || (what != LOGDB_BLOB_FRAME && what != LOGDB_BLOB_BUS) ||
        logdb_renumber((enum logdb_blob)what, bytes, len, &out, &out_len) != 0) {
        sqlite3_result_value(ctx, argv[0]);
        return;
    }
    sqlite3_result_blob64(ctx, out, out_len, free);
}

int logdb_upgrade_2_to_3(sqlite3 *db)
{
    int rc = sqlite3_create_function(db, "agenthub_renumber", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     NULL, renumber_sql, NULL, NULL);

    if (rc != SQLITE_OK)
        return rc;
    return sqlite3_exec(db,
                        "UPDATE entries SET data = agenthub_renumber(data, 0) WHERE kind = 0;"
                        "UPDATE bus SET data = agenthub_renumber(data, 1);",
                        NULL, NULL, NULL);
}

/* Format 2: each session's frames counted in chunks, and the marks found
 * without a scan.  Format 1 kept only what memory held: its frames count
 * as one chunk per session. */
static const char UPGRADE_1_TO_2[] =
    "CREATE TABLE chunks(sid INTEGER NOT NULL, first_seq INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL, newest_at INTEGER NOT NULL, PRIMARY KEY(sid, first_seq))"
    " WITHOUT ROWID;"
    "CREATE INDEX entries_marks ON entries(sid, seq) WHERE kind <> 0;"
    "INSERT INTO chunks SELECT sid, min(seq), sum(length(data)), max(at) FROM entries"
    " WHERE kind = 0 GROUP BY sid;";

/* Format 4 keeps a row per transaction; a format 3 file's rows (one per
 * entry, one per event) are joined into rows of about this many bytes. */
#define UPGRADE_ROW_BYTES (64u << 10)

/* The records of one row being made. */
struct upgrade_row {
    uint8_t *blob;
    size_t len, cap;
    uint64_t sid, first_seq, last_seq, mark_seq;
    uint32_t marks, n;
};

/* Writes ROW (if it holds anything) with STMT: entries (sid, first, last,
 * marks, mark_seq, data) or bus events (first, last, data).  Returns
 * SQLite's code (SQLITE_DONE when written). */
static int upgrade_flush(sqlite3_stmt *stmt, struct upgrade_row *row, int events)
{
    int i = 1, rc;

    if (row->n == 0)
        return SQLITE_DONE;
    if (!events)
        sqlite3_bind_int64(stmt, i++, (sqlite3_int64)row->sid);
    sqlite3_bind_int64(stmt, i++, (sqlite3_int64)row->first_seq);
    sqlite3_bind_int64(stmt, i++, (sqlite3_int64)row->last_seq);
    if (!events) {
        sqlite3_bind_int64(stmt, i++, row->marks);
        sqlite3_bind_int64(stmt, i++, (sqlite3_int64)row->mark_seq);
    }
    sqlite3_bind_blob64(stmt, i, row->blob, row->len, SQLITE_STATIC);
    rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    row->len = 0;
    row->n = row->marks = 0;
    return rc;
}

/* Appends a record to ROW.  Returns SQLITE_OK or SQLITE_NOMEM. */
static int upgrade_add(struct upgrade_row *row, int events, uint8_t kind, uint64_t seq, int64_t at,
                       const void *data, size_t len)
{
    if (row->len + LOGDB_HEADER_MAX + len > row->cap) {
        size_t cap = row->len + LOGDB_HEADER_MAX + len + UPGRADE_ROW_BYTES;
        uint8_t *more = realloc(row->blob, cap);
        if (!more)
            return SQLITE_NOMEM;
        row->blob = more;
        row->cap = cap;
    }
    if (row->n == 0)
        row->first_seq = seq;
    row->last_seq = seq;
    if (kind != 0 && row->marks++ == 0)
        row->mark_seq = seq;
    row->n++;
    row->len += events ? logdb_event_header(row->blob + row->len, seq, at, len)
                       : logdb_entry_header(row->blob + row->len, kind, seq, at, len);
    if (len)
        memcpy(row->blob + row->len, data, len);
    row->len += len;
    return SQLITE_OK;
}

/* How many of format 3's rows are joined at a time; they are deleted
 * then, so the pages they free hold the next joined rows and the file
 * does not grow by the log's size while it is upgraded. */
#define UPGRADE_STEP_ROWS 20000

/* Joins format 3's rows selected by SELECT (?1: the rowid after which to
 * go on; entries: sid, seq, kind, at, data by ord; bus: seq, at, data by
 * seq; the rowid last) into format 4's rows written by INSERT: runs of one
 * session's consecutive entries, of consecutive bus events.  DELETE (?1:
 * a rowid) drops the old rows joined so far.  Returns SQLite's code. */
static int upgrade_rows(sqlite3 *db, const char *select, const char *insert, const char *delete,
                        int events)
{
    sqlite3_stmt *in = NULL, *out = NULL, *drop = NULL;
    struct upgrade_row row = {0};
    sqlite3_int64 after = -1;
    int rc, n;

    if ((rc = sqlite3_prepare_v2(db, select, -1, &in, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db, insert, -1, &out, NULL)) != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db, delete, -1, &drop, NULL)) != SQLITE_OK)
        goto out;
    do {
        n = 0;
        sqlite3_bind_int64(in, 1, after);
        sqlite3_bind_int(in, 2, UPGRADE_STEP_ROWS);
        while ((rc = sqlite3_step(in)) == SQLITE_ROW) {
            int c = 0;
            uint64_t sid = events ? 0 : (uint64_t)sqlite3_column_int64(in, c++);
            uint64_t seq = (uint64_t)sqlite3_column_int64(in, c++);
            uint8_t kind = events ? 0 : (uint8_t)sqlite3_column_int(in, c++);
            int64_t at = sqlite3_column_int64(in, c++);
            const void *data = sqlite3_column_blob(in, c);
            size_t len = (size_t)sqlite3_column_bytes(in, c++);

            after = sqlite3_column_int64(in, c);
            n++;
            if (row.n && (sid != row.sid || row.len >= UPGRADE_ROW_BYTES) &&
                (rc = upgrade_flush(out, &row, events)) != SQLITE_DONE)
                goto out;
            row.sid = sid;
            if ((rc = upgrade_add(&row, events, kind, seq, at, data, len)) != SQLITE_OK)
                goto out;
        }
        sqlite3_reset(in);
        if (rc != SQLITE_DONE || (rc = upgrade_flush(out, &row, events)) != SQLITE_DONE)
            goto out;
        sqlite3_bind_int64(drop, 1, after);
        rc = sqlite3_step(drop);
        sqlite3_reset(drop);
        if (rc != SQLITE_DONE)
            goto out;
    } while (n == UPGRADE_STEP_ROWS);
    rc = SQLITE_OK;
out:
    free(row.blob);
    sqlite3_finalize(in);
    sqlite3_finalize(out);
    sqlite3_finalize(drop);
    return rc;
}

static int upgrade_3_to_4(sqlite3 *db)
{
    int rc =
        sqlite3_exec(db,
                     "DROP INDEX IF EXISTS entries_sid_seq; DROP INDEX IF EXISTS entries_marks;"
                     "ALTER TABLE entries RENAME TO entries_v3;"
                     "ALTER TABLE bus RENAME TO bus_v3;" LOGDB_ROWS_SCHEMA,
                     NULL, NULL, NULL);

    if (rc == SQLITE_OK)
        rc = upgrade_rows(db,
                          "SELECT sid, seq, kind, at, data, ord FROM entries_v3 WHERE ord > ?1"
                          " ORDER BY ord LIMIT ?2",
                          "INSERT INTO entries(sid, first_seq, last_seq, marks, mark_seq, data)"
                          " VALUES (?, ?, ?, ?, ?, ?)",
                          "DELETE FROM entries_v3 WHERE ord <= ?1", 0);
    if (rc == SQLITE_OK)
        rc = upgrade_rows(db,
                          "SELECT seq, at, data, seq FROM bus_v3 WHERE seq > ?1 ORDER BY seq"
                          " LIMIT ?2",
                          "INSERT INTO bus(first_seq, last_seq, data) VALUES (?, ?, ?)",
                          "DELETE FROM bus_v3 WHERE seq <= ?1", 1);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "DROP TABLE entries_v3; DROP TABLE bus_v3", NULL, NULL, NULL);
    return rc;
}

int logdb_upgrade(sqlite3 *db, int from)
{
    int rc = SQLITE_OK;

    if (from == 1)
        rc = sqlite3_exec(db, UPGRADE_1_TO_2, NULL, NULL, NULL);
    if (rc == SQLITE_OK && from <= 2)
        rc = logdb_upgrade_2_to_3(db);
    if (rc == SQLITE_OK && from <= 3)
        rc = upgrade_3_to_4(db);
    return rc;
}
