/* sqlite_admin: the SQLite backend's administration operations (accounts,
 * channels, memberships, runners, containers, tokens).  These run from
 * `agenthub admin` and from import, never on a request's hot path, so they
 * trade speed for checks that give the operator a precise error. */
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "store/sqlite_internal.h"

/* Steps a bound single-row read: OK, NOT_FOUND, or FAULT (STMT stays
 * positioned on the row for OK; the caller releases it). */
static enum store_rc step_read(struct sqlite_store *st, sqlite3_stmt *stmt)
{
    int rc = sqlite3_step(stmt);

    if (rc == SQLITE_ROW)
        return STORE_OK;
    if (rc == SQLITE_DONE)
        return STORE_NOT_FOUND;
    return sq_read_fault(st, rc);
}

/* Runs list statement STMT (bound), calling ROW for each row until it
 * returns nonzero.  Returns OK or FAULT; releases STMT. */
static enum store_rc run_list(struct sqlite_store *st, sqlite3_stmt *stmt,
                              int (*row)(sqlite3_stmt *stmt, void *cb, void *arg), void *cb,
                              void *arg)
{
    int rc;

    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (row(stmt, cb, arg) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sq_release(stmt);
    return rc == SQLITE_DONE ? STORE_OK : sq_read_fault(st, rc);
}

/* --- accounts --- */

static void read_account(sqlite3_stmt *stmt, struct store_account *a)
{
    const unsigned char *kind = sqlite3_column_text(stmt, 1);

    memset(a, 0, sizeof(*a));
    sq_text(stmt, 0, a->id, sizeof(a->id));
    a->kind = kind && strcmp((const char *)kind, "agent") == 0 ? STORE_ACCOUNT_AGENT
                                                               : STORE_ACCOUNT_HUMAN;
    a->is_admin = sqlite3_column_int(stmt, 2) != 0;
    sq_text(stmt, 3, a->home_channel_id, sizeof(a->home_channel_id));
}

enum store_rc sq_account_put(void *impl, const struct store_account *a, int *changed)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    if (!store_id_valid(a->id) || (a->home_channel_id[0] && !store_id_valid(a->home_channel_id)))
        return STORE_INVALID;
    if (a->home_channel_id[0] && a->kind != STORE_ACCOUNT_AGENT)
        return STORE_INVALID;
    stmt = sq_stmt(st, SQ_ACCOUNT_PUT);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, a->id);
    sq_bind(stmt, 2, a->kind == STORE_ACCOUNT_AGENT ? "agent" : "human");
    sqlite3_bind_int(stmt, 3, a->is_admin ? 1 : 0);
    sq_bind(stmt, 4, a->home_channel_id);
    return sq_exec_write(st, stmt, 0, changed);
}

enum store_rc sq_account_get(void *impl, const char *id, struct store_account *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rv;

    stmt = sq_read_stmt(st, NULL, SQ_ACCOUNT_GET);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, id);
    rv = step_read(st, stmt);
    if (rv == STORE_OK)
        read_account(stmt, out);
    sq_release(stmt);
    return rv;
}

static int account_row(sqlite3_stmt *stmt, void *cb, void *arg)
{
    struct store_account a;

    read_account(stmt, &a);
    return ((store_account_cb)cb)(&a, arg);
}

enum store_rc sq_account_list(void *impl, store_account_cb cb, void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    stmt = sq_read_stmt(st, NULL, SQ_ACCOUNT_LIST);
    if (!stmt)
        return STORE_FAULT;
    return run_list(st, stmt, account_row, (void *)cb, arg);
}

/* --- channels, runners: rows with only an id --- */

static enum store_rc put_id(struct sqlite_store *st, enum sq_id id, const char *value, int *changed)
{
    sqlite3_stmt *stmt;

    if (!store_id_valid(value))
        return STORE_INVALID;
    stmt = sq_stmt(st, id);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, value);
    return sq_exec_write(st, stmt, 0, changed);
}

