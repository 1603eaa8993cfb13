/* postgres_reads: the PostgreSQL backend's gate reads (through the gate
 * cache), session and resource reads and writes, and the Runners'
 * sequence numbers: what the server runs at request time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "store/auth.h"
#include "store/postgres_internal.h"
#include "store/sqlite_cache.h"

/* 1 when KEY can be sent as a lookup key: bytes 0x01..0x7f only.  Every
 * stored id is printable ASCII, so any other key is absent, and the server
 * must not see bytes its encoding would refuse (that would be a fault). */
static int key_ok(const char *key, size_t max)
{
    size_t i;

    for (i = 0; key[i]; i++)
        if ((unsigned char)key[i] >= 0x80 || i + 1 >= max)
            return 0;
    return 1;
}

/* Decodes 64 hex digits into HASH; returns 0 or -1. */
static int unhex(const char *hex, uint8_t hash[STORE_HASH_LEN])
{
    unsigned v;
    int i;

    if (strlen(hex) != 2 * STORE_HASH_LEN)
        return -1;
    for (i = 0; i < STORE_HASH_LEN; i++) {
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        hash[i] = (uint8_t)v;
    }
    return 0;
}

enum store_rc pq_token_resolve(void *impl, const uint8_t hash[STORE_HASH_LEN],
                               struct store_subject *out)
{
    struct pg_store *st = impl;
    uint8_t stored[STORE_HASH_LEN];
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (pg_read_guard("store.token"))
        return STORE_FAULT;
    pg_param_bytes(&p, hash, STORE_HASH_LEN);
    rv = pg_run(st, PQ_TOKEN_RESOLVE, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rv = STORE_NOT_FOUND;
    /* The index found the row; compare the whole hash in constant time
     * anyway so no code path ever compares secrets with memcmp. */
    if (PQntuples(res) == 1 && unhex(PQgetvalue(res, 0, 0), stored) == 0 &&
        auth_equal(stored, hash, STORE_HASH_LEN)) {
        memset(out, 0, sizeof(*out));
        if (strcmp(PQgetvalue(res, 0, 4), "t") == 0) {
            out->kind = STORE_SUBJECT_ACCOUNT;
            pg_text(res, 0, 1, out->id, sizeof(out->id));
            out->is_admin = pg_int(res, 0, 3) != 0;
        } else {
            out->kind = STORE_SUBJECT_RUNNER;
            pg_text(res, 0, 2, out->id, sizeof(out->id));
        }
        rv = STORE_OK;
    }
    PQclear(res);
    return rv;
}

/* Fills OUT from row ROW of a SESSION_COLUMNS result. */
static void read_session_row(const PGresult *res, int row, struct store_session *out)
{
    memset(out, 0, sizeof(*out));
    pg_text(res, row, 0, out->session_id, sizeof(out->session_id));
    pg_text(res, row, 1, out->container_name, sizeof(out->container_name));
    pg_text(res, row, 2, out->agent_account_id, sizeof(out->agent_account_id));
    pg_text(res, row, 3, out->home_channel_id, sizeof(out->home_channel_id));
    pg_text(res, row, 4, out->runner_id, sizeof(out->runner_id));
    pg_text(res, row, 5, out->owner_account_id, sizeof(out->owner_account_id));
    pg_text(res, row, 6, out->provider, sizeof(out->provider));
    pg_text(res, row, 7, out->native_id, sizeof(out->native_id));
    out->resource_id = (uint64_t)pg_int(res, row, 8);
    out->closed = pg_int(res, row, 9) != 0;
    out->created_at_ms = pg_int(res, row, 10);
}

/* Runs session statement ID and reads its first row: OK, NOT_FOUND or
 * FAULT. */
static enum store_rc one_session(struct pg_store *st, enum pq_id id, const struct pg_params *p,
                                 struct store_session *out)
{
    PGresult *res = NULL;
    int rv = pg_run(st, id, p, PG_READ, &res);

    if (rv != STORE_OK)
        return rv;
    rv = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    if (rv == STORE_OK)
        read_session_row(res, 0, out);
    PQclear(res);
    return rv;
}

/* The session read behind session_get and session_runner, through the
 * gate cache when the notification connection vouches for it. */
static enum store_rc session_cached(struct pg_store *st, const char *session_id,
                                    struct store_session *out)
{
    struct pg_params p = {0};
    int fresh = pg_cache_fresh(st);
    int rv;

