/* sqlite_sessions: the SQLite backend's writes of sessions, terminals and
 * agent-session resources, and the Runners' sequence numbers — what the
 * session core changes at run time (reads are in sqlite.c). */
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "store/auth.h"
#include "store/sqlite_internal.h"

/* Inserts one session row.  RESOURCE_ID 0 = none.  OUT_ID receives the id. */
static enum store_rc insert_session(struct sqlite_store *st, const struct store_session_spec *spec,
                                    uint64_t resource_id, char out_id[STORE_ID_MAX])
{
    char id[STORE_ID_MAX];
    sqlite3_stmt *stmt;
    int rv;

    if (spec->session_id[0] == '\0') {
        rv = auth_mint_session_id(id) == 0 ? STORE_OK : STORE_FAULT;
        if (rv != STORE_OK)
            return rv;
    } else {
        if (!store_id_valid(spec->session_id))
            return STORE_INVALID;
        snprintf(id, sizeof(id), "%s", spec->session_id);
    }
    if (!store_id_valid(spec->container_name) ||
        (spec->owner_account_id[0] && !store_id_valid(spec->owner_account_id)))
        return STORE_INVALID;
    stmt = sq_stmt(st, SQ_SESSION_INSERT);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, id);
    sq_bind(stmt, 2, spec->container_name);
    sq_bind(stmt, 3, spec->owner_account_id);
    sq_bind(stmt, 4, spec->provider);
    sq_bind(stmt, 5, spec->native_id);
    sqlite3_bind_int64(stmt, 6, (sqlite3_int64)resource_id);
    sqlite3_bind_int64(stmt, 7, clock_unix_ms());
    rv = sq_exec_write(st, stmt, 0, NULL);
    if (rv == STORE_OK && out_id)
        snprintf(out_id, STORE_ID_MAX, "%s", id);
    return rv;
}

enum store_rc sq_session_create(void *impl, const struct store_session_spec *spec,
                                char out_id[STORE_ID_MAX])
{
    return insert_session(impl, spec, 0, out_id);
}

/* Runs write statement ID bound to one text or one integer argument and
 * returns OK, NOT_FOUND when it changed no row, or the mapped error. */
static enum store_rc write_one(struct sqlite_store *st, enum sq_id id, const char *text,
                               uint64_t num, int *changed)
{
    sqlite3_stmt *stmt = sq_stmt(st, id);
    int n = 0, rv;

    if (!stmt)
        return STORE_FAULT;
    if (text)
        sq_bind(stmt, 1, text);
    else
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)num);
    rv = sq_exec_write(st, stmt, 0, &n);
    if (changed)
        *changed = n;
    return rv;
}

/* Sets SESSION_ID and its resource closed (CLOSED 1) or open (0). */
static enum store_rc session_set_closed(struct sqlite_store *st, const char *session_id, int closed)
{
    int rv, n = 0;

    rv = sq_savepoint(st);
    if (rv != STORE_OK)
        return rv;
    /* An UPDATE counts every row it matched, so closing twice is OK and
     * closing nothing is NOT_FOUND. */
    rv = write_one(st, closed ? SQ_SESSION_CLOSE : SQ_SESSION_REOPEN, session_id, 0, &n);
    if (rv == STORE_OK && n == 0)
        rv = STORE_NOT_FOUND;
    if (rv == STORE_OK)
        rv = write_one(st, closed ? SQ_SESSION_CLOSE_RESOURCE : SQ_SESSION_REOPEN_RESOURCE,
                       session_id, 0, NULL);
    if (rv != STORE_OK) {
        sq_rollback_savepoint(st);
        return rv;
    }
    return sq_release_savepoint(st);
}

enum store_rc sq_session_close(void *impl, const char *session_id)
{
    return session_set_closed(impl, session_id, 1);
}

enum store_rc sq_session_reopen(void *impl, const char *session_id)
{
    return session_set_closed(impl, session_id, 0);
}

/* Inserts a resource row; *OUT_ID gets its id. */
static enum store_rc insert_resource(struct sqlite_store *st, enum store_resource_kind kind,
                                     const char *container_name, uint64_t parent_id,
                                     uint64_t *out_id)
{
    sqlite3_stmt *stmt = sq_stmt(st, SQ_RESOURCE_INSERT);
    int rv;

    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_int(stmt, 1, (int)kind);
    sq_bind(stmt, 2, container_name);
    sqlite3_bind_int64(stmt, 3, (sqlite3_int64)parent_id);
    rv = sq_exec_write(st, stmt, SQ_WRITE_NO_GATE, NULL);
    if (rv == STORE_OK)
        *out_id = (uint64_t)sqlite3_last_insert_rowid(st->db);
    return rv;
}

