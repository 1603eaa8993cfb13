/* sqlite_internal: what the files of the SQLite backend share.  Nothing
 * outside src/store/sqlite*.c includes this. */
#ifndef AGENTHUB_SQLITE_INTERNAL_H
#define AGENTHUB_SQLITE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Every statement the backend runs, prepared once on first use. */
enum sq_id {
    SQ_TOKEN_RESOLVE,
    SQ_TOKEN_ADD,
    SQ_TOKEN_SUBJECT,
    SQ_TOKEN_REVOKE,
    SQ_TOKEN_REVOKE_ACCOUNT,
    SQ_TOKEN_REVOKE_RUNNER,
    SQ_TOKEN_LIST,
    SQ_SESSION_GET,
    SQ_SESSION_FIND_NATIVE,
    SQ_SESSION_LIST,
    SQ_SESSION_RUNNER,
    SQ_MEMBER_CHECK,
    SQ_MEMBER_CHANNELS,
    SQ_RESOURCE_GET,
    SQ_SESSION_INSERT,
    SQ_SESSION_CLOSE,
    SQ_SESSION_CLOSE_RESOURCE,
    SQ_SESSION_REOPEN,
    SQ_SESSION_REOPEN_RESOURCE,
    SQ_RESOURCE_INSERT,
    SQ_RESOURCE_CLOSE,
    SQ_RESOURCE_CLOSE_SESSION,
    SQ_RUNNER_SEQ_GET,
    SQ_RUNNER_SEQ_SET,
    SQ_CONTAINER_LIST,
    SQ_ACCOUNT_PUT,
    SQ_ACCOUNT_GET,
    SQ_ACCOUNT_LIST,
    SQ_CHANNEL_PUT,
    SQ_CHANNEL_LIST,
    SQ_MEMBER_ADD,
    SQ_MEMBER_REMOVE,
    SQ_MEMBER_LIST,
    SQ_RUNNER_PUT,
    SQ_RUNNER_LIST,
    SQ_CONTAINER_PUT,
    SQ_CONTAINER_GET,
    SQ_EXISTS_ACCOUNT,
    SQ_EXISTS_CHANNEL,
    SQ_EXISTS_RUNNER,
    SQ_EXISTS_CONTAINER,
    SQ_EXISTS_SESSION,
    SQ_REMOVE_ACCOUNT,
    SQ_REMOVE_CHANNEL,
    SQ_REMOVE_RUNNER,
    SQ_REMOVE_CONTAINER,
    SQ_REMOVE_SESSION,
    SQ_DATA_VERSION,
    SQ_SESSION_HOSTED,
    SQ_SESSION_COUNT_OPEN,
    SQ_COUNT
};

struct sq_cache;

struct sqlite_store {
    struct store base; /* first, so &st->base is the public handle */
    sqlite3 *db;
    sqlite3_stmt *stmts[SQ_COUNT];
    int in_txn;             /* inside begin()/commit() */
    struct sq_cache *cache; /* cached gate reads (sqlite_cache.c) */
};

/* The SQL text of statement ID (sqlite_schema.c). */
const char *sq_sql(enum sq_id id);

/* Applies every pending migration (sqlite_schema.c).  Returns STORE_OK, or
 * STORE_FAULT with a reason in ERR (a newer schema, I/O, corruption). */
enum store_rc sq_migrate(sqlite3 *db, char *err, size_t errlen);
/* One integer from SQL (a PRAGMA or a count).  Returns SQLITE_OK with
 * *VALUE, or the SQLite result code. */
int sq_query_int(sqlite3 *db, const char *sql, int64_t *value);

/* Returns the prepared, reset statement ID, or NULL (logged) when it cannot
 * be prepared. */
sqlite3_stmt *sq_stmt(struct sqlite_store *st, enum sq_id id);

/* Resets STMT and clears its bindings so it holds no read snapshot. */
void sq_release(sqlite3_stmt *stmt);

/* Maps a failed sqlite3_step() of a write to a store_rc: a foreign key
 * violation is STORE_INVALID when INSERTING (a reference to nothing) and
 * STORE_CONFLICT when deleting (a row still referenced). */
enum store_rc sq_write_rc(struct sqlite_store *st, int rc, int deleting);

/* Logs a failed read and returns STORE_FAULT. */
enum store_rc sq_read_fault(struct sqlite_store *st, int rc);

/* Called first by every read.  Returns 1 (the read must answer
 * STORE_FAULT) when failpoint NAME (may be NULL) or "store.read" is set, or
 * when the database file no longer starts like a SQLite database; else 0. */