static int id_row(sqlite3_stmt *stmt, void *cb, void *arg)
{
    const unsigned char *t = sqlite3_column_text(stmt, 0);

    return ((store_id_cb)cb)(t ? (const char *)t : "", arg);
}

static enum store_rc list_ids(struct sqlite_store *st, enum sq_id id, store_id_cb cb, void *arg)
{
    sqlite3_stmt *stmt;

    stmt = sq_read_stmt(st, NULL, id);
    if (!stmt)
        return STORE_FAULT;
    return run_list(st, stmt, id_row, (void *)cb, arg);
}

enum store_rc sq_channel_put(void *impl, const char *id, int *changed)
{
    return put_id(impl, SQ_CHANNEL_PUT, id, changed);
}

enum store_rc sq_channel_list(void *impl, store_id_cb cb, void *arg)
{
    return list_ids(impl, SQ_CHANNEL_LIST, cb, arg);
}

enum store_rc sq_runner_put(void *impl, const char *id, int *changed)
{
    return put_id(impl, SQ_RUNNER_PUT, id, changed);
}

enum store_rc sq_runner_list(void *impl, store_id_cb cb, void *arg)
{
    return list_ids(impl, SQ_RUNNER_LIST, cb, arg);
}

/* --- memberships --- */

enum store_rc sq_member_add(void *impl, const char *account_id, const char *channel_id,
                            int *changed)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    if (!store_id_valid(account_id) || !store_id_valid(channel_id))
        return STORE_INVALID;
    stmt = sq_stmt(st, SQ_MEMBER_ADD);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, account_id);
    sq_bind(stmt, 2, channel_id);
    return sq_exec_write(st, stmt, 0, changed);
}

enum store_rc sq_member_remove(void *impl, const char *account_id, const char *channel_id,
                               int *changed)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt = sq_stmt(st, SQ_MEMBER_REMOVE);
    int rv, n = 0;

    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, account_id);
    sq_bind(stmt, 2, channel_id);
    rv = sq_exec_write(st, stmt, SQ_WRITE_DELETE, &n);
    if (changed)
        *changed = n;
    return rv == STORE_OK && n == 0 ? STORE_NOT_FOUND : rv;
}

static int member_row(sqlite3_stmt *stmt, void *cb, void *arg)
{
    const unsigned char *a = sqlite3_column_text(stmt, 0);
    const unsigned char *c = sqlite3_column_text(stmt, 1);

    return ((store_member_cb)cb)(a ? (const char *)a : "", c ? (const char *)c : "", arg);
}

enum store_rc sq_member_list(void *impl, const char *channel_id, store_member_cb cb, void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    stmt = sq_read_stmt(st, NULL, SQ_MEMBER_LIST);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, channel_id ? channel_id : "");
    return run_list(st, stmt, member_row, (void *)cb, arg);
}

/* --- containers --- */

static void read_container(sqlite3_stmt *stmt, struct store_container *c)
{
    memset(c, 0, sizeof(*c));
    sq_text(stmt, 0, c->name, sizeof(c->name));
    sq_text(stmt, 1, c->agent_account_id, sizeof(c->agent_account_id));
    sq_text(stmt, 2, c->runner_id, sizeof(c->runner_id));
}

enum store_rc sq_container_put(void *impl, const struct store_container *c, int *changed)
{
    struct sqlite_store *st = impl;
    struct store_account a;
    sqlite3_stmt *stmt;
    int rv;

    if (!store_id_valid(c->name) || !store_id_valid(c->agent_account_id) ||
        !store_id_valid(c->runner_id))
        return STORE_INVALID;
    /* A container runs an agent: a human account cannot own one. */
    rv = sq_account_get(st, c->agent_account_id, &a);
    if (rv == STORE_NOT_FOUND || (rv == STORE_OK && a.kind != STORE_ACCOUNT_AGENT))
        return STORE_INVALID;
    if (rv != STORE_OK)
        return rv;
    stmt = sq_stmt(st, SQ_CONTAINER_PUT);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, c->name);
    sq_bind(stmt, 2, c->agent_account_id);
    sq_bind(stmt, 3, c->runner_id);
    return sq_exec_write(st, stmt, 0, changed);
}

