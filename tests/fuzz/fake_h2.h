/* fake_h2: an in-memory stand-in for src/h2 (it implements h2.h) so a
 * fuzz target drives the gRPC layer and the handlers exactly as HTTP/2
 * would, without sockets.  The target plays the client: it opens streams on
 * a listener, sends headers, body bytes and END_STREAM, and pumps the
 * server's responses the way nghttp2's send loop does (stream_read until
 * deferred or EOF, a window of bytes per round, resets and closes).
 *
 * Streams are named by id, never by pointer, so a closed stream is simply
 * gone.  Every h2.h contract is checked: a second response, trailers before
 * the body's end or a malformed gRPC message in a response body abort; a
 * use after stream_close is ASan's to catch. */
#ifndef AGENTHUB_FUZZ_FAKE_H2_H
#define AGENTHUB_FUZZ_FAKE_H2_H

#include <stddef.h>
#include <stdint.h>

#include "h2/h2.h"

/* The listener h2_listen registered under NAME, or NULL. */
struct h2_listener *fake_h2_listener(struct h2_server *server, const char *name);

/* Opens a client stream on LISTENER.  Returns its id (> 0), or 0 when the
 * handler refused it. */
uint32_t fake_h2_open(struct h2_server *server, struct h2_listener *listener);

/* Client events on stream ID; each is ignored (returns -1) once the stream
 * is closed, reset, or (for data and end) already half-closed. */
int fake_h2_header(struct h2_server *server, uint32_t id, const char *name, const char *value);
int fake_h2_headers_done(struct h2_server *server, uint32_t id);
int fake_h2_data(struct h2_server *server, uint32_t id, const uint8_t *data, size_t len);
int fake_h2_end(struct h2_server *server, uint32_t id);
/* The client resets the stream (RST_STREAM CANCEL): stream_close follows. */
void fake_h2_cancel(struct h2_server *server, uint32_t id);

/* 1 while stream ID is open. */
int fake_h2_alive(struct h2_server *server, uint32_t id);

/* Runs the server's send side for every stream once: pulls body bytes (up
 * to a window per stream), delivers resets, closes streams whose both
 * halves ended. */
void fake_h2_pump(struct h2_server *server);

/* Open streams on SERVER. */
size_t fake_h2_stream_count(const struct h2_server *server);

#endif
