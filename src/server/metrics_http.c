/* metrics_http: a deliberately small HTTP/1.x responder for GET /metrics
 * and GET /healthz.  One request per connection (Connection: close), a cap
 * on open connections, an idle timeout that also bounds a request trickled
 * in slowly, and accepting pauses (rather than spins) when the process is
 * out of file descriptors. */
#include "server/metrics_http.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hostport.h"
#include "common/list.h"
#include "common/log.h"

/* The longest request head (request line and headers) read. */
#define MAX_REQUEST_HEAD 8192
#define ACCEPT_PAUSE_MS  250

struct metrics_conn {
    struct metrics_http *metrics;
    struct bufferevent *bev;
    int answered;
    struct list_node link; /* on the listener's connections */
};

struct metrics_http {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *accept_pause;
    metrics_http_writer writer;
    metrics_http_health health;
    void *arg;
    struct metrics_http_limits limits;
    struct list_node conns; /* struct metrics_conn, the newest first */
    size_t conn_count;
    uint64_t refused;       /* closed at accept: over the connection cap */
    uint64_t idle_closes;   /* closed by the idle timeout */
    uint64_t accept_pauses; /* accept() failed: paused */
    char address[80];
};

static void conn_free(struct metrics_conn *conn)
{
    struct metrics_http *metrics = conn->metrics;

    list_remove(&conn->link);
    metrics->conn_count--;
    bufferevent_free(conn->bev);
    free(conn);
}

/* The listener's own counters, after the server's. */
static void write_own_metrics(const struct metrics_http *metrics, FILE *out)
{
    fprintf(out,
            "# HELP agenthub_metrics_connections_refused_total metrics connections closed at "
            "accept: over the cap.\n"
            "# TYPE agenthub_metrics_connections_refused_total counter\n"
            "agenthub_metrics_connections_refused_total %llu\n"
            "# HELP agenthub_metrics_idle_closes_total metrics connections closed by the idle "
            "timeout.\n"
            "# TYPE agenthub_metrics_idle_closes_total counter\n"
            "agenthub_metrics_idle_closes_total %llu\n"
            "# TYPE agenthub_metrics_accept_pauses_total counter\n"
            "agenthub_metrics_accept_pauses_total %llu\n",
            (unsigned long long)metrics->refused, (unsigned long long)metrics->idle_closes,
            (unsigned long long)metrics->accept_pauses);
}

static void respond(struct metrics_conn *conn, int status, const char *reason,
                    const char *content_type, const char *body, size_t body_len, int head_only)
{
    struct evbuffer *out = bufferevent_get_output(conn->bev);

    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\n\r\n",
                        status, reason, content_type, body_len);
    if (!head_only && body_len)
        evbuffer_add(out, body, body_len);
    conn->answered = 1;
    bufferevent_disable(conn->bev, EV_READ);
    bufferevent_enable(conn->bev, EV_WRITE);
}

static void respond_text(struct metrics_conn *conn, int status, const char *reason,
                         const char *text)
{
    respond(conn, status, reason, "text/plain", text, strlen(text), 0);
}

/* Answers the request line LINE ("GET /metrics HTTP/1.1"). */
static void answer(struct metrics_conn *conn, const char *line)
{
    struct metrics_http *metrics = conn->metrics;
    const char *sp1 = strchr(line, ' ');
    const char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    size_t method_len, uri_len;
    int head_only;

    if (!sp1 || !sp2) {
        respond_text(conn, 400, "Bad Request", "bad request line\n");
        return;
    }
    method_len = (size_t)(sp1 - line);
    uri_len = (size_t)(sp2 - sp1 - 1);
    head_only = method_len == 4 && memcmp(line, "HEAD", 4) == 0;
    if (!head_only && !(method_len == 3 && memcmp(line, "GET", 3) == 0)) {
        respond_text(conn, 405, "Method Not Allowed", "only GET and HEAD\n");
        return;
    }
    if (uri_len == 8 && memcmp(sp1 + 1, "/metrics", 8) == 0) {
        char *text = NULL;
        size_t text_len = 0;
        FILE *out = open_memstream(&text, &text_len);
        if (!out) {
            respond_text(conn, 500, "Internal Server Error", "out of memory\n");
            return;
        }
        metrics->writer(metrics->arg, out);
        write_own_metrics(metrics, out);
        fclose(out);
        respond(conn, 200, "OK", "text/plain; version=0.0.4", text, text_len, head_only);
        free(text);
    } else if (uri_len == 8 && memcmp(sp1 + 1, "/healthz", 8) == 0) {
        const char *why = metrics->health(metrics->arg);
        char body[128];

        snprintf(body, sizeof(body), "%s\n", why ? why : "ok");
        respond(conn, why ? 503 : 200, why ? "Service Unavailable" : "OK", "text/plain", body,
                strlen(body), head_only);
    } else {
        respond_text(conn, 404, "Not Found", "not found\n");
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct metrics_conn *conn = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_ptr end;

    if (conn->answered)
        return;
    /* Answer once the whole head is in: the request line and the headers. */
    end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0)
        end = evbuffer_search(in, "\n\n", 2, NULL);
    if (end.pos < 0) {
        if (evbuffer_get_length(in) > MAX_REQUEST_HEAD)
            respond_text(conn, 431, "Request Header Fields Too Large", "request too large\n");
        return;
    }
    char *line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF);
    if (!line) {
        respond_text(conn, 400, "Bad Request", "bad request\n");
        return;
    }
    answer(conn, line);
    free(line);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct metrics_conn *conn = arg;

    if (conn->answered && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_free(conn);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct metrics_conn *conn = arg;

    if (events & BEV_EVENT_TIMEOUT)
        conn->metrics->idle_closes++;
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_free(conn);
}

