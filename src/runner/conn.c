/* conn: the Runner's connection to agenthubd's Runner door.
 *
 * One connection at a time: Enroll, then the Sessions control stream and the
 * PublishEvents stream.  When any of them ends (or the connection breaks)
 * the whole connection is torn down and rebuilt after a jittered exponential
 * backoff (CONN_BACKOFF_MIN_MS doubling to CONN_BACKOFF_MAX_MS, each wait
 * drawn from [d/2, d]); a successful Enroll resets it.
 *
 * Teardown never happens inside a grpc_client callback: callbacks mark the
 * connection lost and a zero-delay event frees the client. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/clock.h"
#include "common/hostport.h"
#include "common/log.h"
#include "grpc/grpc_wire.h"
#include "runner/runner.h"

#define CONN_BACKOFF_MIN_MS 200
#define CONN_BACKOFF_MAX_MS 10000
#define CONN_ENROLL_TIMEOUT 10000
#define CONN_UNARY_TIMEOUT  10000
#define CONN_BLOB_TIMEOUT   15000
#define CONN_LIVE_MAX       1024
/* Liveness: a silent server (half-open TCP) is noticed by a health probe
 * every CONN_PROBE_EVERY_MS that must answer within CONN_PROBE_WAIT_MS; a
 * connect or Enroll that hangs is abandoned after CONN_ENROLL_WAIT_MS. */
#define CONN_TICK_MS        1000
#define CONN_PROBE_EVERY_MS 15000
#define CONN_PROBE_WAIT_MS  10000
#define CONN_ENROLL_WAIT_MS (CONN_ENROLL_TIMEOUT + 2000)

#define PATH_ENROLL   "/compass.v1.RunnerService/Enroll"
#define PATH_SESSIONS "/compass.v1.RunnerService/Sessions"
#define PATH_PUBLISH  "/compass.v1.RunnerService/PublishEvents"
#define PATH_UPLOAD   "/compass.v1.RunnerService/UploadSessionBlob"
#define PATH_FETCH    "/compass.v1.RunnerService/FetchSessionBlob"
#define PATH_HEALTH   "/grpc.health.v1.Health/Check"

enum conn_state { CONN_IDLE, CONN_ENROLLING, CONN_READY, CONN_LOST, CONN_STOPPED };

struct conn {
    struct runner *r;
    enum conn_state state;
    struct grpc_client *client;
    struct grpc_client_call *enroll, *sessions, *publish;
    uint64_t last_runner_seq;
    int enroll_ok;
    int failing; /* the last attempt failed before it was ready */
    int64_t backoff_ms;
    struct event *retry;    /* reconnect timer */
    struct event *teardown; /* zero-delay: free the client outside callbacks */
    struct event *stop_timer;
    struct event *tick; /* liveness watchdog */
    int64_t attempt_ms; /* when the current Enroll started */
    int64_t probe_ms;   /* when the last probe started */
    struct grpc_client_call *probe;
    void (*stop_done)(struct runner *r);
    /* The blocking side connection for blob relays. */
    struct event_base *blob_base;
    struct grpc_client *blob_client;
    /* The address in use: one of --addr's list, the next after a loss (the
     * nodes of a cluster). */
    size_t addr_index;
    char addr[256];
};

static void conn_lost(struct conn *conn, const char *why);

/* --- Reconnect --------------------------------------------------------------- */

static int64_t backoff_next(struct conn *conn)
{
    uint32_t rnd = 0;
    int64_t d = conn->backoff_ms, wait;

    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
        rnd = (uint32_t)rand();
    wait = d / 2 + (int64_t)(rnd % (uint32_t)(d / 2 + 1));
    conn->backoff_ms = d * 2 > CONN_BACKOFF_MAX_MS ? CONN_BACKOFF_MAX_MS : d * 2;
    return wait;
}

static void schedule_retry(struct conn *conn)
{
    int64_t wait = backoff_next(conn);
    struct timeval tv = {wait / 1000, (wait % 1000) * 1000};

    log_debug("reconnecting in %lld ms", (long long)wait);
    evtimer_add(conn->retry, &tv);
}

