#include "server/metrics_http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct metrics_http {
    struct evhttp *http;
    metrics_http_writer writer;
    metrics_http_health health;
    void *arg;
    char address[80];
};

static void on_request(struct evhttp_request *request, void *arg)
{
    struct metrics_http *metrics = arg;
    const char *uri = evhttp_request_get_uri(request);
    struct evbuffer *body = evbuffer_new();
    char *text = NULL;
    size_t text_len = 0;

    if (!body) {
        evhttp_send_error(request, HTTP_INTERNAL, NULL);
        return;
    }
    if (evhttp_request_get_command(request) != EVHTTP_REQ_GET) {
        evhttp_send_error(request, 405, "Method Not Allowed");
    } else if (strcmp(uri, "/metrics") == 0) {
        FILE *out = open_memstream(&text, &text_len);
        if (!out) {
            evhttp_send_error(request, HTTP_INTERNAL, NULL);
        } else {
            metrics->writer(metrics->arg, out);
            fclose(out);
            evbuffer_add(body, text, text_len);
            evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type",
                              "text/plain; version=0.0.4");
            evhttp_send_reply(request, HTTP_OK, "OK", body);
        }
    } else if (strcmp(uri, "/healthz") == 0) {
        int healthy = metrics->health(metrics->arg);
        evbuffer_add_printf(body, "%s\n", healthy ? "ok" : "draining");
        evhttp_send_reply(request, healthy ? HTTP_OK : 503, healthy ? "OK" : "Draining", body);
    } else {
        evhttp_send_error(request, HTTP_NOTFOUND, NULL);
    }
    free(text);
    evbuffer_free(body);
}

struct metrics_http *metrics_http_new(struct event_base *base, const char *host_port,
                                      metrics_http_writer writer, metrics_http_health health,
                                      void *arg, char *err, size_t err_size)
{
    struct metrics_http *metrics = calloc(1, sizeof(*metrics));
    char host[64];
    const char *colon = strrchr(host_port, ':');
    struct evhttp_bound_socket *bound;
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    long port;
    char *end;

    if (!metrics) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    if (!colon || (size_t)(colon - host_port) >= sizeof(host)) {
        snprintf(err, err_size, "%s: expected HOST:PORT", host_port);
        goto fail;
    }
    memcpy(host, host_port, (size_t)(colon - host_port));
    host[colon - host_port] = '\0';
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535 || end == colon + 1) {
        snprintf(err, err_size, "%s: bad port", host_port);
        goto fail;
    }
    metrics->writer = writer;
    metrics->health = health;
    metrics->arg = arg;
    metrics->http = evhttp_new(base);
    if (!metrics->http) {
        snprintf(err, err_size, "cannot create the metrics listener");
        goto fail;
    }
    evhttp_set_allowed_methods(metrics->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_gencb(metrics->http, on_request, metrics);
    bound = evhttp_bind_socket_with_handle(metrics->http, host, (uint16_t)port);
    if (!bound) {
        snprintf(err, err_size, "%s: cannot listen", host_port);
        goto fail;
    }
    memset(&addr, 0, sizeof(addr));
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&addr, &len) == 0 &&
        addr.sin_family == AF_INET) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
        snprintf(metrics->address, sizeof(metrics->address), "%s:%u", ip, ntohs(addr.sin_port));
    } else {
        snprintf(metrics->address, sizeof(metrics->address), "%s", host_port);
    }
    return metrics;
fail:
    if (metrics->http)
        evhttp_free(metrics->http);
    free(metrics);
    return NULL;
}

const char *metrics_http_address(const struct metrics_http *metrics)
{
    return metrics->address;
}

void metrics_http_free(struct metrics_http *metrics)
{
    if (!metrics)
        return;
    evhttp_free(metrics->http);
    free(metrics);
}
