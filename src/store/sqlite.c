/* sqlite: the embedded SQLite backend of struct store: opening, shared
 * helpers and the reads the server runs on every request.  Session and
 * resource writes are in sqlite_sessions.c, administration in
 * sqlite_admin.c, the schema and SQL text in sqlite_schema.c, the gate read
 * cache in sqlite_cache.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/failpoint.h"
#include "common/log.h"
#include "store/auth.h"
#include "store/sqlite_cache.h"
#include "store/sqlite_internal.h"

/* How long a statement waits on another connection's lock before the read
 * is a fault: short, because the caller answers UNAVAILABLE and retries. */
#define BUSY_TIMEOUT_MS 200

sqlite3_stmt *sq_stmt(struct sqlite_store *st, enum sq_id id)
{
    int rc;

    if (st->stmts[id])
        return st->stmts[id];
    rc =
        sqlite3_prepare_v3(st->db, sq_sql(id), -1, SQLITE_PREPARE_PERSISTENT, &st->stmts[id], NULL);
    if (rc != SQLITE_OK) {
        /* Never the SQL text: only which statement and the error class. */
        log_error("store: cannot prepare statement %d: %s", (int)id, sqlite3_errstr(rc));
        st->stmts[id] = NULL;
        return NULL;
    }
    return st->stmts[id];
}

void sq_release(sqlite3_stmt *stmt)
{
    if (!stmt)
        return;
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
}

int sq_read_guard(struct sqlite_store *st, const char *name)
{
    if (failpoint_active("store.read") || (name && failpoint_active(name)))
        return 1;
    if (!sq_cache_header_ok(st)) {
        sq_read_fault(st, SQLITE_NOTADB);
        return 1;
    }
    return 0;
}

sqlite3_stmt *sq_read_stmt(struct sqlite_store *st, const char *name, enum sq_id id)
{
    return sq_read_guard(st, name) ? NULL : sq_stmt(st, id);
}

enum store_rc sq_read_fault(struct sqlite_store *st, int rc)
{
    log_warn("store: read failed: %s", sqlite3_errstr(rc));
    (void)st;
    return STORE_FAULT;
}

enum store_rc sq_write_rc(struct sqlite_store *st, int rc, int deleting)
{
    (void)st;
    switch (rc) {
    case SQLITE_CONSTRAINT_FOREIGNKEY:
        return deleting ? STORE_CONFLICT : STORE_INVALID;
    case SQLITE_CONSTRAINT_CHECK:
    case SQLITE_CONSTRAINT_NOTNULL:
        return STORE_INVALID;
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
        return STORE_CONFLICT;
    default:
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
            return STORE_CONFLICT;
        log_warn("store: write failed: %s", sqlite3_errstr(rc));
        return STORE_FAULT;
    }
}

