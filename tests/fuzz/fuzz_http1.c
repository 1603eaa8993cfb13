/* libFuzzer target for HTTP/1.1 connections (src/http1 with Debian's
 * http-parser) and the grpc-web-text request decoder.  The input is written
 * into one end of a socketpair whose other end http1 owns, with a handler
 * that answers every request; the connection must come to an end (answered,
 * refused or timed out) without a crash, a leak or a hang, and the base64
 * decoder must accept or refuse the same bytes cleanly. */
#include <event2/event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/byte_queue.h"
#include "grpc/grpc_protocol.h"
#include "http1/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_request {
    struct http1_request *request;
    size_t body;
    int sent;
};

static void *on_open(void *server_data, struct http1_request *request)
{
    struct fuzz_request *r = calloc(1, sizeof(*r));
    if (r)
        r->request = request;
    return r;
}

static int on_header(void *data, const uint8_t *name, size_t name_len, const uint8_t *value,
                     size_t value_len)
{
    return name_len == 6 && memcmp(name, "x-fail", 6) == 0 ? -1 : 0;
}

static void on_headers_done(void *data)
{
}

static void on_data(void *data, const uint8_t *bytes, size_t len)
{
    ((struct fuzz_request *)data)->body += len;
}

static void on_end(void *data)
{
    struct fuzz_request *r = data;
    static const struct http1_header headers[] = {{":status", 7, "200", 3},
                                                  {"content-type", 12, "text/plain", 10}};

    http1_request_respond(r->request, headers, 2, 1);
}

static ssize_t on_read(void *data, uint8_t *buf, size_t len, uint32_t *flags)
{
    struct fuzz_request *r = data;

    if (r->sent || len < 2)
        return HTTP1_READ_DEFERRED;
    r->sent = 1;
    memcpy(buf, "ok", 2);
    *flags |= HTTP1_READ_EOF;
    return 2;
}

static void on_close(void *data, int aborted)
{
    free(data);
}

static const struct http1_handler handler = {on_open, on_header, on_headers_done, on_data,
                                             on_end,  on_read,   on_close};

static void on_conn_gone(void *arg)
{
    *(int *)arg = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct event_base *base;
    struct http1_limits limits = {.max_header_bytes = 4096,
                                  .max_body_bytes = 16384,
                                  .request_timeout_ms = 50,
                                  .write_timeout_ms = 50};
    struct http1_server *server;
    struct grpc_base64_decoder dec = {0};
    struct byte_queue decoded = {0};
    uint8_t sink[4096];
    int sv[2], gone = 0;

    (void)grpc_base64_decoder_feed(&dec, data, size, &decoded);
    byte_queue_free(&decoded);
    if (!base)
        base = event_base_new();
    server = http1_server_new(base, &limits, &handler, NULL);
    if (!server || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        abort();
    if (http1_server_adopt(server, sv[0], NULL, on_conn_gone, &gone) != 0)
        abort();
    for (size_t at = 0; at < size;) {
        ssize_t n = write(sv[1], data + at, size - at);
        if (n > 0)
            at += (size_t)n;
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        while (read(sv[1], sink, sizeof(sink)) > 0)
            ;
        if (gone)
            break;
    }
    shutdown(sv[1], SHUT_WR);
    for (int i = 0; i < 1000 && !gone; i++) {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        while (read(sv[1], sink, sizeof(sink)) > 0)
            ;
    }
    http1_server_free(server);
    close(sv[1]);
    return 0;
}
