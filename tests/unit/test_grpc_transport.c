/* grpc_transport: a gRPC call carried by a transport that is not h2, so
 * the call layer and the handlers are shown to need only the table. */
#include <check.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "agenthub/testing/v1/echo.pb-c.h"
#include "grpc/grpc.h"
#include "grpc/grpc_internal.h"
#include "grpc/grpc_transport.h"
#include "grpc/health/v1/health.pb-c.h"
#include "h2/h2.h"
#include "hub/hub.h"
#include "rpc/rpc.h"

/* What the call layer asked of the transport. */
struct fake_stream {
    char status[8];
    int has_body;
    int responded;
    char grpc_status[8];
    int trailers;
    int resumes;
    size_t released;
    int released_all; /* release(SIZE_MAX): everything held */
    int reset;
    uint32_t reset_code;
};

static void copy_value(char *out, size_t size, const struct h2_header *h)
{
    size_t n = h->value_len < size - 1 ? h->value_len : size - 1;
    memcpy(out, h->value, n);
    out[n] = '\0';
}

static void find_header(const struct h2_header *headers, size_t count, const char *name, char *out,
                        size_t size)
{
    for (size_t i = 0; i < count; i++)
        if (headers[i].name_len == strlen(name) && memcmp(headers[i].name, name, strlen(name)) == 0)
            copy_value(out, size, &headers[i]);
}

static int fake_respond(void *stream, const struct h2_header *headers, size_t count, int has_body)
{
    struct fake_stream *fake = stream;
    fake->responded++;
    fake->has_body = has_body;
    find_header(headers, count, ":status", fake->status, sizeof(fake->status));
    find_header(headers, count, "grpc-status", fake->grpc_status, sizeof(fake->grpc_status));
    return 0;
}

static int fake_trailers(void *stream, const struct h2_header *headers, size_t count)
{
    struct fake_stream *fake = stream;
    fake->trailers++;
    find_header(headers, count, "grpc-status", fake->grpc_status, sizeof(fake->grpc_status));
    return 0;
}

static void fake_resume(void *stream)
{
    ((struct fake_stream *)stream)->resumes++;
}

static void fake_reset_after_end(void *stream, uint32_t error_code)
{
    struct fake_stream *fake = stream;
    fake->reset = 1;
    fake->reset_code = error_code;
}

static void fake_release(void *stream, size_t len)
{
    struct fake_stream *fake = stream;
    if (len == SIZE_MAX)
        fake->released_all = 1;
    else
        fake->released += len;
}

static void fake_pause_input(void *stream, int paused)
{
}

static size_t fake_backlog(const void *stream)
{
    return 0;
}

static const struct grpc_transport fake_transport = {
    .respond = fake_respond,
    .trailers = fake_trailers,
    .resume = fake_resume,
    .reset_after_end = fake_reset_after_end,
    .release = fake_release,
    .pause_input = fake_pause_input,
    .backlog = fake_backlog,
};

static void header(void *call, const char *name, const char *value)
{
    ck_assert_int_eq(grpc_h2_handler.stream_header(call, (const uint8_t *)name, strlen(name),
                                                   (const uint8_t *)value, strlen(value)),
                     0);
}

START_TEST(test_a_unary_call_runs_over_a_transport_that_is_not_h2)
{
    struct h2_limits h2_limits = {.max_concurrent_streams = 10,
                                  .max_header_list_bytes = 16384,
                                  .idle_timeout_ms = 60000,
                                  .max_connections = 10};
    struct grpc_limits grpc_limits = {.max_recv_bytes = 1024 * 1024, .send_bound_bytes = 64 * 1024};
    Agenthub__Testing__V1__EchoRequest request = AGENTHUB__TESTING__V1__ECHO_REQUEST__INIT;
    Agenthub__Testing__V1__EchoResponse *response;
    struct event_base *base = event_base_new();
    struct h2_server *h2 = h2_server_new(base, &h2_limits);
    struct grpc_server *grpc = grpc_server_new(base, h2, &grpc_limits);
    struct hub hub;
    struct rpc_context rpc;
    struct fake_stream fake;
    struct grpc_door *door;
    uint8_t frame[64], body[256];
    size_t frame_len, body_len = 0;
    uint32_t flags = 0;
    void *call;

    memset(&hub, 0, sizeof(hub));
    memset(&rpc, 0, sizeof(rpc));
    memset(&fake, 0, sizeof(fake));
    rpc.hub = &hub;
    rpc.health = health_new();
    door = grpc_door_new(grpc, "public", &rpc);
    ck_assert_int_eq(echo_register(&rpc, door), 0);

    call = grpc_transport_call_open(door, &fake_transport, &fake);
    ck_assert_ptr_nonnull(call);
    header(call, ":method", "POST");
    header(call, ":path", "/agenthub.testing.v1.EchoService/Unary");
    header(call, "content-type", "application/grpc");
    header(call, "te", "trailers");
    grpc_h2_handler.stream_headers_done(call);
    request.payload.data = (uint8_t *)"hello";
    request.payload.len = 5;
    frame_len = protobuf_c_message_pack(&request.base, frame + 5);
    frame[0] = 0;
    frame[1] = frame[2] = frame[3] = 0;
    frame[4] = (uint8_t)frame_len;
    frame_len += 5;
    grpc_h2_handler.stream_data(call, frame, frame_len);
    grpc_h2_handler.stream_end(call);

    for (int rounds = 0; rounds < 1000 && !(flags & H2_READ_EOF); rounds++) {
        ssize_t n = H2_READ_DEFERRED;
        if (fake.responded && fake.has_body)
            n = grpc_h2_handler.stream_read(call, body + body_len, sizeof(body) - body_len, &flags);
        if (n == H2_READ_DEFERRED) {
            event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
            continue;
        }
        ck_assert_int_ge(n, 0);
        body_len += (size_t)n;
    }
    ck_assert_uint_eq(flags & H2_READ_EOF, H2_READ_EOF);
    ck_assert_str_eq(fake.status, "200");
    ck_assert_int_eq(fake.trailers, 1);
    ck_assert_str_eq(fake.grpc_status, "0");
    /* the request's bytes were given back as credit */
    ck_assert(fake.released == frame_len || fake.released_all);
    ck_assert_uint_gt(body_len, 5);
    ck_assert_uint_eq(body[0], 0);
    response = agenthub__testing__v1__echo_response__unpack(NULL, body_len - 5, body + 5);
    ck_assert_ptr_nonnull(response);
    ck_assert_uint_eq(response->payload.len, 5);
    ck_assert_mem_eq(response->payload.data, "hello", 5);
    agenthub__testing__v1__echo_response__free_unpacked(response, NULL);
    grpc_h2_handler.stream_close(call, H2_NO_ERROR);

    h2_server_free(h2);
    grpc_server_free(grpc);
    health_free(rpc.health);
    event_base_free(base);
}
END_TEST

Suite *grpc_transport_suite(void)
{
    Suite *suite = suite_create("grpc_transport");
    TCase *tc = tcase_create("transport");

    tcase_add_test(tc, test_a_unary_call_runs_over_a_transport_that_is_not_h2);
    suite_add_tcase(suite, tc);
    return suite;
}
