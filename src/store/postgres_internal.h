/* postgres_internal: what the files of the PostgreSQL backend share.
 * Nothing outside src/store/postgres*.c includes this. */
#ifndef AGENTHUB_POSTGRES_INTERNAL_H
#define AGENTHUB_POSTGRES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store/postgres_lib.h"
#include "store/store.h"

/* Every statement the backend runs (SQL text in postgres_schema.c). */
enum pq_id {
    PQ_TOKEN_RESOLVE,
    PQ_TOKEN_ADD,
    PQ_TOKEN_SUBJECT,
    PQ_TOKEN_REVOKE,
    PQ_TOKEN_REVOKE_ACCOUNT,
    PQ_TOKEN_REVOKE_RUNNER,
    PQ_TOKEN_LIST,
    PQ_SESSION_GET,
    PQ_SESSION_FIND_NATIVE,
    PQ_SESSION_LIST,
    PQ_MEMBER_CHECK,
    PQ_MEMBER_CHANNELS,
    PQ_RESOURCE_GET,
    PQ_SESSION_INSERT,
    PQ_SESSION_SET_CLOSED,
    PQ_RESOURCE_INSERT,
    PQ_AGENT_SESSION_INSERT,
    PQ_RESOURCE_CLOSE,
    PQ_RUNNER_SEQ_GET,
    PQ_RUNNER_SEQ_SET,
    PQ_CONTAINER_LIST,
    PQ_ACCOUNT_PUT,
    PQ_ACCOUNT_GET,
    PQ_ACCOUNT_LIST,
    PQ_CHANNEL_PUT,
    PQ_CHANNEL_LIST,
    PQ_MEMBER_ADD,
    PQ_MEMBER_REMOVE,
    PQ_MEMBER_LIST,
    PQ_RUNNER_PUT,
    PQ_RUNNER_LIST,
    PQ_CONTAINER_PUT,
    PQ_CONTAINER_GET,
    PQ_EXISTS_ACCOUNT,
    PQ_EXISTS_CHANNEL,
    PQ_EXISTS_RUNNER,
    PQ_EXISTS_CONTAINER,
    PQ_EXISTS_SESSION,
    PQ_REMOVE_ACCOUNT,
    PQ_REMOVE_CHANNEL,
    PQ_REMOVE_RUNNER,
    PQ_REMOVE_CONTAINER,
    PQ_REMOVE_SESSION,
    PQ_SESSION_HOSTED,
    PQ_SESSION_COUNT_OPEN,
    PQ_PING,
    PQ_COUNT
};

/* The notification channel every write's trigger notifies. */
#define PG_CHANNEL "agenthub_store"

/* Query connections.  The server is one event loop and every store call is
 * synchronous, so one connection answers every call; the second is a warm
 * spare, so losing one connection (a terminated backend, a restarted
 * pooler) does not fault the call that finds it gone. */
#define PG_POOL_SIZE 2

struct pg_stats {
    uint64_t connects;         /* connections established */
    uint64_t connect_failures; /* attempts that failed */
    uint64_t disconnects;      /* connections found broken and dropped */
    uint64_t queries;          /* statements sent */
    uint64_t query_faults;     /* statements that answered STORE_FAULT */
    uint64_t timeouts;         /* statements abandoned at the deadline */
    uint64_t notifications;    /* other connections' change notifications */
    uint64_t invalidations;    /* times the gate cache was dropped */
};

struct sq_cache;

struct pg_store {
    struct store base; /* first, so &st->base is the public handle */
    char *uri;
    PGconn *pool[PG_POOL_SIZE];
    /* Statements are prepared on each connection at first use, so the
     * server plans each once per connection rather than per call. */
    unsigned char prepared[PG_POOL_SIZE][PQ_COUNT];
    unsigned prep_gen[PG_POOL_SIZE]; /* part of the names: bumped to start afresh */
    PGconn *listen;                  /* LISTENs on PG_CHANNEL; NULL while down */
    int txn;                         /* 1 + pool index holding begin()'s transaction */
    int timeout_ms;                  /* statement budget (server and client side) */
    int lock_timeout_ms;             /* wait for another writer's row lock */
    int64_t retry_at_ms;             /* no new connection attempt before this */
    int backoff_ms;
    int up;              /* the last contact succeeded */
    uint64_t generation; /* other connections' notifications seen */
    int scope;           /* read_begin nesting depth */
    int scope_checked;   /* pg_cache_fresh ran inside the current scope */
    int scope_fresh;     /* and what it answered */
    struct sq_cache *cache;
    struct pg_stats stats;
};

/* Up to PG_MAX_PARAMS bound parameters of one statement. */
#define PG_MAX_PARAMS 8
struct pg_params {
    int n;
    const char *values[PG_MAX_PARAMS];
    int lengths[PG_MAX_PARAMS];
    int formats[PG_MAX_PARAMS];
    char num[PG_MAX_PARAMS][24];
};

void pg_param_text(struct pg_params *p, const char *text);
void pg_param_int(struct pg_params *p, int64_t v);
void pg_param_bytes(struct pg_params *p, const uint8_t *bytes, int len);

/* pg_run flags. */
#define PG_READ     1 /* a read: retried once on a fresh connection */
#define PG_DELETE   2 /* a foreign key violation means "still referenced" */
#define PG_NO_GATE  4 /* touches nothing the gate cache holds */
#define PG_NO_RETRY 8

