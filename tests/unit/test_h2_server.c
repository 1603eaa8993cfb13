/* h2 without gRPC: a server handler that answers like a plain HTTP
 * server, checked by a bare nghttp2 client and by h2_client on the
 * loopback. */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "h2/h2.h"
#include "h2/h2_client.h"

/* What the server's handler was asked to end the body with. */
static uint32_t body_end_flag;
/* Request body bytes the server's handler received. */
static size_t request_bytes;

struct served {
    struct h2_stream *stream;
    int sent;
};

static void *plain_open(void *listener_data, struct h2_stream *stream)
{
    struct served *served = calloc(1, sizeof(*served));
    served->stream = stream;
    return served;
}

static int plain_header(void *data, const uint8_t *name, size_t name_len, const uint8_t *value,
                        size_t value_len)
{
    return 0;
}

static void plain_headers_done(void *data)
{
}

static void plain_data(void *data, const uint8_t *bytes, size_t len)
{
    struct served *served = data;
    request_bytes += len;
    h2_stream_release(served->stream, len);
}

static void plain_end(void *data)
{
    struct served *served = data;
    struct h2_header headers[] = {{":status", 7, "200", 3}, {"content-type", 12, "text/plain", 10}};
    h2_stream_respond(served->stream, headers, 2, 1);
}

static ssize_t plain_read(void *data, uint8_t *buf, size_t len, uint32_t *flags)
{
    struct served *served = data;

    if (served->sent)
        return H2_READ_DEFERRED;
    served->sent = 1;
    memcpy(buf, "hello", 5);
    *flags |= body_end_flag;
    if (body_end_flag == H2_READ_EOF) {
        struct h2_header trailers[] = {{"x-end", 5, "trailers", 8}};
        h2_stream_trailers(served->stream, trailers, 1);
    }
    return 5;
}

static void plain_close(void *data, uint32_t error_code)
{
    free(data);
}

static const struct h2_handler plain_handler = {
    .stream_open = plain_open,
    .stream_header = plain_header,
    .stream_headers_done = plain_headers_done,
    .stream_data = plain_data,
    .stream_end = plain_end,
    .stream_read = plain_read,
    .stream_close = plain_close,
};

/* What the client saw. */
struct seen {
    char body[64];
    size_t body_len;
    int header_blocks;
    int data_end_stream;     /* the last DATA frame carried END_STREAM */
    int trailers_end_stream; /* a second HEADERS block carried END_STREAM */
    int closed;
    uint32_t close_code;
};

static int on_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                    size_t len, void *user_data)
{
    struct seen *seen = user_data;
    memcpy(seen->body + seen->body_len, data, len);
    seen->body_len += len;
    return 0;
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct seen *seen = user_data;

    if (frame->hd.stream_id != 1)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS) {
        seen->header_blocks++;
        if (seen->header_blocks == 2 && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
            seen->trailers_end_stream = 1;
    } else if (frame->hd.type == NGHTTP2_DATA && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        seen->data_end_stream = 1;
    }
    return 0;
}

static int on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                    void *user_data)
{
    struct seen *seen = user_data;
    seen->closed = 1;
    seen->close_code = error_code;
    return 0;
}

/* Runs one GET against a fresh server whose handler ends the body with
 * END_FLAG, and returns what the client saw. */
static struct seen fetch_once(uint32_t end_flag)
{
    struct h2_limits limits = {.max_concurrent_streams = 10,
                               .max_header_list_bytes = 16384,
                               .idle_timeout_ms = 60000,
                               .max_connections = 10};
    struct event_base *base = event_base_new();
    struct h2_server *server = h2_server_new(base, &limits);
    struct h2_listener *listener;
    nghttp2_session_callbacks *callbacks;
    nghttp2_session *session;
    struct sockaddr_in addr;
    struct seen seen;
    char err[256];
    const char *address, *colon;
    int fd, rounds;
    nghttp2_nv request[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
        {(uint8_t *)":path", (uint8_t *)"/", 5, 1, 0},
        {(uint8_t *)":authority", (uint8_t *)"test", 10, 4, 0},
    };

