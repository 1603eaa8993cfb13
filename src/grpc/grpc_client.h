/* grpc_client: gRPC calls from the CLI, the Runner and the load tools, on
 * one h2 client connection (h2/h2_client.h) driven by a libevent loop.
 * Only gRPC lives here: message framing, status, deadlines.
 *
 * Calls are asynchronous (callbacks on the caller's event_base); a blocking
 * unary helper runs the loop until its call ends. */
#ifndef AGENTHUB_GRPC_CLIENT_H
#define AGENTHUB_GRPC_CLIENT_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc/grpc_wire.h"

struct event_base;
struct grpc_client;
struct grpc_client_call;

struct grpc_client_options {
    int tls;               /* TLS with ALPN h2 */
    const char *ca_file;   /* verify the server against FILE (NULL: system roots) */
    const char *cert_file; /* client certificate, for --tls-client-ca servers */
    const char *key_file;
    const char *server_name; /* SNI and verification name; default: the host */
};

/* The end of a call: status, decoded grpc-message and the trailers. */
struct grpc_client_result {
    int status;
    char message[1024];
    /* Trailing (and Trailers-Only) metadata as "name: value\n" lines. */
    char trailers[2048];
};

struct grpc_client_call_handler {
    /* A response message (raw protobuf bytes, valid during the call). */
    void (*on_message)(void *arg, const uint8_t *data, size_t len);
    /* The call ended; the call object is freed after this returns. */
    void (*on_done)(void *arg, const struct grpc_client_result *result);
};

/* Connects to HOST:PORT.  The connection is made in the background; calls
 * may be started at once.  Returns NULL with a reason in ERR. */
struct grpc_client *grpc_client_new(struct event_base *base, const char *host_port,
                                    const struct grpc_client_options *options, char *err,
                                    size_t err_size);

/* Closes the connection; open calls end with UNAVAILABLE first. */
void grpc_client_free(struct grpc_client *client);

/* 1 once the connection failed or was closed by the server. */
int grpc_client_broken(const struct grpc_client *client);

/* Starts a call on PATH.  TOKEN (may be NULL) goes out as
 * "authorization: Bearer TOKEN"; timeout_ms 0 means none.  Returns the
 * call, or NULL when the connection is broken or memory is short. */
struct grpc_client_call *grpc_client_call_start(struct grpc_client *client, const char *path,
                                                const char *token, uint32_t timeout_ms,
                                                const struct grpc_client_call_handler *handler,
                                                void *arg);

/* Queues a request message.  Returns 0 or -1. */
int grpc_client_call_send(struct grpc_client_call *call, const ProtobufCMessage *message);
int grpc_client_call_send_encoded(struct grpc_client_call *call, const uint8_t *data, size_t len);

/* Half-closes the request side (no more messages). */
void grpc_client_call_close_send(struct grpc_client_call *call);

/* Resets the call (RST_STREAM CANCEL); on_done follows with CANCELLED. */
void grpc_client_call_cancel(struct grpc_client_call *call);

/* Request bytes queued but not yet sent: for producers that must pace. */
size_t grpc_client_call_pending_bytes(const struct grpc_client_call *call);

/* Makes one unary call and runs the loop until it ends.  On OK, *response
 * is the unpacked reply (free with protobuf_c_message_free_unpacked).
 * Returns the gRPC status; RESULT (may be NULL) gets the details. */
int grpc_client_unary(struct grpc_client *client, const char *path, const char *token,
                      uint32_t timeout_ms, const ProtobufCMessage *request,
                      const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
                      struct grpc_client_result *result);

/* Looks NAME up in a result's trailers; copies its value into OUT.  Returns
 * 1 when found, else 0. */
int grpc_client_result_trailer(const struct grpc_client_result *result, const char *name, char *out,
                               size_t out_size);

#endif
