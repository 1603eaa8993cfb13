/* The store conformance suite: schema and migrations, tokens, sessions,
 * resources, runner sequence numbers, administration rules and faults,
 * run against both backends (SQLite always; PostgreSQL on a server the
 * fixture starts itself), plus each backend's own tests (SQLite's file and
 * lock behaviour here, PostgreSQL's connection and notification behaviour
 * in test_store_pg.c). */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/auth.h"
#include "store_fixture.h"

static struct store_fixture fx;

static void setup(void)
{
    store_fixture_open(&fx);
    store_fixture_world(&fx);
}

static void setup_pg(void)
{
    store_fixture_open_backend(&fx, STORE_FIXTURE_POSTGRES);
    store_fixture_world(&fx);
}

static void teardown(void)
{
    store_fixture_close(&fx);
}

static void hash_of(const char *token, uint8_t out[STORE_HASH_LEN])
{
    ck_assert_int_eq(auth_hash_token(token, strlen(token), out), 0);
}

/* Runs SQL on the database through a separate raw connection. */
static void raw_exec(const char *db, const char *sql)
{
    sqlite3 *h;

    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

static int raw_int(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    int v = -1;

    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static const struct store_ops *ops(void)
{
    return fx.s->ops;
}

static int count_row(const struct store_session *row, void *arg)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}

/* --- schema --- */

START_TEST(fresh_database_is_at_the_current_schema_in_wal_mode)
{
    ck_assert_int_eq(raw_int(fx.db, "PRAGMA user_version"), 1);
    ck_assert_int_eq(raw_int(fx.db, "SELECT count(*) FROM sqlite_master WHERE name = 'sessions'"),
                     1);
    ck_assert_int_eq(raw_int(fx.db, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
}
END_TEST

START_TEST(reopening_keeps_data_and_reapplies_nothing)
{
    struct store *again = store_fixture_second_handle(&fx);
    struct store_account a;

    ck_assert_int_eq(again->ops->account_get(again->impl, "alice", &a), STORE_OK);
    if (fx.backend == STORE_FIXTURE_SQLITE) {
        ck_assert_int_eq(raw_int(fx.db, "PRAGMA user_version"), 1);
    } else {
        char v[16];
        ck_assert_int_eq(store_fixture_pg_exec(&fx,
                                               "SELECT count(*) || ':' || max(version) "
                                               "FROM agenthub_schema",
                                               v, sizeof(v)),
                         0);
        ck_assert_str_eq(v, "1:1");
    }
    store_close(again);
}
END_TEST

START_TEST(database_from_a_newer_version_is_refused)
{
    struct store *s = NULL;
    char err[256] = "";

    if (fx.backend == STORE_FIXTURE_SQLITE)
        raw_exec(fx.db, "PRAGMA user_version = 99");
    else
        ck_assert_int_eq(
            store_fixture_pg_exec(&fx, "UPDATE agenthub_schema SET version = 99", NULL, 0), 0);
    ck_assert_int_eq(store_open(fx.db, &s, err, sizeof(err)), STORE_FAULT);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, "newer") != NULL, "message: %s", err);
    ck_assert_msg(strstr(err, "99") != NULL, "message: %s", err);
}
END_TEST

START_TEST(a_file_that_is_not_a_database_is_refused)
{
    char path[400], err[256] = "";
    struct store *s = NULL;
    FILE *f;

    snprintf(path, sizeof(path), "%s/garbage.db", fx.dir);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 8192; i++)
        fputc(0xA5, f);
    fclose(f);
    ck_assert_int_eq(sqlite_store_open(path, &s, err, sizeof(err)), STORE_FAULT);
    ck_assert_ptr_null(s);
    ck_assert(err[0] != '\0');
    unlink(path);
}
END_TEST

START_TEST(foreign_keys_are_enforced)
{
    struct store_container c = {"ctr-x", "agent-1", "no-such-runner"};

    ck_assert_int_eq(ops()->container_put(fx.s->impl, &c, NULL), STORE_INVALID);
    ck_assert_int_eq(ops()->member_add(fx.s->impl, "ghost", "chan-a", NULL), STORE_INVALID);
}
END_TEST

/* --- tokens --- */

