/* store: the durable ownership model behind one interface.
 *
 * Handlers, the session core and the gate ask everything of durable state
 * through struct store: an opaque handle plus a table of operations.  No SQL
 * type appears here, so a second backend (PostgreSQL, for several agenthubd
 * nodes) is one more file that fills in struct store_ops.
 *
 * Every operation returns an enum store_rc.  A read that cannot be completed
 * (lock contention past the busy timeout, I/O error, corruption, an injected
 * failpoint) is STORE_FAULT, never STORE_NOT_FOUND: callers map FAULT to
 * UNAVAILABLE and must never mistake it for absence.
 *
 * In builds with FAILPOINTS=1, AGENTHUB_FAILPOINTS faults reads by name:
 * store.token (token_resolve), store.session (session_get,
 * session_find_native, session_list, resource_get), store.binding
 * (session_runner, i.e. gate_session_bound), store.membership
 * (member_check), store.read (every read, including administration).
 *
 * Strings are NUL-terminated, never NULL unless a comment says so, and
 * bounded: identifiers are at most STORE_ID_MAX - 1 bytes of printable
 * ASCII without spaces (writes answer STORE_INVALID otherwise; reads of an
 * overlong id answer NOT_FOUND).  Output structs are caller-owned and
 * filled on STORE_OK only.
 *
 * A store handle is not thread-safe; use one per thread (the server is one
 * event loop).  Another process (agenthub admin) may write the same database
 * at any time; every read reflects writes committed before it began. */
#ifndef AGENTHUB_STORE_H
#define AGENTHUB_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum store_rc {
    STORE_OK = 0,
    STORE_NOT_FOUND = 1, /* the row does not exist (or a token is revoked) */
    STORE_CONFLICT = 2,  /* uniqueness or a reference still in use */
    STORE_INVALID = 3,   /* a malformed argument, or a reference to nothing */
    STORE_FAULT = 4,     /* the backend could not answer; retryable */
};

/* Returns a static lower-case name ("ok", "not found", ...). */
const char *store_rc_name(enum store_rc rc);

#define STORE_ID_MAX        128
#define STORE_NATIVE_ID_MAX 256
#define STORE_HASH_LEN      32 /* SHA-256 */

enum store_subject_kind {
    STORE_SUBJECT_NONE = 0,
    STORE_SUBJECT_ACCOUNT = 1,
    STORE_SUBJECT_RUNNER = 2,
};

/* Who a token speaks for. */
struct store_subject {
    enum store_subject_kind kind;
    char id[STORE_ID_MAX];
    int is_admin; /* accounts only */
};

enum store_account_kind {
    STORE_ACCOUNT_HUMAN = 0,
    STORE_ACCOUNT_AGENT = 1,
};

struct store_account {
    char id[STORE_ID_MAX];
    enum store_account_kind kind;
    int is_admin;
    char home_channel_id[STORE_ID_MAX]; /* "" = none; agent accounts only */
};

struct store_container {
    char name[STORE_ID_MAX];
    char agent_account_id[STORE_ID_MAX];
    char runner_id[STORE_ID_MAX];
};

/* A session with its whole ownership chain resolved. */
struct store_session {
    char session_id[STORE_ID_MAX];
    char container_name[STORE_ID_MAX];
    char agent_account_id[STORE_ID_MAX];
    char home_channel_id[STORE_ID_MAX]; /* "" when the agent has none */
    char runner_id[STORE_ID_MAX];
    char owner_account_id[STORE_ID_MAX]; /* "" when no account owns it */
    char provider[STORE_ID_MAX];
    char native_id[STORE_NATIVE_ID_MAX];
    uint64_t resource_id; /* the agent-session resource; 0 for none */
    int closed;
    int64_t created_at_ms;
};

/* What session_create needs; "" means absent. */
struct store_session_spec {
    char session_id[STORE_ID_MAX]; /* "" = the store mints one */
    char container_name[STORE_ID_MAX];
    char owner_account_id[STORE_ID_MAX];
    char provider[STORE_ID_MAX];
    char native_id[STORE_NATIVE_ID_MAX];
};

