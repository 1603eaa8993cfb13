/* postgres: the PostgreSQL backend of struct store: connections, the
 * statement runner, change notifications and the gate cache, opening and
 * closing.  Reads and session writes are in postgres_reads.c,
 * administration in postgres_admin.c, the schema and SQL text in
 * postgres_schema.c.
 *
 * How it keeps the event loop moving: every store call is synchronous, so
 * every wait on the server is bounded.  A statement has a server-side
 * statement_timeout and lock_timeout, and the client abandons it (dropping
 * the connection, so nothing is left half-read) at the same budget plus a
 * grace period; a connection attempt is non-blocking with its own
 * deadline; and after a failed attempt no new one is made until a back-off
 * (100 ms doubling to 4 s) has passed, so while the server is down each
 * call answers STORE_FAULT at once instead of waiting on a connect.  A
 * connection found broken is dropped and replaced on next use, so the
 * store recovers by itself when the server returns. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/failpoint.h"
#include "common/log.h"
#include "store/postgres_internal.h"
#include "store/sqlite_cache.h"

#define CONNECT_DEADLINE_MS  500
#define STATEMENT_TIMEOUT_MS 1000
#define LOCK_TIMEOUT_MS      200
#define CLIENT_GRACE_MS      500
#define BACKOFF_MIN_MS       100
#define BACKOFF_MAX_MS       4000

void pg_param_text(struct pg_params *p, const char *text)
{
    p->values[p->n] = text ? text : "";
    p->lengths[p->n] = 0;
    p->formats[p->n] = 0;
    p->n++;
}

void pg_param_int(struct pg_params *p, int64_t v)
{
    snprintf(p->num[p->n], sizeof(p->num[p->n]), "%lld", (long long)v);
    pg_param_text(p, p->num[p->n]);
}

void pg_param_bytes(struct pg_params *p, const uint8_t *bytes, int len)
{
    p->values[p->n] = (const char *)bytes;
    p->lengths[p->n] = len;
    p->formats[p->n] = 1;
    p->n++;
}

void pg_text(const PGresult *res, int row, int col, char *buf, size_t len)
{
    snprintf(buf, len, "%s", PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));
}

int64_t pg_int(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

int pg_read_guard(const char *name)
{
    return failpoint_active("store.read") || (name && failpoint_active(name));
}

/* Waits until CONN's socket is ready for EVENTS.  Returns 1 when ready, 0
 * at DEADLINE, -1 on a poll error. */