START_TEST(token_resolves_to_its_subject)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;

    hash_of("t-admin", h);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
    ck_assert_int_eq(subj.kind, STORE_SUBJECT_ACCOUNT);
    ck_assert_str_eq(subj.id, "admin");
    ck_assert_int_eq(subj.is_admin, 1);
    hash_of("t-runner-2", h);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
    ck_assert_int_eq(subj.kind, STORE_SUBJECT_RUNNER);
    ck_assert_str_eq(subj.id, "runner-2");
    hash_of("t-nobody", h);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
}
END_TEST

START_TEST(revoked_token_is_dead_and_stays_dead)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    int changed = -1;

    hash_of("t-alice", h);
    ck_assert_int_eq(ops()->token_revoke(fx.s->impl, h, &changed), STORE_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->token_revoke(fx.s->impl, h, &changed), STORE_OK);
    ck_assert_int_eq(changed, 0);
    /* Adding the same token for the same subject again does not revive it. */
    ck_assert_int_eq(ops()->token_add(fx.s->impl, h, STORE_SUBJECT_ACCOUNT, "alice", &changed),
                     STORE_OK);
    ck_assert_int_eq(changed, 0);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
    hash_of("t-never-issued", h);
    ck_assert_int_eq(ops()->token_revoke(fx.s->impl, h, NULL), STORE_NOT_FOUND);
}
END_TEST

START_TEST(token_bound_to_another_subject_is_a_conflict)
{
    uint8_t h[STORE_HASH_LEN];

    hash_of("t-alice", h);
    ck_assert_int_eq(ops()->token_add(fx.s->impl, h, STORE_SUBJECT_ACCOUNT, "bob", NULL),
                     STORE_CONFLICT);
    ck_assert_int_eq(ops()->token_add(fx.s->impl, h, STORE_SUBJECT_RUNNER, "runner-1", NULL),
                     STORE_CONFLICT);
    hash_of("t-new", h);
    ck_assert_int_eq(ops()->token_add(fx.s->impl, h, STORE_SUBJECT_ACCOUNT, "ghost", NULL),
                     STORE_INVALID);
}
END_TEST

START_TEST(revoking_every_token_of_a_subject)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;

    hash_of("t-runner-1", h);
    ck_assert_int_eq(
        ops()->token_revoke_subject(fx.s->impl, STORE_SUBJECT_RUNNER, "runner-1", NULL), STORE_OK);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->token_revoke_subject(fx.s->impl, STORE_SUBJECT_ACCOUNT, "ghost", NULL),
                     STORE_NOT_FOUND);
}
END_TEST

START_TEST(removing_an_account_kills_its_tokens)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;

    hash_of("t-bob", h);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_ACCOUNT, "bob"), STORE_OK);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_NOT_FOUND);
}
END_TEST

/* --- sessions --- */

START_TEST(session_create_mints_an_id_and_resolves_the_chain)
{
    struct store_session_spec spec;
    struct store_session out;
    char id[STORE_ID_MAX];

    memset(&spec, 0, sizeof(spec));
    snprintf(spec.container_name, sizeof(spec.container_name), "ctr-2");
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "carol");
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, id), STORE_OK);
    ck_assert_int_eq(strlen(id), 34);
    ck_assert(strncmp(id, "s-", 2) == 0);
    ck_assert_int_eq(store_session_get(fx.s, id, &out), STORE_OK);
    ck_assert_str_eq(out.agent_account_id, "agent-2");
    ck_assert_str_eq(out.home_channel_id, "chan-b");
    ck_assert_str_eq(out.runner_id, "runner-2");
    ck_assert_str_eq(out.owner_account_id, "carol");
    ck_assert_int_eq(out.closed, 0);
    ck_assert(out.created_at_ms > 0);
}
END_TEST

START_TEST(session_create_refuses_bad_references_and_duplicates)
{
    struct store_session_spec spec;

    memset(&spec, 0, sizeof(spec));
    snprintf(spec.session_id, sizeof(spec.session_id), "sess-1");
    snprintf(spec.container_name, sizeof(spec.container_name), "ctr-1");
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, NULL), STORE_CONFLICT);
    snprintf(spec.session_id, sizeof(spec.session_id), "sess-9");
    snprintf(spec.container_name, sizeof(spec.container_name), "no-such");
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, NULL), STORE_INVALID);
    snprintf(spec.container_name, sizeof(spec.container_name), "ctr-1");
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "ghost");
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, NULL), STORE_INVALID);
    snprintf(spec.session_id, sizeof(spec.session_id), "has space");
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, NULL), STORE_INVALID);
}
END_TEST