/* Values follow compass.v1 ResourceKind. */
enum store_resource_kind {
    STORE_RESOURCE_TERMINAL = 0,
    STORE_RESOURCE_AGENT_SESSION = 1,
};

struct store_resource {
    uint64_t id;
    enum store_resource_kind kind;
    uint64_t parent_id; /* agent sessions: their terminal; else 0 */
    char container_name[STORE_ID_MAX];
    char agent_account_id[STORE_ID_MAX]; /* of the container */
    char runner_id[STORE_ID_MAX];        /* of the container */
    char session_id[STORE_ID_MAX];       /* agent sessions only */
    int closed;
};

struct store_token_info {
    uint8_t hash[STORE_HASH_LEN];
    enum store_subject_kind kind;
    char subject_id[STORE_ID_MAX];
    int revoked;
    int64_t created_at_ms;
};

/* Which sessions session_list visits; "" fields do not filter. */
struct store_session_filter {
    char runner_id[STORE_ID_MAX];
    char container_name[STORE_ID_MAX];
    int open_only;
};

/* List callbacks: return 0 to continue, nonzero to stop early (the list
 * operation then returns STORE_OK). */
typedef int (*store_account_cb)(const struct store_account *a, void *arg);
typedef int (*store_id_cb)(const char *id, void *arg);
typedef int (*store_member_cb)(const char *account_id, const char *channel_id, void *arg);
typedef int (*store_container_cb)(const struct store_container *c, void *arg);
typedef int (*store_session_cb)(const struct store_session *s, void *arg);
typedef int (*store_token_cb)(const struct store_token_info *t, void *arg);

/* Kinds of named rows, for exists() and remove(). */
enum store_entity {
    STORE_ENTITY_ACCOUNT,
    STORE_ENTITY_CHANNEL,
    STORE_ENTITY_RUNNER,
    STORE_ENTITY_CONTAINER,
    STORE_ENTITY_SESSION,
};

/* The backend.  IMPL is the backend's handle.  "changed" out-parameters
 * (may be NULL) are set to 1 when the call altered stored state, so a
 * declarative import can report that a second run changed nothing. */
struct store_ops {
    void (*close)(void *impl);

    /* --- authentication --- */
    /* HASH (SHA-256 of the presented token) -> subject.  Unknown and revoked
     * are both NOT_FOUND. */
    enum store_rc (*token_resolve)(void *impl, const uint8_t hash[STORE_HASH_LEN],
                                   struct store_subject *out);
    /* Binds HASH to a subject.  CONFLICT if HASH is bound to a different
     * subject; OK (changed = 0) if already bound to this one, even revoked:
     * a revoked token stays dead. INVALID if the subject does not exist. */
    enum store_rc (*token_add)(void *impl, const uint8_t hash[STORE_HASH_LEN],
                               enum store_subject_kind kind, const char *subject_id, int *changed);
    /* Revokes one token; NOT_FOUND if no such token. */
    enum store_rc (*token_revoke)(void *impl, const uint8_t hash[STORE_HASH_LEN], int *changed);
    /* Revokes every token of a subject; NOT_FOUND if the subject is unknown. */
    enum store_rc (*token_revoke_subject)(void *impl, enum store_subject_kind kind,
                                          const char *subject_id, int *changed);
    enum store_rc (*token_list)(void *impl, store_token_cb cb, void *arg);

    /* --- the gate's reads (OK / NOT_FOUND / FAULT) --- */
    enum store_rc (*session_get)(void *impl, const char *session_id, struct store_session *out);
    enum store_rc (*session_find_native)(void *impl, const char *provider, const char *native_id,
                                         struct store_session *out);
    /* The binding read: the Runner hosting SESSION_ID's container. */
    enum store_rc (*session_runner)(void *impl, const char *session_id,
                                    char runner_id[STORE_ID_MAX]);
    /* OK when ACCOUNT_ID is a member of CHANNEL_ID, else NOT_FOUND. */
    enum store_rc (*member_check)(void *impl, const char *account_id, const char *channel_id);
    enum store_rc (*resource_get)(void *impl, uint64_t resource_id, struct store_resource *out);

