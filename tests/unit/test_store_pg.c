/* The PostgreSQL store's own behaviour, beyond the conformance tests it
 * shares with SQLite (test_store.c): the schema and its notify triggers,
 * change notifications from other connections, what a lost or refused
 * connection answers, and recovery. */
#include <check.h>
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
    store_fixture_open_backend(&fx, STORE_FIXTURE_POSTGRES);
    store_fixture_world(&fx);
}

static void teardown(void)
{
    store_fixture_close(&fx);
}

static const struct store_ops *ops(void)
{
    return fx.s->ops;
}

/* Polls change_generation until it differs from FROM; returns the new
 * value.  Bounded: a notification that never comes fails the test. */
static uint64_t wait_generation(struct store *s, uint64_t from)
{
    int64_t deadline = clock_monotonic_ms() + 5000;
    uint64_t g = from;

    while (clock_monotonic_ms() < deadline) {
        ck_assert_int_eq(s->ops->change_generation(s->impl, &g), STORE_OK);
        if (g != from)
            return g;
        usleep(5000);
    }
    ck_abort_msg("no change notification within 5 s");
    return g;
}

START_TEST(targets_select_the_backend_by_scheme)
{
    ck_assert(store_target_is_postgres("postgres://u@h:1/db"));
    ck_assert(store_target_is_postgres("postgresql:///db?host=/tmp"));
    ck_assert(!store_target_is_postgres("/var/lib/agenthub.db"));
    ck_assert(!store_target_is_postgres("postgres.db"));
    ck_assert(!store_target_is_postgres("mysql://x"));
}
END_TEST

START_TEST(fresh_database_is_at_the_current_schema_with_notify_triggers)
{
    char v[32];

    ck_assert_int_eq(
        store_fixture_pg_exec(&fx, "SELECT version FROM agenthub_schema", v, sizeof(v)), 0);
    ck_assert_str_eq(v, "1");
    ck_assert_int_eq(store_fixture_pg_exec(&fx,
                                           "SELECT count(DISTINCT tgrelid) FROM pg_trigger "
                                           "WHERE tgname LIKE '%_notify'",
                                           v, sizeof(v)),
                     0);
    ck_assert_str_eq(v, "8"); /* every table of the model */
}
END_TEST

START_TEST(change_generation_counts_other_connections_only)
{
    struct store *other = store_fixture_second_handle(&fx);
    uint64_t g0, g1;

    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g0), STORE_OK);
    /* Our own write first, then another connection's: notifications
     * arrive in commit order, so once the second is seen the first has
     * been too, and only the other's counted. */
    ck_assert_int_eq(ops()->member_remove(fx.s->impl, "bob", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(other->ops->member_add(other->impl, "bob", "chan-a", NULL), STORE_OK);
    g1 = wait_generation(fx.s, g0);
    ck_assert_uint_eq(g1, g0 + 1);
    /* Raw SQL from outside agenthub notifies through the triggers too. */
    ck_assert_int_eq(store_fixture_pg_exec(
                         &fx, "UPDATE tokens SET revoked = 1 WHERE account_id = 'bob'", NULL, 0),
                     0);
    ck_assert_uint_eq(wait_generation(fx.s, g1), g1 + 1);
    store_close(other);
}
END_TEST

START_TEST(runner_seq_writes_do_not_notify)
{
    struct store *other = store_fixture_second_handle(&fx);
    uint64_t g0, g1;

    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g0), STORE_OK);
    ck_assert_int_eq(other->ops->runner_seq_set(other->impl, "runner-1", 42), STORE_OK);
    /* A later write that does notify is the barrier. */
    ck_assert_int_eq(other->ops->channel_put(other->impl, "chan-z", NULL), STORE_OK);
    g1 = wait_generation(fx.s, g0);
    ck_assert_uint_eq(g1, g0 + 1);
    store_close(other);
}
END_TEST

START_TEST(another_nodes_membership_removal_drops_the_cached_answer)
{
    struct store *other = store_fixture_second_handle(&fx);
    struct store_session s;
    uint64_t g0;

    /* Cached: the gate's reads. */
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "bob", "chan-a"), STORE_OK);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g0), STORE_OK);
    ck_assert_int_eq(other->ops->member_remove(other->impl, "bob", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(other->ops->session_close(other->impl, "sess-1"), STORE_OK);
    (void)wait_generation(fx.s, g0);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "bob", "chan-a"), STORE_NOT_FOUND);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    ck_assert_int_eq(s.closed, 1);
    store_close(other);
}
END_TEST