START_TEST(session_close_marks_it_closed)
{
    struct store_session out;

    ck_assert_int_eq(ops()->session_close(fx.s->impl, "sess-1"), STORE_OK);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &out), STORE_OK);
    ck_assert_int_eq(out.closed, 1);
    ck_assert_int_eq(ops()->session_close(fx.s->impl, "sess-1"), STORE_OK);
    ck_assert_int_eq(ops()->session_close(fx.s->impl, "no-such"), STORE_NOT_FOUND);
}
END_TEST

static int count_session(const struct store_session *s, void *arg)
{
    (void)s;
    (*(int *)arg)++;
    return 0;
}

START_TEST(session_list_filters_by_runner_container_and_state)
{
    struct store_session_filter f;
    int n = 0;

    memset(&f, 0, sizeof(f));
    ck_assert_int_eq(ops()->session_list(fx.s->impl, &f, count_session, &n), STORE_OK);
    ck_assert_int_eq(n, 2);
    n = 0;
    snprintf(f.runner_id, sizeof(f.runner_id), "runner-1");
    ck_assert_int_eq(ops()->session_list(fx.s->impl, &f, count_session, &n), STORE_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(ops()->session_close(fx.s->impl, "sess-1"), STORE_OK);
    n = 0;
    f.open_only = 1;
    ck_assert_int_eq(ops()->session_list(fx.s->impl, &f, count_session, &n), STORE_OK);
    ck_assert_int_eq(n, 0);
    n = 0;
    memset(&f, 0, sizeof(f));
    snprintf(f.container_name, sizeof(f.container_name), "ctr-2");
    ck_assert_int_eq(ops()->session_list(fx.s->impl, &f, count_session, &n), STORE_OK);
    ck_assert_int_eq(n, 1);
}
END_TEST

/* --- resources --- */

START_TEST(resource_ids_start_at_one_and_are_shared_by_both_kinds)
{
    uint64_t t1 = 0, a = 0, t2 = 0;
    char sid[STORE_ID_MAX];
    struct store_resource r;
    struct store_session s;

    ck_assert_int_eq(ops()->terminal_create(fx.s->impl, "ctr-1", &t1), STORE_OK);
    ck_assert_int_eq(
        ops()->agent_session_create(fx.s->impl, t1, "claude", "nat-1", "alice", &a, sid), STORE_OK);
    ck_assert_int_eq(ops()->terminal_create(fx.s->impl, "ctr-2", &t2), STORE_OK);
    ck_assert_uint_eq(t1, 1);
    ck_assert_uint_eq(a, 2);
    ck_assert_uint_eq(t2, 3);
    ck_assert_int_eq(store_resource_get(fx.s, a, &r), STORE_OK);
    ck_assert_int_eq(r.kind, STORE_RESOURCE_AGENT_SESSION);
    ck_assert_uint_eq(r.parent_id, t1);
    ck_assert_str_eq(r.container_name, "ctr-1");
    ck_assert_str_eq(r.agent_account_id, "agent-1");
    ck_assert_str_eq(r.runner_id, "runner-1");
    ck_assert_str_eq(r.session_id, sid);
    ck_assert_int_eq(store_session_find_native(fx.s, "claude", "nat-1", &s), STORE_OK);
    ck_assert_str_eq(s.session_id, sid);
    ck_assert_uint_eq(s.resource_id, a);
    ck_assert_str_eq(s.provider, "claude");
    ck_assert_int_eq(store_session_find_native(fx.s, "claude", "nat-2", &s), STORE_NOT_FOUND);
}
END_TEST

START_TEST(agent_session_needs_a_terminal_parent_and_a_unique_native_id)
{
    uint64_t t = 0, a = 0, x = 0;
    char sid[STORE_ID_MAX];

    ck_assert_int_eq(ops()->terminal_create(fx.s->impl, "ctr-1", &t), STORE_OK);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, 999, "claude", "n", "", &x, sid),
                     STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "claude", "n", "", &a, sid),
                     STORE_OK);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, a, "claude", "m", "", &x, sid),
                     STORE_INVALID);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "claude", "n", "", &x, sid),
                     STORE_CONFLICT);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "", "q", "", &x, sid),
                     STORE_INVALID);
    /* Without a native id, any number may exist. */
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "claude", "", "", &x, sid),
                     STORE_OK);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "claude", NULL, "", &x, sid),
                     STORE_OK);
    ck_assert_int_eq(ops()->terminal_create(fx.s->impl, "no-such", &x), STORE_INVALID);
}
END_TEST