static void free_client(struct conn *conn)
{
    struct grpc_client *client = conn->client;

    conn->client = NULL;
    relay_detach(conn->r);
    grpc_client_free(client); /* ends open calls: their callbacks see !conn->client */
    conn->enroll = conn->sessions = conn->publish = conn->probe = NULL;
}

static void on_teardown(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;

    free_client(conn);
    if (conn->state == CONN_STOPPED) {
        if (conn->stop_done) {
            void (*done)(struct runner *) = conn->stop_done;
            conn->stop_done = NULL;
            evtimer_del(conn->stop_timer);
            done(conn->r);
        }
        return;
    }
    conn->state = CONN_IDLE;
    schedule_retry(conn);
}

static void conn_lost(struct conn *conn, const char *why)
{
    if (conn->state == CONN_LOST || conn->state == CONN_IDLE)
        return;
    if (conn->state != CONN_STOPPED) {
        /* Warn when an established connection drops and on the first failed
         * attempt after it; the retries after that are debug noise. */
        if (conn->state == CONN_READY || !conn->failing)
            log_warn("connection to %s lost: %s", conn->addr, why);
        else
            log_debug("connection to %s failed: %s", conn->addr, why);
        conn->failing = conn->state != CONN_READY;
        conn->state = CONN_LOST;
        conn->addr_index++;
    }
    relay_detach(conn->r);
    event_active(conn->teardown, EV_TIMEOUT, 0);
}

/* --- Sessions and PublishEvents ---------------------------------------------- */

static void sessions_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct conn *conn = arg;
    Compass__V1__SessionsResponse *command;
    struct host_answer answer;

    command = compass__v1__sessions_response__unpack(NULL, len, data);
    if (!command) {
        log_warn("unparseable command on the Sessions stream; ignored");
        return;
    }
    host_command(conn->r, command, &answer);
    if (answer.msg.result_case == COMPASS__V1__SESSIONS_REQUEST__RESULT_ERROR)
        log_info("refused request %.40s: %s", command->request_id, answer.error.message);
    /* A command without a request_id expects no answer. */
    if (command->request_id[0] && conn->sessions && conn->client)
        grpc_client_call_send(conn->sessions, &answer.msg.base);
    host_answer_free(&answer);
    compass__v1__sessions_response__free_unpacked(command, NULL);
}

static void sessions_on_done(void *arg, const struct grpc_client_result *result)
{
    struct conn *conn = arg;
    char why[1100];

    conn->sessions = NULL;
    if (!conn->client)
        return;
    snprintf(why, sizeof(why), "Sessions stream ended: %s %s", grpc_status_name(result->status),
             result->message);
    conn_lost(conn, why);
}

static void publish_on_done(void *arg, const struct grpc_client_result *result)
{
    struct conn *conn = arg;
    char why[1100];

    conn->publish = NULL;
    relay_detach(conn->r);
    if (!conn->client)
        return;
    if (conn->state == CONN_STOPPED && result->status == GRPC_STATUS_OK) {
        /* Our half-close was answered: every frame was accepted. */
        if (!conn->sessions)
            conn_lost(conn, "stopped");
        else
            grpc_client_call_cancel(conn->sessions);
        return;
    }
    snprintf(why, sizeof(why), "PublishEvents ended: %s %s", grpc_status_name(result->status),
             result->message);
    conn_lost(conn, why);
}

void conn_report_live(struct conn *conn)
{
    Compass__V1__SessionsRequest report = COMPASS__V1__SESSIONS_REQUEST__INIT;
    char *ids[CONN_LIVE_MAX];

    if (conn->state != CONN_READY || !conn->sessions)
        return;
    report.n_live_sessions = host_live_sessions(conn->r, ids, CONN_LIVE_MAX);
    report.live_sessions = ids;
    grpc_client_call_send(conn->sessions, &report.base);
}

