/* grpc_transport_h2: the gRPC call transport on h2's server streams. */
#include "grpc/grpc_transport.h"

static int h2t_respond(void *stream, const struct h2_header *headers, size_t count, int has_body)
{
    return h2_stream_respond(stream, headers, count, has_body);
}

static int h2t_trailers(void *stream, const struct h2_header *headers, size_t count)
{
    return h2_stream_trailers(stream, headers, count);
}

static void h2t_resume(void *stream)
{
    h2_stream_resume(stream);
}

static void h2t_reset_after_end(void *stream, uint32_t error_code)
{
    h2_stream_reset_after_end(stream, error_code);
}

static void h2t_release(void *stream, size_t len)
{
    h2_stream_release(stream, len);
}

static void h2t_pause_input(void *stream, int paused)
{
    h2_stream_pause_input(stream, paused);
}

static size_t h2t_backlog(const void *stream)
{
    return h2_stream_connection_backlog(stream);
}

const struct grpc_transport grpc_transport_h2 = {
    .name = "h2",
    .index = 0,
    .carries_trailers = 1,
    .respond = h2t_respond,
    .trailers = h2t_trailers,
    .resume = h2t_resume,
    .reset_after_end = h2t_reset_after_end,
    .release = h2t_release,
    .pause_input = h2t_pause_input,
    .backlog = h2t_backlog,
};