START_TEST(closing_an_agent_session_resource_closes_its_session)
{
    uint64_t t = 0, a = 0;
    char sid[STORE_ID_MAX];
    struct store_session s;
    struct store_resource r;

    ck_assert_int_eq(ops()->terminal_create(fx.s->impl, "ctr-1", &t), STORE_OK);
    ck_assert_int_eq(ops()->agent_session_create(fx.s->impl, t, "claude", "n", "alice", &a, sid),
                     STORE_OK);
    ck_assert_int_eq(ops()->resource_close(fx.s->impl, a), STORE_OK);
    ck_assert_int_eq(store_session_get(fx.s, sid, &s), STORE_OK);
    ck_assert_int_eq(s.closed, 1);
    ck_assert_int_eq(store_resource_get(fx.s, a, &r), STORE_OK);
    ck_assert_int_eq(r.closed, 1);
    ck_assert_int_eq(ops()->resource_close(fx.s->impl, 12345), STORE_NOT_FOUND);
}
END_TEST

/* --- runners --- */

START_TEST(runner_seq_persists_all_64_bits)
{
    uint64_t seq = 1;

    ck_assert_int_eq(ops()->runner_seq_get(fx.s->impl, "runner-1", &seq), STORE_OK);
    ck_assert_uint_eq(seq, 0);
    ck_assert_int_eq(ops()->runner_seq_set(fx.s->impl, "runner-1", UINT64_MAX - 1), STORE_OK);
    {
        struct store *other = store_fixture_second_handle(&fx);
        ck_assert_int_eq(other->ops->runner_seq_get(other->impl, "runner-1", &seq), STORE_OK);
        store_close(other);
    }
    ck_assert_uint_eq(seq, UINT64_MAX - 1);
    ck_assert_int_eq(ops()->runner_seq_get(fx.s->impl, "ghost", &seq), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->runner_seq_set(fx.s->impl, "ghost", 5), STORE_NOT_FOUND);
}
END_TEST

static int count_container(const struct store_container *c, void *arg)
{
    (void)c;
    (*(int *)arg)++;
    return 0;
}

START_TEST(containers_of_a_runner)
{
    int n = 0;

    ck_assert_int_eq(ops()->container_list(fx.s->impl, "runner-2", count_container, &n), STORE_OK);
    ck_assert_int_eq(n, 1);
    n = 0;
    ck_assert_int_eq(ops()->container_list(fx.s->impl, "", count_container, &n), STORE_OK);
    ck_assert_int_eq(n, 2);
}
END_TEST

/* --- administration rules --- */

START_TEST(account_put_reports_whether_anything_changed)
{
    struct store_account a = {"dave", STORE_ACCOUNT_HUMAN, 0, ""};
    int changed = -1;

    ck_assert_int_eq(ops()->account_put(fx.s->impl, &a, &changed), STORE_OK);
    ck_assert_int_eq(changed, 1);
    ck_assert_int_eq(ops()->account_put(fx.s->impl, &a, &changed), STORE_OK);
    ck_assert_int_eq(changed, 0);
    a.is_admin = 1;
    ck_assert_int_eq(ops()->account_put(fx.s->impl, &a, &changed), STORE_OK);
    ck_assert_int_eq(changed, 1);
}
END_TEST

START_TEST(only_agents_have_home_channels_and_own_containers)
{
    struct store_account human = {"erin", STORE_ACCOUNT_HUMAN, 0, "chan-a"};
    struct store_account agent = {"agent-x", STORE_ACCOUNT_AGENT, 0, "no-such-channel"};
    struct store_container c = {"ctr-h", "alice", "runner-1"};

    ck_assert_int_eq(ops()->account_put(fx.s->impl, &human, NULL), STORE_INVALID);
    ck_assert_int_eq(ops()->account_put(fx.s->impl, &agent, NULL), STORE_INVALID);
    ck_assert_int_eq(ops()->container_put(fx.s->impl, &c, NULL), STORE_INVALID);
}
END_TEST

