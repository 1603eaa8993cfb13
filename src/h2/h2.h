/* h2: HTTP/2 listeners and connections on libevent and nghttp2.
 *
 * h2 knows nothing of gRPC.  The layer above installs a struct h2_handler
 * per listener; h2 calls it for each stream event and asks it for response
 * body bytes through a deferred data provider. */
#ifndef AGENTHUB_H2_H
#define AGENTHUB_H2_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct event_base;
struct h2_server;
struct h2_listener;
struct h2_stream;

struct h2_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/* HTTP/2 error codes (RFC 9113 section 7), for RST_STREAM and GOAWAY and as
 * stream_close's error_code.  The same values as nghttp2's, named here so
 * the layers above need no nghttp2 header. */
enum h2_error_code {
    H2_NO_ERROR = 0x0,
    H2_PROTOCOL_ERROR = 0x1,
    H2_INTERNAL_ERROR = 0x2,
    H2_FLOW_CONTROL_ERROR = 0x3,
    H2_SETTINGS_TIMEOUT = 0x4,
    H2_STREAM_CLOSED = 0x5,
    H2_FRAME_SIZE_ERROR = 0x6,
    H2_REFUSED_STREAM = 0x7,
    H2_CANCEL = 0x8,
    H2_COMPRESSION_ERROR = 0x9,
    H2_CONNECT_ERROR = 0xa,
    H2_ENHANCE_YOUR_CALM = 0xb,
    H2_INADEQUATE_SECURITY = 0xc,
    H2_HTTP_1_1_REQUIRED = 0xd,
};

/* What stream_read returns through *flags: the body is over, and the
 * response ends either with trailers the handler will submit (H2_READ_EOF,
 * as gRPC does) or with this last DATA frame (H2_READ_EOF_END_STREAM: no
 * trailers, as a plain HTTP response does). */
#define H2_READ_EOF            0x1
#define H2_READ_EOF_END_STREAM 0x2

/* Returned by stream_read when no body byte is ready yet. */
#define H2_READ_DEFERRED ((ssize_t)-1)
/* Returned by stream_read to reset the stream with INTERNAL_ERROR. */
#define H2_READ_ERROR ((ssize_t)-2)

struct h2_handler {
    /* A new request stream.  Returns the stream's handler data, or NULL to
     * refuse it (RST_STREAM REFUSED_STREAM). */
    void *(*stream_open)(void *listener_data, struct h2_stream *stream);
    /* One request header.  Returns 0, or -1 to reset the stream. */
    int (*stream_header)(void *stream_data, const uint8_t *name, size_t name_len,
                         const uint8_t *value, size_t value_len);
    /* The request header block is complete. */
    void (*stream_headers_done)(void *stream_data);
    /* A chunk of request body. */
    void (*stream_data)(void *stream_data, const uint8_t *data, size_t len);
    /* The client half-closed (END_STREAM). */
    void (*stream_end)(void *stream_data);
    /* Body bytes for the response, into BUF of up to LEN bytes.  Returns the
     * byte count (with H2_READ_EOF or H2_READ_EOF_END_STREAM in *flags at the
     * end), H2_READ_DEFERRED, or H2_READ_ERROR. */
    ssize_t (*stream_read)(void *stream_data, uint8_t *buf, size_t len, uint32_t *flags);
    /* The stream is gone: finished, reset by either side, or its connection
     * closed.  error_code is the HTTP/2 error code (0 for a clean close).
     * The handler must not touch the h2_stream afterwards. */
    void (*stream_close)(void *stream_data, uint32_t error_code);
};

struct h2_limits {
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS */
    uint32_t max_header_list_bytes;  /* request header list cap */
    uint32_t idle_timeout_ms;        /* close connections that make no progress */
    uint32_t max_connections;        /* per listener */
    /* Longest the TLS handshake and connection preface, or a request header
     * block, may stay unfinished (0: H2_DEFAULT_HEADER_TIMEOUT_MS). */
    uint32_t header_timeout_ms;
    /* Request body bytes received but not yet released by the handler, per
     * connection and across the server.  Over either, new streams are
     * refused and flow-control credit is withheld (see h2_stream_release).
     * 0 picks the H2_DEFAULT_ value. */
    size_t conn_recv_budget;
    size_t server_recv_budget;
};

#define H2_DEFAULT_HEADER_TIMEOUT_MS  10000
#define H2_DEFAULT_CONN_RECV_BUDGET   (16 * 1024 * 1024)
#define H2_DEFAULT_SERVER_RECV_BUDGET (256 * 1024 * 1024)

struct h2_tls_config {
    const char *cert_file;
    const char *key_file;
    const char *client_ca_file; /* NULL: no client certificates asked */
};

struct h2_stats {
    uint64_t connections_open;
    uint64_t connections_total;
    uint64_t streams_open;
    uint64_t streams_total;
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t recv_buffered;          /* gauge: request bytes held, all connections */
    uint64_t connections_over_limit; /* closed at accept: over --max-connections */
    uint64_t idle_closes;            /* closed for making no progress */
    uint64_t header_timeouts;        /* closed with a header block left open */
    uint64_t streams_refused_budget; /* REFUSED_STREAM: over a receive budget */
    uint64_t accept_pauses;          /* accept paused: out of file descriptors */
};