/* Enrolled: opens the control stream and PublishEvents. */
static void conn_open_streams(struct conn *conn)
{
    static const struct grpc_client_call_handler sessions_handler = {sessions_on_message,
                                                                     sessions_on_done};
    static const struct grpc_client_call_handler publish_handler = {NULL, publish_on_done};
    struct runner *r = conn->r;

    conn->sessions = grpc_client_call_start(conn->client, PATH_SESSIONS, r->cfg.token, 0,
                                            &sessions_handler, conn);
    conn->publish =
        grpc_client_call_start(conn->client, PATH_PUBLISH, r->cfg.token, 0, &publish_handler, conn);
    if (!conn->sessions || !conn->publish) {
        conn_lost(conn, "cannot open the Sessions and PublishEvents streams");
        return;
    }
    if (conn->failing)
        log_info("connected again to %s", conn->addr);
    conn->state = CONN_READY;
    conn->probe_ms = clock_monotonic_ms();
    conn->failing = 0;
    conn->backoff_ms = CONN_BACKOFF_MIN_MS;
    if (relay_attach(r, conn->publish, conn->last_runner_seq) != 0) {
        conn_lost(conn, "cannot queue frames on PublishEvents");
        return;
    }
    conn_report_live(conn);
    host_on_connected(r);
}

/* --- Enroll -------------------------------------------------------------------- */

static void enroll_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct conn *conn = arg;
    Compass__V1__EnrollResponse *response = compass__v1__enroll_response__unpack(NULL, len, data);

    if (!response)
        return;
    /* Without reattached the server keeps no mark for this Runner: it has
     * none of the frames sent so far, which are resent as they are. */
    conn->last_runner_seq = response->reattached ? response->last_runner_seq : 0;
    conn->enroll_ok = 1;
    log_info("enrolled as %s at %s (%s); last runner_seq the server accepted: %llu",
             response->runner_id, conn->addr, response->reattached ? "resumed" : "a new run",
             (unsigned long long)conn->last_runner_seq);
    compass__v1__enroll_response__free_unpacked(response, NULL);
}

static void enroll_on_done(void *arg, const struct grpc_client_result *result)
{
    struct conn *conn = arg;
    char why[1100];

    conn->enroll = NULL;
    if (!conn->client || conn->state != CONN_ENROLLING)
        return;
    if (result->status == GRPC_STATUS_OK && conn->enroll_ok) {
        conn_open_streams(conn);
        return;
    }
    if (result->status == GRPC_STATUS_UNAUTHENTICATED ||
        result->status == GRPC_STATUS_PERMISSION_DENIED) {
        log_error("Enroll refused: %s %s", grpc_status_name(result->status), result->message);
        conn->r->exit_code = 1;
        event_base_loopbreak(conn->r->base);
        return;
    }
    snprintf(why, sizeof(why), "Enroll failed: %s %s", grpc_status_name(result->status),
             result->message);
    conn_lost(conn, why);
}

static void conn_connect(struct conn *conn)
{
    static const struct grpc_client_call_handler handler = {enroll_on_message, enroll_on_done};
    Compass__V1__EnrollRequest request = COMPASS__V1__ENROLL_REQUEST__INIT;
    struct runner *r = conn->r;
    char err[256];

    conn->enroll_ok = 0;
    if (hostport_list_nth(r->cfg.addr, conn->addr_index, conn->addr, sizeof(conn->addr)) == 0) {
        log_warn("cannot connect: --addr %s has an empty or overlong address", r->cfg.addr);
        conn->addr_index++;
        schedule_retry(conn);
        return;
    }
    conn->client = grpc_client_new(r->base, conn->addr, &r->cfg.tls, err, sizeof(err));
    if (!conn->client) {
        log_warn("cannot connect: %s", err);
        schedule_retry(conn);
        return;
    }
    conn->state = CONN_ENROLLING;
    conn->attempt_ms = clock_monotonic_ms();
    request.runner_version = (char *)RUNNER_VERSION;
    /* Always resume: frames sent before a reconnect keep their runner_seq,
     * and the server tells which of them it has. */
    request.resume = 1;
    conn->enroll = grpc_client_call_start(conn->client, PATH_ENROLL, r->cfg.token,
                                          CONN_ENROLL_TIMEOUT, &handler, conn);
    if (!conn->enroll || grpc_client_call_send(conn->enroll, &request.base) != 0) {
        conn_lost(conn, "cannot start Enroll");
        return;
    }
    grpc_client_call_close_send(conn->enroll);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct conn *conn = arg;

    if (conn->state == CONN_IDLE)
        conn_connect(conn);
}

/* --- Liveness ------------------------------------------------------------------ */