START_TEST(removing_a_referenced_row_is_a_conflict)
{
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_CHANNEL, "chan-a"), STORE_CONFLICT);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_ACCOUNT, "agent-1"), STORE_CONFLICT);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_ACCOUNT, "alice"), STORE_CONFLICT);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_RUNNER, "runner-1"), STORE_CONFLICT);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_CONTAINER, "ctr-1"), STORE_CONFLICT);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_SESSION, "sess-1"), STORE_OK);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_CONTAINER, "ctr-1"), STORE_OK);
    ck_assert_int_eq(ops()->remove(fx.s->impl, STORE_ENTITY_SESSION, "sess-1"), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->exists(fx.s->impl, STORE_ENTITY_CONTAINER, "ctr-1"), STORE_NOT_FOUND);
}
END_TEST

START_TEST(membership_add_remove_and_check)
{
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "carol", "chan-a"), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->member_add(fx.s->impl, "carol", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "carol", "chan-a"), STORE_OK);
    ck_assert_int_eq(ops()->member_remove(fx.s->impl, "carol", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "carol", "chan-a"), STORE_NOT_FOUND);
    ck_assert_int_eq(ops()->member_remove(fx.s->impl, "carol", "chan-a", NULL), STORE_NOT_FOUND);
}
END_TEST

START_TEST(transaction_rollback_discards_writes)
{
    struct store_account a = {"temp", STORE_ACCOUNT_HUMAN, 0, ""};

    ck_assert_int_eq(ops()->begin(fx.s->impl), STORE_OK);
    ck_assert_int_eq(ops()->begin(fx.s->impl), STORE_INVALID);
    ck_assert_int_eq(ops()->account_put(fx.s->impl, &a, NULL), STORE_OK);
    ck_assert_int_eq(ops()->exists(fx.s->impl, STORE_ENTITY_ACCOUNT, "temp"), STORE_OK);
    ops()->rollback(fx.s->impl);
    ck_assert_int_eq(ops()->exists(fx.s->impl, STORE_ENTITY_ACCOUNT, "temp"), STORE_NOT_FOUND);
}
END_TEST

/* --- faults --- */

START_TEST(write_under_another_writers_lock_is_a_fault_after_the_busy_timeout)
{
    struct store_account a = {"late", STORE_ACCOUNT_HUMAN, 0, ""};
    struct store *other = store_fixture_second_handle(&fx);
    struct store_session s;
    int64_t t0;

    /* The other handle holds the lock on the very row we write (SQLite:
     * the whole database; PostgreSQL: the new key). */
    ck_assert_int_eq(other->ops->begin(other->impl), STORE_OK);
    ck_assert_int_eq(other->ops->account_put(other->impl, &a, NULL), STORE_OK);
    t0 = clock_monotonic_ms();
    ck_assert_int_eq(ops()->account_put(fx.s->impl, &a, NULL), STORE_FAULT);
    ck_assert(clock_monotonic_ms() - t0 < 2000);
    /* A reader is not blocked by the writer's lock. */
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    other->ops->rollback(other->impl);
    store_close(other);
}
END_TEST

START_TEST(every_read_of_a_garbage_database_is_a_fault)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    struct store_session s;
    struct store_account a;
    char path[400];
    int n = 0;

    store_fixture_scribble(fx.db);
    snprintf(path, sizeof(path), "%s-wal", fx.db);
    store_fixture_scribble(path);
    snprintf(path, sizeof(path), "%s-shm", fx.db);
    store_fixture_scribble(path);
    hash_of("t-alice", h);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_FAULT);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_FAULT);
    ck_assert_int_eq(store_session_get(fx.s, "never", &s), STORE_FAULT);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "alice", "chan-a"), STORE_FAULT);
    ck_assert_int_eq(ops()->account_get(fx.s->impl, "alice", &a), STORE_FAULT);
    ck_assert_int_eq(ops()->container_list(fx.s->impl, "", count_container, &n), STORE_FAULT);
}
END_TEST