int sq_read_guard(struct sqlite_store *st, const char *name);
/* sq_read_guard, then the cached statement ID.  Returns NULL (a fault) when
 * the guard refuses or the statement cannot be had. */
sqlite3_stmt *sq_read_stmt(struct sqlite_store *st, const char *name, enum sq_id id);

/* Copies text column COL of STMT into BUF ("" for NULL), truncating. */
void sq_text(sqlite3_stmt *stmt, int col, char *buf, size_t len);

/* Binds text, an empty string as itself. */
int sq_bind(sqlite3_stmt *stmt, int idx, const char *text);

/* sq_exec_write flags. */
#define SQ_WRITE_DELETE 1 /* a foreign key violation means "still referenced" */
#define SQ_WRITE_NO_GATE                                                                           \
    2 /* touches nothing the gate cache holds (runner_seq, tokens,                                 \
         terminals), so the cache survives it */

/* Runs one write statement to completion.  Returns STORE_OK or a mapped
 * error; *CHANGED (may be NULL) gets 1 when a row changed. */
enum store_rc sq_exec_write(struct sqlite_store *st, sqlite3_stmt *stmt, int flags, int *changed);

/* Records that this handle wrote, so cached reads are dropped. */
void sq_note_write(struct sqlite_store *st);

/* Savepoint helpers: nested inside begin() or standalone. */
enum store_rc sq_savepoint(struct sqlite_store *st);
enum store_rc sq_release_savepoint(struct sqlite_store *st);
void sq_rollback_savepoint(struct sqlite_store *st);

/* The resource read (sqlite.c), shared with the session writes. */
enum store_rc sq_resource_get(void *impl, uint64_t resource_id, struct store_resource *out);

/* Session and resource writes, runner sequence numbers (sqlite_sessions.c). */
enum store_rc sq_session_create(void *impl, const struct store_session_spec *spec,
                                char out_id[STORE_ID_MAX]);
enum store_rc sq_session_close(void *impl, const char *session_id);
enum store_rc sq_session_reopen(void *impl, const char *session_id);
enum store_rc sq_terminal_create(void *impl, const char *container_name, uint64_t *out_id);
enum store_rc sq_agent_session_create(void *impl, uint64_t parent_id, const char *provider,
                                      const char *native_id, const char *owner_account_id,
                                      uint64_t *out_id, char out_session_id[STORE_ID_MAX]);
enum store_rc sq_resource_close(void *impl, uint64_t resource_id);
enum store_rc sq_runner_seq_get(void *impl, const char *runner_id, uint64_t *out);
enum store_rc sq_runner_seq_set(void *impl, const char *runner_id, uint64_t seq);

/* Admin operations (sqlite_admin.c), installed into the ops table. */
enum store_rc sq_account_put(void *impl, const struct store_account *a, int *changed);
enum store_rc sq_account_get(void *impl, const char *id, struct store_account *out);
enum store_rc sq_account_list(void *impl, store_account_cb cb, void *arg);
enum store_rc sq_channel_put(void *impl, const char *id, int *changed);
enum store_rc sq_channel_list(void *impl, store_id_cb cb, void *arg);
enum store_rc sq_member_add(void *impl, const char *account_id, const char *channel_id,
                            int *changed);
enum store_rc sq_member_remove(void *impl, const char *account_id, const char *channel_id,
                               int *changed);
enum store_rc sq_member_list(void *impl, const char *channel_id, store_member_cb cb, void *arg);
enum store_rc sq_runner_put(void *impl, const char *id, int *changed);
enum store_rc sq_runner_list(void *impl, store_id_cb cb, void *arg);
enum store_rc sq_container_put(void *impl, const struct store_container *c, int *changed);
enum store_rc sq_container_get(void *impl, const char *name, struct store_container *out);
enum store_rc sq_container_list(void *impl, const char *runner_id, store_container_cb cb,
                                void *arg);
enum store_rc sq_exists(void *impl, enum store_entity kind, const char *id);
enum store_rc sq_remove(void *impl, enum store_entity kind, const char *id);
enum store_rc sq_token_add(void *impl, const uint8_t hash[STORE_HASH_LEN],
                           enum store_subject_kind kind, const char *subject_id, int *changed);
enum store_rc sq_token_revoke(void *impl, const uint8_t hash[STORE_HASH_LEN], int *changed);
enum store_rc sq_token_revoke_subject(void *impl, enum store_subject_kind kind,
                                      const char *subject_id, int *changed);
enum store_rc sq_token_list(void *impl, store_token_cb cb, void *arg);

#endif