    if (!key_ok(session_id, STORE_ID_MAX))
        return STORE_NOT_FOUND;
    if (fresh) {
        rv = sq_cache_session_get(st->cache, session_id, out);
        if (rv != STORE_FAULT) /* FAULT here means "not cached" */
            return rv;
    }
    pg_param_text(&p, session_id);
    rv = one_session(st, PQ_SESSION_GET, &p, out);
    if (fresh && (rv == STORE_OK || rv == STORE_NOT_FOUND))
        sq_cache_session_put(st->cache, session_id, rv == STORE_OK ? out : NULL);
    return rv;
}

enum store_rc pq_session_get(void *impl, const char *session_id, struct store_session *out)
{
    if (pg_read_guard("store.session"))
        return STORE_FAULT;
    return session_cached(impl, session_id, out);
}

enum store_rc pq_session_runner(void *impl, const char *session_id, char runner_id[STORE_ID_MAX])
{
    struct store_session s;
    int rv;

    if (pg_read_guard("store.binding"))
        return STORE_FAULT;
    rv = session_cached(impl, session_id, &s);
    if (rv == STORE_OK)
        snprintf(runner_id, STORE_ID_MAX, "%s", s.runner_id);
    return rv;
}

enum store_rc pq_session_find_native(void *impl, const char *provider, const char *native_id,
                                     struct store_session *out)
{
    struct pg_params p = {0};

    if (pg_read_guard("store.session"))
        return STORE_FAULT;
    if (!key_ok(provider, STORE_ID_MAX) || !key_ok(native_id, STORE_NATIVE_ID_MAX))
        return STORE_NOT_FOUND;
    pg_param_text(&p, provider);
    pg_param_text(&p, native_id);
    return one_session(impl, PQ_SESSION_FIND_NATIVE, &p, out);
}

/* Loads every channel of ACCOUNT_ID into the cache; an account in more
 * than MEMBER_CACHE_MAX channels is not cached.  Returns OK or FAULT. */
#define MEMBER_CACHE_MAX 64
static enum store_rc member_load(struct pg_store *st, const char *account_id)
{
    char buf[MEMBER_CACHE_MAX * STORE_ID_MAX];
    struct pg_params p = {0};
    size_t len = 0, n;
    PGresult *res = NULL;
    int i, rows, rv;

    pg_param_text(&p, account_id);
    pg_param_int(&p, MEMBER_CACHE_MAX + 1);
    rv = pg_run(st, PQ_MEMBER_CHANNELS, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rows = PQntuples(res);
    for (i = 0; i < rows && rows <= MEMBER_CACHE_MAX; i++) {
        const char *ch = PQgetvalue(res, i, 0);
        n = strlen(ch);
        if (n == 0 || len + n + 1 > sizeof(buf))
            break;
        memcpy(buf + len, ch, n + 1);
        len += n + 1;
    }
    if (rows <= MEMBER_CACHE_MAX && i == rows)
        sq_cache_member_put(st->cache, account_id, buf, len);
    PQclear(res);
    return STORE_OK;
}

enum store_rc pq_member_check(void *impl, const char *account_id, const char *channel_id)
{
    struct pg_store *st = impl;
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (pg_read_guard("store.membership"))
        return STORE_FAULT;
    if (!key_ok(account_id, STORE_ID_MAX) || !key_ok(channel_id, STORE_ID_MAX))
        return STORE_NOT_FOUND;
    if (pg_cache_fresh(st)) {
        rv = sq_cache_member_get(st->cache, account_id, channel_id);
        if (rv != STORE_FAULT)
            return rv;
        rv = member_load(st, account_id);
        if (rv != STORE_OK)
            return rv;
        rv = sq_cache_member_get(st->cache, account_id, channel_id);
        if (rv != STORE_FAULT)
            return rv;
    }
    pg_param_text(&p, account_id);
    pg_param_text(&p, channel_id);
    rv = pg_run(st, PQ_MEMBER_CHECK, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rv = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    PQclear(res);
    return rv;
}

enum store_rc pq_resource_get(void *impl, uint64_t resource_id, struct store_resource *out)
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (pg_read_guard("store.session"))
        return STORE_FAULT;
    if (resource_id == 0 || resource_id > INT64_MAX)
        return STORE_NOT_FOUND;
    pg_param_int(&p, (int64_t)resource_id);
    rv = pg_run(impl, PQ_RESOURCE_GET, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rv = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    if (rv == STORE_OK) {
        memset(out, 0, sizeof(*out));
        out->id = (uint64_t)pg_int(res, 0, 0);
        out->kind = pg_int(res, 0, 1) == 1 ? STORE_RESOURCE_AGENT_SESSION : STORE_RESOURCE_TERMINAL;
        out->parent_id = (uint64_t)pg_int(res, 0, 2);
        pg_text(res, 0, 3, out->container_name, sizeof(out->container_name));
        pg_text(res, 0, 4, out->agent_account_id, sizeof(out->agent_account_id));
        pg_text(res, 0, 5, out->runner_id, sizeof(out->runner_id));
        pg_text(res, 0, 6, out->session_id, sizeof(out->session_id));
        out->closed = pg_int(res, 0, 7) != 0;
    }
    PQclear(res);
    return rv;
}

/* Runs session list statement ID, handing each row to CB until it returns
 * nonzero.  Returns OK or FAULT. */
static enum store_rc each_session(struct pg_store *st, enum pq_id id, const struct pg_params *p,
                                  store_session_cb cb, void *arg)
{
    struct store_session s;
    PGresult *res = NULL;
    int i, rv = pg_run(st, id, p, PG_READ, &res);

    if (rv != STORE_OK)
        return rv;
    for (i = 0; i < PQntuples(res); i++) {
        read_session_row(res, i, &s);
        if (cb(&s, arg) != 0)
            break;
    }
    PQclear(res);
    return STORE_OK;
}

enum store_rc pq_session_list(void *impl, const struct store_session_filter *filter,
                              store_session_cb cb, void *arg)
{
    struct pg_params p = {0};

    if (pg_read_guard("store.session"))
        return STORE_FAULT;
    if (filter &&
        (!key_ok(filter->runner_id, STORE_ID_MAX) || !key_ok(filter->container_name, STORE_ID_MAX)))
        return STORE_OK; /* nothing can match */
    pg_param_text(&p, filter ? filter->runner_id : "");
    pg_param_text(&p, filter ? filter->container_name : "");
    pg_param_int(&p, filter ? filter->open_only : 0);
    return each_session(impl, PQ_SESSION_LIST, &p, cb, arg);
}

enum store_rc pq_runner_sessions(void *impl, const char *runner_id, store_session_cb cb, void *arg)
{
    struct pg_params p = {0};

