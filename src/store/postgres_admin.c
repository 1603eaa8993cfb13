/* postgres_admin: the PostgreSQL backend's administration operations
 * (accounts, channels, memberships, runners, containers, tokens), with the
 * same checks and answers as the SQLite backend's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "store/postgres_internal.h"

/* Runs read statement ID with one text argument (NULL: none) and returns
 * OK with *RES set when it has a row, NOT_FOUND (RES cleared), or FAULT. */
static enum store_rc read_one(struct pg_store *st, enum pq_id id, const char *arg, PGresult **res)
{
    struct pg_params p = {0};
    int rv;

    *res = NULL;
    if (pg_read_guard(NULL))
        return STORE_FAULT;
    if (arg)
        pg_param_text(&p, arg);
    rv = pg_run(st, id, arg ? &p : NULL, PG_READ, res);
    if (rv == STORE_OK && PQntuples(*res) == 0) {
        PQclear(*res);
        *res = NULL;
        rv = STORE_NOT_FOUND;
    }
    return rv;
}

/* 1 when ID is plain ASCII (anything else cannot be stored). */
static int ascii(const char *id)
{
    for (; *id; id++)
        if ((unsigned char)*id >= 0x80)
            return 0;
    return 1;
}

/* --- accounts --- */

static void read_account(const PGresult *res, int row, struct store_account *a)
{
    memset(a, 0, sizeof(*a));
    pg_text(res, row, 0, a->id, sizeof(a->id));
    a->kind =
        strcmp(PQgetvalue(res, row, 1), "agent") == 0 ? STORE_ACCOUNT_AGENT : STORE_ACCOUNT_HUMAN;
    a->is_admin = pg_int(res, row, 2) != 0;
    pg_text(res, row, 3, a->home_channel_id, sizeof(a->home_channel_id));
}

enum store_rc pq_account_put(void *impl, const struct store_account *a, int *changed)
{
    struct pg_params p = {0};

    if (!store_id_valid(a->id) || (a->home_channel_id[0] && !store_id_valid(a->home_channel_id)))
        return STORE_INVALID;
    if (a->home_channel_id[0] && a->kind != STORE_ACCOUNT_AGENT)
        return STORE_INVALID;
    pg_param_text(&p, a->id);
    pg_param_text(&p, a->kind == STORE_ACCOUNT_AGENT ? "agent" : "human");
    pg_param_int(&p, a->is_admin ? 1 : 0);
    pg_param_text(&p, a->home_channel_id);
    return pg_write(impl, PQ_ACCOUNT_PUT, &p, 0, changed);
}

enum store_rc pq_account_get(void *impl, const char *id, struct store_account *out)
{
    PGresult *res = NULL;
    int rv;

    if (!ascii(id))
        return pg_read_guard(NULL) ? STORE_FAULT : STORE_NOT_FOUND;
    rv = read_one(impl, PQ_ACCOUNT_GET, id, &res);
    if (rv == STORE_OK) {
        read_account(res, 0, out);
        PQclear(res);
    }
    return rv;
}

/* Runs list statement ID (one optional text argument) and calls ROW for
 * each row until it returns nonzero.  Returns OK or FAULT. */
static enum store_rc run_list(struct pg_store *st, enum pq_id id, const char *arg,
                              int (*row)(const PGresult *res, int i, void *cb, void *arg), void *cb,
                              void *cb_arg)
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int i, rv;

    if (pg_read_guard(NULL))
        return STORE_FAULT;
    if (arg)
        pg_param_text(&p, ascii(arg) ? arg : "\x01");
    rv = pg_run(st, id, arg ? &p : NULL, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    for (i = 0; i < PQntuples(res); i++)
        if (row(res, i, cb, cb_arg) != 0)
            break;
    PQclear(res);
    return STORE_OK;
}

static int account_row(const PGresult *res, int i, void *cb, void *arg)
{
    struct store_account a;

    read_account(res, i, &a);
    return ((store_account_cb)cb)(&a, arg);
}

