/* grpc_transport: what a server-side gRPC call needs from the connection
 * that carries it, as a table of functions.  HTTP/2 (grpc_transport_h2.c,
 * on h2's streams) is the first implementation; another (HTTP/1.1 for
 * gRPC-Web) can carry the same calls, and the handlers never know which.
 *
 * A transport hands each request to the call layer through the callbacks of
 * grpc_h2_handler after grpc_transport_call_open (they take the call, not
 * the transport's stream), and the call layer answers through these. */
#ifndef AGENTHUB_GRPC_TRANSPORT_H
#define AGENTHUB_GRPC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "h2/h2.h"

struct grpc_door;

/* STREAM is the transport's own handle for one call.  Headers are name and
 * value pairs (struct h2_header is only the pair; no HTTP/2 meaning). */
struct grpc_transport {
    const char *name; /* the metrics label: "h2", "http1" */
    int index;        /* below GRPC_TRANSPORT_COUNT, for per-transport counters */
    /* 1 when responses can carry HTTP trailers (HTTP/2); native gRPC needs
     * them, gRPC-Web does not. */
    int carries_trailers;
    /* Sends the response headers; with has_body the body is then pulled
     * through the call's read callback, else the headers end the response
     * (Trailers-Only).  Returns 0, or -1 when the stream is gone. */
    int (*respond)(void *stream, const struct h2_header *headers, size_t count, int has_body);
    /* Sends the trailers after the body.  Returns 0 or -1. */
    int (*trailers)(void *stream, const struct h2_header *headers, size_t count);
    /* Body bytes are ready again after the read callback said
     * H2_READ_DEFERRED. */
    void (*resume)(void *stream);
    /* Ends the stream with ERROR_CODE (an H2_ code) once the response is
     * out, so a client still sending learns to stop. */
    void (*reset_after_end)(void *stream, uint32_t error_code);
    /* Flow-control credit: LEN request bytes were consumed (SIZE_MAX: all
     * held), and the peer may send that much more. */
    void (*release)(void *stream, size_t len);
    /* Paused, the peer gets no more credit; unpaused, it gets back what was
     * withheld. */
    void (*pause_input)(void *stream, int paused);
    /* Bytes queued on the stream's connection and not yet written. */
    size_t (*backlog)(const void *stream);
};

#define GRPC_TRANSPORT_COUNT 2

/* HTTP/2 on h2 streams. */
extern const struct grpc_transport grpc_transport_h2;

/* HTTP/1.1 on http1's requests (gRPC-Web only: no trailers). */
extern const struct grpc_transport grpc_transport_http1;

/* A new request on DOOR, carried by TRANSPORT's STREAM.  Returns the call
 * to pass to the inbound callbacks, or NULL when out of memory (refuse the
 * stream). */
void *grpc_transport_call_open(struct grpc_door *door, const struct grpc_transport *transport,
                               void *stream);

#endif