static void probe_on_done(void *arg, const struct grpc_client_result *result)
{
    struct conn *conn = arg;

    /* Any answer, even UNIMPLEMENTED, shows the server is there. */
    conn->probe = NULL;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    static const struct grpc_client_call_handler handler = {NULL, probe_on_done};
    struct conn *conn = arg;
    int64_t now = clock_monotonic_ms();

    if (conn->state == CONN_ENROLLING && now - conn->attempt_ms > CONN_ENROLL_WAIT_MS) {
        conn_lost(conn, "connect or Enroll timed out");
        return;
    }
    if (conn->state != CONN_READY)
        return;
    if (conn->probe) {
        if (now - conn->probe_ms > CONN_PROBE_WAIT_MS)
            conn_lost(conn, "the server stopped answering health probes");
        return;
    }
    if (now - conn->probe_ms < CONN_PROBE_EVERY_MS)
        return;
    conn->probe_ms = now;
    conn->probe = grpc_client_call_start(conn->client, PATH_HEALTH, conn->r->cfg.token,
                                         CONN_PROBE_WAIT_MS, &handler, conn);
    if (!conn->probe)
        return;
    /* HealthCheckRequest{} (the whole server) is the empty message. */
    if (grpc_client_call_send_encoded(conn->probe, NULL, 0) == 0)
        grpc_client_call_close_send(conn->probe);
    else
        grpc_client_call_cancel(conn->probe);
}

/* --- Lifecycle ----------------------------------------------------------------- */

struct conn *conn_new(struct runner *r)
{
    struct conn *conn = calloc(1, sizeof(*conn));

    if (!conn)
        return NULL;
    conn->r = r;
    conn->backoff_ms = CONN_BACKOFF_MIN_MS;
    conn->retry = evtimer_new(r->base, on_retry, conn);
    conn->teardown = event_new(r->base, -1, 0, on_teardown, conn);
    conn->stop_timer = evtimer_new(r->base, on_teardown, conn);
    conn->tick = event_new(r->base, -1, EV_PERSIST, on_tick, conn);
    conn->blob_base = event_base_new();
    if (!conn->retry || !conn->teardown || !conn->stop_timer || !conn->tick || !conn->blob_base) {
        conn_free(conn);
        return NULL;
    }
    return conn;
}

void conn_free(struct conn *conn)
{
    if (!conn)
        return;
    conn->state = CONN_STOPPED;
    conn->stop_done = NULL;
    if (conn->client)
        free_client(conn);
    if (conn->blob_client)
        grpc_client_free(conn->blob_client);
    if (conn->retry)
        event_free(conn->retry);
    if (conn->teardown)
        event_free(conn->teardown);
    if (conn->stop_timer)
        event_free(conn->stop_timer);
    if (conn->tick)
        event_free(conn->tick);
    if (conn->blob_base)
        event_base_free(conn->blob_base);
    free(conn);
}

int conn_start(struct conn *conn)
{
    struct timeval tv = {CONN_TICK_MS / 1000, (CONN_TICK_MS % 1000) * 1000};

    if (event_add(conn->tick, &tv) != 0)
        return -1;
    conn->state = CONN_IDLE;
    conn_connect(conn);
    return 0;
}

int conn_ready(const struct conn *conn)
{
    return conn->state == CONN_READY;
}

void conn_stop(struct conn *conn, int timeout_ms, void (*done)(struct runner *r))
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    int was_ready = conn->state == CONN_READY;

    conn->state = CONN_STOPPED;
    conn->stop_done = done;
    evtimer_del(conn->retry);
    event_del(conn->tick);
    if (was_ready && conn->publish) {
        /* Half-close: the server answers once it has every frame. */
        grpc_client_call_close_send(conn->publish);
        evtimer_add(conn->stop_timer, &tv);
        return;
    }
    event_active(conn->teardown, EV_TIMEOUT, 0);
}

/* --- Unary calls ----------------------------------------------------------------- */

static void unary_on_done(void *arg, const struct grpc_client_result *result)
{
    const char *path = arg;

    if (result->status != GRPC_STATUS_OK)
        log_debug("%s failed: %s %s", path, grpc_status_name(result->status), result->message);
}