static int wait_socket(PGconn *conn, short events, int64_t deadline)
{
    struct pollfd pfd;
    int64_t left;
    int rc;

    pfd.fd = PQsocket(conn);
    pfd.events = events;
    if (pfd.fd < 0)
        return -1;
    for (;;) {
        left = deadline - clock_monotonic_ms();
        if (left <= 0)
            return 0;
        rc = poll(&pfd, 1, (int)left);
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* Flushes what was sent on CONN and collects its results by DEADLINE.
 * Returns the first result (possibly an error result), or NULL when the
 * connection failed or *TIMED_OUT. */
static PGresult *collect(PGconn *conn, int64_t deadline, int *timed_out)
{
    PGresult *res = NULL, *r;
    int rc, w;

    *timed_out = 0;
    while ((rc = PQflush(conn)) == 1) {
        w = wait_socket(conn, POLLOUT | POLLIN, deadline);
        if (w <= 0) {
            *timed_out = w == 0;
            return NULL;
        }
        if (!PQconsumeInput(conn))
            return NULL;
    }
    if (rc < 0)
        return NULL;
    for (;;) {
        while (PQisBusy(conn)) {
            w = wait_socket(conn, POLLIN, deadline);
            if (w <= 0 || !PQconsumeInput(conn)) {
                *timed_out = w == 0;
                PQclear(res);
                return NULL;
            }
        }
        r = PQgetResult(conn);
        if (!r)
            break;
        /* An error after a statement's own result is its implicit commit
         * failing (a deferred foreign key): that error is the answer. */
        if (!res || PQresultStatus(r) == PGRES_FATAL_ERROR) {
            PQclear(res);
            res = r;
        } else {
            PQclear(r);
        }
    }
    return res;
}

/* Sends SQL (with P, or as a simple query when P is NULL) on CONN and
 * collects its result; see collect(). */
static PGresult *exec_deadline(PGconn *conn, const char *sql, const struct pg_params *p,
                               int64_t deadline, int *timed_out)
{
    int rc = p ? PQsendQueryParams(conn, sql, p->n, NULL, p->values, p->lengths, p->formats, 0)
               : PQsendQuery(conn, sql);

    *timed_out = 0;
    return rc ? collect(conn, deadline, timed_out) : NULL;
}

/* Runs statement ID (text SQL) with P on pool slot SLOT, preparing it there
 * first if this connection has not yet; see collect(). */
static PGresult *exec_prepared(struct pg_store *st, int slot, enum pq_id id, const char *sql,
                               const struct pg_params *p, int64_t deadline, int *timed_out)
{
    static const struct pg_params none;
    PGconn *conn = st->pool[slot];
    char name[32];
    PGresult *r;

    if (!p)
        p = &none;
    snprintf(name, sizeof(name), "ah%u_%d", st->prep_gen[slot], (int)id);
    *timed_out = 0;
    if (!st->prepared[slot][id]) {
        if (!PQsendPrepare(conn, name, sql, p->n, NULL))
            return NULL;
        r = collect(conn, deadline, timed_out);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return r; /* the error (or NULL) is the statement's answer */
        PQclear(r);
        st->prepared[slot][id] = 1;
    }
    if (!PQsendQueryPrepared(conn, name, p->n, p->values, p->lengths, p->formats, 0))
        return NULL;
    return collect(conn, deadline, timed_out);
}

/* Copies CONN's last error into ERR without the trailing newline. */
static void conn_error(PGconn *conn, const char *prefix, char *err, size_t errlen)
{
    const char *msg = conn ? PQerrorMessage(conn) : "out of memory";
    size_t n;

    if (!err || errlen == 0)
        return;
    snprintf(err, errlen, "%s%s", prefix, msg && msg[0] ? msg : "no answer");
    n = strlen(err);
    while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
        err[--n] = '\0';
}

/* Server notices ("relation already exists, skipping") are not errors and
 * must not reach stderr, where the CLI's output goes. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Opens one connection within CONNECT_DEADLINE_MS and sets the session's
 * timeouts.  Returns it, or NULL with a reason in ERR (may be NULL).
 * Defaults come before the URI in the keyword list, so anything the URI
 * says (keepalives, application_name) wins. */
static PGconn *pg_connect(struct pg_store *st, char *err, size_t errlen)
{
    static const char *const keys[] = {
        "connect_timeout",     "keepalives",       "keepalives_idle",
        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
        "application_name",    "dbname",           NULL};
    const char *vals[] = {"2", "1", "10", "5", "3", "10000", "agenthub", st->uri, NULL};
    int64_t deadline = clock_monotonic_ms() + CONNECT_DEADLINE_MS;
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    char sql[160];
    PGresult *res = NULL;
    PGconn *conn;
    int w, timed_out;

    conn = PQconnectStartParams(keys, vals, 1);
    if (!conn || PQstatus(conn) == CONNECTION_BAD) {
        conn_error(conn, "", err, errlen);
        goto fail;
    }
    while (ps != PGRES_POLLING_OK) {
        if (ps == PGRES_POLLING_FAILED) {
            conn_error(conn, "", err, errlen);
            goto fail;
        }
        w = wait_socket(conn, ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (w <= 0) {
            if (err)
                snprintf(err, errlen, "no connection within %d ms", CONNECT_DEADLINE_MS);
            goto fail;
        }
        ps = PQconnectPoll(conn);
    }
    PQsetnonblocking(conn, 1);
    PQsetNoticeProcessor(conn, ignore_notice, NULL);
    snprintf(sql, sizeof(sql),
             "SET statement_timeout = %d; SET lock_timeout = %d; "
             "SET idle_in_transaction_session_timeout = %d",
             st->timeout_ms, st->lock_timeout_ms, 60000);
    res = exec_deadline(conn, sql, NULL, deadline + st->timeout_ms, &timed_out);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        PQclear(res);
        conn_error(conn, "cannot set the session's timeouts: ", err, errlen);
        goto fail;
    }
    PQclear(res);
    st->stats.connects++;
    return conn;

fail:
    st->stats.connect_failures++;
    PQfinish(conn);
    return NULL;
}

/* pg_connect for the pool and the listener, with the back-off: returns
 * NULL at once while the back-off since the last failure runs. */
static PGconn *connect_backoff(struct pg_store *st)
{
    char err[256];
    int64_t now = clock_monotonic_ms();
    PGconn *conn;

    if (now < st->retry_at_ms)
        return NULL;
    conn = pg_connect(st, err, sizeof(err));
    if (!conn) {
        if (st->up)
            log_warn("store: cannot reach PostgreSQL: %s", err);
        st->up = 0;
        st->retry_at_ms = clock_monotonic_ms() + st->backoff_ms;
        st->backoff_ms = st->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : st->backoff_ms * 2;
        return NULL;
    }
    if (!st->up)
        log_info("store: connected to PostgreSQL");
    st->up = 1;
    st->backoff_ms = BACKOFF_MIN_MS;
    st->retry_at_ms = 0;
    return conn;
}

static void drop_slot(struct pg_store *st, int slot)
{
    if (!st->pool[slot])
        return;
    PQfinish(st->pool[slot]);
    st->pool[slot] = NULL;
    memset(st->prepared[slot], 0, sizeof(st->prepared[slot]));
    st->stats.disconnects++;
}

/* 1 when idle connection CONN is still usable.  An idle query connection
 * is sent nothing unasked (it LISTENs to nothing), so readable input means
 * the server is saying goodbye (shut down, backend terminated) before it
 * closes: the connection is treated as gone.  Checked before sending, so a
 * write is never sent into a connection that is already closing. */
static int idle_alive(PGconn *conn)
{
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};

    if (pfd.fd < 0 || PQstatus(conn) != CONNECTION_OK)
        return 0;
    return poll(&pfd, 1, 0) == 0;
}

/* Returns the connection to run on (*SLOT its pool index), or NULL when
 * none can be had now (server down, back-off running, or begin()'s
 * connection lost). */
static PGconn *acquire(struct pg_store *st, int *slot)
{
    int i, free_slot = -1;

    if (st->txn) {
        *slot = st->txn - 1;
        return st->pool[*slot];
    }
    for (i = 0; i < PG_POOL_SIZE; i++) {
        if (st->pool[i] && !idle_alive(st->pool[i]))
            drop_slot(st, i);
        if (st->pool[i]) {
            *slot = i;
            return st->pool[i];
        }
        if (free_slot < 0)
            free_slot = i;
    }
    st->pool[free_slot] = connect_backoff(st);
    *slot = free_slot;
    return st->pool[free_slot];
}

/* Maps a failed statement's SQLSTATE to a store_rc and logs a fault (the
 * statement's number and the server's primary message, never SQL text). */
static enum store_rc map_error(const PGresult *r, enum pq_id id, int flags)
{
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);

    if (state && strncmp(state, "23", 2) == 0) {
        if (strcmp(state, "23503") == 0)
            return (flags & PG_DELETE) ? STORE_CONFLICT : STORE_INVALID;
        if (strcmp(state, "23514") == 0 || strcmp(state, "23502") == 0)
            return STORE_INVALID;
        return STORE_CONFLICT;
    }
    log_warn("store: statement %d failed: %s (%s)", (int)id, msg ? msg : "no message",
             state ? state : "no state");
    return STORE_FAULT;
}