    /* One decision's reads: between read_begin and read_end the backend may
     * answer from state no older than read_begin (the SQLite backend checks
     * for outside changes once, not at every read).  Outside such a scope
     * every read is as fresh as its own start.  Scopes nest; read_begin
     * never fails (a failed freshness check fails the read that needs it). */
    void (*read_begin)(void *impl);
    void (*read_end)(void *impl);

    /* *GENERATION moves (it only grows) whenever another connection, such
     * as `agenthub admin` in another process, committed since the last
     * call; this handle's own writes do not move it.  Cheap when nothing
     * changed (no SQL), so a timer may poll it.  OK, or FAULT when the
     * database cannot be read. */
    enum store_rc (*change_generation)(void *impl, uint64_t *generation);

    /* --- sessions and resources --- */
    /* Creates a session; OUT_ID (may be NULL) receives its id.  INVALID if
     * the container or owner does not exist; CONFLICT if the id or
     * (provider, native_id) is taken. */
    enum store_rc (*session_create)(void *impl, const struct store_session_spec *spec,
                                    char out_id[STORE_ID_MAX]);
    /* Marks a session closed (and its resource); NOT_FOUND if unknown. */
    enum store_rc (*session_close)(void *impl, const char *session_id);
    /* Opens a closed session (and its resource) again: a resumed agent
     * (same provider and native_id) continues its session.  NOT_FOUND if
     * unknown; OK when it was already open. */
    enum store_rc (*session_reopen)(void *impl, const char *session_id);
    enum store_rc (*session_list)(void *impl, const struct store_session_filter *filter,
                                  store_session_cb cb, void *arg);
    /* Every session of RUNNER_ID's containers, open and closed, in one
     * read: a Runner's report of the sessions it hosts is checked against
     * them all at once, not one read per reported id. */
    enum store_rc (*runner_sessions)(void *impl, const char *runner_id, store_session_cb cb,
                                     void *arg);
    /* *OUT = how many sessions of AGENT_ACCOUNT_ID's containers are open. */
    enum store_rc (*session_count_open)(void *impl, const char *agent_account_id, uint64_t *out);
    /* A new terminal resource in CONTAINER; INVALID if no such container. */
    enum store_rc (*terminal_create)(void *impl, const char *container_name, uint64_t *out_id);
    /* A new agent-session resource under terminal PARENT_ID, with its
     * session (in the terminal's container).  NOT_FOUND: no such parent;
     * INVALID: the parent is not a terminal (PARENT_KIND_MISMATCH) or
     * provider is empty; CONFLICT: (provider, native_id) exists. */
    enum store_rc (*agent_session_create)(void *impl, uint64_t parent_id, const char *provider,
                                          const char *native_id, const char *owner_account_id,
                                          uint64_t *out_id, char out_session_id[STORE_ID_MAX]);
    /* Marks a resource (and an agent session's session) closed. */
    enum store_rc (*resource_close)(void *impl, uint64_t resource_id);

    /* --- runners --- */
    /* The last runner_seq the server accepted from RUNNER_ID (0 at first). */
    enum store_rc (*runner_seq_get)(void *impl, const char *runner_id, uint64_t *out);
    enum store_rc (*runner_seq_set)(void *impl, const char *runner_id, uint64_t seq);
    enum store_rc (*container_list)(void *impl, const char *runner_id_or_empty,
                                    store_container_cb cb, void *arg);

