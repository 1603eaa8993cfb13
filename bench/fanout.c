/* fanout: one Runner publishes frames into one session while K subscribers
 * tail it through SubscribeAgentSession.  Prints deliveries per second,
 * publish-to-delivery latency percentiles, and the server's RSS and CPU per
 * delivery (from /proc/PID when --server-pid is given).
 *
 *   fanout --public ADDR --runner ADDR --token T --runner-token RT --session S
 *          [-k SUBSCRIBERS] [-n FRAMES] [--size BYTES] [--rate FRAMES_PER_S]
 *          [--idle] [--server-pid PID] [--web]
 *
 * With --web the subscribers speak gRPC-Web over HTTP/1.1 (one connection
 * each, libevent's evhttp client reading the chunked body as it comes)
 * instead of native gRPC over HTTP/2.  Native subscribers share HTTP/2
 * connections, STREAMS_PER_CONNECTION (90) to each unless
 * --streams-per-connection says otherwise (1: a connection each, as the
 * gRPC-Web ones have).
 *
 * With --spread N the frames go round-robin to S and N-1 more sessions (S-2
 * .. S-N, which the store must bind to the Runner's containers) while the
 * subscribers follow S: ingest into many sessions, printed as frames/s and
 * server CPU per frame.
 *
 * With --idle it only opens K subscriptions, waits until the server holds
 * them, and prints the server's RSS.  --public may list several addresses
 * (h1:p1,h2:p2, a cluster's nodes): the subscribers are dealt out over
 * them in turn (gRPC-Web subscribers use the first). */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hostport.h"
#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc_client.h"

#define STREAMS_PER_CONNECTION 90
#define HISTOGRAM_BUCKETS      16384 /* 10 µs buckets up to ~164 ms, then overflow */
#define BUCKET_US              10

struct options {
    const char *public_addr;
    const char *runner_addr;
    const char *token;
    const char *runner_token;
    const char *session;
    int subscribers;
    int frames;
    int size;
    int rate;
    int idle;
    int server_pid;
    int web;
    int streams_per_connection; /* native subscribers per HTTP/2 connection */
    int spread;                 /* sessions the frames go to in turn */
};

struct bench;

struct subscriber {
    struct bench *bench;
    struct grpc_client_call *call;
    struct evhttp_connection *web; /* --web: its HTTP/1.1 connection */
    struct evhttp_request *web_request;
    struct evbuffer *web_pending; /* --web: body bytes not yet a whole frame */
    int received;
    int done;
};

struct bench {
    struct options opt;
    struct event_base *base;
    struct grpc_client **clients;
    int client_count;
    int addr_count;       /* addresses in --public */
    int clients_per_addr; /* connections to each */
    struct grpc_client *runner;
    struct subscriber *subscribers;
    struct grpc_client_call *publisher;
    int published;
    uint64_t runner_seq;
    int per_subscriber;   /* frames each subscriber gets: those of --session */
    char **session_names; /* --spread: the sessions frames go to in turn */
    uint64_t deliveries;
    uint64_t expected;
    uint64_t histogram[HISTOGRAM_BUCKETS + 1];
    uint64_t first_publish_ns;
    uint64_t last_delivery_ns;
    int subscribers_done;
    int dropped;
    struct event *tick;
    int finished;
    char *text;
};

static uint64_t parse_stamp(const uint8_t *data, size_t len)
{
    /* The frame's text starts with "@" and 16 hex digits of the publish time. */
    const uint8_t *at = memchr(data, '@', len);
    uint64_t value = 0;

    if (!at || (size_t)(data + len - at) < 17)
        return 0;
    for (int i = 1; i <= 16; i++) {
        uint8_t c = at[i];
        value = value << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return value;
}

static void subscriber_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct subscriber *sub = arg;
    struct bench *bench = sub->bench;
    uint64_t now = clock_monotonic_ns();
    uint64_t stamp = parse_stamp(data, len);

    sub->received++;
    bench->deliveries++;
    bench->last_delivery_ns = now;
    if (stamp && now >= stamp) {
        uint64_t bucket = (now - stamp) / 1000 / BUCKET_US;
        bench->histogram[bucket < HISTOGRAM_BUCKETS ? bucket : HISTOGRAM_BUCKETS]++;
    }
    if (bench->per_subscriber > 0 && sub->received == bench->per_subscriber) {
        bench->subscribers_done++;
        if (bench->subscribers_done == bench->opt.subscribers)
            event_base_loopbreak(bench->base);
    }
}