/* Runs SQL on a pool connection; see pg_run.  *USED (may be NULL) gets the
 * pool slot it ran on. */
static enum store_rc run_sql(struct pg_store *st, enum pq_id id, const char *sql,
                             const struct pg_params *p, int flags, PGresult **res, int *used)
{
    int attempt, slot = 0, timed_out = 0, rv;
    ExecStatusType status;
    int64_t deadline;
    PGresult *r;
    PGconn *conn;

    *res = NULL;
    for (attempt = 0; attempt < 2; attempt++) {
        conn = acquire(st, &slot);
        if (!conn)
            break;
        st->stats.queries++;
        deadline = clock_monotonic_ms() + st->timeout_ms + CLIENT_GRACE_MS;
        r = id < PQ_COUNT ? exec_prepared(st, slot, id, sql, p, deadline, &timed_out)
                          : exec_deadline(conn, sql, p, deadline, &timed_out);
        if (r && PQstatus(conn) == CONNECTION_OK) {
            status = PQresultStatus(r);
            st->up = 1;
            if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
                *res = r;
                if (used)
                    *used = slot;
                return STORE_OK;
            }
            rv = map_error(r, id, flags);
            PQclear(r);
            if (rv == STORE_FAULT) {
                st->stats.query_faults++;
                /* A prepared plan may be what failed (a table changed
                 * under it): prepare afresh, under new names. */
                st->prep_gen[slot]++;
                memset(st->prepared[slot], 0, sizeof(st->prepared[slot]));
            }
            return rv;
        }
        PQclear(r);
        if (timed_out) {
            st->stats.timeouts++;
            log_warn("store: statement %d: no answer from PostgreSQL within %d ms", (int)id,
                     st->timeout_ms + CLIENT_GRACE_MS);
        } else {
            log_warn("store: lost the PostgreSQL connection");
        }
        /* Whatever the connection was doing is unknown: never reuse it. */
        drop_slot(st, slot);
        /* A read may run again on a fresh connection; a write whose outcome
         * is unknown may not, nor anything inside begin(). */
        if (timed_out || !(flags & PG_READ) || st->txn)
            break;
    }
    st->stats.query_faults++;
    return STORE_FAULT;
}

