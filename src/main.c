/* agenthubd: the server.  main wires the layers: h2 listeners, the gRPC
 * method tables, the handlers and their shared context, the metrics port. */
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "core/bus.h"
#include "core/session.h"
#include "grpc/grpc.h"
#include "h2/h2.h"
#include "rpc/rpc.h"
#include "hub/hub.h"
#include "hub/hub_log_jetstream.h"
#include "hub/hub_snapshot.h"
#include "hub/runner_remote.h"
#include "hub/hub_wire.h"
#include "hub/runner_control.h"
#include "common/pb_validate.h"
#include "hub/stream_guard.h"
#include "store/store.h"
#include "server/metrics_http.h"
#include "server/server_config.h"
#include "server/server_log.h"
#include "server/web_door.h"
#include "web/web.h"

/* What --web off serves: nothing, so every path is 404. */
static const struct web_site no_web = {NULL, 0};

#define SHUTDOWN_GRACE_MS 4500

struct server {
    struct server_config config;
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_server *grpc;
    struct hub hub;
    struct rpc_context rpc; /* every door's door data */
    struct session_registry sessions;
    struct bus bus;
    struct hub_snapshot snapshot; /* the bus's latest status of each session */
    struct hub_log_js *cluster;   /* NULL: the disk or the in-memory log */
    struct hub_log_disk *disk;    /* the durable log of a single node, or NULL */
    char health_reason[160];      /* what /healthz says the session log waits for */
    struct runner_remote *remote; /* Runners on other nodes, with cluster */
    struct metrics_http *metrics;
    struct event *sigterm;
    struct event *sigint;
    struct event *shutdown_poll;
    struct event *shutdown_deadline;
    struct event *store_tick; /* PostgreSQL: drain change notifications */
    int shutting_down;
};

/* 1 with --web off. */
static int web_off(const struct server_config *config)
{
    return config->web && strcmp(config->web, "off") == 0;
}

static void write_metrics(void *arg, FILE *out)
{
    struct server *server = arg;

    h2_server_write_metrics(server->h2, out);
    fprintf(out,
            "# HELP agenthub_log_lines_dropped_total log lines stderr did not take in time.\n"
            "# TYPE agenthub_log_lines_dropped_total counter\n"
            "agenthub_log_lines_dropped_total %llu\n",
            (unsigned long long)log_dropped_lines());
    grpc_server_write_metrics(server->grpc, out);
    hub_write_counters(&server->hub, out);
    hub_write_metrics(&server->hub, out);
    store_write_metrics(server->hub.store, out);
}

static const char *metrics_healthy(void *arg)
{
    struct server *server = arg;

    if (server->shutting_down)
        return "draining";
    if (server->disk && hub_log_disk_fault(server->disk))
        return hub_log_disk_fault(server->disk);
    if (!hub_log_writable(&server->hub.log)) {
        if (server->cluster)
            return hub_log_js_waiting_for(server->cluster, server->health_reason,
                                          sizeof(server->health_reason));
        return "the session log is unreachable (JetStream)";
    }
    return NULL;
}

/* A networked store's notifications are read whenever the store is used;
 * on a node that serves no calls for a while they would pile up in the
 * server's queue, so read them once a second too (no round trip: a
 * non-blocking read of what already arrived).  It also reconnects the
 * notification connection once the server is back, and tells health
 * Watch streams when the store's reachability changed (one round trip,
 * only while a Watch is open). */
static void on_store_tick(evutil_socket_t fd, short what, void *arg)
{
    struct server *server = arg;
    uint64_t generation;

    (void)store_change_generation(server->hub.store, &generation);
    if (!server->shutting_down)
        health_recheck(&server->rpc);
}

/* The session log started or stopped taking appends (NATS lost or back,
 * the node caught up, the disk refused or took commits again): health
 * Watch streams hear it now, not on the next store tick (a node on SQLite
 * has none). */
static void on_log_state(void *arg)
{
    struct server *server = arg;

    if (!server->shutting_down) {
        health_recheck(&server->rpc);
        /* Bus subscribers look again at whether the server serves
         * (their ServerStatus). */
        watch_list_wake(&server->bus.watchers);
    }
}