enum store_rc pq_account_list(void *impl, store_account_cb cb, void *arg)
{
    return run_list(impl, PQ_ACCOUNT_LIST, NULL, account_row, (void *)cb, arg);
}

/* --- channels, runners: rows with only an id --- */

static enum store_rc put_id(struct pg_store *st, enum pq_id id, const char *value, int *changed)
{
    struct pg_params p = {0};

    if (!store_id_valid(value))
        return STORE_INVALID;
    pg_param_text(&p, value);
    return pg_write(st, id, &p, 0, changed);
}

static int id_row(const PGresult *res, int i, void *cb, void *arg)
{
    return ((store_id_cb)cb)(PQgetvalue(res, i, 0), arg);
}

enum store_rc pq_channel_put(void *impl, const char *id, int *changed)
{
    return put_id(impl, PQ_CHANNEL_PUT, id, changed);
}

enum store_rc pq_channel_list(void *impl, store_id_cb cb, void *arg)
{
    return run_list(impl, PQ_CHANNEL_LIST, NULL, id_row, (void *)cb, arg);
}

enum store_rc pq_runner_put(void *impl, const char *id, int *changed)
{
    return put_id(impl, PQ_RUNNER_PUT, id, changed);
}

enum store_rc pq_runner_list(void *impl, store_id_cb cb, void *arg)
{
    return run_list(impl, PQ_RUNNER_LIST, NULL, id_row, (void *)cb, arg);
}

/* --- memberships --- */

enum store_rc pq_member_add(void *impl, const char *account_id, const char *channel_id,
                            int *changed)
{
    struct pg_params p = {0};

    if (!store_id_valid(account_id) || !store_id_valid(channel_id))
        return STORE_INVALID;
    pg_param_text(&p, account_id);
    pg_param_text(&p, channel_id);
    return pg_write(impl, PQ_MEMBER_ADD, &p, 0, changed);
}

enum store_rc pq_member_remove(void *impl, const char *account_id, const char *channel_id,
                               int *changed)
{
    struct pg_params p = {0};
    int rv, n = 0;

    if (!ascii(account_id) || !ascii(channel_id))
        return STORE_NOT_FOUND;
    pg_param_text(&p, account_id);
    pg_param_text(&p, channel_id);
    rv = pg_write(impl, PQ_MEMBER_REMOVE, &p, PG_DELETE, &n);
    if (changed)
        *changed = n;
    return rv == STORE_OK && n == 0 ? STORE_NOT_FOUND : rv;
}

static int member_row(const PGresult *res, int i, void *cb, void *arg)
{
    return ((store_member_cb)cb)(PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), arg);
}

enum store_rc pq_member_list(void *impl, const char *channel_id, store_member_cb cb, void *arg)
{
    return run_list(impl, PQ_MEMBER_LIST, channel_id ? channel_id : "", member_row, (void *)cb,
                    arg);
}

/* --- containers --- */

static void read_container(const PGresult *res, int row, struct store_container *c)
{
    memset(c, 0, sizeof(*c));
    pg_text(res, row, 0, c->name, sizeof(c->name));
    pg_text(res, row, 1, c->agent_account_id, sizeof(c->agent_account_id));
    pg_text(res, row, 2, c->runner_id, sizeof(c->runner_id));
}

enum store_rc pq_container_put(void *impl, const struct store_container *c, int *changed)
{
    struct pg_params p = {0};
    struct store_account a;
    int rv;

    if (!store_id_valid(c->name) || !store_id_valid(c->agent_account_id) ||
        !store_id_valid(c->runner_id))
        return STORE_INVALID;
    /* A container runs an agent: a human account cannot own one. */
    rv = pq_account_get(impl, c->agent_account_id, &a);
    if (rv == STORE_NOT_FOUND || (rv == STORE_OK && a.kind != STORE_ACCOUNT_AGENT))
        return STORE_INVALID;
    if (rv != STORE_OK)
        return rv;
    pg_param_text(&p, c->name);
    pg_param_text(&p, c->agent_account_id);
    pg_param_text(&p, c->runner_id);
    return pg_write(impl, PQ_CONTAINER_PUT, &p, 0, changed);
}