void sq_text(sqlite3_stmt *stmt, int col, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(stmt, col);

    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int sq_bind(sqlite3_stmt *stmt, int idx, const char *text)
{
    return sqlite3_bind_text(stmt, idx, text ? text : "", -1, SQLITE_STATIC);
}

void sq_note_write(struct sqlite_store *st)
{
    sq_cache_clear(st->cache);
}

enum store_rc sq_exec_write(struct sqlite_store *st, sqlite3_stmt *stmt, int flags, int *changed)
{
    int rc = sqlite3_step(stmt);
    int out;

    if (rc == SQLITE_DONE) {
        int n = sqlite3_changes(st->db);
        if (changed)
            *changed = n > 0;
        /* This connection's own commits do not move its data_version, so
         * the cache must be told here.  The Runner's sequence number is
         * written per relayed batch; dropping the gate cache for it would
         * make every decision after it walk SQLite again. */
        if (n > 0 && !(flags & SQ_WRITE_NO_GATE))
            sq_note_write(st);
        out = STORE_OK;
    } else {
        out = sq_write_rc(st, sqlite3_extended_errcode(st->db), flags & SQ_WRITE_DELETE);
    }
    sq_release(stmt);
    return out;
}

enum store_rc sq_savepoint(struct sqlite_store *st)
{
    int rc = sqlite3_exec(st->db, "SAVEPOINT op", NULL, NULL, NULL);

    return rc == SQLITE_OK ? STORE_OK : sq_write_rc(st, rc, 0);
}

enum store_rc sq_release_savepoint(struct sqlite_store *st)
{
    int rc = sqlite3_exec(st->db, "RELEASE op", NULL, NULL, NULL);

    if (rc != SQLITE_OK) {
        int out = sq_write_rc(st, sqlite3_extended_errcode(st->db), 0);
        sq_rollback_savepoint(st);
        return out;
    }
    return STORE_OK;
}

void sq_rollback_savepoint(struct sqlite_store *st)
{
    sqlite3_exec(st->db, "ROLLBACK TO op", NULL, NULL, NULL);
    sqlite3_exec(st->db, "RELEASE op", NULL, NULL, NULL);
    sq_note_write(st);
}

/* --- authentication --- */

static enum store_rc sq_token_resolve(void *impl, const uint8_t hash[STORE_HASH_LEN],
                                      struct store_subject *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rc, ret;

    if (sq_read_guard(st, "store.token"))
        return STORE_FAULT;
    stmt = sq_stmt(st, SQ_TOKEN_RESOLVE);
    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_blob(stmt, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const void *stored = sqlite3_column_blob(stmt, 0);
        /* The index found the row; compare the whole hash in constant time
         * anyway so no code path ever compares secrets with memcmp. */
        if (!stored || sqlite3_column_bytes(stmt, 0) != STORE_HASH_LEN ||
            !auth_equal(stored, hash, STORE_HASH_LEN)) {
            ret = STORE_NOT_FOUND;
        } else {
            memset(out, 0, sizeof(*out));
            if (sqlite3_column_type(stmt, 1) != SQLITE_NULL) {
                out->kind = STORE_SUBJECT_ACCOUNT;
                sq_text(stmt, 1, out->id, sizeof(out->id));
                out->is_admin = sqlite3_column_int(stmt, 3) != 0;
            } else {
                out->kind = STORE_SUBJECT_RUNNER;
                sq_text(stmt, 2, out->id, sizeof(out->id));
            }
            ret = STORE_OK;
        }
    } else if (rc == SQLITE_DONE) {
        ret = STORE_NOT_FOUND;
    } else {
        ret = sq_read_fault(st, rc);
    }
    sq_release(stmt);
    return ret;
}

/* --- sessions --- */

/* Fills OUT from a row of SESSION_COLUMNS. */
static void read_session_row(sqlite3_stmt *stmt, struct store_session *out)
{
    memset(out, 0, sizeof(*out));
    sq_text(stmt, 0, out->session_id, sizeof(out->session_id));
    sq_text(stmt, 1, out->container_name, sizeof(out->container_name));
    sq_text(stmt, 2, out->agent_account_id, sizeof(out->agent_account_id));
    sq_text(stmt, 3, out->home_channel_id, sizeof(out->home_channel_id));
    sq_text(stmt, 4, out->runner_id, sizeof(out->runner_id));
    sq_text(stmt, 5, out->owner_account_id, sizeof(out->owner_account_id));
    sq_text(stmt, 6, out->provider, sizeof(out->provider));
    sq_text(stmt, 7, out->native_id, sizeof(out->native_id));
    out->resource_id = (uint64_t)sqlite3_column_int64(stmt, 8);
    out->closed = sqlite3_column_int(stmt, 9) != 0;
    out->created_at_ms = sqlite3_column_int64(stmt, 10);
}

/* Steps a bound session statement once: OK with OUT filled, NOT_FOUND, or
 * FAULT.  Releases STMT. */
static enum store_rc step_session(struct sqlite_store *st, sqlite3_stmt *stmt,
                                  struct store_session *out)
{
    int rc = sqlite3_step(stmt);
    int ret;

    if (rc == SQLITE_ROW) {
        read_session_row(stmt, out);
        ret = STORE_OK;
    } else if (rc == SQLITE_DONE) {
        ret = STORE_NOT_FOUND;
    } else {
        ret = sq_read_fault(st, rc);
    }
    sq_release(stmt);
    return ret;
}

/* The uncached read behind sq_session_get; also the cache's loader. */
static enum store_rc session_get_db(struct sqlite_store *st, const char *session_id,
                                    struct store_session *out)
{
    sqlite3_stmt *stmt = sq_stmt(st, SQ_SESSION_GET);

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, session_id);
    return step_session(st, stmt, out);
}

static enum store_rc sq_session_get(void *impl, const char *session_id, struct store_session *out)
{
    struct sqlite_store *st = impl;
    int rc;