/* Creates the server on BASE.  Returns NULL on allocation failure. */
struct h2_server *h2_server_new(struct event_base *base, const struct h2_limits *limits);

/* Frees every listener and closes every connection (streams get
 * stream_close first). */
void h2_server_free(struct h2_server *server);

/* Binds HOST:PORT (port 0 picks one) and starts accepting.  TLS may be
 * NULL for h2c with prior knowledge.  Returns the listener, or NULL with a
 * reason in ERR. */
struct h2_listener *h2_listen(struct h2_server *server, const char *name, const char *host_port,
                              const struct h2_tls_config *tls, const struct h2_handler *handler,
                              void *listener_data, char *err, size_t err_size);

/* Loads TLS's files into a throwaway context, so a bad certificate or key is
 * found at start rather than at the first handshake.  Returns 0, or -1 with
 * the reason (naming the file) in ERR. */
int h2_tls_check(const struct h2_tls_config *tls, char *err, size_t err_size);

/* Hands a plaintext listener's connections that are not HTTP/2 to another
 * layer.  Each accepted socket is peeked at (MSG_PEEK: no byte is taken
 * from it) until it either starts like the HTTP/2 connection preface or
 * cannot; then FN(ARG, LISTENER, FD, NULL) owns FD.  The listener keeps counting
 * the connection against max_connections until its new owner calls
 * h2_listener_release.  The peek is bounded by header_timeout_ms.  A TLS
 * listener offers ALPN "http/1.1" besides "h2" and hands over a connection
 * whose handshake chose it (or no protocol): FN(ARG, LISTENER, -1, BEV)
 * then owns the TLS bufferevent. */
struct bufferevent;
typedef void (*h2_fallback_fn)(void *arg, struct h2_listener *listener, int fd,
                               struct bufferevent *bev);
void h2_listener_set_fallback(struct h2_listener *listener, h2_fallback_fn fn, void *arg);
/* A connection handed over through the fallback is gone. */
void h2_listener_release(struct h2_listener *listener);

/* The limits the server was made with (defaults filled in). */
const struct h2_limits *h2_server_limits(const struct h2_server *server);

/* "127.0.0.1:43121" of a bound listener. */
const char *h2_listener_address(const struct h2_listener *listener);

/* Stops accepting and sends GOAWAY on every connection; streams in flight
 * continue.  Connections close once they have no open stream. */
void h2_server_drain(struct h2_server *server);

/* Open connections across all listeners. */
size_t h2_server_connection_count(const struct h2_server *server);

const struct h2_stats *h2_server_stats(const struct h2_server *server);

/* Prometheus text of h2_server_stats: connections, streams, bytes, and
 * what the limits closed or refused. */
void h2_server_write_metrics(const struct h2_server *server, FILE *out);

/* --- Streams ------------------------------------------------------------- */

/* Sends response headers.  With has_body, body bytes come from
 * stream_read; without, the HEADERS frame ends the stream.  Returns 0, or
 * -1 when the stream is already gone. */
int h2_stream_respond(struct h2_stream *stream, const struct h2_header *headers, size_t count,
                      int has_body);

/* Sends trailers; only after stream_read returned H2_READ_EOF (that is, from
 * within stream_read, or later).  Returns 0 or -1. */
int h2_stream_trailers(struct h2_stream *stream, const struct h2_header *headers, size_t count);

/* Wakes a stream whose stream_read returned H2_READ_DEFERRED.  The write
 * is flushed at the end of the current loop iteration. */
void h2_stream_resume(struct h2_stream *stream);

/* Request body flow control.  Every DATA byte handed to stream_data is
 * "held" until the handler releases it (delivered to the application or
 * thrown away); held bytes count against the connection's and the server's
 * receive budgets.  h2 returns stream window (WINDOW_UPDATE) for received
 * bytes while the stream is not paused and the budgets have room; over a
 * budget, one stream per connection at a time keeps getting it so a message
 * in progress can still complete, and the others are held to what is left
 * of their windows.  A stream's remaining held bytes are released when it
 * closes. */
void h2_stream_release(struct h2_stream *stream, size_t len);

/* Paused (1), the stream gets no flow-control credit, so a client that
 * keeps sending is stopped by its window; unpaused (0) returns the credit
 * withheld meanwhile. */
void h2_stream_pause_input(struct h2_stream *stream, int paused);

/* Resets the stream with an HTTP/2 error code.  stream_close follows. */
void h2_stream_reset(struct h2_stream *stream, uint32_t error_code);

/* Resets the stream with ERROR_CODE once its response (END_STREAM) has
 * been sent, so a client still sending learns to stop; at once when it
 * already was. */
void h2_stream_reset_after_end(struct h2_stream *stream, uint32_t error_code);

/* The listener's name ("public", "runner"). */
const char *h2_stream_listener_name(const struct h2_stream *stream);

/* Bytes queued on the stream's connection but not yet written to the
 * socket: a connection-wide backlog signal. */
size_t h2_stream_connection_backlog(const struct h2_stream *stream);

#endif