enum store_rc pq_container_get(void *impl, const char *name, struct store_container *out)
{
    PGresult *res = NULL;
    int rv;

    if (!ascii(name))
        return pg_read_guard(NULL) ? STORE_FAULT : STORE_NOT_FOUND;
    rv = read_one(impl, PQ_CONTAINER_GET, name, &res);
    if (rv == STORE_OK) {
        read_container(res, 0, out);
        PQclear(res);
    }
    return rv;
}

static int container_row(const PGresult *res, int i, void *cb, void *arg)
{
    struct store_container c;

    read_container(res, i, &c);
    return ((store_container_cb)cb)(&c, arg);
}

enum store_rc pq_container_list(void *impl, const char *runner_id, store_container_cb cb, void *arg)
{
    return run_list(impl, PQ_CONTAINER_LIST, runner_id ? runner_id : "", container_row, (void *)cb,
                    arg);
}

/* --- any named row --- */

enum store_rc pq_exists(void *impl, enum store_entity kind, const char *id)
{
    static const enum pq_id ids[] = {
        [STORE_ENTITY_ACCOUNT] = PQ_EXISTS_ACCOUNT, [STORE_ENTITY_CHANNEL] = PQ_EXISTS_CHANNEL,
        [STORE_ENTITY_RUNNER] = PQ_EXISTS_RUNNER,   [STORE_ENTITY_CONTAINER] = PQ_EXISTS_CONTAINER,
        [STORE_ENTITY_SESSION] = PQ_EXISTS_SESSION,
    };
    PGresult *res = NULL;
    int rv;

    if ((unsigned)kind > STORE_ENTITY_SESSION)
        return STORE_INVALID;
    if (!ascii(id))
        return pg_read_guard(NULL) ? STORE_FAULT : STORE_NOT_FOUND;
    rv = read_one(impl, ids[kind], id, &res);
    PQclear(res);
    return rv;
}

enum store_rc pq_remove(void *impl, enum store_entity kind, const char *id)
{
    static const enum pq_id ids[] = {
        [STORE_ENTITY_ACCOUNT] = PQ_REMOVE_ACCOUNT, [STORE_ENTITY_CHANNEL] = PQ_REMOVE_CHANNEL,
        [STORE_ENTITY_RUNNER] = PQ_REMOVE_RUNNER,   [STORE_ENTITY_CONTAINER] = PQ_REMOVE_CONTAINER,
        [STORE_ENTITY_SESSION] = PQ_REMOVE_SESSION,
    };
    struct pg_params p = {0};
    int rv, n = 0;

    if ((unsigned)kind > STORE_ENTITY_SESSION)
        return STORE_INVALID;
    if (!ascii(id))
        return STORE_NOT_FOUND;
    pg_param_text(&p, id);
    rv = pg_write(impl, ids[kind], &p, PG_DELETE, &n);
    return rv == STORE_OK && n == 0 ? STORE_NOT_FOUND : rv;
}

/* --- tokens --- */

/* Reads the subject HASH is bound to into ACCOUNT and RUNNER ("" for the
 * other kind).  Returns OK, NOT_FOUND or FAULT. */
static enum store_rc token_subject(struct pg_store *st, const uint8_t hash[STORE_HASH_LEN],
                                   char account[STORE_ID_MAX], char runner[STORE_ID_MAX])
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    pg_param_bytes(&p, hash, STORE_HASH_LEN);
    rv = pg_run(st, PQ_TOKEN_SUBJECT, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rv = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    if (rv == STORE_OK) {
        pg_text(res, 0, 0, account, STORE_ID_MAX);
        pg_text(res, 0, 1, runner, STORE_ID_MAX);
    }
    PQclear(res);
    return rv;
}

enum store_rc pq_token_add(void *impl, const uint8_t hash[STORE_HASH_LEN],
                           enum store_subject_kind kind, const char *subject_id, int *changed)
{
    char account[STORE_ID_MAX], runner[STORE_ID_MAX];
    struct pg_params p = {0};
    int rv, n = 0;

