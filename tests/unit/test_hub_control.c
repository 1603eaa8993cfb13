/* Unit tests for the Runners' control streams (hub/runner_control.h),
 * driven through a fake call on a real SQLite store and the memory log. */
#include "hub/runner_control.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "hub/stream_guard.h"
#include "hub_fixture.h"

static struct hub_fixture h;

static void setup(void)
{
    hub_fixture_open(&h);
}

static void teardown(void)
{
    hub_fixture_close(&h);
}

/* What a waiter heard. */
struct outcome {
    int calls;
    enum runner_outcome outcome;
    int code;
    char detail[200];
};

static void on_done(void *arg, enum runner_outcome outcome, int code, const char *detail)
{
    struct outcome *o = arg;

    o->calls++;
    o->outcome = outcome;
    o->code = code;
    snprintf(o->detail, sizeof(o->detail), "%s", detail ? detail : "");
}

/* Opens runner-1's control stream on CALL. */
static struct runner_link *open_link(struct fake_call *call)
{
    struct store_subject subject = hub_fixture_runner("runner-1");
    struct runner_link *link;

    fake_call_init(call, "t-runner-1");
    link = runner_link_open(&h.hub, fake_stream(call), &subject);
    ck_assert_ptr_nonnull(link);
    ck_assert_ptr_eq(call->user, link);
    return link;
}

/* Queues a stop of SESSION_ID for runner-1, waited for by O (NULL: nobody). */
static int send_stop(const char *session_id, struct outcome *o, struct runner_command **handle)
{
    Compass__V1__SessionsResponse command = COMPASS__V1__SESSIONS_RESPONSE__INIT;
    Compass__V1__StopAgentSessionRequest stop = COMPASS__V1__STOP_AGENT_SESSION_REQUEST__INIT;

    stop.session_id = (char *)session_id;
    command.command_case = COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STOP;
    command.stop = &stop;
    return runner_command_send(&h.hub, "runner-1", &command, o ? on_done : NULL, o, handle);
}

/* The request_id of the Nth message written on CALL. */
static void written_request_id(const struct fake_call *call, int n, char *out, size_t len)
{
    Compass__V1__SessionsResponse *m;

    ck_assert_int_gt(call->sent, n);
    m = compass__v1__sessions_response__unpack(NULL, call->sent_len[n], call->sent_bytes[n]);
    ck_assert_ptr_nonnull(m);
    snprintf(out, len, "%s", m->request_id);
    compass__v1__sessions_response__free_unpacked(m, NULL);
}

/* The Runner answers REQUEST_ID (REFUSED: with a RunnerError). */
static void answer(struct runner_link *link, const char *request_id, int refused)
{
    Compass__V1__SessionsRequest request = COMPASS__V1__SESSIONS_REQUEST__INIT;
    Compass__V1__StopAgentSessionResponse stopped = COMPASS__V1__STOP_AGENT_SESSION_RESPONSE__INIT;
    Compass__V1__RunnerError error = COMPASS__V1__RUNNER_ERROR__INIT;

    request.request_id = (char *)request_id;
    if (refused) {
        error.message = "no such session here";
        request.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_ERROR;
        request.error = &error;
    } else {
        request.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_STOP;
        request.stop = &stopped;
    }
    runner_link_message(&h.hub, link, &request);
}

START_TEST(a_command_is_written_when_the_stream_wants_bytes_and_its_answer_reaches_the_waiter)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct outcome o = {0};
    char id[32];

    ck_assert_int_eq(runner_connected(h.hub.runners, "runner-1"), 1);
    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    ck_assert_int_gt(call.writable_asked, 0);
    ck_assert_int_eq(call.sent, 0); /* pull-style: nothing before the stream asks */
    runner_link_write_next(link);
    ck_assert_int_eq(call.sent, 1);
    written_request_id(&call, 0, id, sizeof(id));
    ck_assert_int_eq(o.calls, 0);
    answer(link, id, 0);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.outcome, RUNNER_ACKED);
    runner_link_close(&h.hub, link, "test over");
    ck_assert_int_eq(o.calls, 1);
    fake_call_free(&call);
}
END_TEST

