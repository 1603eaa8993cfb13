/* agenthub.testing.v1.EchoService: registered only in test builds
 * (FAILPOINTS=1) so the e2e suites can pin the gRPC layer's rules. */
#include <stdlib.h>
#include <string.h>

#include "agenthub/testing/v1/echo.pb-c.h"
#include "grpc/grpc.h"
#include "rpc/rpc.h"

struct echo_stream {
    uint32_t remaining;
    uint32_t index;
    uint32_t size;
    int hold_open;
    uint64_t total_bytes;
};

/* Interop-style metadata echo: x-grpc-test-echo-initial comes back as
 * initial metadata, x-grpc-test-echo-trailing-bin (base64) as a trailer. */
static void echo_metadata(struct grpc_call *call)
{
    const char *initial = grpc_call_metadata(call, "x-grpc-test-echo-initial");
    const char *trailing = grpc_call_metadata(call, "x-grpc-test-echo-trailing-bin");

    if (initial)
        grpc_call_add_initial_metadata(call, "x-grpc-test-echo-initial", (const uint8_t *)initial,
                                       strlen(initial));
    if (trailing) {
        size_t len = strlen(trailing);
        uint8_t *decoded = malloc(len / 4 * 3 + 3);
        long n = decoded ? grpc_base64_decode(trailing, len, decoded) : -1;
        if (n >= 0)
            grpc_call_add_trailer(call, "x-grpc-test-echo-trailing-bin", decoded, (size_t)n);
        free(decoded);
    }
}

static void unary_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Agenthub__Testing__V1__EchoRequest *request =
        (const Agenthub__Testing__V1__EchoRequest *)message;
    Agenthub__Testing__V1__EchoResponse response = AGENTHUB__TESTING__V1__ECHO_RESPONSE__INIT;

    echo_metadata(call);
    if (request->status_code != 0) {
        grpc_call_finish(call, request->status_code, request->status_message);
        return;
    }
    response.payload = request->payload;
    response.total_bytes = request->payload.len;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

/* Sends as many responses as fit under the call's bound; the rest follow
 * from on_writable, which is how a pull-style producer works. */
static void server_stream_pump(struct grpc_call *call)
{
    struct echo_stream *stream = grpc_call_user(call);
    Agenthub__Testing__V1__EchoResponse response = AGENTHUB__TESTING__V1__ECHO_RESPONSE__INIT;
    uint8_t *payload;

    if (!stream || grpc_call_finished(call))
        return;
    payload = calloc(1, stream->size ? stream->size : 1);
    if (!payload) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    response.payload.data = payload;
    response.payload.len = stream->size;
    while (stream->remaining > 0 && !grpc_call_over_bound(call)) {
        response.index = stream->index++;
        stream->remaining--;
        grpc_call_send(call, &response.base);
    }
    free(payload);
    if (stream->remaining == 0 && !stream->hold_open)
        grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void server_stream_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Agenthub__Testing__V1__EchoRequest *request =
        (const Agenthub__Testing__V1__EchoRequest *)message;
    struct echo_stream *stream = calloc(1, sizeof(*stream));

    if (!stream) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    echo_metadata(call);
    if (request->status_code != 0) {
        free(stream);
        grpc_call_finish(call, request->status_code, request->status_message);
        return;
    }
    stream->remaining = request->response_count;
    stream->size = request->response_size;
    stream->hold_open = request->hold_open;
    grpc_call_set_user(call, stream);
    server_stream_pump(call);
}

static void stream_on_close(struct grpc_call *call)
{
    free(grpc_call_user(call));
}

static void client_stream_on_start(struct grpc_call *call)
{
    struct echo_stream *stream = calloc(1, sizeof(*stream));
    if (!stream) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    grpc_call_set_user(call, stream);
}

static void client_stream_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Agenthub__Testing__V1__EchoRequest *request =
        (const Agenthub__Testing__V1__EchoRequest *)message;
    struct echo_stream *stream = grpc_call_user(call);

    stream->total_bytes += request->payload.len;
    stream->index++;
}

static void client_stream_on_half_close(struct grpc_call *call)
{
    struct echo_stream *stream = grpc_call_user(call);
    Agenthub__Testing__V1__EchoResponse response = AGENTHUB__TESTING__V1__ECHO_RESPONSE__INIT;

    response.total_bytes = stream->total_bytes;
    response.index = stream->index;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void bidi_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Agenthub__Testing__V1__EchoRequest *request =
        (const Agenthub__Testing__V1__EchoRequest *)message;
    struct echo_stream *stream = grpc_call_user(call);
    Agenthub__Testing__V1__EchoResponse response = AGENTHUB__TESTING__V1__ECHO_RESPONSE__INIT;

    if (request->status_code != 0) {
        grpc_call_finish(call, request->status_code, request->status_message);
        return;
    }
    stream->total_bytes += request->payload.len;
    if (request->response_count > 0) {
        /* A handler that pushes without looking at its send queue: the
         * layer's cap is what stops it. */
        uint8_t *payload = calloc(1, request->response_size ? request->response_size : 1);
        if (!payload) {
            grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
            return;
        }
        response.payload.data = payload;
        response.payload.len = request->response_size;
        for (uint32_t i = 0; i < request->response_count; i++) {
            response.index = stream->index++;
            if (grpc_call_send(call, &response.base) != 0)
                break;
        }
        free(payload);
        return;
    }
    response.payload = request->payload;
    response.index = stream->index++;
    response.total_bytes = stream->total_bytes;
    grpc_call_send(call, &response.base);
}

static void bidi_on_half_close(struct grpc_call *call)
{
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static const struct grpc_method echo_methods[] = {
    {
        .path = "/agenthub.testing.v1.EchoService/Unary",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &agenthub__testing__v1__echo_request__descriptor,
        .on_message = unary_on_message,
    },
    {
        .path = "/agenthub.testing.v1.EchoService/ServerStream",
        .kind = GRPC_METHOD_SERVER_STREAMING,
        .request_type = &agenthub__testing__v1__echo_request__descriptor,
        .on_message = server_stream_on_message,
        .on_writable = server_stream_pump,
        .on_close = stream_on_close,
    },
    {
        .path = "/agenthub.testing.v1.EchoService/ClientStream",
        .kind = GRPC_METHOD_CLIENT_STREAMING,
        .request_type = &agenthub__testing__v1__echo_request__descriptor,
        .on_start = client_stream_on_start,
        .on_message = client_stream_on_message,
        .on_half_close = client_stream_on_half_close,
        .on_close = stream_on_close,
    },
    {
        .path = "/agenthub.testing.v1.EchoService/Bidi",
        .kind = GRPC_METHOD_BIDI_STREAMING,
        .request_type = &agenthub__testing__v1__echo_request__descriptor,
        .on_start = client_stream_on_start,
        .on_message = bidi_on_message,
        .on_half_close = bidi_on_half_close,
        .on_close = stream_on_close,
    },
};

int echo_register(struct rpc_context *rpc, struct grpc_door *door)
{
    for (size_t i = 0; i < sizeof(echo_methods) / sizeof(echo_methods[0]); i++)
        if (grpc_door_register(door, &echo_methods[i]) != 0)
            return -1;
    return 0;
}