START_TEST(garbage_main_file_alone_faults_reads_served_from_memory)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    struct store_account a;
    struct store_resource r;

    hash_of("t-alice", h);
    /* Warm SQLite's page cache: these pages would be served from memory. */
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
    ck_assert_int_eq(ops()->account_get(fx.s->impl, "alice", &a), STORE_OK);
    store_fixture_scribble(fx.db);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_FAULT);
    ck_assert_int_eq(ops()->account_get(fx.s->impl, "alice", &a), STORE_FAULT);
    ck_assert_int_eq(store_resource_get(fx.s, 1, &r), STORE_FAULT);
}
END_TEST

#ifdef AGENTHUB_FAILPOINTS
START_TEST(named_failpoints_fault_their_reads)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    struct store_session s;
    struct store_account a;
    uint64_t seq;
    char runner[STORE_ID_MAX];

    hash_of("t-alice", h);
    setenv("AGENTHUB_FAILPOINTS", "store.token=fault", 1);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_FAULT);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    setenv("AGENTHUB_FAILPOINTS", "store.session=fault", 1);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_FAULT);
    ck_assert_int_eq(store_session_find_native(fx.s, "a", "b", &s), STORE_FAULT);
    ck_assert_int_eq(ops()->session_runner(fx.s->impl, "sess-1", runner), STORE_OK);
    setenv("AGENTHUB_FAILPOINTS", "store.binding=fault", 1);
    ck_assert_int_eq(ops()->session_runner(fx.s->impl, "sess-1", runner), STORE_FAULT);
    setenv("AGENTHUB_FAILPOINTS", "store.membership=fault", 1);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "alice", "chan-a"), STORE_FAULT);
    setenv("AGENTHUB_FAILPOINTS", "store.read=fault", 1);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_FAULT);
    ck_assert_int_eq(ops()->account_get(fx.s->impl, "alice", &a), STORE_FAULT);
    ck_assert_int_eq(ops()->runner_seq_get(fx.s->impl, "runner-1", &seq), STORE_FAULT);
    ck_assert_int_eq(ops()->exists(fx.s->impl, STORE_ENTITY_ACCOUNT, "alice"), STORE_FAULT);
    unsetenv("AGENTHUB_FAILPOINTS");
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
}
END_TEST
#endif

START_TEST(runner_sessions_and_open_counts_are_one_read_each)
{
    struct store_session_spec spec = {"", "ctr-1", "alice", "", ""};
    uint64_t open = 0;
    int n = 0;

    ck_assert_int_eq(ops()->runner_sessions(fx.s->impl, "runner-1", count_row, &n), STORE_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(ops()->session_count_open(fx.s->impl, "agent-1", &open), STORE_OK);
    ck_assert_uint_eq(open, 1);
    ck_assert_int_eq(ops()->session_create(fx.s->impl, &spec, NULL), STORE_OK);
    ck_assert_int_eq(ops()->session_close(fx.s->impl, "sess-1"), STORE_OK);
    n = 0;
    ck_assert_int_eq(ops()->runner_sessions(fx.s->impl, "runner-1", count_row, &n), STORE_OK);
    ck_assert_int_eq(n, 2); /* closed ones too */
    ck_assert_int_eq(ops()->session_count_open(fx.s->impl, "agent-1", &open), STORE_OK);
    ck_assert_uint_eq(open, 1);
    ck_assert_int_eq(ops()->session_count_open(fx.s->impl, "agent-2", &open), STORE_OK);
    ck_assert_uint_eq(open, 1);
    ck_assert_int_eq(ops()->session_count_open(fx.s->impl, "nobody", &open), STORE_OK);
    ck_assert_uint_eq(open, 0);
}
END_TEST

START_TEST(change_generation_moves_for_other_connections_only)
{
    struct store *other = store_fixture_second_handle(&fx);
    uint64_t g0, g1;
    int changed = 0;

    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g0), STORE_OK);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g1), STORE_OK);
    ck_assert_uint_eq(g0, g1);
    /* Our own write: no change to report. */
    ck_assert_int_eq(ops()->member_remove(fx.s->impl, "bob", "chan-a", &changed), STORE_OK);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g1), STORE_OK);
    ck_assert_uint_eq(g0, g1);
    /* Another connection's commit moves it, once. */
    ck_assert_int_eq(other->ops->member_add(other->impl, "bob", "chan-a", &changed), STORE_OK);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g1), STORE_OK);
    ck_assert_uint_gt(g1, g0);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g0), STORE_OK);
    ck_assert_uint_eq(g0, g1);
    /* With the gate cache off, too. */
    sqlite_store_cache_enable(fx.s, 0);
    raw_exec(fx.db, "UPDATE tokens SET revoked = 1 WHERE account_id = 'bob'");
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g1), STORE_OK);
    ck_assert_uint_gt(g1, g0);
    store_close(other);
}
END_TEST

