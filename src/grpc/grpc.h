/* grpc: gRPC calls on top of h2, per gRPC's PROTOCOL-HTTP2.
 *
 * A handler registers a method (path, kind, request type, callbacks) in a
 * door's method table.  The layer validates the request headers, reassembles
 * and decodes request messages, enforces grpc-timeout, and sends responses
 * through a bounded per-call queue drained by a deferred data provider.
 * Handlers see decoded messages and a struct grpc_call, never nghttp2. */
#ifndef AGENTHUB_GRPC_H
#define AGENTHUB_GRPC_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "grpc/grpc_wire.h"

struct event_base;
struct h2_server;
struct grpc_server;
struct grpc_door;
struct grpc_call;

enum grpc_method_kind {
    GRPC_METHOD_UNARY,
    GRPC_METHOD_SERVER_STREAMING,
    GRPC_METHOD_CLIENT_STREAMING,
    GRPC_METHOD_BIDI_STREAMING,
};

struct grpc_method {
    const char *path; /* "/package.Service/Method" */
    enum grpc_method_kind kind;
    const ProtobufCMessageDescriptor *request_type;
    /* The door's authenticator (grpc_door_set_authenticator) resolves the
     * caller from the request headers before any request byte is accepted;
     * a refused call ends there (Trailers-Only and RST_STREAM). */
    int needs_caller;
    /* Bits only the door's authenticator reads (what else a method needs
     * before it may start). */
    uint32_t door_flags;
    /* Optional: the request headers were accepted (before any message). */
    void (*on_start)(struct grpc_call *call);
    /* A decoded request message, freed when this returns.  Unary and
     * server-streaming methods get exactly one, after the client half-closed. */
    void (*on_message)(struct grpc_call *call, const ProtobufCMessage *request);
    /* Optional, client and bidi streaming: the client half-closed. */
    void (*on_half_close)(struct grpc_call *call);
    /* Optional: the send queue is empty and the connection wants bytes;
     * a pull-style producer sends more here. */
    void (*on_writable)(struct grpc_call *call);
    /* Optional: always the last callback; the call is freed when it returns.
     * grpc_call_finished tells whether the handler finished it. */
    void (*on_close)(struct grpc_call *call);
};

struct grpc_limits {
    size_t max_recv_bytes;   /* one request message; default 4 MiB */
    size_t send_bound_bytes; /* per-call queue size grpc_call_over_bound compares with */
    /* A request whose first message is not complete this long after it
     * started is cancelled (0: GRPC_DEFAULT_REQUEST_TIMEOUT_MS). */
    uint32_t request_timeout_ms;
};

#define GRPC_DEFAULT_REQUEST_TIMEOUT_MS 10000

/* A call whose send queue already holds more than its bound and would grow
 * past this many times the bound is ended RESOURCE_EXHAUSTED: its handler
 * keeps pushing to a client that does not read. */
#define GRPC_SEND_CAP_FACTOR 4

/* Resolves a call's caller from its request headers, for methods with
 * needs_caller.  CALLER points to caller_size zeroed bytes kept with the
 * call (grpc_call_caller).  Returns GRPC_STATUS_OK, or the status the call
 * is refused with and its message in *MESSAGE (static storage). */
struct grpc_authenticator {
    size_t caller_size;
    int (*authenticate)(struct grpc_call *call, const struct grpc_method *method, void *caller,
                        const char **message);
};

/* --- Server and doors ---------------------------------------------------- */

struct grpc_server *grpc_server_new(struct event_base *base, struct h2_server *h2,
                                    const struct grpc_limits *limits);
void grpc_server_free(struct grpc_server *server);

/* Checks a request message's wire bytes before they are decoded.  Returns 0,
 * or -1 with a message in WHY (WHY_SIZE bytes). */
typedef int (*grpc_request_check)(const ProtobufCMessageDescriptor *type, const uint8_t *bytes,
                                  size_t len, char *why, size_t why_size);
