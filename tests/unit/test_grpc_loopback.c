/* The gRPC server and client layers against each other in one process:
 * the client must speak to the server exactly as a real peer would. */
#include <check.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "agenthub/testing/v1/echo.pb-c.h"
#include "grpc/grpc.h"
#include "grpc/grpc_client.h"
#include "grpc/health/v1/health.pb-c.h"
#include "h2/h2.h"
#include "rpc/rpc.h"

struct fixture {
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_server *grpc;
    struct hub hub;
    struct rpc_context rpc;
    struct grpc_client *client;
};

static struct fixture fx;

static void setup(void)
{
    struct h2_limits h2_limits = {.max_concurrent_streams = 100,
                                  .max_header_list_bytes = 16384,
                                  .idle_timeout_ms = 60000,
                                  .max_connections = 100};
    struct grpc_limits grpc_limits = {.max_recv_bytes = 1024 * 1024, .send_bound_bytes = 64 * 1024};
    struct grpc_door *door;
    char err[256];

    memset(&fx, 0, sizeof(fx));
    fx.base = event_base_new();
    fx.h2 = h2_server_new(fx.base, &h2_limits);
    fx.grpc = grpc_server_new(fx.base, fx.h2, &grpc_limits);
    fx.rpc.hub = &fx.hub;
    fx.rpc.health = health_new();
    door = grpc_door_new(fx.grpc, "public", &fx.rpc);
    ck_assert_int_eq(health_register(&fx.rpc, door), 0);
    ck_assert_int_eq(echo_register(&fx.rpc, door), 0);
    ck_assert_int_eq(grpc_door_listen(door, "127.0.0.1:0", NULL, err, sizeof(err)), 0);
    fx.client = grpc_client_new(fx.base, grpc_door_address(door), NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(fx.client);
}

static void teardown(void)
{
    grpc_client_free(fx.client);
    h2_server_free(fx.h2);
    grpc_server_free(fx.grpc);
    health_free(fx.rpc.health);
    event_base_free(fx.base);
}

START_TEST(test_unary_echo_returns_the_payload)
{
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;

    request.payload.data = (uint8_t *)"hello";
    request.payload.len = 5;
    ck_assert_int_eq(grpc_client_unary(fx.client, "/agenthub.testing.v1.EchoService/Unary", NULL,
                                       5000, &request.base,
                                       &agenthub__testing__v1__echo_response__descriptor, &response,
                                       &result),
                     GRPC_STATUS_OK);
    Agenthub__Testing__V1__EchoResponse *echo = (Agenthub__Testing__V1__EchoResponse *)response;
    ck_assert_uint_eq(echo->payload.len, 5);
    ck_assert_mem_eq(echo->payload.data, "hello", 5);
    protobuf_c_message_free_unpacked(response, NULL);
}
END_TEST

START_TEST(test_status_message_survives_percent_encoding)
{
    static const char message[] = "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and "
                                  "non-BMP \xf0\x9f\x98\x88\t\n";
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;

    request.status_code = GRPC_STATUS_FAILED_PRECONDITION;
    request.status_message = (char *)message;
    ck_assert_int_eq(grpc_client_unary(fx.client, "/agenthub.testing.v1.EchoService/Unary", NULL,
                                       5000, &request.base,
                                       &agenthub__testing__v1__echo_response__descriptor, &response,
                                       &result),
                     GRPC_STATUS_FAILED_PRECONDITION);
    ck_assert_ptr_null(response);
    ck_assert_str_eq(result.message, message);
}
END_TEST

START_TEST(test_unknown_method_is_unimplemented)
{
    Grpc__Health__V1__HealthCheckRequest request = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;

    ck_assert_int_eq(grpc_client_unary(fx.client, "/nope.Service/Method", NULL, 5000, &request.base,
                                       &grpc__health__v1__health_check_response__descriptor,
                                       &response, &result),
                     GRPC_STATUS_UNIMPLEMENTED);
}
END_TEST

struct stream_state {
    int messages;
    size_t bytes;
    int done;
    struct grpc_client_result result;
};

static void stream_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct stream_state *state = arg;
    state->messages++;
    state->bytes += len;
}

static void stream_on_done(void *arg, const struct grpc_client_result *result)
{
    struct stream_state *state = arg;
    state->result = *result;
    state->done = 1;
}

static const struct grpc_client_call_handler stream_handler = {stream_on_message, stream_on_done};

START_TEST(test_server_stream_larger_than_the_send_bound_arrives_whole)
{
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    struct stream_state state = {0};
    struct grpc_client_call *call;

    request.response_count = 2000;
    request.response_size = 1000; /* 2 MB through a 64 KiB bound */
    call = grpc_client_call_start(fx.client, "/agenthub.testing.v1.EchoService/ServerStream", NULL,
                                  10000, &stream_handler, &state);
    ck_assert_ptr_nonnull(call);
    grpc_client_call_send(call, &request.base);
    grpc_client_call_close_send(call);
    while (!state.done)
        event_base_loop(fx.base, EVLOOP_ONCE);
    ck_assert_int_eq(state.result.status, GRPC_STATUS_OK);
    ck_assert_int_eq(state.messages, 2000);
}
END_TEST