static void subscriber_on_done(void *arg, const struct grpc_client_result *result)
{
    struct subscriber *sub = arg;

    struct bench *bench = sub->bench;

    sub->done = 1;
    sub->call = NULL;
    if (bench->finished)
        return;
    if (result->status != 0)
        fprintf(stderr, "fanout: a subscriber ended: %s: %s\n", grpc_status_name(result->status),
                result->message);
    if (bench->per_subscriber > 0 && sub->received < bench->per_subscriber) {
        /* Dropped for lag (or refused): it will not reach the end. */
        bench->dropped++;
        bench->subscribers_done++;
        if (bench->subscribers_done == bench->opt.subscribers)
            event_base_loopbreak(bench->base);
    }
}

/* --- gRPC-Web subscribers (--web) ---------------------------------------- */

static void web_subscriber_ended(struct subscriber *sub, const char *why)
{
    struct bench *bench = sub->bench;

    if (sub->done)
        return;
    sub->done = 1;
    if (bench->finished)
        return;
    if (why)
        fprintf(stderr, "fanout: a gRPC-Web subscriber ended: %s\n", why);
    if (bench->per_subscriber > 0 && sub->received < bench->per_subscriber) {
        bench->dropped++;
        bench->subscribers_done++;
        if (bench->subscribers_done == bench->opt.subscribers)
            event_base_loopbreak(bench->base);
    }
}

/* Body bytes arrived: whole gRPC-Web frames are messages, or the trailers. */
static void web_on_chunk(struct evhttp_request *req, void *arg)
{
    struct subscriber *sub = arg;
    struct evbuffer *pending = sub->web_pending;

    evbuffer_add_buffer(pending, evhttp_request_get_input_buffer(req));
    while (evbuffer_get_length(pending) >= 5) {
        uint8_t head[5];
        size_t len;
        evbuffer_copyout(pending, head, 5);
        len = (size_t)head[1] << 24 | (size_t)head[2] << 16 | (size_t)head[3] << 8 | head[4];
        if (evbuffer_get_length(pending) < 5 + len)
            break;
        evbuffer_drain(pending, 5);
        if (head[0] & 0x80) {
            char trailers[256];
            size_t n = len < sizeof(trailers) - 1 ? len : sizeof(trailers) - 1;
            evbuffer_remove(pending, trailers, n);
            evbuffer_drain(pending, len - n);
            trailers[n] = '\0';
            web_subscriber_ended(sub, strstr(trailers, "grpc-status:0\r\n") ? NULL : trailers);
            continue;
        }
        subscriber_on_message(sub, evbuffer_pullup(pending, (ev_ssize_t)len), len);
        evbuffer_drain(pending, len);
    }
}

static void web_on_done(struct evhttp_request *req, void *arg)
{
    struct subscriber *sub = arg;

    sub->web_request = NULL;
    web_subscriber_ended(sub, req ? NULL : "connection failed");
}

/* Starts a SubscribeAgentSession call over HTTP/1.1 gRPC-Web.  Returns 0 or
 * -1. */