static void on_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *addr,
                      int addrlen, void *arg)
{
    struct metrics_http *metrics = arg;
    struct timeval idle = {metrics->limits.idle_timeout_ms / 1000,
                           (metrics->limits.idle_timeout_ms % 1000) * 1000};
    struct metrics_conn *conn;

    if (metrics->conn_count >= metrics->limits.max_connections) {
        metrics->refused++;
        evutil_closesocket(fd);
        return;
    }
    conn = calloc(1, sizeof(*conn));
    if (!conn) {
        evutil_closesocket(fd);
        return;
    }
    conn->metrics = metrics;
    conn->bev = bufferevent_socket_new(metrics->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!conn->bev) {
        evutil_closesocket(fd);
        free(conn);
        return;
    }
    list_insert_head(&metrics->conns, &conn->link);
    metrics->conn_count++;
    /* One timeout for reading the request and writing the answer: a client
     * that sends nothing, or sends slowly, or does not read, is closed. */
    bufferevent_set_timeouts(conn->bev, &idle, &idle);
    bufferevent_setcb(conn->bev, on_read, on_write, on_event, conn);
    bufferevent_enable(conn->bev, EV_READ);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    struct metrics_http *metrics = arg;

    evconnlistener_enable(metrics->listener);
}

/* accept() failed (out of file descriptors, usually): pause, log once. */
static void on_accept_error(struct evconnlistener *listener, void *arg)
{
    struct metrics_http *metrics = arg;
    int err = EVUTIL_SOCKET_ERROR();
    struct timeval pause = {ACCEPT_PAUSE_MS / 1000, (ACCEPT_PAUSE_MS % 1000) * 1000};

    evconnlistener_disable(listener);
    metrics->accept_pauses++;
    log_warn("listener metrics: cannot accept a connection (%s); pausing accepts for %d ms",
             evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
    event_add(metrics->accept_pause, &pause);
}

struct metrics_http *metrics_http_new(struct event_base *base, const char *host_port,
                                      const struct metrics_http_limits *limits,
                                      metrics_http_writer writer, metrics_http_health health,
                                      void *arg, char *err, size_t err_size)
{
    struct metrics_http *metrics = calloc(1, sizeof(*metrics));
    struct addrinfo *res = NULL;

    if (!metrics) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    list_init(&metrics->conns);
    if (hostport_resolve_listen(host_port, &res, err, err_size) != 0)
        goto fail;
    metrics->base = base;
    metrics->writer = writer;
    metrics->health = health;
    metrics->arg = arg;
    metrics->limits = *limits;
    metrics->accept_pause = evtimer_new(base, on_accept_resume, metrics);
    if (!metrics->accept_pause) {
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    metrics->listener = evconnlistener_new_bind(
        base, on_accept, metrics, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
        128, res->ai_addr, (int)res->ai_addrlen);
    if (!metrics->listener) {
        snprintf(err, err_size, "%s: cannot listen: %s", host_port, strerror(errno));
        goto fail;
    }
    evconnlistener_set_error_cb(metrics->listener, on_accept_error);
    hostport_format_bound(evconnlistener_get_fd(metrics->listener), metrics->address,
                          sizeof(metrics->address), host_port);
    freeaddrinfo(res);
    return metrics;
fail:
    if (res)
        freeaddrinfo(res);
    metrics_http_free(metrics);
    return NULL;
}

const char *metrics_http_address(const struct metrics_http *metrics)
{
    return metrics->address;
}

void metrics_http_free(struct metrics_http *metrics)
{
    struct list_node *node, *next;

    if (!metrics)
        return;
    list_for_each_safe (node, next, &metrics->conns) {
        struct metrics_conn *conn = list_entry(node, struct metrics_conn, link);
        bufferevent_free(conn->bev);
        free(conn);
    }
    if (metrics->listener)
        evconnlistener_free(metrics->listener);
    if (metrics->accept_pause)
        event_free(metrics->accept_pause);
    free(metrics);
}
