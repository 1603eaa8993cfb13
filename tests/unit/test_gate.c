/* The gate: every outcome of view, control, binding and produce, including
 * a real store fault and changes made through another handle; on both
 * store backends (the garbage-file faults are SQLite's own). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/gate.h"
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

static struct store_subject account(const char *id, int is_admin)
{
    struct store_subject s;

    memset(&s, 0, sizeof(s));
    s.kind = STORE_SUBJECT_ACCOUNT;
    snprintf(s.id, sizeof(s.id), "%s", id);
    s.is_admin = is_admin;
    return s;
}

static struct store_subject runner(const char *id)
{
    struct store_subject s;

    memset(&s, 0, sizeof(s));
    s.kind = STORE_SUBJECT_RUNNER;
    snprintf(s.id, sizeof(s.id), "%s", id);
    return s;
}

/* --- view --- */

START_TEST(member_of_home_channel_may_view)
{
    struct store_subject bob = account("bob", 0);
    struct store_session out;

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", &out), GATE_ALLOWED);
    ck_assert_str_eq(out.session_id, "sess-1");
    ck_assert_str_eq(out.container_name, "ctr-1");
    ck_assert_str_eq(out.agent_account_id, "agent-1");
    ck_assert_str_eq(out.home_channel_id, "chan-a");
    ck_assert_str_eq(out.runner_id, "runner-1");
    ck_assert_str_eq(out.owner_account_id, "alice");
}
END_TEST