/* The conformance tests, which every backend must pass, as tcases whose
 * FIXTURE opens the backend's store (PG: PostgreSQL, else SQLite); SERVER
 * (may be NULL) is the unchecked fixture that starts the shared PostgreSQL
 * server. */
static void add_conformance(Suite *s, int pg, void (*fixture)(void), void (*server)(void))
{
    TCase *tc;

    /* Check keeps the name pointers: string literals, not buffers. */
#define NEW_TCASE(suffix)                                                                          \
    do {                                                                                           \
        tc = tcase_create(pg ? "postgres_" suffix : "sqlite_" suffix);                             \
        if (server) {                                                                              \
            tcase_add_unchecked_fixture(tc, server, NULL);                                         \
            tcase_set_timeout(tc, 30); /* a server's round trips, under a loaded machine */        \
        }                                                                                          \
        tcase_add_checked_fixture(tc, fixture, teardown);                                          \
        suite_add_tcase(s, tc);                                                                    \
    } while (0)

    NEW_TCASE("schema");
    tcase_add_test(tc, reopening_keeps_data_and_reapplies_nothing);
    tcase_add_test(tc, database_from_a_newer_version_is_refused);
    tcase_add_test(tc, foreign_keys_are_enforced);

    NEW_TCASE("tokens");
    tcase_add_test(tc, token_resolves_to_its_subject);
    tcase_add_test(tc, revoked_token_is_dead_and_stays_dead);
    tcase_add_test(tc, token_bound_to_another_subject_is_a_conflict);
    tcase_add_test(tc, revoking_every_token_of_a_subject);
    tcase_add_test(tc, removing_an_account_kills_its_tokens);

    NEW_TCASE("sessions_and_resources");
    tcase_add_test(tc, session_create_mints_an_id_and_resolves_the_chain);
    tcase_add_test(tc, session_create_refuses_bad_references_and_duplicates);
    tcase_add_test(tc, session_close_marks_it_closed);
    tcase_add_test(tc, session_list_filters_by_runner_container_and_state);
    tcase_add_test(tc, resource_ids_start_at_one_and_are_shared_by_both_kinds);
    tcase_add_test(tc, agent_session_needs_a_terminal_parent_and_a_unique_native_id);
    tcase_add_test(tc, closing_an_agent_session_resource_closes_its_session);
    tcase_add_test(tc, runner_seq_persists_all_64_bits);
    tcase_add_test(tc, containers_of_a_runner);
    tcase_add_test(tc, runner_sessions_and_open_counts_are_one_read_each);

    NEW_TCASE("administration");
    tcase_add_test(tc, account_put_reports_whether_anything_changed);
    tcase_add_test(tc, only_agents_have_home_channels_and_own_containers);
    tcase_add_test(tc, removing_a_referenced_row_is_a_conflict);
    tcase_add_test(tc, membership_add_remove_and_check);
    tcase_add_test(tc, transaction_rollback_discards_writes);

    NEW_TCASE("faults");
    tcase_add_test(tc, write_under_another_writers_lock_is_a_fault_after_the_busy_timeout);
#ifdef AGENTHUB_FAILPOINTS
    tcase_add_test(tc, named_failpoints_fault_their_reads);
#endif
#undef NEW_TCASE
}

Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc;

    add_conformance(s, 0, setup, NULL);
    add_conformance(s, 1, setup_pg, store_fixture_pg_server);

    /* SQLite's own: the file, WAL mode, the shared-memory change counter. */
    tc = tcase_create("sqlite_file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fresh_database_is_at_the_current_schema_in_wal_mode);
    tcase_add_test(tc, a_file_that_is_not_a_database_is_refused);
    tcase_add_test(tc, every_read_of_a_garbage_database_is_a_fault);
    tcase_add_test(tc, garbage_main_file_alone_faults_reads_served_from_memory);
    tcase_add_test(tc, change_generation_moves_for_other_connections_only);
    suite_add_tcase(s, tc);
    return s;
}