    memset(&seen, 0, sizeof(seen));
    body_end_flag = end_flag;
    listener =
        h2_listen(server, "public", "127.0.0.1:0", NULL, &plain_handler, NULL, err, sizeof(err));
    ck_assert_msg(listener != NULL, "%s", err);
    address = h2_listener_address(listener);
    colon = strrchr(address, ':');
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)atoi(colon + 1));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);

    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    nghttp2_session_client_new(&session, callbacks, &seen);
    nghttp2_session_callbacks_del(callbacks);
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, NULL, 0);
    ck_assert_int_eq(nghttp2_submit_request(session, NULL, request, 4, NULL, NULL), 1);

    for (rounds = 0; rounds < 2000 && !seen.closed; rounds++) {
        const uint8_t *out;
        uint8_t in[4096];
        ssize_t n;

        while ((n = nghttp2_session_mem_send(session, &out)) > 0)
            ck_assert_int_eq(write(fd, out, (size_t)n), n);
        event_base_loop(base, EVLOOP_NONBLOCK);
        n = read(fd, in, sizeof(in));
        if (n > 0)
            ck_assert_int_eq(nghttp2_session_mem_recv(session, in, (size_t)n), n);
        else if (n < 0 && errno == EAGAIN)
            usleep(1000);
        else
            break;
    }
    nghttp2_session_del(session);
    close(fd);
    h2_server_free(server);
    event_base_free(base);
    return seen;
}

START_TEST(test_body_may_end_with_data_end_stream_and_no_trailers)
{
    struct seen seen = fetch_once(H2_READ_EOF_END_STREAM);

    ck_assert_int_eq(seen.closed, 1);
    ck_assert_uint_eq(seen.close_code, H2_NO_ERROR);
    ck_assert_uint_eq(seen.body_len, 5);
    ck_assert_mem_eq(seen.body, "hello", 5);
    ck_assert_int_eq(seen.data_end_stream, 1);
    ck_assert_int_eq(seen.header_blocks, 1);
}
END_TEST

START_TEST(test_body_may_end_with_trailers)
{
    struct seen seen = fetch_once(H2_READ_EOF);

    ck_assert_int_eq(seen.closed, 1);
    ck_assert_uint_eq(seen.close_code, H2_NO_ERROR);
    ck_assert_uint_eq(seen.body_len, 5);
    ck_assert_int_eq(seen.data_end_stream, 0);
    ck_assert_int_eq(seen.header_blocks, 2);
    ck_assert_int_eq(seen.trailers_end_stream, 1);
}
END_TEST

/* --- The same server through h2_client -------------------------------- */

struct client_seen {
    int response_headers; /* headers of the first block */
    int trailers;         /* headers of the trailing block */
    char status[8];
    char body[64];
    size_t body_len;
    int request_sent;
    int closed;
    uint32_t close_code;
    int broken;
};

static void client_header(void *data, int trailer, const uint8_t *name, size_t name_len,
                          const uint8_t *value, size_t value_len)
{
    struct client_seen *seen = data;

    if (trailer) {
        seen->trailers++;
        return;
    }
    seen->response_headers++;
    if (name_len == 7 && memcmp(name, ":status", 7) == 0 && value_len < sizeof(seen->status)) {
        memcpy(seen->status, value, value_len);
        seen->status[value_len] = '\0';
    }
}

static void client_data(void *data, const uint8_t *bytes, size_t len)
{
    struct client_seen *seen = data;
    memcpy(seen->body + seen->body_len, bytes, len);
    seen->body_len += len;
}

static ssize_t client_read(void *data, uint8_t *buf, size_t len, uint32_t *flags)
{
    struct client_seen *seen = data;

    *flags |= H2_READ_EOF_END_STREAM;
    if (seen->request_sent)
        return 0;
    seen->request_sent = 1;
    memcpy(buf, "ping", 4);
    return 4;
}

static void client_close(void *data, uint32_t error_code)
{
    struct client_seen *seen = data;
    seen->closed = 1;
    seen->close_code = error_code;
}

static void client_broken(void *data, const char *why)
{
    struct client_seen *seen = data;
    seen->broken = 1;
}