enum store_rc sq_container_get(void *impl, const char *name, struct store_container *out)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rv;

    stmt = sq_read_stmt(st, NULL, SQ_CONTAINER_GET);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, name);
    rv = step_read(st, stmt);
    if (rv == STORE_OK)
        read_container(stmt, out);
    sq_release(stmt);
    return rv;
}

static int container_row(sqlite3_stmt *stmt, void *cb, void *arg)
{
    struct store_container c;

    read_container(stmt, &c);
    return ((store_container_cb)cb)(&c, arg);
}

enum store_rc sq_container_list(void *impl, const char *runner_id, store_container_cb cb, void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    stmt = sq_read_stmt(st, NULL, SQ_CONTAINER_LIST);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, runner_id ? runner_id : "");
    return run_list(st, stmt, container_row, (void *)cb, arg);
}

/* --- any named row --- */

enum store_rc sq_exists(void *impl, enum store_entity kind, const char *id)
{
    static const enum sq_id ids[] = {
        [STORE_ENTITY_ACCOUNT] = SQ_EXISTS_ACCOUNT, [STORE_ENTITY_CHANNEL] = SQ_EXISTS_CHANNEL,
        [STORE_ENTITY_RUNNER] = SQ_EXISTS_RUNNER,   [STORE_ENTITY_CONTAINER] = SQ_EXISTS_CONTAINER,
        [STORE_ENTITY_SESSION] = SQ_EXISTS_SESSION,
    };
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rv;

    if ((unsigned)kind > STORE_ENTITY_SESSION)
        return STORE_INVALID;
    stmt = sq_read_stmt(st, NULL, ids[kind]);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, id);
    rv = step_read(st, stmt);
    sq_release(stmt);
    return rv;
}

enum store_rc sq_remove(void *impl, enum store_entity kind, const char *id)
{
    static const enum sq_id ids[] = {
        [STORE_ENTITY_ACCOUNT] = SQ_REMOVE_ACCOUNT, [STORE_ENTITY_CHANNEL] = SQ_REMOVE_CHANNEL,
        [STORE_ENTITY_RUNNER] = SQ_REMOVE_RUNNER,   [STORE_ENTITY_CONTAINER] = SQ_REMOVE_CONTAINER,
        [STORE_ENTITY_SESSION] = SQ_REMOVE_SESSION,
    };
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rv, n = 0;

    if ((unsigned)kind > STORE_ENTITY_SESSION)
        return STORE_INVALID;
    stmt = sq_stmt(st, ids[kind]);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, id);
    rv = sq_exec_write(st, stmt, SQ_WRITE_DELETE, &n);
    return rv == STORE_OK && n == 0 ? STORE_NOT_FOUND : rv;
}

/* --- tokens --- */

enum store_rc sq_token_add(void *impl, const uint8_t hash[STORE_HASH_LEN],
                           enum store_subject_kind kind, const char *subject_id, int *changed)
{
    struct sqlite_store *st = impl;
    char account[STORE_ID_MAX], runner[STORE_ID_MAX];
    const char *mine;
    sqlite3_stmt *stmt;
    int rv, n = 0;