START_TEST(agent_may_view_sessions_of_its_own_home_channel)
{
    struct store_subject agent = account("agent-1", 0);

    ck_assert_int_eq(gate_may_view(fx.s, &agent, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view(fx.s, &agent, "sess-2", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(non_member_and_unknown_session_are_the_same_not_found)
{
    struct store_subject carol = account("carol", 0);
    int forbidden = gate_may_view(fx.s, &carol, "sess-1", NULL);
    int unknown = gate_may_view(fx.s, &carol, "no-such-session", NULL);

    ck_assert_int_eq(forbidden, GATE_NOT_FOUND);
    ck_assert_int_eq(unknown, GATE_NOT_FOUND);
    ck_assert_ptr_eq(gate_refusal(forbidden), gate_refusal(unknown));
    ck_assert_int_eq(gate_refusal(forbidden)->status, GRPC_STATUS_NOT_FOUND);
    ck_assert_str_eq(gate_refusal(forbidden)->message, GATE_NOT_FOUND_MESSAGE);
    ck_assert_str_eq(GATE_NOT_FOUND_MESSAGE, "session not found");
}
END_TEST

START_TEST(admin_may_view_every_existing_session_only)
{
    struct store_subject admin = account("admin", 1);

    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-2", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "nope", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(runner_missing_and_empty_callers_may_not_view)
{
    struct store_subject r = runner("runner-1");
    struct store_subject empty;

    memset(&empty, 0, sizeof(empty));
    ck_assert_int_eq(gate_may_view(fx.s, &r, "sess-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_view(fx.s, NULL, "sess-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_view(fx.s, &empty, "sess-1", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(empty_session_id_is_not_found)
{
    struct store_subject admin = account("admin", 1);

    ck_assert_int_eq(gate_may_view(fx.s, &admin, "", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, NULL, NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(agent_without_home_channel_is_visible_to_admins_only)
{
    struct store_account a = {"agent-3", STORE_ACCOUNT_AGENT, 0, ""};
    struct store_container c = {"ctr-3", "agent-3", "runner-1"};
    struct store_session_spec spec;
    struct store_subject alice = account("alice", 0), admin = account("admin", 1);

    memset(&spec, 0, sizeof(spec));
    snprintf(spec.session_id, sizeof(spec.session_id), "sess-3");
    snprintf(spec.container_name, sizeof(spec.container_name), "ctr-3");
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "alice");
    ck_assert_int_eq(fx.s->ops->account_put(fx.s->impl, &a, NULL), STORE_OK);
    ck_assert_int_eq(fx.s->ops->container_put(fx.s->impl, &c, NULL), STORE_OK);
    ck_assert_int_eq(fx.s->ops->session_create(fx.s->impl, &spec, NULL), STORE_OK);
    ck_assert_int_eq(gate_may_view(fx.s, &alice, "sess-3", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-3", NULL), GATE_ALLOWED);
}
END_TEST

static int view_filter(const struct store_session *sess, void *arg)
{
    struct store_fixture *f = &fx;
    struct store_subject bob = account("bob", 0);

    if (gate_may_view_loaded(f->s, &bob, sess) == GATE_ALLOWED)
        (*(int *)arg)++;
    return 0;
}

START_TEST(listing_filters_to_the_sessions_the_caller_may_view)
{
    struct store_subject bob = account("bob", 0), runner1 = runner("runner-1");
    struct store_session sess;
    int n = 0;

    ck_assert_int_eq(fx.s->ops->session_list(fx.s->impl, NULL, view_filter, &n), STORE_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &sess), STORE_OK);
    ck_assert_int_eq(gate_may_view_loaded(fx.s, &bob, &sess), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view_loaded(fx.s, &runner1, &sess), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_view_loaded(fx.s, &bob, NULL), GATE_NOT_FOUND);
}
END_TEST

/* --- control --- */

START_TEST(owner_may_control)
{
    struct store_subject alice = account("alice", 0);
    struct store_session out;

    ck_assert_int_eq(gate_may_control(fx.s, &alice, "sess-1", &out), GATE_ALLOWED);
    ck_assert_str_eq(out.runner_id, "runner-1");
}
END_TEST

START_TEST(member_who_is_not_owner_may_not_control)
{
    struct store_subject bob = account("bob", 0);

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_control(fx.s, &bob, "sess-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_control(fx.s, &bob, "no-such", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(admin_may_control_any_session)
{
    struct store_subject admin = account("admin", 1);

    ck_assert_int_eq(gate_may_control(fx.s, &admin, "sess-2", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_control(fx.s, &admin, "nope", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(runner_may_not_control)
{
    struct store_subject r = runner("runner-1");

    ck_assert_int_eq(gate_may_control(fx.s, &r, "sess-1", NULL), GATE_NOT_FOUND);
}
END_TEST

/* The loaded form gives the same answers without reading the store. */
START_TEST(control_of_a_loaded_session_matches_the_gate)
{
    struct store_subject alice = account("alice", 0), bob = account("bob", 0);
    struct store_subject admin = account("admin", 1), r = runner("runner-1");
    struct store_session sess;

    ck_assert_int_eq(store_session_get(fx.s, "sess-1", &sess), STORE_OK);
    ck_assert_int_eq(gate_may_control_loaded(&alice, &sess), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_control_loaded(&admin, &sess), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_control_loaded(&bob, &sess), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_control_loaded(&r, &sess), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_control_loaded(NULL, &sess), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_control_loaded(&alice, NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(start_is_for_home_channel_members_and_admins)
{
    struct store_subject bob = account("bob", 0), carol = account("carol", 0);
    struct store_subject admin = account("admin", 1), r = runner("runner-1");
    struct store_container c;

    ck_assert_int_eq(gate_may_start(fx.s, &bob, "ctr-1", &c), GATE_ALLOWED);
    ck_assert_str_eq(c.runner_id, "runner-1");
    ck_assert_int_eq(gate_may_start(fx.s, &carol, "ctr-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_start(fx.s, &carol, "no-such", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_start(fx.s, &admin, "ctr-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_start(fx.s, &admin, "no-such", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_start(fx.s, &r, "ctr-1", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_start(fx.s, &bob, "", NULL), GATE_NOT_FOUND);
}
END_TEST

/* --- binding --- */

START_TEST(session_is_bound_to_the_runner_of_its_container)
{
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-2", "sess-2"), GATE_BOUND);
}
END_TEST

START_TEST(foreign_and_unknown_sessions_are_the_same_not_bound)
{
    int foreign = gate_session_bound(fx.s, "runner-2", "sess-1");
    int unknown = gate_session_bound(fx.s, "runner-2", "no-such");

    ck_assert_int_eq(foreign, GATE_NOT_BOUND);
    ck_assert_int_eq(unknown, GATE_NOT_BOUND);
    ck_assert_ptr_eq(gate_refusal(foreign), gate_refusal(unknown));
    ck_assert_int_eq(gate_refusal(foreign)->status, GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_str_eq(gate_refusal(foreign)->message, GATE_NOT_BOUND_MESSAGE);
    ck_assert_int_eq(gate_session_bound(fx.s, "", "sess-1"), GATE_NOT_BOUND);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", ""), GATE_NOT_BOUND);
}
END_TEST

/* --- produce --- */

START_TEST(produce_is_for_the_agent_its_runner_and_admins)
{
    struct store_subject agent = account("agent-1", 0), other_agent = account("agent-2", 0);
    struct store_subject alice = account("alice", 0), admin = account("admin", 1);
    struct store_subject r1 = runner("runner-1"), r2 = runner("runner-2");
    struct store_resource out;
    uint64_t term = 0, as = 0;
    char sid[STORE_ID_MAX];

    ck_assert_int_eq(fx.s->ops->terminal_create(fx.s->impl, "ctr-1", &term), STORE_OK);
    ck_assert_int_eq(
        fx.s->ops->agent_session_create(fx.s->impl, term, "claude", "n-1", "alice", &as, sid),
        STORE_OK);
    ck_assert_int_eq(gate_may_produce(fx.s, &agent, as, &out), GATE_ALLOWED);
    ck_assert_int_eq(out.kind, STORE_RESOURCE_AGENT_SESSION);
    ck_assert_str_eq(out.session_id, sid);
    ck_assert_int_eq(gate_may_produce(fx.s, &r1, as, NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_produce(fx.s, &admin, term, NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_produce(fx.s, &alice, as, NULL), GATE_NOT_PRODUCER);
    ck_assert_int_eq(gate_may_produce(fx.s, &other_agent, as, NULL), GATE_NOT_PRODUCER);
    ck_assert_int_eq(gate_may_produce(fx.s, &r2, as, NULL), GATE_NOT_PRODUCER);
    ck_assert_int_eq(gate_may_produce(fx.s, &admin, 9999, NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_may_produce(fx.s, &admin, 0, NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_produce_refusal(GATE_NOT_PRODUCER)->status,
                     GRPC_STATUS_PERMISSION_DENIED);
    ck_assert(strncmp(gate_produce_refusal(GATE_NOT_PRODUCER)->message, "NOT_PRODUCER", 12) == 0);
}
END_TEST

/* --- changes from another process --- */

START_TEST(removed_membership_is_seen_on_the_next_call)
{
    struct store_subject bob = account("bob", 0);
    struct store *admin = store_fixture_second_handle(&fx);

    uint64_t mark;

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    mark = store_fixture_mark(&fx);
    ck_assert_int_eq(admin->ops->member_remove(admin->impl, "bob", "chan-a", NULL), STORE_OK);
    store_fixture_settle(&fx, mark);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_NOT_FOUND);
    mark = store_fixture_mark(&fx);
    ck_assert_int_eq(admin->ops->member_add(admin->impl, "bob", "chan-a", NULL), STORE_OK);
    store_fixture_settle(&fx, mark);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    store_close(admin);
}
END_TEST

START_TEST(moved_container_is_seen_on_the_next_binding_check)
{
    struct store *admin = store_fixture_second_handle(&fx);
    struct store_container c = {"ctr-1", "agent-1", "runner-2"};

    uint64_t mark;

    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    mark = store_fixture_mark(&fx);
    ck_assert_int_eq(admin->ops->container_put(admin->impl, &c, NULL), STORE_OK);
    store_fixture_settle(&fx, mark);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_NOT_BOUND);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-2", "sess-1"), GATE_BOUND);
    store_close(admin);
}
END_TEST

START_TEST(removed_session_is_seen_on_the_next_call)
{
    struct store_subject admin_subject = account("admin", 1);
    struct store *admin = store_fixture_second_handle(&fx);

    uint64_t mark;

    ck_assert_int_eq(gate_may_view(fx.s, &admin_subject, "sess-2", NULL), GATE_ALLOWED);
    mark = store_fixture_mark(&fx);
    ck_assert_int_eq(admin->ops->remove(admin->impl, STORE_ENTITY_SESSION, "sess-2"), STORE_OK);
    store_fixture_settle(&fx, mark);
    ck_assert_int_eq(gate_may_view(fx.s, &admin_subject, "sess-2", NULL), GATE_NOT_FOUND);
    store_close(admin);
}
END_TEST

START_TEST(runner_seq_writes_keep_answers_correct)
{
    struct store_subject bob = account("bob", 0);

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(fx.s->ops->runner_seq_set(fx.s->impl, "runner-1", 7), STORE_OK);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(fx.s->ops->member_remove(fx.s->impl, "bob", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(fx.s->ops->runner_seq_set(fx.s->impl, "runner-1", 8), STORE_OK);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_NOT_FOUND);
}
END_TEST

START_TEST(own_writes_are_seen_on_the_next_call)
{
    struct store_subject bob = account("bob", 0);

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(fx.s->ops->member_remove(fx.s->impl, "bob", "chan-a", NULL), STORE_OK);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_NOT_FOUND);
}
END_TEST

/* --- faults --- */

START_TEST(garbage_database_is_a_fault_not_a_refusal)
{
    struct store_subject bob = account("bob", 0), admin = account("admin", 1);
    struct store_subject agent = account("agent-1", 0);
    char path[400];

    /* Warm every cache first: a fault must win over a cached answer. */
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-2", NULL), GATE_NOT_FOUND);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    store_fixture_scribble(fx.db);
    snprintf(path, sizeof(path), "%s-wal", fx.db);
    store_fixture_scribble(path);
    snprintf(path, sizeof(path), "%s-shm", fx.db);
    store_fixture_scribble(path);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-2", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "no-such", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_control(fx.s, &admin, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_FAULT);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-2", "sess-1"), GATE_FAULT);
    ck_assert_int_eq(gate_may_produce(fx.s, &agent, 1, NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_start(fx.s, &bob, "ctr-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_refusal(GATE_FAULT)->status, GRPC_STATUS_UNAVAILABLE);
}
END_TEST

START_TEST(garbage_main_file_alone_is_a_fault)
{
    struct store_subject bob = account("bob", 0);

    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
    /* Move everything out of the WAL so the main file is what is read. */
    {
        struct store *h = store_fixture_second_handle(&fx);
        store_close(h);
    }
    store_fixture_scribble(fx.db);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_FAULT);
}
END_TEST

#ifdef AGENTHUB_FAILPOINTS
START_TEST(membership_failpoint_faults_the_view_only_where_membership_is_read)
{
    struct store_subject bob = account("bob", 0), admin = account("admin", 1);

    setenv("AGENTHUB_FAILPOINTS", "store.membership=fault", 1);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_ALLOWED);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    unsetenv("AGENTHUB_FAILPOINTS");
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_ALLOWED);
}
END_TEST

START_TEST(binding_failpoint_faults_binding_checks)
{
    struct store_subject bob = account("bob", 0);

    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_BOUND);
    setenv("AGENTHUB_FAILPOINTS", "store.binding=fault,store.membership=fault", 1);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_FAULT);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-2", "no-such"), GATE_FAULT);
    ck_assert_int_eq(gate_may_view(fx.s, &bob, "sess-1", NULL), GATE_FAULT);
    unsetenv("AGENTHUB_FAILPOINTS");
}
END_TEST

START_TEST(session_and_read_failpoints_fault_every_gate)
{
    struct store_subject admin = account("admin", 1);

    setenv("AGENTHUB_FAILPOINTS", "store.session=fault", 1);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_control(fx.s, &admin, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_may_produce(fx.s, &admin, 1, NULL), GATE_FAULT);
    setenv("AGENTHUB_FAILPOINTS", "store.read=fault", 1);
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_FAULT);
    ck_assert_int_eq(gate_session_bound(fx.s, "runner-1", "sess-1"), GATE_FAULT);
    unsetenv("AGENTHUB_FAILPOINTS");
    ck_assert_int_eq(gate_may_view(fx.s, &admin, "sess-1", NULL), GATE_ALLOWED);
}
END_TEST
#endif

/* The gate's tests that hold on every backend, as tcases whose FIXTURE
 * opens the store (PG: PostgreSQL, whose server SERVER starts). */
static void add_common(Suite *s, int pg, void (*fixture)(void), void (*server)(void))
{
    TCase *tc;

    /* Check keeps the name pointers: string literals, not buffers. */
#define NEW_TCASE(suffix)                                                                          \
    do {                                                                                           \
        tc = tcase_create(pg ? "postgres_" suffix : suffix);                                       \
        if (server) {                                                                              \
            tcase_add_unchecked_fixture(tc, server, NULL);                                         \
            tcase_set_timeout(tc, 30); /* a server's round trips, under a loaded machine */        \
        }                                                                                          \
        tcase_add_checked_fixture(tc, fixture, teardown);                                          \
        suite_add_tcase(s, tc);                                                                    \
    } while (0)

    NEW_TCASE("view");
    tcase_add_test(tc, member_of_home_channel_may_view);
    tcase_add_test(tc, agent_may_view_sessions_of_its_own_home_channel);
    tcase_add_test(tc, non_member_and_unknown_session_are_the_same_not_found);
    tcase_add_test(tc, admin_may_view_every_existing_session_only);
    tcase_add_test(tc, runner_missing_and_empty_callers_may_not_view);
    tcase_add_test(tc, empty_session_id_is_not_found);
    tcase_add_test(tc, agent_without_home_channel_is_visible_to_admins_only);
    tcase_add_test(tc, listing_filters_to_the_sessions_the_caller_may_view);

    NEW_TCASE("control");
    tcase_add_test(tc, owner_may_control);
    tcase_add_test(tc, member_who_is_not_owner_may_not_control);
    tcase_add_test(tc, admin_may_control_any_session);
    tcase_add_test(tc, runner_may_not_control);
    tcase_add_test(tc, control_of_a_loaded_session_matches_the_gate);
    tcase_add_test(tc, start_is_for_home_channel_members_and_admins);

    NEW_TCASE("binding_and_produce");
    tcase_add_test(tc, session_is_bound_to_the_runner_of_its_container);
    tcase_add_test(tc, foreign_and_unknown_sessions_are_the_same_not_bound);
    tcase_add_test(tc, produce_is_for_the_agent_its_runner_and_admins);

    NEW_TCASE("freshness");
    tcase_add_test(tc, removed_membership_is_seen_on_the_next_call);
    tcase_add_test(tc, moved_container_is_seen_on_the_next_binding_check);
    tcase_add_test(tc, removed_session_is_seen_on_the_next_call);
    tcase_add_test(tc, own_writes_are_seen_on_the_next_call);
    tcase_add_test(tc, runner_seq_writes_keep_answers_correct);

#ifdef AGENTHUB_FAILPOINTS
    NEW_TCASE("failpoints");
    tcase_add_test(tc, membership_failpoint_faults_the_view_only_where_membership_is_read);
    tcase_add_test(tc, binding_failpoint_faults_binding_checks);
    tcase_add_test(tc, session_and_read_failpoints_fault_every_gate);
#endif
#undef NEW_TCASE
}

Suite *gate_suite(void)
{
    Suite *s = suite_create("gate");
    TCase *tc;

    add_common(s, 0, setup, NULL);
    add_common(s, 1, setup_pg, store_fixture_pg_server);

    tc = tcase_create("faults");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, garbage_database_is_a_fault_not_a_refusal);
    tcase_add_test(tc, garbage_main_file_alone_is_a_fault);
    suite_add_tcase(s, tc);
    return s;
}