static int web_subscribe(struct bench *bench, struct subscriber *sub, const char *host, int port,
                         const uint8_t *message, size_t len)
{
    struct evhttp_request *req;
    struct evkeyvalq *headers;
    uint8_t head[5] = {0, (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
                       (uint8_t)len};
    char auth[256];

    sub->web = evhttp_connection_base_new(bench->base, NULL, host, (unsigned short)port);
    sub->web_pending = evbuffer_new();
    req = evhttp_request_new(web_on_done, sub);
    if (!sub->web || !sub->web_pending || !req)
        return -1;
    evhttp_connection_set_timeout(sub->web, 600);
    evhttp_request_set_chunked_cb(req, web_on_chunk);
    headers = evhttp_request_get_output_headers(req);
    snprintf(auth, sizeof(auth), "Bearer %s", bench->opt.token);
    evhttp_add_header(headers, "Host", host);
    evhttp_add_header(headers, "Content-Type", "application/grpc-web+proto");
    evhttp_add_header(headers, "Authorization", auth);
    evbuffer_add(evhttp_request_get_output_buffer(req), head, 5);
    evbuffer_add(evhttp_request_get_output_buffer(req), message, len);
    sub->web_request = req;
    return evhttp_make_request(sub->web, req, EVHTTP_REQ_POST,
                               "/compass.v1.CompassService/SubscribeAgentSession");
}

static void web_subscriber_free(struct subscriber *sub)
{
    if (sub->web)
        evhttp_connection_free(sub->web); /* frees a request still open */
    if (sub->web_pending)
        evbuffer_free(sub->web_pending);
}

static void publisher_on_done(void *arg, const struct grpc_client_result *result)
{
    struct bench *bench = arg;

    bench->publisher = NULL;
    if (result->status != 0 && !bench->finished)
        fprintf(stderr, "fanout: PublishEvents ended: %s: %s\n", grpc_status_name(result->status),
                result->message);
}

static void noop_message(void *arg, const uint8_t *data, size_t len)
{
}

static void publish_one(struct bench *bench)
{
    Compass__V1__PublishEventsRequest request = COMPASS__V1__PUBLISH_EVENTS_REQUEST__INIT;
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__SessionFrame session = COMPASS__V1__SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__SessionAssistantText text = COMPASS__V1__SESSION_ASSISTANT_TEXT__INIT;
    uint64_t now = clock_monotonic_ns();

    snprintf(bench->text, 18, "@%016" PRIx64, now);
    bench->text[17] = 'x';
    text.text = bench->text;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT;
    event.assistant_text = &text;
    session.typed_event = &event;
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    frame.session = &session;
    request.runner_seq = ++bench->runner_seq;
    request.session_id = bench->session_names
                             ? bench->session_names[bench->published % bench->opt.spread]
                             : (char *)bench->opt.session;
    request.frame = &frame;
    if (!bench->first_publish_ns)
        bench->first_publish_ns = now;
    grpc_client_call_send(bench->publisher, &request.base);
    bench->published++;
}

/* Publishes the frames due by now (paced by --rate, else as fast as the
 * publisher's send queue drains). */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct bench *bench = arg;
    struct timeval next = {0, 1000};

    if (!bench->publisher)
        return;
    if (bench->opt.rate > 0) {
        uint64_t elapsed_us = (clock_monotonic_ns() - bench->first_publish_ns) / 1000;
        uint64_t due =
            bench->first_publish_ns ? elapsed_us * (uint64_t)bench->opt.rate / 1000000 + 1 : 1;
        while (bench->published < bench->opt.frames && (uint64_t)bench->published < due)
            publish_one(bench);
    } else {
        while (bench->published < bench->opt.frames &&
               grpc_client_call_pending_bytes(bench->publisher) < 256 * 1024)
            publish_one(bench);
    }
    if (bench->published < bench->opt.frames)
        evtimer_add(bench->tick, &next);
    else
        grpc_client_call_close_send(bench->publisher);
}

