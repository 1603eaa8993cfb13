/* metrics_http: the plain-HTTP metrics listener (GET /metrics, GET /healthz),
 * one request per connection, with a connection cap and an idle timeout. */
#ifndef AGENTHUB_METRICS_HTTP_H
#define AGENTHUB_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct event_base;
struct metrics_http;

/* Writes the Prometheus text body to OUT. */
typedef void (*metrics_http_writer)(void *arg, FILE *out);
/* Returns NULL while the server is healthy (GET /healthz answers 200), or
 * why it is not, in a few words (the 503's body). */
typedef const char *(*metrics_http_health)(void *arg);

struct metrics_http_limits {
    size_t max_connections;   /* open at once; more are closed at accept */
    uint32_t idle_timeout_ms; /* to send a request, and to read the answer */
};

/* Binds HOST:PORT.  Returns NULL with a reason in ERR. */
struct metrics_http *metrics_http_new(struct event_base *base, const char *host_port,
                                      const struct metrics_http_limits *limits,
                                      metrics_http_writer writer, metrics_http_health health,
                                      void *arg, char *err, size_t err_size);
const char *metrics_http_address(const struct metrics_http *metrics);
void metrics_http_free(struct metrics_http *metrics);

#endif