static const struct h2_client_handler client_handler = {
    .stream_header = client_header,
    .stream_data = client_data,
    .stream_read = client_read,
    .stream_close = client_close,
    .connection_broken = client_broken,
};

/* One POST through h2_client against a server ending its body with END_FLAG. */
static struct client_seen client_fetch_once(uint32_t end_flag)
{
    struct h2_limits limits = {.max_concurrent_streams = 10,
                               .max_header_list_bytes = 16384,
                               .idle_timeout_ms = 60000,
                               .max_connections = 10};
    struct event_base *base = event_base_new();
    struct h2_server *server = h2_server_new(base, &limits);
    struct h2_listener *listener;
    struct h2_client *client;
    struct client_seen seen;
    char err[256];
    struct h2_header request[] = {
        {":method", 7, "POST", 4},
        {":scheme", 7, "http", 4},
        {":path", 5, "/", 1},
        {":authority", 10, "test", 4},
    };

    memset(&seen, 0, sizeof(seen));
    body_end_flag = end_flag;
    request_bytes = 0;
    listener =
        h2_listen(server, "public", "127.0.0.1:0", NULL, &plain_handler, NULL, err, sizeof(err));
    ck_assert_msg(listener != NULL, "%s", err);
    client = h2_client_new(base, h2_listener_address(listener), NULL, &client_handler, &seen, err,
                           sizeof(err));
    ck_assert_msg(client != NULL, "%s", err);
    ck_assert_int_eq(h2_client_is_tls(client), 0);
    ck_assert_int_gt(h2_client_request(client, request, 4, &seen), 0);
    for (int rounds = 0; rounds < 10000 && !seen.closed && !seen.broken; rounds++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    h2_client_free(client);
    h2_server_free(server);
    event_base_free(base);
    return seen;
}

START_TEST(test_client_reads_a_body_ended_by_data_end_stream)
{
    struct client_seen seen = client_fetch_once(H2_READ_EOF_END_STREAM);

    ck_assert_int_eq(seen.broken, 0);
    ck_assert_int_eq(seen.closed, 1);
    ck_assert_uint_eq(seen.close_code, H2_NO_ERROR);
    ck_assert_uint_eq(request_bytes, 4);
    ck_assert_str_eq(seen.status, "200");
    ck_assert_int_eq(seen.response_headers, 2);
    ck_assert_int_eq(seen.trailers, 0);
    ck_assert_uint_eq(seen.body_len, 5);
    ck_assert_mem_eq(seen.body, "hello", 5);
}
END_TEST

START_TEST(test_client_tells_trailers_from_response_headers)
{
    struct client_seen seen = client_fetch_once(H2_READ_EOF);

    ck_assert_int_eq(seen.closed, 1);
    ck_assert_uint_eq(seen.close_code, H2_NO_ERROR);
    ck_assert_int_eq(seen.response_headers, 2);
    ck_assert_int_eq(seen.trailers, 1);
    ck_assert_uint_eq(seen.body_len, 5);
}
END_TEST

START_TEST(test_client_refuses_a_malformed_address)
{
    struct event_base *base = event_base_new();
    struct client_seen seen;
    char err[256];

    ck_assert_ptr_null(
        h2_client_new(base, "no-port", NULL, &client_handler, &seen, err, sizeof(err)));
    ck_assert_str_eq(err, "no-port: expected HOST:PORT");
    ck_assert_ptr_null(
        h2_client_new(base, ":50051", NULL, &client_handler, &seen, err, sizeof(err)));
    event_base_free(base);
}
END_TEST

Suite *h2_server_suite(void)
{
    Suite *suite = suite_create("h2_server");
    TCase *tc = tcase_create("response_end");

    tcase_add_test(tc, test_body_may_end_with_data_end_stream_and_no_trailers);
    tcase_add_test(tc, test_body_may_end_with_trailers);
    tcase_add_test(tc, test_client_reads_a_body_ended_by_data_end_stream);
    tcase_add_test(tc, test_client_tells_trailers_from_response_headers);
    tcase_add_test(tc, test_client_refuses_a_malformed_address);
    suite_add_tcase(suite, tc);
    return suite;
}