START_TEST(a_terminated_connection_is_replaced_without_a_fault)
{
    struct store_session s;
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    char sql[512];

    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    snprintf(sql, sizeof(sql),
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
             "WHERE datname = '%s' AND pid <> pg_backend_pid()",
             fx.dbname);
    ck_assert_int_eq(store_fixture_pg_exec(&fx, sql, NULL, 0), 0);
    usleep(100000); /* the backends' goodbye reaches the sockets */
    ck_assert_int_eq(auth_hash_token("t-alice", 7, h), 0);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
    ck_assert_str_eq(subj.id, "alice");
    ck_assert_int_eq(ops()->member_add(fx.s->impl, "carol", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(ops()->ping(fx.s->impl), STORE_OK);
}
END_TEST

START_TEST(an_unreachable_database_faults_every_read_and_recovers)
{
    uint8_t h[STORE_HASH_LEN];
    struct store_subject subj;
    struct store_session s;
    struct store_account a;
    struct store_resource r;
    char sql[512], runner[STORE_ID_MAX];
    uint64_t g, seq;
    int64_t deadline;
    int rv;

    ck_assert_int_eq(auth_hash_token("t-alice", 7, h), 0);
    /* Warm the cache: nothing may be served from it while the database
     * cannot be reached. */
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "alice", "chan-a"), STORE_OK);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_OK);
    snprintf(sql, sizeof(sql),
             "ALTER DATABASE %s ALLOW_CONNECTIONS false; "
             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
             "WHERE datname = '%s' AND pid <> pg_backend_pid()",
             fx.dbname, fx.dbname);
    ck_assert_int_eq(store_fixture_pg_exec(NULL, sql, NULL, 0), 0);
    usleep(100000);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_FAULT);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &s), STORE_FAULT);
    ck_assert_int_eq(store_session_get(fx.s, "never", &s), STORE_FAULT);
    ck_assert_int_eq(ops()->session_runner(fx.s->impl, "sess-1", runner), STORE_FAULT);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "alice", "chan-a"), STORE_FAULT);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "carol", "chan-a"), STORE_FAULT);
    ck_assert_int_eq(store_resource_get(fx.s, 1, &r), STORE_FAULT);
    ck_assert_int_eq(ops()->account_get(fx.s->impl, "alice", &a), STORE_FAULT);
    ck_assert_int_eq(ops()->runner_seq_get(fx.s->impl, "runner-1", &seq), STORE_FAULT);
    ck_assert_int_eq(ops()->exists(fx.s->impl, STORE_ENTITY_ACCOUNT, "ghost"), STORE_FAULT);
    ck_assert_int_eq(ops()->change_generation(fx.s->impl, &g), STORE_FAULT);
    ck_assert_int_eq(ops()->ping(fx.s->impl), STORE_FAULT);
    /* Back: the store reconnects by itself once its back-off has run. */
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s ALLOW_CONNECTIONS true", fx.dbname);
    ck_assert_int_eq(store_fixture_pg_exec(NULL, sql, NULL, 0), 0); /* from another database */
    deadline = clock_monotonic_ms() + 10000;
    do {
        usleep(50000);
        rv = ops()->ping(fx.s->impl);
    } while (rv != STORE_OK && clock_monotonic_ms() < deadline);
    ck_assert_int_eq(rv, STORE_OK);
    ck_assert_int_eq(store_token_resolve(fx.s, h, &subj), STORE_OK);
    ck_assert_int_eq(ops()->member_check(fx.s->impl, "alice", "chan-a"), STORE_OK);
}
END_TEST

START_TEST(a_server_that_is_not_there_is_refused_at_open)
{
    struct store *s = NULL;
    char err[256] = "";
    int64_t t0 = clock_monotonic_ms();

    /* Port 1 on loopback: nothing listens, the connection is refused. */
    ck_assert_int_eq(store_open("postgres://agenthub@127.0.0.1:1/none", &s, err, sizeof(err)),
                     STORE_FAULT);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, "PostgreSQL") != NULL, "message: %s", err);
    ck_assert(clock_monotonic_ms() - t0 < 5000);
}
END_TEST

Suite *store_pg_suite(void)
{
    Suite *s = suite_create("store_pg");
    TCase *tc = tcase_create("postgres_own");

    tcase_add_unchecked_fixture(tc, store_fixture_pg_server, NULL);
    tcase_set_timeout(tc, 30); /* recovery waits out a back-off */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, targets_select_the_backend_by_scheme);
    tcase_add_test(tc, fresh_database_is_at_the_current_schema_with_notify_triggers);
    tcase_add_test(tc, change_generation_counts_other_connections_only);
    tcase_add_test(tc, runner_seq_writes_do_not_notify);
    tcase_add_test(tc, another_nodes_membership_removal_drops_the_cached_answer);
    tcase_add_test(tc, a_terminated_connection_is_replaced_without_a_fault);
    tcase_add_test(tc, an_unreachable_database_faults_every_read_and_recovers);
    tcase_add_test(tc, a_server_that_is_not_there_is_refused_at_open);
    suite_add_tcase(s, tc);
    return s;
}