static void on_shutdown_poll(evutil_socket_t fd, short what, void *arg)
{
    struct server *server = arg;

    /* HTTP/1.1 calls hold no h2 connection: wait for them too. */
    if (h2_server_connection_count(server->h2) == 0 && grpc_server_call_count(server->grpc) == 0)
        event_base_loopbreak(server->base);
}

static void on_shutdown_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct server *server = arg;

    log_warn("%zu connection(s) still open after the grace period; closing them",
             h2_server_connection_count(server->h2));
    event_base_loopbreak(server->base);
}

static void on_signal(evutil_socket_t signal_number, short what, void *arg)
{
    struct server *server = arg;
    struct timeval poll = {0, 20000};
    struct timeval grace = {SHUTDOWN_GRACE_MS / 1000, (SHUTDOWN_GRACE_MS % 1000) * 1000};

    if (server->shutting_down) {
        log_info("second signal: stopping now");
        event_base_loopbreak(server->base);
        return;
    }
    log_info("signal %d: draining (GOAWAY, streams end UNAVAILABLE)", (int)signal_number);
    server->shutting_down = 1;
    health_set_draining(server->rpc.health);
    grpc_server_shutdown(server->grpc);
    server->shutdown_poll = event_new(server->base, -1, EV_PERSIST, on_shutdown_poll, server);
    server->shutdown_deadline = evtimer_new(server->base, on_shutdown_deadline, server);
    event_add(server->shutdown_poll, &poll);
    event_add(server->shutdown_deadline, &grace);
}

/* Session logs and the bus on JetStream.  Returns 0, or -1 after a
 * message. */
static int start_cluster(struct server *server)
{
    struct hub_log_js_config jc = {
        .urls = server->config.cluster,
        .node_id = server->config.node_id,
        .replicas = (int)server->config.cluster_replicas,
        .frames_max_bytes = server->config.session_log_budget,
        .bus_max_bytes = server->config.bus_bytes,
        .publish_wait_ms = 2000,
        .on_demand =
            !server->config.cluster_read || strcmp(server->config.cluster_read, "all") != 0,
        .linger_ms = server->config.cluster_linger_ms,
    };
    char host[256], err[256];

    if (!jc.node_id) {
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "agenthubd");
        host[sizeof(host) - 1] = '\0';
        jc.node_id = host;
    }
    server->cluster = hub_log_jetstream(&server->hub.log, server->base, &server->sessions,
                                        &server->bus, &jc, err, sizeof(err));
    if (!server->cluster) {
        log_error("--cluster %s: %s", server->config.cluster, err);
        return -1;
    }
    log_info("cluster node %s: session logs and the bus on JetStream (%zu replica(s)); reading %s",
             jc.node_id, server->config.cluster_replicas,
             jc.on_demand ? "sessions on demand" : "every session");
    return 0;
}

static int register_door(struct server *server, struct grpc_door *door, int runner_door)
{
    rpc_install_authenticator(door);
    if (health_register(&server->rpc, door) != 0 || reflection_register(&server->rpc, door) != 0 ||
        resource_register(&server->rpc, door) != 0)
        return -1;
    if (runner_door ? runner_service_register(&server->rpc, door) != 0
                    : compass_register(&server->rpc, door) != 0)
        return -1;
#ifdef AGENTHUB_FAILPOINTS
    if (echo_register(&server->rpc, door) != 0)
        return -1;
#endif
    return 0;
}