    if ((kind != STORE_SUBJECT_ACCOUNT && kind != STORE_SUBJECT_RUNNER) ||
        !store_id_valid(subject_id))
        return STORE_INVALID;
    stmt = sq_stmt(st, SQ_TOKEN_ADD);
    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_blob(stmt, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
    if (kind == STORE_SUBJECT_ACCOUNT)
        sq_bind(stmt, 2, subject_id);
    else
        sq_bind(stmt, 3, subject_id);
    sqlite3_bind_int64(stmt, 4, clock_unix_ms());
    rv = sq_exec_write(st, stmt, SQ_WRITE_NO_GATE, &n);
    if (changed)
        *changed = n;
    if (rv != STORE_OK || n > 0)
        return rv;
    /* The hash exists: fine if it is this subject's (even revoked: a
     * re-import never revives a token), a conflict otherwise. */
    stmt = sq_stmt(st, SQ_TOKEN_SUBJECT);
    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_blob(stmt, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
    rv = step_read(st, stmt);
    if (rv == STORE_OK) {
        sq_text(stmt, 0, account, sizeof(account));
        sq_text(stmt, 1, runner, sizeof(runner));
        mine = kind == STORE_SUBJECT_ACCOUNT ? account : runner;
        if (strcmp(mine, subject_id) != 0)
            rv = STORE_CONFLICT;
    } else if (rv == STORE_NOT_FOUND) {
        rv = STORE_FAULT; /* vanished between two statements: retry */
    }
    sq_release(stmt);
    return rv;
}

enum store_rc sq_token_revoke(void *impl, const uint8_t hash[STORE_HASH_LEN], int *changed)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt = sq_stmt(st, SQ_TOKEN_REVOKE);
    int rv, n = 0;

    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_blob(stmt, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
    rv = sq_exec_write(st, stmt, SQ_WRITE_NO_GATE, &n);
    if (changed)
        *changed = n;
    if (rv != STORE_OK || n > 0)
        return rv;
    stmt = sq_stmt(st, SQ_TOKEN_SUBJECT);
    if (!stmt)
        return STORE_FAULT;
    sqlite3_bind_blob(stmt, 1, hash, STORE_HASH_LEN, SQLITE_STATIC);
    rv = step_read(st, stmt); /* OK: revoked already */
    sq_release(stmt);
    return rv;
}

enum store_rc sq_token_revoke_subject(void *impl, enum store_subject_kind kind,
                                      const char *subject_id, int *changed)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;
    int rv;

    if (kind != STORE_SUBJECT_ACCOUNT && kind != STORE_SUBJECT_RUNNER)
        return STORE_INVALID;
    rv = sq_exists(st, kind == STORE_SUBJECT_ACCOUNT ? STORE_ENTITY_ACCOUNT : STORE_ENTITY_RUNNER,
                   subject_id);
    if (rv != STORE_OK)
        return rv;
    stmt = sq_stmt(st, kind == STORE_SUBJECT_ACCOUNT ? SQ_TOKEN_REVOKE_ACCOUNT
                                                     : SQ_TOKEN_REVOKE_RUNNER);
    if (!stmt)
        return STORE_FAULT;
    sq_bind(stmt, 1, subject_id);
    return sq_exec_write(st, stmt, SQ_WRITE_NO_GATE, changed);
}

static int token_row(sqlite3_stmt *stmt, void *cb, void *arg)
{
    struct store_token_info t;
    const void *h = sqlite3_column_blob(stmt, 0);

    memset(&t, 0, sizeof(t));
    if (h && sqlite3_column_bytes(stmt, 0) == STORE_HASH_LEN)
        memcpy(t.hash, h, STORE_HASH_LEN);
    if (sqlite3_column_type(stmt, 1) != SQLITE_NULL) {
        t.kind = STORE_SUBJECT_ACCOUNT;
        sq_text(stmt, 1, t.subject_id, sizeof(t.subject_id));
    } else {
        t.kind = STORE_SUBJECT_RUNNER;
        sq_text(stmt, 2, t.subject_id, sizeof(t.subject_id));
    }
    t.revoked = sqlite3_column_int(stmt, 3) != 0;
    t.created_at_ms = sqlite3_column_int64(stmt, 4);
    return ((store_token_cb)cb)(&t, arg);
}

enum store_rc sq_token_list(void *impl, store_token_cb cb, void *arg)
{
    struct sqlite_store *st = impl;
    sqlite3_stmt *stmt;

    stmt = sq_read_stmt(st, NULL, SQ_TOKEN_LIST);
    if (!stmt)
        return STORE_FAULT;
    return run_list(st, stmt, token_row, (void *)cb, arg);
}