    if (pg_read_guard("store.binding"))
        return STORE_FAULT;
    if (!key_ok(runner_id, STORE_ID_MAX))
        return STORE_OK;
    pg_param_text(&p, runner_id);
    return each_session(impl, PQ_SESSION_HOSTED, &p, cb, arg);
}

enum store_rc pq_session_count_open(void *impl, const char *agent_account_id, uint64_t *out)
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (pg_read_guard("store.session"))
        return STORE_FAULT;
    if (!key_ok(agent_account_id, STORE_ID_MAX)) {
        *out = 0;
        return STORE_OK;
    }
    pg_param_text(&p, agent_account_id);
    rv = pg_run(impl, PQ_SESSION_COUNT_OPEN, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    *out = (uint64_t)pg_int(res, 0, 0);
    PQclear(res);
    return STORE_OK;
}

/* --- writes --- */

enum store_rc pq_session_create(void *impl, const struct store_session_spec *spec,
                                char out_id[STORE_ID_MAX])
{
    struct pg_params p = {0};
    char id[STORE_ID_MAX];
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
        (spec->owner_account_id[0] && !store_id_valid(spec->owner_account_id)) ||
        !key_ok(spec->provider, STORE_ID_MAX) || !key_ok(spec->native_id, STORE_NATIVE_ID_MAX))
        return STORE_INVALID;
    pg_param_text(&p, id);
    pg_param_text(&p, spec->container_name);
    pg_param_text(&p, spec->owner_account_id);
    pg_param_text(&p, spec->provider);
    pg_param_text(&p, spec->native_id);
    pg_param_int(&p, clock_unix_ms());
    rv = pg_write(impl, PQ_SESSION_INSERT, &p, 0, NULL);
    if (rv == STORE_OK && out_id)
        snprintf(out_id, STORE_ID_MAX, "%s", id);
    return rv;
}

/* Runs a "SELECT count(*)" write (one statement changing a session and
 * its resource together).  Returns OK, NOT_FOUND when it matched nothing,
 * or the mapped error. */
static enum store_rc counted_write(struct pg_store *st, enum pq_id id, const struct pg_params *p)
{
    PGresult *res = NULL;
    int rv = pg_run(st, id, p, 0, &res);

    if (rv != STORE_OK)
        return rv;
    rv = pg_int(res, 0, 0) > 0 ? STORE_OK : STORE_NOT_FOUND;
    PQclear(res);
    sq_cache_clear(st->cache);
    return rv;
}

static enum store_rc session_set_closed(struct pg_store *st, const char *session_id, int closed)
{
    struct pg_params p = {0};