enum store_rc pg_run(struct pg_store *st, enum pq_id id, const struct pg_params *p, int flags,
                     PGresult **res)
{
    return run_sql(st, id, pq_sql(id), p, flags, res, NULL);
}

/* Runs a transaction-control statement (no parameters).  Returns STORE_OK
 * or the mapped error. */
static enum store_rc run_control(struct pg_store *st, const char *sql, int *used)
{
    PGresult *res = NULL;
    int rv = run_sql(st, PQ_COUNT, sql, NULL, 0, &res, used);

    /* A COMMIT of a transaction that already failed answers ROLLBACK. */
    if (rv == STORE_OK && strcmp(PQcmdStatus(res), "ROLLBACK") == 0 && strcmp(sql, "COMMIT") == 0)
        rv = STORE_FAULT;
    PQclear(res);
    return rv;
}

enum store_rc pg_write(struct pg_store *st, enum pq_id id, const struct pg_params *p, int flags,
                       int *changed)
{
    PGresult *res = NULL;
    int rv;

    /* Inside begin(), a failed statement must not doom the transaction
     * (the SQLite backend's statements fail alone), so each write runs in
     * a savepoint there. */
    if (st->txn) {
        rv = run_control(st, "SAVEPOINT op", NULL);
        if (rv != STORE_OK)
            return rv;
    }
    rv = pg_run(st, id, p, flags, &res);
    if (st->txn)
        (void)run_control(st, rv == STORE_OK ? "RELEASE op" : "ROLLBACK TO op; RELEASE op", NULL);
    if (rv != STORE_OK)
        return rv;
    if (changed)
        *changed = atoi(PQcmdTuples(res)) > 0;
    PQclear(res);
    if (!(flags & PG_NO_GATE)) {
        sq_cache_clear(st->cache);
        st->stats.invalidations++;
    }
    return STORE_OK;
}

/* --- change notifications --- */

/* 1 when PID is one of this handle's own query connections. */
static int own_backend(const struct pg_store *st, int pid)
{
    int i;

    for (i = 0; i < PG_POOL_SIZE; i++)
        if (st->pool[i] && PQbackendPID(st->pool[i]) == pid)
            return 1;
    return 0;
}

/* Reads whatever notifications arrived, without waiting.  Returns 1, or 0
 * when the listening connection is gone. */
static int drain(struct pg_store *st)
{
    struct pollfd pfd = {.fd = PQsocket(st->listen), .events = POLLIN};
    uint64_t foreign = 0;
    PGnotify *n;
    int i;

    /* Nothing arrived (the common case): one poll, no read. */
    if (poll(&pfd, 1, 0) == 0 && PQstatus(st->listen) == CONNECTION_OK)
        return 1;
    /* The server's goodbye (an error, then end of file) can take more than
     * one read to see through: read until nothing is left (a bounded number
     * of times, so a stream of notifications cannot hold the loop). */
    for (i = 0; i < 8; i++) {
        if (!PQconsumeInput(st->listen) || PQstatus(st->listen) != CONNECTION_OK)
            return 0;
        if (poll(&pfd, 1, 0) <= 0)
            break;
    }
    while ((n = PQnotifies(st->listen)) != NULL) {
        if (!own_backend(st, n->be_pid))
            foreign++;
        PQfreemem(n);
    }
    if (foreign) {
        st->generation += foreign;
        st->stats.notifications += foreign;
        sq_cache_clear(st->cache);
        st->stats.invalidations++;
    }
    return 1;
}