/* Runs CHECK on every request message of every method; a message it refuses
 * fails the call with INVALID_ARGUMENT and CHECK's message. */
void grpc_server_set_request_check(struct grpc_server *server, grpc_request_check check);

/* A door is a method table served on one listener.  door_data is handed to
 * handlers through grpc_call_door_data.  Returns NULL on allocation failure. */
struct grpc_door *grpc_door_new(struct grpc_server *server, const char *name, void *door_data);

/* Installs the authenticator of DOOR's needs_caller methods (AUTH is not
 * copied).  Without one such methods are refused UNAUTHENTICATED. */
/* Tags DOOR with KIND, a value of its owner's (which listener it is), so
 * handlers tell doors apart by value rather than by name. */
void grpc_door_set_kind(struct grpc_door *door, int kind);

void grpc_door_set_authenticator(struct grpc_door *door, const struct grpc_authenticator *auth);

/* Registers METHOD (not copied: it must outlive the server).  Returns 0, or
 * -1 when the path is already registered or memory is short. */
int grpc_door_register(struct grpc_door *door, const struct grpc_method *method);

/* DOOR's listener also serves HTTP/1.1 (for gRPC-Web and plain answers):
 * plaintext connections are told apart by their first bytes (the HTTP/2
 * preface or not), TLS ones by ALPN ("h2" preferred, "http/1.1", or none).
 * Call before grpc_door_listen. */
void grpc_door_serve_http1(struct grpc_door *door);

/* Binds HOST:PORT for DOOR (TLS when tls_cert is set).  Returns 0, or -1
 * with a reason in ERR.  The bound address is in grpc_door_address. */
struct h2_tls_config;
int grpc_door_listen(struct grpc_door *door, const char *host_port, const struct h2_tls_config *tls,
                     char *err, size_t err_size);
const char *grpc_door_address(const struct grpc_door *door);

/* 1 when DOOR has a method at PATH. */
int grpc_door_has_method(const struct grpc_door *door, const char *path);

/* Each service name ("grpc.health.v1.Health") DOOR serves, once, for
 * reflection and health: a client of one door discovers only what that door
 * answers.  Calls FN for each. */
void grpc_door_each_service(const struct grpc_door *door,
                            void (*fn)(const char *service, size_t len, void *arg), void *arg);

/* --- Browsers: CORS and plain HTTP answers on a door --------------------- */

/* Lets pages served from ORIGIN ("https://ui.example.com", scheme, host and
 * optional port, no path) call DOOR: CORS preflights (OPTIONS) from it are
 * answered, and responses to its requests carry Access-Control-Allow-Origin
 * and expose grpc-status, grpc-message and agenthub-last-seq.  Requests
 * from other origins get no CORS headers (a preflight gets 403).  Returns 0,
 * or -1 when ORIGIN is malformed or memory is short. */
int grpc_door_add_cors_origin(struct grpc_door *door, const char *origin);
/* 1 when ORIGIN is one grpc_door_add_cors_origin takes. */
int grpc_cors_origin_valid(const char *origin);

/* A plain HTTP answer, for a request on the door that is not a gRPC call
 * (GET /, say), on HTTP/2 and HTTP/1.1 alike.  Header names are lowercase;
 * content-length is added from body_len.  HEADERS and BODY are copied before
 * the responder returns. */
struct grpc_http_header {
    const char *name;
    const char *value;
};

struct grpc_http_response {
    int status; /* 200, 304, 404, ... */
    const struct grpc_http_header *headers;
    size_t header_count;
    const uint8_t *body;
    size_t body_len;
};

/* Called once a request's header block is complete, for any request that is
 * not a gRPC or gRPC-Web call (not POST, or a content-type of neither):
 * METHOD ("GET", "HEAD", ...) and PATH (the request target, query included);
 * request headers through grpc_call_metadata(CALL, name).  Returns 1 with
 * *OUT filled to answer, or 0 to leave the request to the door's usual
 * refusal (HTTP 405 or 415 with a grpc-status).  The request's body, if
 * any, is not read: the answer goes out at once.  HEAD requests get the
 * headers only. */