    if (!key_ok(session_id, STORE_ID_MAX))
        return STORE_NOT_FOUND;
    pg_param_text(&p, session_id);
    pg_param_int(&p, closed);
    return counted_write(st, PQ_SESSION_SET_CLOSED, &p);
}

enum store_rc pq_session_close(void *impl, const char *session_id)
{
    return session_set_closed(impl, session_id, 1);
}

enum store_rc pq_session_reopen(void *impl, const char *session_id)
{
    return session_set_closed(impl, session_id, 0);
}

enum store_rc pq_terminal_create(void *impl, const char *container_name, uint64_t *out_id)
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (!store_id_valid(container_name))
        return STORE_INVALID;
    pg_param_int(&p, STORE_RESOURCE_TERMINAL);
    pg_param_text(&p, container_name);
    rv = pg_run(impl, PQ_RESOURCE_INSERT, &p, 0, &res);
    if (rv != STORE_OK)
        return rv;
    *out_id = (uint64_t)pg_int(res, 0, 0);
    PQclear(res);
    return STORE_OK;
}

enum store_rc pq_agent_session_create(void *impl, uint64_t parent_id, const char *provider,
                                      const char *native_id, const char *owner_account_id,
                                      uint64_t *out_id, char out_session_id[STORE_ID_MAX])
{
    struct pg_store *st = impl;
    struct pg_params p = {0};
    char id[STORE_ID_MAX];
    PGresult *res = NULL;
    int rv;

    if (!provider || !store_id_valid(provider) ||
        (native_id && native_id[0] && !store_native_id_valid(native_id)) ||
        (owner_account_id && owner_account_id[0] && !store_id_valid(owner_account_id)))
        return STORE_INVALID;
    if (parent_id == 0 || parent_id > INT64_MAX)
        return STORE_NOT_FOUND;
    rv = auth_mint_session_id(id) == 0 ? STORE_OK : STORE_FAULT;
    if (rv != STORE_OK)
        return rv;
    pg_param_int(&p, (int64_t)parent_id);
    pg_param_text(&p, id);
    pg_param_text(&p, owner_account_id);
    pg_param_text(&p, provider);
    pg_param_text(&p, native_id);
    pg_param_int(&p, clock_unix_ms());
    rv = pg_run(st, PQ_AGENT_SESSION_INSERT, &p, 0, &res);
    if (rv != STORE_OK)
        return rv;
    if (PQgetisnull(res, 0, 0))
        rv = STORE_NOT_FOUND; /* no such parent */
    else if (pg_int(res, 0, 0) != STORE_RESOURCE_TERMINAL || PQgetisnull(res, 0, 2))
        rv = STORE_INVALID;
    if (rv == STORE_OK) {
        *out_id = (uint64_t)pg_int(res, 0, 1);
        if (out_session_id)
            snprintf(out_session_id, STORE_ID_MAX, "%s", id);
        sq_cache_clear(st->cache);
    }
    PQclear(res);
    return rv;
}

enum store_rc pq_resource_close(void *impl, uint64_t resource_id)
{
    struct pg_params p = {0};

    if (resource_id == 0 || resource_id > INT64_MAX)
        return STORE_NOT_FOUND;
    pg_param_int(&p, (int64_t)resource_id);
    return counted_write(impl, PQ_RESOURCE_CLOSE, &p);
}

/* --- runners --- */

enum store_rc pq_runner_seq_get(void *impl, const char *runner_id, uint64_t *out)
{
    struct pg_params p = {0};
    PGresult *res = NULL;
    int rv;

    if (pg_read_guard(NULL))
        return STORE_FAULT;
    if (!key_ok(runner_id, STORE_ID_MAX))
        return STORE_NOT_FOUND;
    pg_param_text(&p, runner_id);
    rv = pg_run(impl, PQ_RUNNER_SEQ_GET, &p, PG_READ, &res);
    if (rv != STORE_OK)
        return rv;
    rv = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    /* Stored as the same 64 bits in a signed BIGINT. */
    if (rv == STORE_OK)
        *out = (uint64_t)pg_int(res, 0, 0);
    PQclear(res);
    return rv;
}

enum store_rc pq_runner_seq_set(void *impl, const char *runner_id, uint64_t seq)
{
    struct pg_params p = {0};
    int rv, n = 0;

    if (!key_ok(runner_id, STORE_ID_MAX))
        return STORE_NOT_FOUND;
    pg_param_text(&p, runner_id);
    pg_param_int(&p, (int64_t)seq);
    rv = pg_write(impl, PQ_RUNNER_SEQ_SET, &p, PG_NO_GATE, &n);
    return rv == STORE_OK && n == 0 ? STORE_NOT_FOUND : rv;
}