/* Opens the listening connection.  Returns 0, or -1 (back-off running or
 * the server cannot be reached). */
static int listen_connect(struct pg_store *st)
{
    PGresult *res = NULL;
    PGconn *conn = connect_backoff(st);
    int timed_out;

    if (!conn)
        return -1;
    res = exec_deadline(conn, "LISTEN " PG_CHANNEL, NULL,
                        clock_monotonic_ms() + st->timeout_ms + CLIENT_GRACE_MS, &timed_out);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        PQclear(res);
        PQfinish(conn);
        st->stats.disconnects++;
        return -1;
    }
    PQclear(res);
    st->listen = conn;
    return 0;
}

/* pg_cache_fresh without the read scope. */
static int cache_fresh_now(struct pg_store *st)
{
    if (st->listen && !drain(st)) {
        log_warn("store: lost the PostgreSQL notification connection");
        PQfinish(st->listen);
        st->listen = NULL;
        st->stats.disconnects++;
    }
    if (!st->listen) {
        sq_cache_clear(st->cache);
        if (listen_connect(st) != 0)
            return 0;
        /* Changes while nobody listened were missed: count one, so open
         * streams are decided again. */
        st->generation++;
        st->stats.invalidations++;
    }
    sq_cache_mark_valid(st->cache);
    return 1;
}

int pg_cache_fresh(struct pg_store *st)
{
    /* One decision's reads (a read scope) need one look at the socket. */
    if (st->scope > 0 && st->scope_checked)
        return st->scope_fresh;
    st->scope_fresh = cache_fresh_now(st);
    st->scope_checked = st->scope > 0;
    return st->scope_fresh;
}

/* --- the operations defined here --- */

static void pq_read_begin(void *impl)
{
    struct pg_store *st = impl;

    if (st->scope++ == 0)
        st->scope_checked = 0;
}

static void pq_read_end(void *impl)
{
    struct pg_store *st = impl;

    if (st->scope > 0)
        st->scope--;
}

static enum store_rc pq_change_generation(void *impl, uint64_t *generation)
{
    struct pg_store *st = impl;

    if (!cache_fresh_now(st))
        return STORE_FAULT;
    *generation = st->generation;
    return STORE_OK;
}

static enum store_rc pq_begin(void *impl)
{
    struct pg_store *st = impl;
    int rv, slot = 0;

    if (st->txn)
        return STORE_INVALID;
    rv = run_control(st, "BEGIN", &slot);
    if (rv == STORE_OK)
        st->txn = slot + 1;
    return rv;
}

static enum store_rc pq_commit(void *impl)
{
    struct pg_store *st = impl;
    int rv;

    if (!st->txn)
        return STORE_INVALID;
    rv = run_control(st, "COMMIT", NULL);
    if (rv != STORE_OK && st->pool[st->txn - 1])
        (void)run_control(st, "ROLLBACK", NULL);
    st->txn = 0;
    sq_cache_clear(st->cache);
    return rv;
}

static void pq_rollback(void *impl)
{
    struct pg_store *st = impl;

    if (!st->txn)
        return;
    if (st->pool[st->txn - 1])
        (void)run_control(st, "ROLLBACK", NULL);
    st->txn = 0;
    sq_cache_clear(st->cache);
}

static enum store_rc pq_ping(void *impl)
{
    struct pg_store *st = impl;
    PGresult *res = NULL;
    int i, rv;

    if (!pg_cache_fresh(st))
        return STORE_FAULT;
    rv = pg_run(st, PQ_PING, NULL, PG_READ, &res);
    PQclear(res);
    /* Keep the spare warm, so losing one connection costs no call. */
    for (i = 0; rv == STORE_OK && !st->txn && i < PG_POOL_SIZE; i++)
        if (!st->pool[i])
            st->pool[i] = connect_backoff(st);
    return rv;
}