START_TEST(a_refusal_is_passed_on_as_refused)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct outcome o = {0};
    char id[32];

    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    runner_link_write_next(link);
    written_request_id(&call, 0, id, sizeof(id));
    answer(link, id, 1);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.outcome, RUNNER_REFUSED);
    ck_assert_str_eq(o.detail, "no such session here");
    runner_link_close(&h.hub, link, "test over");
    fake_call_free(&call);
}
END_TEST

START_TEST(a_runner_without_a_stream_is_not_connected)
{
    struct outcome o = {0};

    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_NOT_CONNECTED);
    ck_assert_int_eq(o.calls, 0);
}
END_TEST

START_TEST(the_queue_is_bounded_but_one_command_always_fits)
{
    struct fake_call call;
    struct runner_link *link;
    struct outcome a = {0}, b = {0};

    h.hub.config.runner_queue_bytes = 1; /* less than any command */
    link = open_link(&call);
    ck_assert_int_eq(send_stop("sess-1", &a, NULL), RUNNER_SEND_QUEUED);
    ck_assert_int_eq(send_stop("sess-1", &b, NULL), RUNNER_SEND_QUEUE_FULL);
    ck_assert_int_eq(b.calls, 0);
    ck_assert_int_eq(
        hub_fixture_metric(&h, "agenthub_runner_commands_total{outcome=\"queue_full\"}"), 1);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_runner_commands_queued"), 1);
    /* Written, it leaves room for the next. */
    runner_link_write_next(link);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_runner_commands_queued"), 0);
    ck_assert_int_eq(send_stop("sess-1", &b, NULL), RUNNER_SEND_QUEUED);
    runner_link_close(&h.hub, link, "test over");
    ck_assert_int_eq(a.outcome, RUNNER_LOST);
    ck_assert_int_eq(b.outcome, RUNNER_NOT_SENT);
    fake_call_free(&call);
}
END_TEST

START_TEST(a_command_not_taken_in_time_is_withdrawn_and_never_written)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct outcome o = {0};

    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    hub_fixture_run(&h, (int)h.hub.config.command_timeout_ms + 100);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.outcome, RUNNER_NOT_SENT);
    runner_link_write_next(link);
    ck_assert_int_eq(call.sent, 0);
    ck_assert_int_eq(
        hub_fixture_metric(&h, "agenthub_runner_commands_total{outcome=\"withdrawn\"}"), 1);
    runner_link_close(&h.hub, link, "test over");
    ck_assert_int_eq(o.calls, 1);
    fake_call_free(&call);
}
END_TEST

START_TEST(an_abandoned_command_is_withdrawn_unwritten)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct runner_command *handle = NULL;
    struct outcome o = {0};

    ck_assert_int_eq(send_stop("sess-1", &o, &handle), RUNNER_SEND_QUEUED);
    ck_assert_ptr_nonnull(handle);
    runner_command_abandon(&h.hub, handle);
    runner_link_write_next(link);
    ck_assert_int_eq(call.sent, 0);
    ck_assert_int_eq(o.calls, 0);
    ck_assert_int_eq(
        hub_fixture_metric(&h, "agenthub_runner_commands_total{outcome=\"withdrawn\"}"), 1);
    runner_link_close(&h.hub, link, "test over");
    fake_call_free(&call);
}
END_TEST

START_TEST(an_answer_after_the_timeout_is_counted_late_and_not_passed_on)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct outcome o = {0};
    char id[32];

    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    runner_link_write_next(link);
    written_request_id(&call, 0, id, sizeof(id));
    hub_fixture_run(&h, (int)h.hub.config.command_timeout_ms + 100);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(o.outcome, RUNNER_UNANSWERED);
    answer(link, id, 0);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_runner_late_answers_total"), 1);
    ck_assert_int_eq(
        hub_fixture_metric(&h, "agenthub_runner_commands_total{outcome=\"unanswered\"}"), 1);
    /* An answer to nothing it sent is unknown, not late. */
    answer(link, "424242", 0);
    ck_assert_int_eq(hub_fixture_metric(&h, "agenthub_runner_unknown_answers_total"), 1);
    runner_link_close(&h.hub, link, "test over");
    fake_call_free(&call);
}
END_TEST