    if (sq_read_guard(st, "store.session"))
        return STORE_FAULT;
    rc = sq_cache_check(st);
    if (rc != STORE_OK)
        return rc;
    /* Cannot exist; and never let a caller's giant id into the cache. */
    if (strlen(session_id) >= STORE_ID_MAX)
        return STORE_NOT_FOUND;
    rc = sq_cache_session_get(st->cache, session_id, out);
    if (rc != STORE_FAULT) /* FAULT here means "not cached" */
        return rc;
    rc = session_get_db(st, session_id, out);
    if (rc == STORE_OK || rc == STORE_NOT_FOUND)
        sq_cache_session_put(st->cache, session_id, rc == STORE_OK ? out : NULL);
    return rc;
}

static enum store_rc sq_session_find_native(void *impl, const char *provider, const char *native_id,
                                            struct store_session *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    if (sq_read_guard(st, "store.session"))
        return STORE_FAULT;
    stmt = sq_stmt(st, SQ_SESSION_FIND_NATIVE);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, provider);
    sq_bind(stmt, 2, native_id);
    return step_session(st, stmt, out);
}

static enum store_rc sq_session_runner(void *impl, const char *session_id,
                                       char runner_id[STORE_ID_MAX])
{
    struct sqlite_store *st = impl;
    struct store_session s;
    int rc;

    if (sq_read_guard(st, "store.binding"))
        return STORE_FAULT;
    rc = sq_cache_check(st);
    if (rc != STORE_OK)
        return rc;
    if (strlen(session_id) >= STORE_ID_MAX)
        return STORE_NOT_FOUND;
    rc = sq_cache_session_get(st->cache, session_id, &s);
    if (rc == STORE_FAULT) {
        rc = session_get_db(st, session_id, &s);
        if (rc == STORE_OK || rc == STORE_NOT_FOUND)
            sq_cache_session_put(st->cache, session_id, rc == STORE_OK ? &s : NULL);
    }
    if (rc == STORE_OK)
        snprintf(runner_id, STORE_ID_MAX, "%s", s.runner_id);
    return rc;
}

/* Steps STMT (bound, from sq_stmt or sq_read_stmt), handing each session
 * row to CB until it returns nonzero, then releases it.  Returns STORE_OK,
 * or the read fault. */
static enum store_rc sq_each_session(struct sqlite_store *st, sqlite3_stmt *stmt,
                                     store_session_cb cb, void *arg)
{
    struct store_session s;
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        read_session_row(stmt, &s);
        if (cb(&s, arg) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_release(stmt);
    return rc == SQLITE_DONE ? STORE_OK : sq_read_fault(st, rc);
}

static enum store_rc sq_session_list(void *impl, const struct store_session_filter *filter,
                                     store_session_cb cb, void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    if (sq_read_guard(st, "store.session"))
        return STORE_FAULT;
    stmt = sq_stmt(st, SQ_SESSION_LIST);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, filter ? filter->runner_id : "");
    sq_bind(stmt, 2, filter ? filter->container_name : "");
    sqlite3_bind_int(stmt, 3, filter ? filter->open_only : 0);
    return sq_each_session(st, stmt, cb, arg);
}

static enum store_rc sq_runner_sessions(void *impl, const char *runner_id, store_session_cb cb,
                                        void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt = sq_read_stmt(st, "store.binding", SQ_SESSION_HOSTED);

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, runner_id);
    return sq_each_session(st, stmt, cb, arg);
}

static enum store_rc sq_session_count_open(void *impl, const char *agent_account_id, uint64_t *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt = sq_read_stmt(st, "store.session", SQ_SESSION_COUNT_OPEN);
    int rc;

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, agent_account_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        *out = (uint64_t)sqlite3_column_int64(stmt, 0);
    sq_release(stmt);
    return rc == SQLITE_ROW ? STORE_OK : sq_read_fault(st, rc);
}

static enum store_rc sq_change_generation(void *impl, uint64_t *generation)
{
    return sq_cache_generation(impl, generation);
}

static enum store_rc member_check_db(struct sqlite_store *st, const char *account_id,
                                     const char *channel_id)
{
    sqlite3_stmt *stmt = sq_stmt(st, SQ_MEMBER_CHECK);
    int rc, ret;

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, account_id);
    sq_bind(stmt, 2, channel_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        ret = STORE_OK;
    else if (rc == SQLITE_DONE)
        ret = STORE_NOT_FOUND;
    else
        ret = sq_read_fault(st, rc);
    sq_release(stmt);
    return ret;
}

/* Loads every channel of ACCOUNT_ID into the cache.  An account in more
 * than MEMBER_CACHE_MAX channels is not cached (each check then reads
 * SQLite).  Returns STORE_OK or STORE_FAULT. */