    /* --- administration --- */
    /* Creates or updates; INVALID when a reference does not exist. */
    enum store_rc (*account_put)(void *impl, const struct store_account *a, int *changed);
    enum store_rc (*account_get)(void *impl, const char *id, struct store_account *out);
    enum store_rc (*account_list)(void *impl, store_account_cb cb, void *arg);
    enum store_rc (*channel_put)(void *impl, const char *id, int *changed);
    enum store_rc (*channel_list)(void *impl, store_id_cb cb, void *arg);
    enum store_rc (*member_add)(void *impl, const char *account_id, const char *channel_id,
                                int *changed);
    enum store_rc (*member_remove)(void *impl, const char *account_id, const char *channel_id,
                                   int *changed);
    /* Every membership, or those of one channel. */
    enum store_rc (*member_list)(void *impl, const char *channel_id_or_empty, store_member_cb cb,
                                 void *arg);
    enum store_rc (*runner_put)(void *impl, const char *id, int *changed);
    enum store_rc (*runner_list)(void *impl, store_id_cb cb, void *arg);
    enum store_rc (*container_put)(void *impl, const struct store_container *c, int *changed);
    enum store_rc (*container_get)(void *impl, const char *name, struct store_container *out);
    /* OK if the row exists, NOT_FOUND if not. */
    enum store_rc (*exists)(void *impl, enum store_entity kind, const char *id);
    /* NOT_FOUND if absent; CONFLICT if still referenced (a channel that is a
     * home channel, a container with sessions, an account owning things). */
    enum store_rc (*remove)(void *impl, enum store_entity kind, const char *id);

    /* --- transactions (administration only; runtime calls autocommit) ---
     * begin while one is open is INVALID. rollback never fails. */
    enum store_rc (*begin)(void *impl);
    enum store_rc (*commit)(void *impl);
    void (*rollback)(void *impl);

    /* --- operating the backend (each may be NULL) --- */
    /* OK when the backend can answer now (a networked backend makes one
     * round trip, reconnecting if its back-off allows), else FAULT. */
    enum store_rc (*ping)(void *impl);
    /* How long one statement may wait (for a lock, or for the server)
     * before it is a fault; `agenthub admin` waits longer than the server. */
    void (*set_timeout)(void *impl, int ms);
    /* Prometheus text about the backend (connections, faults). */
    void (*write_metrics)(void *impl, FILE *out);
};

struct store {
    const struct store_ops *ops;
    void *impl;
};

/* Opens (creating if needed) the SQLite store at PATH and applies pending
 * migrations.  Returns STORE_OK and sets *OUT; else STORE_FAULT with a reason
 * (never SQL text) in ERR, for example a database from a newer agenthub. */
enum store_rc sqlite_store_open(const char *path, struct store **out, char *err, size_t errlen);

/* Opens the PostgreSQL store at URI (a libpq connection URI) and applies
 * pending migrations.  Returns STORE_OK and sets *OUT; else STORE_FAULT with
 * a reason in ERR (the server cannot be reached, a newer schema). */
enum store_rc postgres_store_open(const char *uri, struct store **out, char *err, size_t errlen);

/* 1 when TARGET is a PostgreSQL URI (postgres:// or postgresql://), so
 * --db selects that backend; anything else is a SQLite path. */
int store_target_is_postgres(const char *target);

/* Opens whichever backend TARGET names (see store_target_is_postgres).
 * Returns what that backend's open returns. */
enum store_rc store_open(const char *target, struct store **out, char *err, size_t errlen);

/* Sets how long a statement may wait before it is a fault, on any backend
 * (SQLite: the busy timeout).  A no-op for a backend without the knob. */
void store_set_timeout(struct store *s, int ms);

/* STORE_OK when the backend can answer now; backends without a
 * connection always can. */
enum store_rc store_ping(struct store *s);

/* Appends the backend's metrics to OUT (nothing for SQLite). */
void store_write_metrics(struct store *s, FILE *out);

/* Sets how long a statement waits for another connection's lock before
 * failing (default 200 ms: the server answers UNAVAILABLE and the client
 * retries).  `agenthub admin` waits longer.  Returns STORE_OK. */
enum store_rc sqlite_store_set_busy_timeout(struct store *s, int ms);

/* Turns the SQLite store's gate read cache on (the default) or off; for
 * benchmarks and tests.  Returns STORE_OK. */
enum store_rc sqlite_store_cache_enable(struct store *s, int on);

/* Closes any store; NULL is a no-op. */
void store_close(struct store *s);