START_TEST(test_bidi_echoes_each_message_then_finishes_on_half_close)
{
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    struct stream_state state = {0};
    struct grpc_client_call *call;

    request.payload.data = (uint8_t *)"x";
    request.payload.len = 1;
    call = grpc_client_call_start(fx.client, "/agenthub.testing.v1.EchoService/Bidi", NULL, 10000,
                                  &stream_handler, &state);
    for (int i = 0; i < 10; i++)
        grpc_client_call_send(call, &request.base);
    grpc_client_call_close_send(call);
    while (!state.done)
        event_base_loop(fx.base, EVLOOP_ONCE);
    ck_assert_int_eq(state.result.status, GRPC_STATUS_OK);
    ck_assert_int_eq(state.messages, 10);
}
END_TEST

START_TEST(test_deadline_ends_a_held_stream_with_deadline_exceeded)
{
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    struct stream_state state = {0};
    struct grpc_client_call *call;

    request.hold_open = 1;
    call = grpc_client_call_start(fx.client, "/agenthub.testing.v1.EchoService/ServerStream", NULL,
                                  20, &stream_handler, &state);
    grpc_client_call_send(call, &request.base);
    grpc_client_call_close_send(call);
    while (!state.done)
        event_base_loop(fx.base, EVLOOP_ONCE);
    ck_assert_int_eq(state.result.status, GRPC_STATUS_DEADLINE_EXCEEDED);
    /* Both sides enforce the deadline; whichever fires first, the server's
     * call is gone once the loop has carried the reset or the trailers. */
    while (grpc_server_call_count(fx.grpc) != 0)
        event_base_loop(fx.base, EVLOOP_ONCE);
}
END_TEST

START_TEST(test_client_cancel_frees_the_server_call)
{
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    struct stream_state state = {0};
    struct grpc_client_call *call;

    request.hold_open = 1;
    call = grpc_client_call_start(fx.client, "/agenthub.testing.v1.EchoService/ServerStream", NULL,
                                  0, &stream_handler, &state);
    grpc_client_call_send(call, &request.base);
    grpc_client_call_close_send(call);
    while (grpc_server_call_count(fx.grpc) == 0)
        event_base_loop(fx.base, EVLOOP_ONCE);
    grpc_client_call_cancel(call);
    while (!state.done || grpc_server_call_count(fx.grpc) != 0)
        event_base_loop(fx.base, EVLOOP_ONCE);
    ck_assert_int_eq(state.result.status, GRPC_STATUS_CANCELLED);
}
END_TEST

START_TEST(test_client_deadline_fires_against_a_peer_that_never_answers)
{
    Grpc__Health__V1__HealthCheckRequest request = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    struct sockaddr_in addr = {0};
    socklen_t len = sizeof(addr);
    ProtobufCMessage *response = NULL;
    struct grpc_client_result result;
    struct grpc_client *silent;
    char target[64], err[256];
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* A listener nobody accepts on: the kernel completes the handshake, then
     * nothing is ever read or written. */
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    ck_assert_int_eq(listen(fd, 4), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    snprintf(target, sizeof(target), "127.0.0.1:%u", ntohs(addr.sin_port));
    silent = grpc_client_new(fx.base, target, NULL, err, sizeof(err));
    ck_assert_ptr_nonnull(silent);
    ck_assert_int_eq(
        grpc_client_unary(silent, "/grpc.health.v1.Health/Check", NULL, 100, &request.base,
                          &grpc__health__v1__health_check_response__descriptor, &response, &result),
        GRPC_STATUS_DEADLINE_EXCEEDED);
    ck_assert_ptr_null(response);
    grpc_client_free(silent);
    close(fd);
}
END_TEST

Suite *grpc_loopback_suite(void)
{
    Suite *suite = suite_create("grpc_loopback");
    TCase *tc = tcase_create("loopback");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_unary_echo_returns_the_payload);
    tcase_add_test(tc, test_status_message_survives_percent_encoding);
    tcase_add_test(tc, test_unknown_method_is_unimplemented);
    tcase_add_test(tc, test_server_stream_larger_than_the_send_bound_arrives_whole);
    tcase_add_test(tc, test_bidi_echoes_each_message_then_finishes_on_half_close);
    tcase_add_test(tc, test_deadline_ends_a_held_stream_with_deadline_exceeded);
    tcase_add_test(tc, test_client_cancel_frees_the_server_call);
    tcase_add_test(tc, test_client_deadline_fires_against_a_peer_that_never_answers);
    suite_add_tcase(suite, tc);
    return suite;
}