#define MEMBER_CACHE_MAX 64
static enum store_rc member_load(struct sqlite_store *st, const char *account_id)
{
    char buf[MEMBER_CACHE_MAX * STORE_ID_MAX];
    sqlite3_stmt *stmt = sq_stmt(st, SQ_MEMBER_CHANNELS);
    size_t len = 0;
    int rc, rows = 0;

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, account_id);
    sqlite3_bind_int(stmt, 2, MEMBER_CACHE_MAX + 1);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *ch = (const char *)sqlite3_column_text(stmt, 0);
        size_t n = ch ? strlen(ch) : 0;
        if (++rows > MEMBER_CACHE_MAX || n == 0 || len + n + 1 > sizeof(buf)) {
            rows = -1;
            break;
        }
        memcpy(buf + len, ch, n + 1);
        len += n + 1;
    }
    sq_release(stmt);
    if (rows < 0)
        return STORE_OK; /* too many to cache */
    if (rc != SQLITE_DONE)
        return sq_read_fault(st, rc);
    sq_cache_member_put(st->cache, account_id, buf, len);
    return STORE_OK;
}

static enum store_rc sq_member_check(void *impl, const char *account_id, const char *channel_id)
{
    struct sqlite_store *st = impl;
    int rc;

    if (sq_read_guard(st, "store.membership"))
        return STORE_FAULT;
    rc = sq_cache_check(st);
    if (rc != STORE_OK)
        return rc;
    if (strlen(account_id) >= STORE_ID_MAX || strlen(channel_id) >= STORE_ID_MAX)
        return STORE_NOT_FOUND;
    rc = sq_cache_member_get(st->cache, account_id, channel_id);
    if (rc != STORE_FAULT)
        return rc;
    rc = member_load(st, account_id);
    if (rc != STORE_OK)
        return rc;
    rc = sq_cache_member_get(st->cache, account_id, channel_id);
    if (rc != STORE_FAULT)
        return rc;
    return member_check_db(st, account_id, channel_id); /* not cacheable */
}

enum store_rc sq_resource_get(void *impl, uint64_t resource_id, struct store_resource *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rc, ret;

    if (sq_read_guard(st, "store.session"))
        return STORE_FAULT;
    if (resource_id == 0 || resource_id > INT64_MAX)
        return STORE_NOT_FOUND;
    stmt = sq_stmt(st, SQ_RESOURCE_GET);
    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_int64(stmt, 1, (sqlite3_int64)resource_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        memset(out, 0, sizeof(*out));
        out->id = (uint64_t)sqlite3_column_int64(stmt, 0);
        out->kind = sqlite3_column_int(stmt, 1) == 1 ? STORE_RESOURCE_AGENT_SESSION
                                                     : STORE_RESOURCE_TERMINAL;
        out->parent_id = (uint64_t)sqlite3_column_int64(stmt, 2);
        sq_text(stmt, 3, out->container_name, sizeof(out->container_name));
        sq_text(stmt, 4, out->agent_account_id, sizeof(out->agent_account_id));
        sq_text(stmt, 5, out->runner_id, sizeof(out->runner_id));
        sq_text(stmt, 6, out->session_id, sizeof(out->session_id));
        out->closed = sqlite3_column_int(stmt, 7) != 0;
        ret = STORE_OK;
    } else if (rc == SQLITE_DONE) {
        ret = STORE_NOT_FOUND;
    } else {
        ret = sq_read_fault(st, rc);
    }
    sq_release(stmt);
    return ret;
}

/* --- read scopes --- */

static void sq_read_begin(void *impl)
{
    struct sqlite_store *st = impl;

    sq_cache_scope(st->cache, 1);
}

static void sq_read_end(void *impl)
{
    struct sqlite_store *st = impl;

    sq_cache_scope(st->cache, 0);
}

/* --- transactions --- */

static enum store_rc sq_begin(void *impl)
{
    struct sqlite_store *st = impl;
    int rc;

    if (st->in_txn)
        return STORE_INVALID;
    rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return sq_write_rc(st, rc, 0);
    st->in_txn = 1;
    return STORE_OK;
}

static enum store_rc sq_commit(void *impl)
{
    struct sqlite_store *st = impl;
    int rc;

    if (!st->in_txn)
        return STORE_INVALID;
    rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        rc = sq_write_rc(st, sqlite3_extended_errcode(st->db), 0);
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        st->in_txn = 0;
        sq_note_write(st);
        return rc;
    }
    st->in_txn = 0;
    return STORE_OK;
}

static void sq_rollback(void *impl)
{
    struct sqlite_store *st = impl;

    if (!st->in_txn)
        return;
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    st->in_txn = 0;
    sq_note_write(st);
}