    if ((kind != STORE_SUBJECT_ACCOUNT && kind != STORE_SUBJECT_RUNNER) ||
        !store_id_valid(subject_id))
        return STORE_INVALID;
    pg_param_bytes(&p, hash, STORE_HASH_LEN);
    pg_param_text(&p, kind == STORE_SUBJECT_ACCOUNT ? subject_id : "");
    pg_param_text(&p, kind == STORE_SUBJECT_RUNNER ? subject_id : "");
    pg_param_int(&p, clock_unix_ms());
    rv = pg_write(impl, PQ_TOKEN_ADD, &p, PG_NO_GATE, &n);
    if (changed)
        *changed = n;
    if (rv != STORE_OK || n > 0)
        return rv;
    /* The hash exists: fine if it is this subject's (even revoked: a
     * re-import never revives a token), a conflict otherwise. */
    rv = token_subject(impl, hash, account, runner);
    if (rv == STORE_NOT_FOUND)
        return STORE_FAULT; /* vanished between two statements: retry */
    if (rv == STORE_OK && strcmp(kind == STORE_SUBJECT_ACCOUNT ? account : runner, subject_id) != 0)
        rv = STORE_CONFLICT;
    return rv;
}

enum store_rc pq_token_revoke(void *impl, const uint8_t hash[STORE_HASH_LEN], int *changed)
{
    char account[STORE_ID_MAX], runner[STORE_ID_MAX];
    struct pg_params p = {0};
    int rv, n = 0;

    pg_param_bytes(&p, hash, STORE_HASH_LEN);
    rv = pg_write(impl, PQ_TOKEN_REVOKE, &p, PG_NO_GATE, &n);
    if (changed)
        *changed = n;
    if (rv != STORE_OK || n > 0)
        return rv;
    return token_subject(impl, hash, account, runner); /* OK: revoked already */
}

enum store_rc pq_token_revoke_subject(void *impl, enum store_subject_kind kind,
                                      const char *subject_id, int *changed)
{
    struct pg_params p = {0};
    int rv;

    if (kind != STORE_SUBJECT_ACCOUNT && kind != STORE_SUBJECT_RUNNER)
        return STORE_INVALID;
    rv = pq_exists(impl, kind == STORE_SUBJECT_ACCOUNT ? STORE_ENTITY_ACCOUNT : STORE_ENTITY_RUNNER,
                   subject_id);
    if (rv != STORE_OK)
        return rv;
    pg_param_text(&p, subject_id);
    return pg_write(
        impl, kind == STORE_SUBJECT_ACCOUNT ? PQ_TOKEN_REVOKE_ACCOUNT : PQ_TOKEN_REVOKE_RUNNER, &p,
        PG_NO_GATE, changed);
}

static int token_row(const PGresult *res, int i, void *cb, void *arg)
{
    struct store_token_info t;
    const char *hex = PQgetvalue(res, i, 0);
    unsigned v;
    int k;

    memset(&t, 0, sizeof(t));
    for (k = 0; k < STORE_HASH_LEN && strlen(hex) == 2 * STORE_HASH_LEN; k++)
        if (sscanf(hex + 2 * k, "%2x", &v) == 1)
            t.hash[k] = (uint8_t)v;
    pg_text(res, i, 1, t.subject_id, sizeof(t.subject_id));
    t.kind = strcmp(PQgetvalue(res, i, 2), "t") == 0 ? STORE_SUBJECT_ACCOUNT : STORE_SUBJECT_RUNNER;
    t.revoked = pg_int(res, i, 3) != 0;
    t.created_at_ms = pg_int(res, i, 4);
    return ((store_token_cb)cb)(&t, arg);
}

enum store_rc pq_token_list(void *impl, store_token_cb cb, void *arg)
{
    return run_list(impl, PQ_TOKEN_LIST, NULL, token_row, (void *)cb, arg);
}
