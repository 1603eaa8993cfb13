/* h2_client: one HTTP/2 client connection on libevent and nghttp2, plain
 * (prior knowledge) or TLS with ALPN h2.
 *
 * The client counterpart of struct h2_handler: the layer above (gRPC) gets
 * each response header, trailer and body chunk of a stream it started, is
 * asked for request body bytes, and hears when a stream or the connection
 * ends.  h2 knows nothing of gRPC here either. */
#ifndef AGENTHUB_H2_CLIENT_H
#define AGENTHUB_H2_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "h2/h2.h"

struct event_base;
struct h2_client;

struct h2_client_options {
    int tls;               /* TLS with ALPN h2 */
    const char *ca_file;   /* verify the server against FILE (NULL: system roots) */
    const char *cert_file; /* client certificate */
    const char *key_file;
    const char *server_name; /* SNI and verification name; default: the host */
};

struct h2_client_handler {
    /* One response header; TRAILER is 1 for a header of the trailing block. */
    void (*stream_header)(void *stream_data, int trailer, const uint8_t *name, size_t name_len,
                          const uint8_t *value, size_t value_len);
    /* A chunk of response body. */
    void (*stream_data)(void *stream_data, const uint8_t *data, size_t len);
    /* Request body bytes into BUF of up to LEN.  Returns the byte count,
     * with H2_READ_EOF (or H2_READ_EOF_END_STREAM: a client sends no
     * trailers, so both end the request) in *flags at the end, or
     * H2_READ_DEFERRED until h2_client_stream_resume. */
    ssize_t (*stream_read)(void *stream_data, uint8_t *buf, size_t len, uint32_t *flags);
    /* The stream is gone; error_code is the HTTP/2 error code (H2_NO_ERROR
     * for a clean end).  Not called for streams open when the connection
     * breaks: connection_broken covers them. */
    void (*stream_close)(void *stream_data, uint32_t error_code);
    /* The connection failed or ended; WHY says how.  Every stream on it is
     * over, and h2 calls nothing more for them. */
    void (*connection_broken)(void *client_data, const char *why);
};

/* Connects to HOST:PORT in the background; streams may be started at once.
 * Returns NULL with a reason in ERR (a malformed address, a name that does
 * not resolve, TLS files that do not load). */
struct h2_client *h2_client_new(struct event_base *base, const char *host_port,
                                const struct h2_client_options *options,
                                const struct h2_client_handler *handler, void *client_data,
                                char *err, size_t err_size);

/* Closes the connection without calling the handler. */
void h2_client_free(struct h2_client *client);

/* 1 once the connection failed or was closed. */
int h2_client_broken(const struct h2_client *client);

/* 1 when the connection is TLS (":scheme" https). */
int h2_client_is_tls(const struct h2_client *client);

/* Starts a request with HEADERS; its body comes from stream_read.
 * Returns the stream id (> 0), or -1. */
int32_t h2_client_request(struct h2_client *client, const struct h2_header *headers, size_t count,
                          void *stream_data);

/* Wakes a stream whose stream_read returned H2_READ_DEFERRED. */
void h2_client_stream_resume(struct h2_client *client, int32_t stream_id);

/* Resets the stream with an HTTP/2 error code; stream_close follows. */
void h2_client_stream_reset(struct h2_client *client, int32_t stream_id, uint32_t error_code);

/* Drops the stream's handler data: h2 calls nothing more for it. */
void h2_client_stream_forget(struct h2_client *client, int32_t stream_id);

/* Writes what is queued at the end of this loop turn. */
void h2_client_schedule_flush(struct h2_client *client);

#endif