typedef int (*grpc_http_responder)(void *arg, struct grpc_call *call, const char *method,
                                   const char *path, struct grpc_http_response *out);

/* Installs DOOR's responder (one per door; NULL removes it). */
void grpc_door_set_http_responder(struct grpc_door *door, grpc_http_responder responder, void *arg);

/* Starts a graceful stop: GOAWAY on every connection, every streaming call
 * still open ends UNAVAILABLE, unary calls finish normally. */
void grpc_server_shutdown(struct grpc_server *server);

/* Calls still open. */
size_t grpc_server_call_count(const struct grpc_server *server);

/* Prometheus text: calls by method and status, open calls. */
void grpc_server_write_metrics(const struct grpc_server *server, FILE *out);

/* --- Calls --------------------------------------------------------------- */

void grpc_call_set_user(struct grpc_call *call, void *user);
void *grpc_call_user(const struct grpc_call *call);
void *grpc_call_door_data(const struct grpc_call *call);
const char *grpc_call_door_name(const struct grpc_call *call);
/* The kind its door was tagged with (grpc_door_set_kind), else 0. */
int grpc_call_door_kind(const struct grpc_call *call);
const struct grpc_door *grpc_call_door(const struct grpc_call *call);
const char *grpc_call_path(const struct grpc_call *call);

/* What the door's authenticator resolved for a needs_caller method, or
 * NULL for a method without. */
const void *grpc_call_caller(const struct grpc_call *call);

/* A request header value (NUL-terminated), or NULL.  NAME is lowercase. */
const char *grpc_call_metadata(const struct grpc_call *call, const char *name);

/* Queues a response message.  Returns 0, or -1 when the call is finished or
 * gone, or memory is short (the message is dropped), or the queue is past
 * GRPC_SEND_CAP_FACTOR times the bound (the layer ends the call with
 * RESOURCE_EXHAUSTED).  While the queue is over its bound the layer delivers
 * no further request message to the handler (HTTP/2 flow control holds the
 * client back) and resumes once it drains. */
int grpc_call_send(struct grpc_call *call, const ProtobufCMessage *message);

/* Queues one response message made of PREFIX then BODY (either may be
 * empty), already protobuf-encoded.  Returns 0 or -1 as grpc_call_send. */
int grpc_call_send_encoded(struct grpc_call *call, const uint8_t *prefix, size_t prefix_len,
                           const uint8_t *body, size_t body_len);

/* Sends the response headers now (a stream with nothing to say yet still
 * tells the client it was accepted).  Returns 0 or -1. */
int grpc_call_start_response(struct grpc_call *call);

/* Adds response metadata: initial (before the first message) or trailing.
 * A -bin name gets its value base64-encoded.  Returns 0 or -1. */
int grpc_call_add_initial_metadata(struct grpc_call *call, const char *name, const uint8_t *value,
                                   size_t len);
int grpc_call_add_trailer(struct grpc_call *call, const char *name, const uint8_t *value,
                          size_t len);

/* Ends the call with STATUS and MESSAGE (may be NULL); queued messages go
 * first.  A second finish is ignored. */
void grpc_call_finish(struct grpc_call *call, int status, const char *message);

/* 1 once grpc_call_finish ran (or the layer finished the call itself). */
int grpc_call_finished(const struct grpc_call *call);

/* 1 when the client went away before the call was finished. */
int grpc_call_cancelled(const struct grpc_call *call);

/* Bytes queued for this call but not yet handed to HTTP/2, and whether that
 * is over the door's send bound. */
size_t grpc_call_pending_bytes(const struct grpc_call *call);
int grpc_call_over_bound(const struct grpc_call *call);

/* Bytes the connection has not yet written to its socket. */
size_t grpc_call_connection_backlog(const struct grpc_call *call);

/* Wakes a pull-style producer: on_writable runs once HTTP/2 wants bytes. */
void grpc_call_want_writable(struct grpc_call *call);

#endif