START_TEST(a_stream_that_ends_loses_written_commands_and_withdraws_queued_ones)
{
    struct fake_call call;
    struct runner_link *link = open_link(&call);
    struct outcome written = {0}, queued = {0};

    ck_assert_int_eq(send_stop("sess-1", &written, NULL), RUNNER_SEND_QUEUED);
    runner_link_write_next(link);
    ck_assert_int_eq(send_stop("sess-1", &queued, NULL), RUNNER_SEND_QUEUED);
    runner_link_close(&h.hub, link, "the runner disconnected");
    ck_assert_int_eq(written.outcome, RUNNER_LOST);
    ck_assert_int_eq(queued.outcome, RUNNER_NOT_SENT);
    ck_assert_int_eq(runner_connected(h.hub.runners, "runner-1"), 0);
    ck_assert_ptr_null(call.user);
    fake_call_free(&call);
}
END_TEST

START_TEST(a_second_stream_of_the_same_runner_replaces_the_first)
{
    struct fake_call first, second;
    struct runner_link *old = open_link(&first);
    struct runner_link *link;
    struct outcome o = {0};

    (void)old;
    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    link = open_link(&second);
    ck_assert_int_eq(first.finished, 1);
    ck_assert_int_eq(first.status, GRPC_STATUS_ABORTED);
    ck_assert_ptr_null(first.user);
    ck_assert_int_eq(o.outcome, RUNNER_NOT_SENT);
    ck_assert_int_eq(second.finished, 0);
    runner_link_close(&h.hub, link, "test over");
    fake_call_free(&first);
    fake_call_free(&second);
}
END_TEST

START_TEST(a_revoked_runner_token_ends_its_control_stream)
{
    struct store *admin = store_fixture_second_handle(&h.fx);
    struct fake_call call;
    struct outcome o = {0};
    int changed = 0;

    open_link(&call);
    ck_assert_int_eq(send_stop("sess-1", &o, NULL), RUNNER_SEND_QUEUED);
    ck_assert_int_eq(
        admin->ops->token_revoke_subject(admin->impl, STORE_SUBJECT_RUNNER, "runner-1", &changed),
        STORE_OK);
    hub_fixture_run(&h, STREAM_GUARD_POLL_MS + 300);
    ck_assert_int_eq(call.finished, 1);
    ck_assert_int_eq(call.status, GRPC_STATUS_UNAUTHENTICATED);
    ck_assert_int_eq(o.calls, 1);
    ck_assert_int_eq(runner_connected(h.hub.runners, "runner-1"), 0);
    store_close(admin);
    fake_call_free(&call);
}
END_TEST

Suite *hub_control_suite(void)
{
    Suite *s = suite_create("hub_control");
    TCase *tc = tcase_create("commands");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 10);
    tcase_add_test(
        tc, a_command_is_written_when_the_stream_wants_bytes_and_its_answer_reaches_the_waiter);
    tcase_add_test(tc, a_refusal_is_passed_on_as_refused);
    tcase_add_test(tc, a_runner_without_a_stream_is_not_connected);
    tcase_add_test(tc, the_queue_is_bounded_but_one_command_always_fits);
    tcase_add_test(tc, a_command_not_taken_in_time_is_withdrawn_and_never_written);
    tcase_add_test(tc, an_abandoned_command_is_withdrawn_unwritten);
    tcase_add_test(tc, an_answer_after_the_timeout_is_counted_late_and_not_passed_on);
    tcase_add_test(tc, a_stream_that_ends_loses_written_commands_and_withdraws_queued_ones);
    tcase_add_test(tc, a_second_stream_of_the_same_runner_replaces_the_first);
    tcase_add_test(tc, a_revoked_runner_token_ends_its_control_stream);
    suite_add_tcase(s, tc);
    return s;
}