static void pq_set_timeout(void *impl, int ms)
{
    struct pg_store *st = impl;
    int i;

    if (ms <= 0 || st->txn)
        return;
    st->timeout_ms = ms;
    st->lock_timeout_ms = ms;
    /* The session settings are made at connect: start afresh. */
    for (i = 0; i < PG_POOL_SIZE; i++)
        drop_slot(st, i);
}

static void pq_close(void *impl)
{
    struct pg_store *st = impl;
    int i;

    if (!st)
        return;
    for (i = 0; i < PG_POOL_SIZE; i++)
        PQfinish(st->pool[i]);
    PQfinish(st->listen);
    sq_cache_free(st->cache);
    free(st->uri);
    free(st);
}

static const struct store_ops postgres_ops = {
    .close = pq_close,
    .token_resolve = pq_token_resolve,
    .token_add = pq_token_add,
    .token_revoke = pq_token_revoke,
    .token_revoke_subject = pq_token_revoke_subject,
    .token_list = pq_token_list,
    .session_get = pq_session_get,
    .session_find_native = pq_session_find_native,
    .session_runner = pq_session_runner,
    .member_check = pq_member_check,
    .resource_get = pq_resource_get,
    .read_begin = pq_read_begin,
    .read_end = pq_read_end,
    .change_generation = pq_change_generation,
    .session_create = pq_session_create,
    .session_close = pq_session_close,
    .session_reopen = pq_session_reopen,
    .session_list = pq_session_list,
    .runner_sessions = pq_runner_sessions,
    .session_count_open = pq_session_count_open,
    .terminal_create = pq_terminal_create,
    .agent_session_create = pq_agent_session_create,
    .resource_close = pq_resource_close,
    .runner_seq_get = pq_runner_seq_get,
    .runner_seq_set = pq_runner_seq_set,
    .container_list = pq_container_list,
    .account_put = pq_account_put,
    .account_get = pq_account_get,
    .account_list = pq_account_list,
    .channel_put = pq_channel_put,
    .channel_list = pq_channel_list,
    .member_add = pq_member_add,
    .member_remove = pq_member_remove,
    .member_list = pq_member_list,
    .runner_put = pq_runner_put,
    .runner_list = pq_runner_list,
    .container_put = pq_container_put,
    .container_get = pq_container_get,
    .exists = pq_exists,
    .remove = pq_remove,
    .begin = pq_begin,
    .commit = pq_commit,
    .rollback = pq_rollback,
    .ping = pq_ping,
    .set_timeout = pq_set_timeout,
    .write_metrics = pq_write_metrics,
};

enum store_rc postgres_store_open(const char *uri, struct store **out, char *err, size_t errlen)
{
    struct pg_store *st;
    char why[256];
    int rv;

    *out = NULL;
    if (pg_lib_load(err, errlen) != 0)
        return STORE_FAULT;
    st = calloc(1, sizeof(*st));
    if (!st || !(st->uri = strdup(uri)) || !(st->cache = sq_cache_new())) {
        snprintf(err, errlen, "out of memory");
        rv = STORE_FAULT;
        goto fail;
    }
    st->timeout_ms = STATEMENT_TIMEOUT_MS;
    st->lock_timeout_ms = LOCK_TIMEOUT_MS;
    st->backoff_ms = BACKOFF_MIN_MS;
    st->pool[0] = pg_connect(st, why, sizeof(why));
    if (!st->pool[0]) {
        snprintf(err, errlen, "cannot connect to PostgreSQL: %s", why);
        rv = STORE_FAULT;
        goto fail;
    }
    rv = pq_migrate(st->pool[0], err, errlen);
    if (rv != STORE_OK)
        goto fail;
    st->up = 1;
    if (listen_connect(st) != 0) {
        snprintf(err, errlen, "cannot LISTEN for changes on PostgreSQL");
        rv = STORE_FAULT;
        goto fail;
    }
    st->up = 1;
    st->base.ops = &postgres_ops;
    st->base.impl = st;
    *out = &st->base;
    return STORE_OK;

fail:
    pq_close(st);
    return rv;
}