static void sq_close(void *impl)
{
    struct sqlite_store *st = impl;
    int i;

    if (!st)
        return;
    for (i = 0; i < SQ_COUNT; i++)
        sqlite3_finalize(st->stmts[i]);
    sq_cache_free(st->cache);
    sqlite3_close(st->db);
    free(st);
}

static void sq_set_timeout(void *impl, int ms)
{
    struct sqlite_store *st = impl;

    sqlite3_busy_timeout(st->db, ms);
}

static const struct store_ops sqlite_ops = {
    .close = sq_close,
    .token_resolve = sq_token_resolve,
    .token_add = sq_token_add,
    .token_revoke = sq_token_revoke,
    .token_revoke_subject = sq_token_revoke_subject,
    .token_list = sq_token_list,
    .session_get = sq_session_get,
    .session_find_native = sq_session_find_native,
    .session_runner = sq_session_runner,
    .member_check = sq_member_check,
    .resource_get = sq_resource_get,
    .read_begin = sq_read_begin,
    .read_end = sq_read_end,
    .change_generation = sq_change_generation,
    .session_create = sq_session_create,
    .session_close = sq_session_close,
    .session_reopen = sq_session_reopen,
    .session_list = sq_session_list,
    .runner_sessions = sq_runner_sessions,
    .session_count_open = sq_session_count_open,
    .terminal_create = sq_terminal_create,
    .agent_session_create = sq_agent_session_create,
    .resource_close = sq_resource_close,
    .runner_seq_get = sq_runner_seq_get,
    .runner_seq_set = sq_runner_seq_set,
    .container_list = sq_container_list,
    .account_put = sq_account_put,
    .account_get = sq_account_get,
    .account_list = sq_account_list,
    .channel_put = sq_channel_put,
    .channel_list = sq_channel_list,
    .member_add = sq_member_add,
    .member_remove = sq_member_remove,
    .member_list = sq_member_list,
    .runner_put = sq_runner_put,
    .runner_list = sq_runner_list,
    .container_put = sq_container_put,
    .container_get = sq_container_get,
    .exists = sq_exists,
    .remove = sq_remove,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .set_timeout = sq_set_timeout,
};

enum store_rc sqlite_store_set_busy_timeout(struct store *s, int ms)
{
    struct sqlite_store *st = s->impl;

    sqlite3_busy_timeout(st->db, ms);
    return STORE_OK;
}

enum store_rc sqlite_store_cache_enable(struct store *s, int on)
{
    struct sqlite_store *st = s->impl;

    sq_cache_set_enabled(st->cache, on);
    return STORE_OK;
}

/* Runs a PRAGMA that answers one text row and checks the answer. */
static int pragma_expect(sqlite3 *db, const char *sql, const char *want)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    int ok = 0;

    if (rc == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(stmt, 0);
        ok = t && strcmp((const char *)t, want) == 0;
    }
    sqlite3_finalize(stmt);
    return ok;
}

enum store_rc sqlite_store_open(const char *path, struct store **out, char *err, size_t errlen)
{
    struct sqlite_store *st;
    int rc, rv;

    *out = NULL;
    st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return STORE_FAULT;
    }
    st->cache = sq_cache_new();
    if (!st->cache) {
        snprintf(err, errlen, "out of memory");
        rv = STORE_FAULT;
        goto fail;
    }
    rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s: %s", path, sqlite3_errstr(rc));
        rv = STORE_FAULT;
        goto fail;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
    rc = sqlite3_exec(st->db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", NULL, NULL,
                      NULL);
    if (rc != SQLITE_OK || !pragma_expect(st->db, "PRAGMA journal_mode = WAL", "wal")) {
        snprintf(err, errlen, "%s: not a usable database (%s)", path,
                 sqlite3_errstr(sqlite3_extended_errcode(st->db)));
        rv = STORE_FAULT;
        goto fail;
    }
    if (!pragma_expect(st->db, "PRAGMA foreign_keys", "1")) {
        snprintf(err, errlen, "%s: foreign keys cannot be enabled", path);
        rv = STORE_FAULT;
        goto fail;
    }
    rv = sq_migrate(st->db, err, errlen);
    if (rv != STORE_OK)
        goto fail;
    /* The baseline of change_generation: changes from here on count. */
    (void)sq_cache_generation(st, &(uint64_t){0});
    st->base.ops = &sqlite_ops;
    st->base.impl = st;
    *out = &st->base;
    return STORE_OK;

fail:
    sq_close(st);
    return rv;
}