/* Runs statement ID with P (may be NULL).  Returns STORE_OK with *RES set
 * (the caller PQclear()s it), or the mapped error (FAULT for a lost
 * connection, a timeout or any server error that is not a constraint). */
enum store_rc pg_run(struct pg_store *st, enum pq_id id, const struct pg_params *p, int flags,
                     PGresult **res);

/* A write: pg_run, then *CHANGED (may be NULL) = PQcmdTuples > 0; *ROWS
 * (may be NULL) = rows affected. */
enum store_rc pg_write(struct pg_store *st, enum pq_id id, const struct pg_params *p, int flags,
                       int *changed);

/* Called first by every read: returns 1 (the read must answer
 * STORE_FAULT) when failpoint NAME (may be NULL) or "store.read" is set. */
int pg_read_guard(const char *name);

/* Brings the gate cache up to date: drains change notifications (dropping
 * the cache for another connection's change) and re-LISTENs when the
 * notification connection was lost.  Returns 1 when the cache may serve,
 * 0 when it may not (no notification connection). */
int pg_cache_fresh(struct pg_store *st);

/* Copies text field (ROW, COL) of RES into BUF ("" for NULL). */
void pg_text(const PGresult *res, int row, int col, char *buf, size_t len);
int64_t pg_int(const PGresult *res, int row, int col);

/* The SQL text of statement ID, and the migrations (postgres_schema.c). */
const char *pq_sql(enum pq_id id);
/* Applies every pending migration on CONN.  Returns STORE_OK, or
 * STORE_FAULT with a reason in ERR (a newer schema, a failed statement). */
enum store_rc pq_migrate(PGconn *conn, char *err, size_t errlen);

/* Reads (postgres_reads.c). */
enum store_rc pq_token_resolve(void *impl, const uint8_t hash[STORE_HASH_LEN],
                               struct store_subject *out);
enum store_rc pq_session_get(void *impl, const char *session_id, struct store_session *out);
enum store_rc pq_session_find_native(void *impl, const char *provider, const char *native_id,
                                     struct store_session *out);
enum store_rc pq_session_runner(void *impl, const char *session_id, char runner_id[STORE_ID_MAX]);
enum store_rc pq_member_check(void *impl, const char *account_id, const char *channel_id);
enum store_rc pq_resource_get(void *impl, uint64_t resource_id, struct store_resource *out);
enum store_rc pq_session_list(void *impl, const struct store_session_filter *filter,
                              store_session_cb cb, void *arg);
enum store_rc pq_runner_sessions(void *impl, const char *runner_id, store_session_cb cb, void *arg);
enum store_rc pq_session_count_open(void *impl, const char *agent_account_id, uint64_t *out);
enum store_rc pq_session_create(void *impl, const struct store_session_spec *spec,
                                char out_id[STORE_ID_MAX]);
enum store_rc pq_session_close(void *impl, const char *session_id);
enum store_rc pq_session_reopen(void *impl, const char *session_id);
enum store_rc pq_terminal_create(void *impl, const char *container_name, uint64_t *out_id);
enum store_rc pq_agent_session_create(void *impl, uint64_t parent_id, const char *provider,
                                      const char *native_id, const char *owner_account_id,
                                      uint64_t *out_id, char out_session_id[STORE_ID_MAX]);
enum store_rc pq_resource_close(void *impl, uint64_t resource_id);
enum store_rc pq_runner_seq_get(void *impl, const char *runner_id, uint64_t *out);
enum store_rc pq_runner_seq_set(void *impl, const char *runner_id, uint64_t seq);

/* store_ops.write_metrics (postgres_metrics.c). */
void pq_write_metrics(void *impl, FILE *out);

/* Administration (postgres_admin.c). */
enum store_rc pq_account_put(void *impl, const struct store_account *a, int *changed);
enum store_rc pq_account_get(void *impl, const char *id, struct store_account *out);
enum store_rc pq_account_list(void *impl, store_account_cb cb, void *arg);
enum store_rc pq_channel_put(void *impl, const char *id, int *changed);
enum store_rc pq_channel_list(void *impl, store_id_cb cb, void *arg);
enum store_rc pq_member_add(void *impl, const char *account_id, const char *channel_id,
                            int *changed);
enum store_rc pq_member_remove(void *impl, const char *account_id, const char *channel_id,
                               int *changed);
enum store_rc pq_member_list(void *impl, const char *channel_id, store_member_cb cb, void *arg);
enum store_rc pq_runner_put(void *impl, const char *id, int *changed);
enum store_rc pq_runner_list(void *impl, store_id_cb cb, void *arg);
enum store_rc pq_container_put(void *impl, const struct store_container *c, int *changed);
enum store_rc pq_container_get(void *impl, const char *name, struct store_container *out);
enum store_rc pq_container_list(void *impl, const char *runner_id, store_container_cb cb,
                                void *arg);
enum store_rc pq_exists(void *impl, enum store_entity kind, const char *id);
enum store_rc pq_remove(void *impl, enum store_entity kind, const char *id);
enum store_rc pq_token_add(void *impl, const uint8_t hash[STORE_HASH_LEN],
                           enum store_subject_kind kind, const char *subject_id, int *changed);
enum store_rc pq_token_revoke(void *impl, const uint8_t hash[STORE_HASH_LEN], int *changed);
enum store_rc pq_token_revoke_subject(void *impl, enum store_subject_kind kind,
                                      const char *subject_id, int *changed);
enum store_rc pq_token_list(void *impl, store_token_cb cb, void *arg);

#endif