static void server_free(struct server *server)
{
    metrics_http_free(server->metrics);
    /* Connections first: their streams' close callbacks reach the handlers. */
    h2_server_free(server->h2);
    grpc_server_free(server->grpc);
    runner_registry_free(server->hub.runners);
    runner_remote_free(server->remote);
    /* It reads the bus through the log: before the log goes. */
    hub_snapshot_free(&server->snapshot);
    /* Before the copies it fills: no delivery arrives after this. */
    hub_log_js_free(server->cluster);
    hub_log_disk_free(server->disk);
    stream_guards_free(server->hub.guards);
    session_registry_free(&server->sessions);
    bus_free(&server->bus);
    store_close(server->hub.store);
    health_free(server->rpc.health);
    reflection_free(&server->rpc);
    if (server->sigterm)
        event_free(server->sigterm);
    if (server->sigint)
        event_free(server->sigint);
    if (server->shutdown_poll)
        event_free(server->shutdown_poll);
    if (server->shutdown_deadline)
        event_free(server->shutdown_deadline);
    if (server->store_tick)
        event_free(server->store_tick);
    if (server->base) {
        log_detach(500);
        event_base_free(server->base);
    }
}

int main(int argc, char **argv)
{
    struct server server;
    struct grpc_door *public_door, *runner_door = NULL;
    char err[256];
    int exit_code = 1;

    memset(&server, 0, sizeof(server));
    log_setup("agenthubd", LOG_LEVEL_INFO);
    switch (server_config_parse(argc, argv, &server.config)) {
    case SERVER_CONFIG_RUN:
        break;
    case SERVER_CONFIG_DONE:
        return 0;
    case SERVER_CONFIG_USAGE:
        return 2;
    case SERVER_CONFIG_NOMEM:
        return 1;
    }
    if (server.config.verbose)
        log_setup("agenthubd", LOG_LEVEL_DEBUG);
    if (server_config_check_paths(&server.config) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    /* The hub writes some fields by number; a build whose proto/ moved one
     * must not serve garbled frames. */
    if (hub_wire_check(err, sizeof(err)) != 0) {
        fprintf(stderr, "agenthubd: the generated code does not match the hub: %s\n", err);
        return 2;
    }

    if (store_open(server.config.db_path, &server.hub.store, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "agenthubd: --db %s: cannot open the store: %s\n",
                store_target_is_postgres(server.config.db_path) ? "(PostgreSQL URI)"
                                                                : server.config.db_path,
                err);
        return 2;
    }
    session_registry_init(&server.sessions, server.config.agent_log_bytes);
    session_registry_set_budget(&server.sessions, server.config.session_log_budget);
    session_registry_set_retention(&server.sessions, server.config.ended_log_bytes,
                                   (int64_t)server.config.ended_log_age_ms);
    bus_init(&server.bus, server.config.bus_bytes, 0);
    server.hub.sessions = &server.sessions;
    server.hub.bus = &server.bus;
    server.hub.snapshot = &server.snapshot;
    hub_log_memory(&server.hub.log, &server.bus);
    /* Before any log fills the bus (a replay from disk or JetStream); it
     * reads through server.hub.log, whichever backend that becomes. */
    hub_snapshot_init(&server.snapshot, &server.hub.log);
    server.hub.config.command_timeout_ms = server.config.command_timeout_ms;
    server.hub.config.runner_queue_bytes = server.config.runner_queue_bytes;
    server.hub.config.max_report_sessions = server.config.max_report_sessions;
    server.hub.config.max_account_sessions = server.config.max_account_sessions;

    server.base = event_base_new();
    if (!server.base)
        goto fail;
    server.hub.base = server.base;
    if (log_attach(server.base) != 0)
        log_warn("cannot reopen stderr without blocking; a stalled stderr will stall the server");
    if (server.config.cluster && start_cluster(&server) != 0)
        goto fail;
    server.config.log.memory_bytes = server.config.agent_log_bytes;
    if (!server.config.cluster &&
        server_log_open(&server.config.log, server.config.db_path, &server.hub.log, server.base,
                        &server.sessions, &server.bus, &server.disk) != 0) {
        exit_code = 2;
        goto fail;
    }
    server.hub.config.log_on_disk = server.disk != NULL;
    server.hub.runners = runner_registry_new(server.base);
    server.hub.guards = stream_guards_new(server.base, server.hub.store);
    if (!server.hub.runners || !server.hub.guards)
        goto fail;
    if (server.cluster) {
        server.remote =
            runner_remote_new(&server.hub, server.base, hub_log_js_link(server.cluster));
        if (!server.remote)
            goto fail;
        runner_registry_set_remote(server.hub.runners, &runner_remote_ops, server.remote);
    }
    server.h2 = h2_server_new(server.base, &server.config.h2);
    server.grpc = server.h2 ? grpc_server_new(server.base, server.h2, &server.config.grpc) : NULL;
    server.rpc.hub = &server.hub;
    server.rpc.config.has_runner_door = server.config.runner_listen != NULL;
    server.rpc.config.blob_dir = server.config.blob_dir;
    server.rpc.config.max_blob_bytes = server.config.max_blob_bytes;
    server.rpc.config.subscriber_buffer_bytes = server.config.subscriber_buffer_bytes;
    server.rpc.health = health_new();
    if (!server.grpc || !server.rpc.health)
        goto fail;
    grpc_server_set_request_check(server.grpc, pb_validate_strings);
    if (server.cluster)
        hub_log_js_on_state(server.cluster, on_log_state, &server);
    if (server.disk)
        hub_log_disk_on_state(server.disk, on_log_state, &server);

    public_door = grpc_door_new(server.grpc, "public", &server.rpc);
    if (public_door)
        web_door_install(public_door, web_off(&server.config) ? &no_web : &web_embedded_site);
    if (!public_door || register_door(&server, public_door, 0) != 0)
        goto fail;
    grpc_door_serve_http1(public_door); /* browsers: gRPC-Web over HTTP/1.1 */
    for (size_t i = 0; i < server.config.cors_origin_count; i++)
        if (grpc_door_add_cors_origin(public_door, server.config.cors_origins[i]) != 0) {
            log_error("--cors-origin %s: out of memory", server.config.cors_origins[i]);
            goto fail;
        }
    if (server.config.runner_listen) {
        runner_door = grpc_door_new(server.grpc, "runner", &server.rpc);
        if (runner_door)
            grpc_door_set_kind(runner_door, AUTH_DOOR_RUNNER);
        if (!runner_door || register_door(&server, runner_door, 1) != 0)
            goto fail;
        /* Connect Runners: unary and client streams over HTTP/1.1 too. */
        grpc_door_serve_http1(runner_door);
    }

    if (grpc_door_listen(public_door, server.config.listen, &server.config.tls, err, sizeof(err)) !=
        0) {
        log_error("public listener: %s", err);
        goto fail;
    }
    if (runner_door && grpc_door_listen(runner_door, server.config.runner_listen,
                                        &server.config.tls, err, sizeof(err)) != 0) {
        log_error("runner listener: %s", err);
        goto fail;
    }
    if (server.config.metrics_listen) {
        server.metrics =
            metrics_http_new(server.base, server.config.metrics_listen, &server.config.metrics,
                             write_metrics, metrics_healthy, &server, err, sizeof(err));
        if (!server.metrics) {
            log_error("metrics listener: %s", err);
            goto fail;
        }
    }
    if (store_target_is_postgres(server.config.db_path)) {
        struct timeval second = {1, 0};
        server.store_tick = event_new(server.base, -1, EV_PERSIST, on_store_tick, &server);
        if (!server.store_tick || event_add(server.store_tick, &second) != 0)
            goto fail;
    }
    server.sigterm = evsignal_new(server.base, SIGTERM, on_signal, &server);
    server.sigint = evsignal_new(server.base, SIGINT, on_signal, &server);
    if (!server.sigterm || !server.sigint || event_add(server.sigterm, NULL) != 0 ||
        event_add(server.sigint, NULL) != 0)
        goto fail;

    fprintf(stderr, "agenthubd: listening public %s\n", grpc_door_address(public_door));
    if (runner_door)
        fprintf(stderr, "agenthubd: listening runner %s\n", grpc_door_address(runner_door));
    if (server.metrics)
        fprintf(stderr, "agenthubd: listening metrics %s\n", metrics_http_address(server.metrics));
    fflush(stderr);

    event_base_dispatch(server.base);
    log_info("stopped");
    server_free(&server);
    flags_release_copies();
    return 0;

fail:
    server_free(&server);
    flags_release_copies();
    return exit_code;
}