/* Thin wrappers for the calls the server makes on every request. */
static inline enum store_rc store_token_resolve(struct store *s, const uint8_t hash[STORE_HASH_LEN],
                                                struct store_subject *out)
{
    return s->ops->token_resolve(s->impl, hash, out);
}

static inline enum store_rc store_session_get(struct store *s, const char *id,
                                              struct store_session *out)
{
    return s->ops->session_get(s->impl, id, out);
}

static inline enum store_rc store_session_find_native(struct store *s, const char *provider,
                                                      const char *native_id,
                                                      struct store_session *out)
{
    return s->ops->session_find_native(s->impl, provider, native_id, out);
}

static inline enum store_rc store_resource_get(struct store *s, uint64_t id,
                                               struct store_resource *out)
{
    return s->ops->resource_get(s->impl, id, out);
}

/* Wrappers for the runtime operations the hub and the handlers use, so
 * neither reaches into store_ops; each returns what its operation does. */
static inline enum store_rc store_session_create(struct store *s,
                                                 const struct store_session_spec *spec,
                                                 char out_id[STORE_ID_MAX])
{
    return s->ops->session_create(s->impl, spec, out_id);
}

static inline enum store_rc store_session_close(struct store *s, const char *session_id)
{
    return s->ops->session_close(s->impl, session_id);
}

static inline enum store_rc store_session_reopen(struct store *s, const char *session_id)
{
    return s->ops->session_reopen(s->impl, session_id);
}

static inline enum store_rc store_session_list(struct store *s,
                                               const struct store_session_filter *filter,
                                               store_session_cb cb, void *arg)
{
    return s->ops->session_list(s->impl, filter, cb, arg);
}

static inline enum store_rc store_runner_sessions(struct store *s, const char *runner_id,
                                                  store_session_cb cb, void *arg)
{
    return s->ops->runner_sessions(s->impl, runner_id, cb, arg);
}

static inline enum store_rc store_session_count_open(struct store *s, const char *agent_account_id,
                                                     uint64_t *out)
{
    return s->ops->session_count_open(s->impl, agent_account_id, out);
}

static inline enum store_rc store_terminal_create(struct store *s, const char *container_name,
                                                  uint64_t *out_id)
{
    return s->ops->terminal_create(s->impl, container_name, out_id);
}

static inline enum store_rc store_agent_session_create(struct store *s, uint64_t parent_id,
                                                       const char *provider, const char *native_id,
                                                       const char *owner_account_id,
                                                       uint64_t *out_id,
                                                       char out_session_id[STORE_ID_MAX])
{
    return s->ops->agent_session_create(s->impl, parent_id, provider, native_id, owner_account_id,
                                        out_id, out_session_id);
}

static inline enum store_rc store_resource_close(struct store *s, uint64_t resource_id)
{
    return s->ops->resource_close(s->impl, resource_id);
}

static inline enum store_rc store_runner_seq_get(struct store *s, const char *runner_id,
                                                 uint64_t *out)
{
    return s->ops->runner_seq_get(s->impl, runner_id, out);
}

static inline enum store_rc store_runner_seq_set(struct store *s, const char *runner_id,
                                                 uint64_t seq)
{
    return s->ops->runner_seq_set(s->impl, runner_id, seq);
}

static inline enum store_rc store_container_get(struct store *s, const char *name,
                                                struct store_container *out)
{
    return s->ops->container_get(s->impl, name, out);
}

/* 1 when the backend counts changes (store_change_generation works). */
static inline int store_watches_changes(const struct store *s)
{
    return s->ops->change_generation != NULL;
}

/* Only when store_watches_changes(S). */
static inline enum store_rc store_change_generation(struct store *s, uint64_t *generation)
{
    return s->ops->change_generation(s->impl, generation);
}

/* Returns 1 when ID is a valid identifier (1..STORE_ID_MAX-1 bytes of
 * printable ASCII, no spaces), else 0. */
int store_id_valid(const char *id);

/* The same for a provider's native id, up to STORE_NATIVE_ID_MAX-1 bytes. */
int store_native_id_valid(const char *id);

#endif