int conn_unary_async(struct conn *conn, const char *path, const ProtobufCMessage *request)
{
    static const struct grpc_client_call_handler handler = {NULL, unary_on_done};
    struct grpc_client_call *call;

    if (conn->state != CONN_READY || !conn->client)
        return -1;
    call = grpc_client_call_start(conn->client, path, conn->r->cfg.token, CONN_UNARY_TIMEOUT,
                                  &handler, (void *)path);
    if (!call)
        return -1;
    if (grpc_client_call_send(call, request) != 0) {
        grpc_client_call_cancel(call);
        return -1;
    }
    grpc_client_call_close_send(call);
    return 0;
}

/* The side connection for blobs, (re)made on demand.  Returns NULL when it
 * cannot be made. */
static struct grpc_client *blob_client(struct conn *conn)
{
    char err[256];

    if (conn->blob_client && grpc_client_broken(conn->blob_client)) {
        grpc_client_free(conn->blob_client);
        conn->blob_client = NULL;
    }
    if (!conn->blob_client) {
        conn->blob_client =
            grpc_client_new(conn->blob_base, conn->addr, &conn->r->cfg.tls, err, sizeof(err));
        if (!conn->blob_client)
            log_warn("blob connection: %s", err);
    }
    return conn->blob_client;
}

int conn_blob_upload(void *ctx, const char *session_id, const char *content_type,
                     const uint8_t *data, size_t len, char *ref, size_t ref_size)
{
    struct conn *conn = ctx;
    Compass__V1__UploadSessionBlobRequest request = COMPASS__V1__UPLOAD_SESSION_BLOB_REQUEST__INIT;
    Compass__V1__UploadSessionBlobResponse *response = NULL;
    struct grpc_client_result result;
    struct grpc_client *client = blob_client(conn);
    int status;

    if (!client)
        return GRPC_STATUS_UNAVAILABLE;
    request.session_id = (char *)session_id;
    request.content_type = (char *)content_type;
    request.data.data = (uint8_t *)data;
    request.data.len = len;
    status =
        grpc_client_unary(client, PATH_UPLOAD, conn->r->cfg.token, CONN_BLOB_TIMEOUT, &request.base,
                          &compass__v1__upload_session_blob_response__descriptor,
                          (ProtobufCMessage **)&response, &result);
    if (status == GRPC_STATUS_OK) {
        snprintf(ref, ref_size, "%s", response->blob_ref);
        compass__v1__upload_session_blob_response__free_unpacked(response, NULL);
    } else {
        log_warn("UploadSessionBlob for %s: %s %s", session_id, grpc_status_name(status),
                 result.message);
    }
    return status;
}

int conn_blob_fetch(void *ctx, const char *session_id, const char *ref, char **content_type,
                    uint8_t **data, size_t *len)
{
    struct conn *conn = ctx;
    Compass__V1__FetchSessionBlobRequest request = COMPASS__V1__FETCH_SESSION_BLOB_REQUEST__INIT;
    Compass__V1__FetchSessionBlobResponse *response = NULL;
    struct grpc_client_result result;
    struct grpc_client *client = blob_client(conn);
    int status;

    if (!client)
        return GRPC_STATUS_UNAVAILABLE;
    request.session_id = (char *)session_id;
    request.blob_ref = (char *)ref;
    status = grpc_client_unary(client, PATH_FETCH, conn->r->cfg.token, CONN_BLOB_TIMEOUT,
                               &request.base, &compass__v1__fetch_session_blob_response__descriptor,
                               (ProtobufCMessage **)&response, &result);
    if (status != GRPC_STATUS_OK) {
        log_warn("FetchSessionBlob for %s: %s %s", session_id, grpc_status_name(status),
                 result.message);
        return status;
    }
    *content_type = strdup(response->content_type);
    *data = malloc(response->data.len ? response->data.len : 1);
    if (!*content_type || !*data) {
        free(*content_type);
        free(*data);
        *content_type = NULL;
        *data = NULL;
        status = GRPC_STATUS_RESOURCE_EXHAUSTED;
    } else {
        memcpy(*data, response->data.data, response->data.len);
        *len = response->data.len;
    }
    compass__v1__fetch_session_blob_response__free_unpacked(response, NULL);
    return status;
}