enum store_rc sq_terminal_create(void *impl, const char *container_name, uint64_t *out_id)
{
    if (!store_id_valid(container_name))
        return STORE_INVALID;
    return insert_resource(impl, STORE_RESOURCE_TERMINAL, container_name, 0, out_id);
}

enum store_rc sq_agent_session_create(void *impl, uint64_t parent_id, const char *provider,
                                      const char *native_id, const char *owner_account_id,
                                      uint64_t *out_id, char out_session_id[STORE_ID_MAX])
{
    struct sqlite_store *st = impl;
    struct store_session_spec spec;
    struct store_resource parent;
    uint64_t id = 0;
    int rv;

    if (!provider || !store_id_valid(provider) ||
        (native_id && native_id[0] && !store_native_id_valid(native_id)))
        return STORE_INVALID;
    rv = sq_savepoint(st);
    if (rv != STORE_OK)
        return rv;
    rv = sq_resource_get(st, parent_id, &parent);
    if (rv != STORE_OK)
        goto fail;
    if (parent.kind != STORE_RESOURCE_TERMINAL) {
        rv = STORE_INVALID;
        goto fail;
    }
    rv = insert_resource(st, STORE_RESOURCE_AGENT_SESSION, parent.container_name, parent_id, &id);
    if (rv != STORE_OK)
        goto fail;
    memset(&spec, 0, sizeof(spec));
    snprintf(spec.container_name, sizeof(spec.container_name), "%s", parent.container_name);
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "%s",
             owner_account_id ? owner_account_id : "");
    snprintf(spec.provider, sizeof(spec.provider), "%s", provider);
    snprintf(spec.native_id, sizeof(spec.native_id), "%s", native_id ? native_id : "");
    rv = insert_session(st, &spec, id, out_session_id);
    if (rv != STORE_OK)
        goto fail;
    rv = sq_release_savepoint(st);
    if (rv == STORE_OK)
        *out_id = id;
    return rv;

fail:
    sq_rollback_savepoint(st);
    return rv;
}

enum store_rc sq_resource_close(void *impl, uint64_t resource_id)
{
    struct sqlite_store *st = impl;
    int rv, n = 0;

    if (resource_id == 0 || resource_id > INT64_MAX)
        return STORE_NOT_FOUND;
    rv = sq_savepoint(st);
    if (rv != STORE_OK)
        return rv;
    rv = write_one(st, SQ_RESOURCE_CLOSE, NULL, resource_id, &n);
    if (rv == STORE_OK && n == 0)
        rv = STORE_NOT_FOUND;
    if (rv == STORE_OK)
        rv = write_one(st, SQ_RESOURCE_CLOSE_SESSION, NULL, resource_id, NULL);
    if (rv != STORE_OK) {
        sq_rollback_savepoint(st);
        return rv;
    }
    return sq_release_savepoint(st);
}

/* --- runners --- */

enum store_rc sq_runner_seq_get(void *impl, const char *runner_id, uint64_t *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rc, ret;

    stmt = sq_read_stmt(st, NULL, SQ_RUNNER_SEQ_GET);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, runner_id);
    rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        /* Stored as the same 64 bits in SQLite's signed integer. */
        *out = (uint64_t)sqlite3_column_int64(stmt, 0);
        ret = STORE_OK;
    } else if (rc == SQLITE_DONE) {
        ret = STORE_NOT_FOUND;
    } else {
        ret = sq_read_fault(st, rc);
    }
    sq_release(stmt);
    return ret;
}

enum store_rc sq_runner_seq_set(void *impl, const char *runner_id, uint64_t seq)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt = sq_stmt(st, SQ_RUNNER_SEQ_SET);
    int rv, n = 0;

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, runner_id);
    sqlite3_bind_int64(stmt, 2, (sqlite3_int64)seq);
    rv = sq_exec_write(st, stmt, SQ_WRITE_NO_GATE, &n);
    if (rv == STORE_OK && n == 0)
        return STORE_NOT_FOUND;
    return rv;
}