static void run_for(struct event_base *base, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static long proc_rss_kb(int pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* utime + stime of PID in clock ticks, or -1. */
static long long proc_cpu_ticks(int pid)
{
    char path[64], buf[1024];
    unsigned long long utime, stime;
    const char *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
        return -1;
    return (long long)(utime + stime);
}

static double percentile_us(const struct bench *bench, double p)
{
    uint64_t total = 0, seen = 0;

    for (int i = 0; i <= HISTOGRAM_BUCKETS; i++)
        total += bench->histogram[i];
    if (!total)
        return 0;
    for (int i = 0; i <= HISTOGRAM_BUCKETS; i++) {
        seen += bench->histogram[i];
        if ((double)seen >= p * (double)total)
            return (double)(i + 1) * BUCKET_US;
    }
    return (double)HISTOGRAM_BUCKETS * BUCKET_US;
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option options[] = {
        {"public", required_argument, NULL, 'p'},
        {"runner", required_argument, NULL, 'r'},
        {"token", required_argument, NULL, 't'},
        {"runner-token", required_argument, NULL, 'T'},
        {"session", required_argument, NULL, 's'},
        {"size", required_argument, NULL, 'z'},
        {"rate", required_argument, NULL, 'R'},
        {"idle", no_argument, NULL, 'i'},
        {"server-pid", required_argument, NULL, 'P'},
        {"web", no_argument, NULL, 'w'},
        {"streams-per-connection", required_argument, NULL, 'S'},
        {"spread", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    opt->subscribers = 100;
    opt->spread = 1;
    opt->streams_per_connection = STREAMS_PER_CONNECTION;
    opt->frames = 10000;
    opt->size = 200;
    while ((c = getopt_long(argc, argv, "k:n:h", options, NULL)) != -1) {
        switch (c) {
        case 'p':
            opt->public_addr = optarg;
            break;
        case 'r':
            opt->runner_addr = optarg;
            break;
        case 'w':
            opt->web = 1;
            break;
        case 'S':
            opt->streams_per_connection = atoi(optarg);
            if (opt->streams_per_connection < 1)
                opt->streams_per_connection = 1;
            break;
        case 't':
            opt->token = optarg;
            break;
        case 'T':
            opt->runner_token = optarg;
            break;
        case 's':
            opt->session = optarg;
            break;
        case 'z':
            opt->size = atoi(optarg);
            break;
        case 'R':
            opt->rate = atoi(optarg);
            break;
        case 'i':
            opt->idle = 1;
            break;
        case 'P':
            opt->server_pid = atoi(optarg);
            break;
        case 'k':
            opt->subscribers = atoi(optarg);
            break;
        case 'D':
            opt->spread = atoi(optarg);
            break;
        case 'n':
            opt->frames = atoi(optarg);
            break;
        default:
            fputs("usage: fanout --public ADDR --runner ADDR --token T --runner-token RT "
                  "--session S [-k K] [-n N] [--size B] [--rate R] [--idle] [--server-pid PID] "
                  "[--web] [--streams-per-connection N] [--spread N]\n",
                  c == 'h' ? stdout : stderr);
            return c == 'h' ? 1 : -1;
        }
    }
    if (!opt->public_addr || !opt->token || !opt->session || opt->subscribers <= 0 ||
        opt->spread < 1 || opt->size < 32 ||
        (!opt->idle && (!opt->runner_addr || !opt->runner_token))) {
        fputs("fanout: --public, --token, --session (and --runner, --runner-token) are needed\n",
              stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct grpc_client_call_handler publisher_handler = {noop_message,
                                                                      publisher_on_done};
    static const struct grpc_client_call_handler subscriber_handler = {subscriber_on_message,
                                                                       subscriber_on_done};
    struct bench bench;
    Compass__V1__SubscribeAgentSessionRequest request =
        COMPASS__V1__SUBSCRIBE_AGENT_SESSION_REQUEST__INIT;
    Compass__V1__EnrollRequest enroll = COMPASS__V1__ENROLL_REQUEST__INIT;
    ProtobufCMessage *enrolled = NULL;
    char err[256];
    long long cpu_before = -1, cpu_after;
    double seconds;
    int rv;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&bench, 0, sizeof(bench));
    rv = parse_options(argc, argv, &bench.opt);
    if (rv != 0)
        return rv > 0 ? 0 : 2;
    bench.base = event_base_new();
    {
        char addr[256];
        size_t n_addr = hostport_list_nth(bench.opt.public_addr, 0, addr, sizeof(addr));
        int per_addr;

        if (n_addr == 0) {
            fprintf(stderr, "fanout: --public %s: no address\n", bench.opt.public_addr);
            return 2;
        }
        bench.addr_count = (int)n_addr;
        per_addr = (bench.opt.subscribers + bench.addr_count - 1) / bench.addr_count;
        bench.clients_per_addr = bench.opt.web ? 0
                                               : (per_addr + bench.opt.streams_per_connection - 1) /
                                                     bench.opt.streams_per_connection;
        bench.client_count = bench.clients_per_addr * bench.addr_count;
        bench.clients = calloc((size_t)bench.client_count + 1, sizeof(*bench.clients));
        for (int i = 0; i < bench.client_count; i++) {
            hostport_list_nth(bench.opt.public_addr, (size_t)(i / bench.clients_per_addr), addr,
                              sizeof(addr));
            bench.clients[i] = grpc_client_new(bench.base, addr, NULL, err, sizeof(err));
            if (!bench.clients[i]) {
                fprintf(stderr, "fanout: %s\n", err);
                return 1;
            }
        }
    }
    bench.per_subscriber = (bench.opt.frames + bench.opt.spread - 1) / bench.opt.spread;
    if (bench.opt.spread > 1) {
        bench.session_names = calloc((size_t)bench.opt.spread, sizeof(*bench.session_names));
        for (int i = 0; i < bench.opt.spread; i++) {
            size_t n = strlen(bench.opt.session) + 16;
            bench.session_names[i] = malloc(n);
            if (i == 0)
                snprintf(bench.session_names[i], n, "%s", bench.opt.session);
            else
                snprintf(bench.session_names[i], n, "%s-%d", bench.opt.session, i + 1);
        }
    }
    bench.subscribers = calloc((size_t)bench.opt.subscribers, sizeof(*bench.subscribers));
    bench.text = calloc(1, (size_t)bench.opt.size + 1);
    memset(bench.text, 'x', (size_t)bench.opt.size);
    request.session_id = (char *)bench.opt.session;
    if (bench.opt.web) {
        /* HTTP/1.1: one connection per subscriber, no h2 client needed. */
        uint8_t packed[512];
        size_t packed_len = protobuf_c_message_pack(&request.base, packed);
        char first[256], host[256];
        const char *colon;
        hostport_list_nth(bench.opt.public_addr, 0, first, sizeof(first));
        colon = strrchr(first, ':');
        snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - first) : 0, first);
        for (int i = 0; i < bench.opt.subscribers; i++) {
            bench.subscribers[i].bench = &bench;
            if (!colon || web_subscribe(&bench, &bench.subscribers[i], host, atoi(colon + 1),
                                        packed, packed_len) != 0) {
                fprintf(stderr, "fanout: cannot start gRPC-Web subscriber %d\n", i);
                return 1;
            }
        }
    }
    for (int i = 0; i < bench.opt.subscribers && !bench.opt.web; i++) {
        struct subscriber *sub = &bench.subscribers[i];
        sub->bench = &bench;
        /* Subscriber I goes to address I mod N, on that address's clients. */
        int client = (i % bench.addr_count) * bench.clients_per_addr +
                     (i / bench.addr_count) / bench.opt.streams_per_connection;
        sub->call = grpc_client_call_start(bench.clients[client],
                                           "/compass.v1.CompassService/SubscribeAgentSession",
                                           bench.opt.token, 0, &subscriber_handler, sub);
        if (!sub->call) {
            fprintf(stderr, "fanout: cannot start subscriber %d\n", i);
            return 1;
        }
        grpc_client_call_send(sub->call, &request.base);
        grpc_client_call_close_send(sub->call);
    }
    /* Let every subscription reach the server before the first frame. */
    run_for(bench.base, 500 + bench.opt.subscribers / 10);
    for (int i = 0; i < bench.opt.subscribers; i++)
        if (bench.subscribers[i].done) {
            fprintf(stderr, "fanout: subscriber %d was refused\n", i);
            return 1;
        }
    if (bench.opt.idle) {
        printf("idle subscribers: %d held, server RSS %ld KiB\n", bench.opt.subscribers,
               bench.opt.server_pid ? proc_rss_kb(bench.opt.server_pid) : -1L);
        goto out;
    }

    bench.runner = grpc_client_new(bench.base, bench.opt.runner_addr, NULL, err, sizeof(err));
    if (!bench.runner ||
        grpc_client_unary(bench.runner, "/compass.v1.RunnerService/Enroll", bench.opt.runner_token,
                          5000, &enroll.base, &compass__v1__enroll_response__descriptor, &enrolled,
                          NULL) != 0) {
        fprintf(stderr, "fanout: cannot enroll the runner\n");
        return 1;
    }
    bench.runner_seq = ((Compass__V1__EnrollResponse *)enrolled)->last_runner_seq;
    protobuf_c_message_free_unpacked(enrolled, NULL);
    bench.publisher =
        grpc_client_call_start(bench.runner, "/compass.v1.RunnerService/PublishEvents",
                               bench.opt.runner_token, 0, &publisher_handler, &bench);
    bench.tick = evtimer_new(bench.base, on_tick, &bench);
    if (bench.opt.server_pid)
        cpu_before = proc_cpu_ticks(bench.opt.server_pid);
    on_tick(-1, 0, &bench);
    {
        struct timeval limit = {120, 0};
        event_base_loopexit(bench.base, &limit);
        event_base_dispatch(bench.base);
    }
    bench.finished = 1;
    seconds = (double)(bench.last_delivery_ns - bench.first_publish_ns) / 1e9;
    printf("fanout: K=%d frames=%d size=%d rate=%s subscribers=%s, %d per connection\n",
           bench.opt.subscribers, bench.opt.frames, bench.opt.size,
           bench.opt.rate ? "paced" : "max", bench.opt.web ? "grpc-web/http1.1" : "grpc/h2",
           bench.opt.web ? 1 : bench.opt.streams_per_connection);
    printf("  deliveries: %" PRIu64 " of %" PRIu64 " in %.3f s = %.0f deliveries/s\n",
           bench.deliveries, (uint64_t)bench.per_subscriber * (uint64_t)bench.opt.subscribers,
           seconds, seconds > 0 ? (double)bench.deliveries / seconds : 0.0);
    if (bench.opt.spread > 1)
        printf("  ingest: %d frames into %d sessions = %.0f frames/s\n", bench.published,
               bench.opt.spread, seconds > 0 ? (double)bench.published / seconds : 0.0);
    if (bench.dropped)
        printf("  subscribers dropped for lag: %d\n", bench.dropped);
    printf("  publish-to-delivery: p50 %.0f us, p99 %.0f us\n", percentile_us(&bench, 0.50),
           percentile_us(&bench, 0.99));
    if (bench.opt.server_pid) {
        cpu_after = proc_cpu_ticks(bench.opt.server_pid);
        if (cpu_before >= 0 && cpu_after >= 0 && bench.deliveries) {
            double cpu_us = (double)(cpu_after - cpu_before) * 1e6 / (double)sysconf(_SC_CLK_TCK);
            printf("  server CPU per delivery: %.2f us\n", cpu_us / (double)bench.deliveries);
            if (bench.opt.spread > 1 && bench.published)
                printf("  server CPU per frame: %.2f us\n", cpu_us / (double)bench.published);
        }
        printf("  server RSS: %ld KiB\n", proc_rss_kb(bench.opt.server_pid));
    }
out:
    bench.finished = 1;
    for (int i = 0; i < bench.opt.subscribers; i++)
        if (bench.subscribers[i].call)
            grpc_client_call_cancel(bench.subscribers[i].call);
    for (int i = 0; i < bench.opt.subscribers; i++)
        web_subscriber_free(&bench.subscribers[i]);
    run_for(bench.base, 50);
    for (int i = 0; i < bench.client_count; i++)
        grpc_client_free(bench.clients[i]);
    grpc_client_free(bench.runner);
    if (bench.tick)
        event_free(bench.tick);
    event_base_free(bench.base);
    free(bench.clients);
    free(bench.subscribers);
    free(bench.text);
    for (int i = 0; bench.session_names && i < bench.opt.spread; i++)
        free(bench.session_names[i]);
    free(bench.session_names);
    return 0;
}
