/* agenthubd: the server.  main wires the layers: h2 listeners, the gRPC
 * method tables, the handlers and their shared context, the metrics port. */
#include <event2/event.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/log.h"
#include "core/bus.h"
#include "core/session.h"
#include "grpc/grpc.h"
#include "h2/h2.h"
#include "rpc/rpc.h"
#include "hub/hub.h"
#include "hub/hub_log_jetstream.h"
#include "hub/runner_remote.h"
#include "hub/hub_wire.h"
#include "hub/runner_control.h"
#include "common/pb_validate.h"
#include "hub/stream_guard.h"
#include "store/blob.h"
#include "store/store.h"
#include "server/metrics_http.h"
#include "server/server_log.h"
#include "server/web_wire.h"
#include "web/web.h"

/* What --web off serves: nothing, so every path is 404. */
static const struct web_site no_web = {NULL, 0};

#define AGENTHUB_VERSION  "0.1.0"
#define SHUTDOWN_GRACE_MS 4500
/* --cors-origin may be given this many times. */
#define CORS_ORIGINS_MAX 32

struct config {
    const char *db_path;
    const char *listen;
    const char *runner_listen;
    const char *metrics_listen;
    const char *blob_dir;
    struct h2_tls_config tls;
    int web_off; /* --web off: no pane page on the public door */
    struct h2_limits h2;
    struct grpc_limits grpc;
    size_t agent_log_bytes;
    size_t bus_bytes;
    size_t subscriber_buffer_bytes;
    size_t max_blob_bytes;
    size_t session_log_budget;
    size_t ended_log_bytes;
    size_t ended_log_age_ms;
    size_t max_account_sessions;
    size_t runner_queue_bytes;
    size_t command_timeout_ms;
    size_t max_report_sessions;
    struct metrics_http_limits metrics;
    int max_connections_set;                    /* --max-connections given */
    const char *cors_origins[CORS_ORIGINS_MAX]; /* --cors-origin, in order */
    size_t cors_origin_count;
    const char *cluster; /* NATS URLs: session logs and the bus on JetStream */
    const char *node_id;
    size_t cluster_replicas;
    struct server_log_config log; /* --log, --log-db, --log-sync, --log-commit-ms */
};

struct server {
    struct config config;
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_server *grpc;
    struct hub hub;
    struct rpc_context rpc; /* every door's door data */
    struct session_registry sessions;
    struct bus bus;
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

static void usage(FILE *out)
{
    fputs("usage: agenthubd --db PATH|URI --listen HOST:PORT [options]\n"
          "\n"
          "  --db PATH|URI                 the ownership store: a SQLite file, or a\n"
          "                                PostgreSQL connection URI (postgres://...)\n"
          "                                that several agenthubd nodes share\n"
          "  --listen HOST:PORT            public door (CompassService; port 0 picks one)\n"
          "  --runner-listen HOST:PORT     Runner door (RunnerService); without it the\n"
          "                                server has no Runner seam\n"
          "  --metrics-listen HOST:PORT    Prometheus text at GET /metrics, GET /healthz\n"
          "  --blob-dir DIR                session blob storage (none without it)\n"
          "  --agent-log-bytes N           per-session ring bound (default 4194304)\n"
          "  --bus-bytes N                 event bus bound (default 16777216)\n"
          "  --subscriber-buffer-bytes N   per-subscriber outbound bound (default 1048576)\n"
          "  --max-blob-bytes N            largest session blob (default 4194304)\n"
          "  --session-log-budget-bytes N  memory for every session's log together (default\n"
          "                                536870912, at least --agent-log-bytes); past it the\n"
          "                                oldest entries of the least recently active\n"
          "                                sessions are evicted, nothing is refused\n"
          "  --ended-log-bytes N           memory for the logs of sessions whose agent ended,\n"
          "                                kept readable (default 67108864; 0 keeps none);\n"
          "                                past it the longest-ended session is evicted\n"
          "  --ended-log-age-ms N          how long an ended session's log stays readable\n"
          "                                (default 86400000, 24 h; 0 keeps none)\n"
          "  --max-sessions-per-account N  open sessions one agent account may have (default\n"
          "                                64); past it a new session is refused with\n"
          "                                RESOURCE_EXHAUSTED\n"
          "  --runner-queue-bytes N        control commands waiting for one Runner (default\n"
          "                                8388608); past it a command is refused with\n"
          "                                UNAVAILABLE at once\n"
          "  --command-timeout-ms N        how long a control command waits to be written\n"
          "                                and answered (default 5000)\n"
          "  --max-report-sessions N       ids in a Runner's live-sessions report (default\n"
          "                                10000); a bigger report ends its Sessions stream\n"
          "                                with RESOURCE_EXHAUSTED\n"
          "  --tls-cert FILE --tls-key FILE   serve TLS 1.2+ with ALPN h2\n"
          "  --tls-client-ca FILE          require client certificates signed by FILE\n"
          "  --max-concurrent-streams N    SETTINGS_MAX_CONCURRENT_STREAMS (default 100)\n"
          "  --max-connections N           open connections per listener (default: what the\n"
          "                                open-files limit holds, shared by the listeners,\n"
          "                                at most 10000); more are closed at accept\n"
          "  --idle-timeout-ms N           close connections where no stream made progress\n"
          "                                (PINGs do not count) (default 300000)\n"
          "  --header-timeout-ms N         close connections whose TLS handshake, preface or\n"
          "                                request header block is unfinished (default 10000)\n"
          "  --max-recv-bytes N            largest request message (default 4194304)\n"
          "  --request-timeout-ms N        cancel a request whose first message is not in\n"
          "                                (default 10000)\n"
          "  --recv-budget-bytes N         request bytes held per connection; over it new\n"
          "                                streams are refused (default 16777216)\n"
          "  --total-recv-budget-bytes N   the same across the server (default 268435456)\n"
          "  --metrics-max-connections N   metrics listener connections (default 16)\n"
          "  --metrics-idle-timeout-ms N   metrics request and answer time (default 10000)\n"
          "  --cors-origin ORIGIN          let pages from ORIGIN (scheme://host[:port]) call\n"
          "                                the public door with gRPC-Web: CORS preflights\n"
          "                                answered, Access-Control-* headers on answers\n"
          "                                (repeatable; none by default)\n"
          "  --web on|off                  serve the pane page at GET / on the public door\n"
          "                                (default on; off answers 404, docs/web-page.md)\n"
          "  --cluster nats://HOST:PORT[,nats://HOST:PORT...]\n"
          "                                run as a node of a cluster: session logs and the\n"
          "                                event bus live in NATS JetStream (streams\n"
          "                                AGENTHUB_FRAMES, AGENTHUB_BUS), so every node\n"
          "                                serves every session; see docs/cluster.md\n"
          "  --node-id NAME                this node's name in the cluster (default: the\n"
          "                                host name)\n"
          "  --cluster-replicas N          copies JetStream keeps of each stream (default 1,\n"
          "                                at most 5)\n"
          "  --log disk|memory             where a single node keeps session logs and the\n"
          "                                bus: on disk, so a restart keeps them (default),\n"
          "                                or in memory only; docs/durability.md\n"
          "  --log-db PATH                 the session log's file (SQLite, WAL mode; default\n"
          "                                beside --db: var/agenthub.db gives\n"
          "                                var/agenthub-log.db)\n"
          "  --log-sync normal|full        normal: a commit survives a killed process (no\n"
          "                                fsync per commit, the default); full: an fsync\n"
          "                                per commit, it survives a lost machine too\n"
          "  --log-commit-ms N             gather frames this long into one commit (default\n"
          "                                0: those of one event-loop turn)\n"
          "  --verbose                     debug logging\n"
          "  --version, --help\n"
          "\n"
          "Every file and directory a flag names is checked at start; a missing or\n"
          "unusable one exits 2 with a message naming the flag.\n",
          out);
}

/* Parses a positive size flag.  Returns 0, or -1 (after a message). */
static int parse_size(const char *flag, const char *value, size_t *out)
{
    char *end;
    unsigned long long n = strtoull(value, &end, 10);

    if (*value == '\0' || *end != '\0' || n == 0 || value[0] == '-') {
        fprintf(stderr, "agenthubd: %s: expected a positive number, got '%s'\n", flag, value);
        return -1;
    }
    *out = (size_t)n;
    return 0;
}

/* Like parse_size, and 0 is accepted too.  Returns 0, or -1. */
static int parse_size_or_zero(const char *flag, const char *value, size_t *out)
{
    if (strcmp(value, "0") == 0) {
        *out = 0;
        return 0;
    }
    return parse_size(flag, value, out);
}

/* Refuses a value that does not fit 32 bits.  Returns 0, or -1 (after a
 * message). */
static int parse_u32_range(const char *flag, size_t value)
{
    if (value > UINT32_MAX) {
        fprintf(stderr, "agenthubd: %s: at most %u\n", flag, UINT32_MAX);
        return -1;
    }
    return 0;
}

/* Descriptors kept for everything but client connections: the store, blobs,
 * stdio, listeners, the event loop. */
#define FD_RESERVE 64

/* Connections per HTTP/2 listener the open-files limit can hold: what is
 * left after the reserve and the metrics listener's cap, shared by the
 * public and Runner listeners, at most 10000. */
static uint32_t default_max_connections(const struct config *config)
{
    struct rlimit rl;
    rlim_t listeners = config->runner_listen ? 2 : 1;
    rlim_t reserve = FD_RESERVE + (config->metrics_listen ? config->metrics.max_connections : 0);
    rlim_t n;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 10000;
    n = rl.rlim_cur > reserve + listeners ? (rl.rlim_cur - reserve) / listeners : 1;
    return n > 10000 ? 10000 : (uint32_t)n;
}

/* Returns 0 to run, 1 when --help/--version printed, -1 on a usage error. */
static int parse_args(int argc, char **argv, struct config *config)
{
    enum {
        OPT_DB = 256,
        OPT_LISTEN,
        OPT_RUNNER_LISTEN,
        OPT_METRICS_LISTEN,
        OPT_BLOB_DIR,
        OPT_AGENT_LOG_BYTES,
        OPT_BUS_BYTES,
        OPT_SUBSCRIBER_BUFFER_BYTES,
        OPT_MAX_BLOB_BYTES,
        OPT_SESSION_LOG_BUDGET,
        OPT_ENDED_LOG_BYTES,
        OPT_ENDED_LOG_AGE,
        OPT_MAX_ACCOUNT_SESSIONS,
        OPT_RUNNER_QUEUE_BYTES,
        OPT_COMMAND_TIMEOUT,
        OPT_MAX_REPORT_SESSIONS,
        OPT_TLS_CERT,
        OPT_TLS_KEY,
        OPT_TLS_CLIENT_CA,
        OPT_MAX_STREAMS,
        OPT_MAX_CONNECTIONS,
        OPT_IDLE_TIMEOUT,
        OPT_MAX_RECV,
        OPT_HEADER_TIMEOUT,
        OPT_REQUEST_TIMEOUT,
        OPT_RECV_BUDGET,
        OPT_TOTAL_RECV_BUDGET,
        OPT_METRICS_MAX_CONNECTIONS,
        OPT_METRICS_IDLE_TIMEOUT,
        OPT_WEB,
        OPT_CLUSTER,
        OPT_NODE_ID,
        OPT_CLUSTER_REPLICAS,
        OPT_VERBOSE,
        OPT_LOG,
        OPT_LOG_DB,
        OPT_LOG_SYNC,
        OPT_LOG_COMMIT_MS,
        OPT_CORS_ORIGIN,
        OPT_VERSION,
        OPT_HELP,
    };
    static const struct option options[] = {
        {"db", required_argument, NULL, OPT_DB},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"runner-listen", required_argument, NULL, OPT_RUNNER_LISTEN},
        {"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN},
        {"blob-dir", required_argument, NULL, OPT_BLOB_DIR},
        {"agent-log-bytes", required_argument, NULL, OPT_AGENT_LOG_BYTES},
        {"bus-bytes", required_argument, NULL, OPT_BUS_BYTES},
        {"subscriber-buffer-bytes", required_argument, NULL, OPT_SUBSCRIBER_BUFFER_BYTES},
        {"max-blob-bytes", required_argument, NULL, OPT_MAX_BLOB_BYTES},
        {"session-log-budget-bytes", required_argument, NULL, OPT_SESSION_LOG_BUDGET},
        {"ended-log-bytes", required_argument, NULL, OPT_ENDED_LOG_BYTES},
        {"ended-log-age-ms", required_argument, NULL, OPT_ENDED_LOG_AGE},
        {"max-sessions-per-account", required_argument, NULL, OPT_MAX_ACCOUNT_SESSIONS},
        {"runner-queue-bytes", required_argument, NULL, OPT_RUNNER_QUEUE_BYTES},
        {"command-timeout-ms", required_argument, NULL, OPT_COMMAND_TIMEOUT},
        {"max-report-sessions", required_argument, NULL, OPT_MAX_REPORT_SESSIONS},
        {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
        {"tls-key", required_argument, NULL, OPT_TLS_KEY},
        {"tls-client-ca", required_argument, NULL, OPT_TLS_CLIENT_CA},
        {"max-concurrent-streams", required_argument, NULL, OPT_MAX_STREAMS},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"idle-timeout-ms", required_argument, NULL, OPT_IDLE_TIMEOUT},
        {"max-recv-bytes", required_argument, NULL, OPT_MAX_RECV},
        {"header-timeout-ms", required_argument, NULL, OPT_HEADER_TIMEOUT},
        {"request-timeout-ms", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"recv-budget-bytes", required_argument, NULL, OPT_RECV_BUDGET},
        {"total-recv-budget-bytes", required_argument, NULL, OPT_TOTAL_RECV_BUDGET},
        {"metrics-max-connections", required_argument, NULL, OPT_METRICS_MAX_CONNECTIONS},
        {"metrics-idle-timeout-ms", required_argument, NULL, OPT_METRICS_IDLE_TIMEOUT},
        {"web", required_argument, NULL, OPT_WEB},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"node-id", required_argument, NULL, OPT_NODE_ID},
        {"cluster-replicas", required_argument, NULL, OPT_CLUSTER_REPLICAS},
        {"verbose", no_argument, NULL, OPT_VERBOSE},
        {"log", required_argument, NULL, OPT_LOG},
        {"log-db", required_argument, NULL, OPT_LOG_DB},
        {"log-sync", required_argument, NULL, OPT_LOG_SYNC},
        {"log-commit-ms", required_argument, NULL, OPT_LOG_COMMIT_MS},
        {"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    size_t n;
    int opt;

    config->h2.max_concurrent_streams = 100;
    config->h2.max_header_list_bytes = 16384;
    config->h2.idle_timeout_ms = 300000;
    config->h2.max_connections = 10000;
    config->h2.header_timeout_ms = H2_DEFAULT_HEADER_TIMEOUT_MS;
    config->h2.conn_recv_budget = H2_DEFAULT_CONN_RECV_BUDGET;
    config->h2.server_recv_budget = H2_DEFAULT_SERVER_RECV_BUDGET;
    config->grpc.max_recv_bytes = 4 * 1024 * 1024;
    config->grpc.send_bound_bytes = 1024 * 1024;
    config->grpc.request_timeout_ms = GRPC_DEFAULT_REQUEST_TIMEOUT_MS;
    config->metrics.max_connections = 16;
    config->metrics.idle_timeout_ms = 10000;
    config->agent_log_bytes = 4 * 1024 * 1024;
    config->bus_bytes = 16 * 1024 * 1024;
    config->subscriber_buffer_bytes = 1024 * 1024;
    config->max_blob_bytes = 4 * 1024 * 1024;
    config->session_log_budget = (size_t)512 * 1024 * 1024;
    config->ended_log_bytes = SESSION_DEFAULT_RETAIN_BYTES;
    config->ended_log_age_ms = (size_t)SESSION_DEFAULT_RETAIN_MS;
    config->max_account_sessions = 64;
    config->runner_queue_bytes = 8 * 1024 * 1024;
    config->command_timeout_ms = 5000;
    config->max_report_sessions = 10000;
    config->cluster_replicas = 1;
    config->log.pending_bytes = (size_t)256 * 1024 * 1024;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case OPT_DB:
            config->db_path = optarg;
            break;
        case OPT_LOG:
            config->log.mode = optarg;
            break;
        case OPT_LOG_DB:
            config->log.db = optarg;
            break;
        case OPT_LOG_SYNC:
            config->log.sync = optarg;
            break;
        case OPT_LOG_COMMIT_MS:
            if (parse_size_or_zero("--log-commit-ms", optarg, &config->log.commit_ms) != 0 ||
                parse_u32_range("--log-commit-ms", config->log.commit_ms) != 0)
                return -1;
            break;
        case OPT_WEB:
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                fprintf(stderr, "agenthubd: --web: expected on or off, got '%s'\n", optarg);
                return -1;
            }
            config->web_off = strcmp(optarg, "off") == 0;
            break;
        case OPT_LISTEN:
            config->listen = optarg;
            break;
        case OPT_RUNNER_LISTEN:
            config->runner_listen = optarg;
            break;
        case OPT_METRICS_LISTEN:
            config->metrics_listen = optarg;
            break;
        case OPT_CORS_ORIGIN:
            if (config->cors_origin_count == CORS_ORIGINS_MAX) {
                fprintf(stderr, "agenthubd: --cors-origin: at most %d origins\n", CORS_ORIGINS_MAX);
                return -1;
            }
            if (!grpc_cors_origin_valid(optarg)) {
                fprintf(stderr,
                        "agenthubd: --cors-origin %s: not an origin (scheme://host[:port], "
                        "http or https, no path)\n",
                        optarg);
                return -1;
            }
            config->cors_origins[config->cors_origin_count++] = optarg;
            break;
        case OPT_CLUSTER:
            config->cluster = optarg;
            break;
        case OPT_NODE_ID:
            config->node_id = optarg;
            break;
        case OPT_CLUSTER_REPLICAS:
            if (parse_size("--cluster-replicas", optarg, &config->cluster_replicas) != 0)
                return -1;
            if (config->cluster_replicas > 5) {
                fprintf(stderr, "agenthubd: --cluster-replicas: at most 5\n");
                return -1;
            }
            break;
        case OPT_BLOB_DIR:
            config->blob_dir = optarg;
            break;
        case OPT_AGENT_LOG_BYTES:
            if (parse_size("--agent-log-bytes", optarg, &config->agent_log_bytes) != 0)
                return -1;
            break;
        case OPT_BUS_BYTES:
            if (parse_size("--bus-bytes", optarg, &config->bus_bytes) != 0)
                return -1;
            break;
        case OPT_SUBSCRIBER_BUFFER_BYTES:
            if (parse_size("--subscriber-buffer-bytes", optarg, &config->subscriber_buffer_bytes) !=
                0)
                return -1;
            break;
        case OPT_MAX_BLOB_BYTES:
            if (parse_size("--max-blob-bytes", optarg, &config->max_blob_bytes) != 0)
                return -1;
            break;
        case OPT_SESSION_LOG_BUDGET:
            if (parse_size("--session-log-budget-bytes", optarg, &config->session_log_budget) != 0)
                return -1;
            break;
        case OPT_ENDED_LOG_BYTES:
            if (parse_size_or_zero("--ended-log-bytes", optarg, &config->ended_log_bytes) != 0)
                return -1;
            break;
        case OPT_ENDED_LOG_AGE:
            if (parse_size_or_zero("--ended-log-age-ms", optarg, &config->ended_log_age_ms) != 0)
                return -1;
            break;
        case OPT_MAX_ACCOUNT_SESSIONS:
            if (parse_size("--max-sessions-per-account", optarg, &config->max_account_sessions) !=
                    0 ||
                parse_u32_range("--max-sessions-per-account", config->max_account_sessions) != 0)
                return -1;
            break;
        case OPT_RUNNER_QUEUE_BYTES:
            if (parse_size("--runner-queue-bytes", optarg, &config->runner_queue_bytes) != 0)
                return -1;
            break;
        case OPT_COMMAND_TIMEOUT:
            if (parse_size("--command-timeout-ms", optarg, &config->command_timeout_ms) != 0 ||
                parse_u32_range("--command-timeout-ms", config->command_timeout_ms) != 0)
                return -1;
            break;
        case OPT_MAX_REPORT_SESSIONS:
            if (parse_size("--max-report-sessions", optarg, &config->max_report_sessions) != 0 ||
                parse_u32_range("--max-report-sessions", config->max_report_sessions) != 0)
                return -1;
            break;
        case OPT_TLS_CERT:
            config->tls.cert_file = optarg;
            break;
        case OPT_TLS_KEY:
            config->tls.key_file = optarg;
            break;
        case OPT_TLS_CLIENT_CA:
            config->tls.client_ca_file = optarg;
            break;
        case OPT_MAX_STREAMS:
            if (parse_size("--max-concurrent-streams", optarg, &n) != 0)
                return -1;
            config->h2.max_concurrent_streams = (uint32_t)n;
            break;
        case OPT_MAX_CONNECTIONS:
            if (parse_size("--max-connections", optarg, &n) != 0)
                return -1;
            config->h2.max_connections = (uint32_t)n;
            config->max_connections_set = 1;
            break;
        case OPT_IDLE_TIMEOUT:
            if (parse_size("--idle-timeout-ms", optarg, &n) != 0)
                return -1;
            config->h2.idle_timeout_ms = (uint32_t)n;
            break;
        case OPT_MAX_RECV:
            if (parse_size("--max-recv-bytes", optarg, &config->grpc.max_recv_bytes) != 0)
                return -1;
            break;
        case OPT_HEADER_TIMEOUT:
            if (parse_size("--header-timeout-ms", optarg, &n) != 0)
                return -1;
            config->h2.header_timeout_ms = (uint32_t)n;
            break;
        case OPT_REQUEST_TIMEOUT:
            if (parse_size("--request-timeout-ms", optarg, &n) != 0)
                return -1;
            config->grpc.request_timeout_ms = (uint32_t)n;
            break;
        case OPT_RECV_BUDGET:
            if (parse_size("--recv-budget-bytes", optarg, &config->h2.conn_recv_budget) != 0)
                return -1;
            break;
        case OPT_TOTAL_RECV_BUDGET:
            if (parse_size("--total-recv-budget-bytes", optarg, &config->h2.server_recv_budget) !=
                0)
                return -1;
            break;
        case OPT_METRICS_MAX_CONNECTIONS:
            if (parse_size("--metrics-max-connections", optarg, &config->metrics.max_connections) !=
                0)
                return -1;
            break;
        case OPT_METRICS_IDLE_TIMEOUT:
            if (parse_size("--metrics-idle-timeout-ms", optarg, &n) != 0)
                return -1;
            config->metrics.idle_timeout_ms = (uint32_t)n;
            break;
        case OPT_VERBOSE:
            log_setup("agenthubd", LOG_LEVEL_DEBUG);
            break;
        case OPT_VERSION:
            printf("agenthubd %s\n", AGENTHUB_VERSION);
            return 1;
        case OPT_HELP:
        case 'h':
            usage(stdout);
            return 1;
        default:
            fprintf(stderr, "agenthubd: unknown or incomplete option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "agenthubd: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (!config->db_path || !config->listen) {
        fprintf(stderr, "agenthubd: --db and --listen are required (see --help)\n");
        return -1;
    }
    if (!config->tls.cert_file != !config->tls.key_file) {
        fprintf(stderr, "agenthubd: --tls-cert and --tls-key go together\n");
        return -1;
    }
    if (config->session_log_budget < config->agent_log_bytes) {
        fprintf(stderr, "agenthubd: --session-log-budget-bytes must be at least "
                        "--agent-log-bytes\n");
        return -1;
    }
    if (config->tls.client_ca_file && !config->tls.cert_file) {
        fprintf(stderr, "agenthubd: --tls-client-ca needs --tls-cert and --tls-key\n");
        return -1;
    }
    if (server_log_check(&config->log, config->db_path, config->cluster != NULL) != 0)
        return -1;
    if (!config->max_connections_set)
        config->h2.max_connections = default_max_connections(config);
    return 0;
}

/* 0 when FILE can be opened for reading; otherwise -1 after naming FLAG. */
static int check_readable(const char *flag, const char *file)
{
    FILE *f;

    if (!file)
        return 0;
    f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "agenthubd: %s %s: %s\n", flag, file, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

/* Finds a misconfigured path before anything listens: every file and
 * directory a flag names is checked now, so a mistake is a usage error at
 * start rather than a failed call later.  Returns 0, or -1 after a message
 * that names the flag. */
static int check_paths(const struct config *config)
{
    char err[256];

    if (config->blob_dir && blob_dir_check(config->blob_dir, err, sizeof(err)) != 0) {
        fprintf(stderr, "agenthubd: --blob-dir %s: %s\n", config->blob_dir, err);
        return -1;
    }
    if (check_readable("--tls-cert", config->tls.cert_file) != 0 ||
        check_readable("--tls-key", config->tls.key_file) != 0 ||
        check_readable("--tls-client-ca", config->tls.client_ca_file) != 0)
        return -1;
    if (config->tls.cert_file && h2_tls_check(&config->tls, err, sizeof(err)) != 0) {
        fprintf(stderr, "agenthubd: --tls-cert/--tls-key/--tls-client-ca: %s\n", err);
        return -1;
    }
    return 0;
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

    if (!server->shutting_down)
        health_recheck(&server->rpc);
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
    log_info("cluster node %s: session logs and the bus on JetStream (%zu replica(s))", jc.node_id,
             server->config.cluster_replicas);
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
    int rv, exit_code = 1;

    memset(&server, 0, sizeof(server));
    log_setup("agenthubd", LOG_LEVEL_INFO);
    rv = parse_args(argc, argv, &server.config);
    if (rv != 0)
        return rv > 0 ? 0 : 2;
    if (check_paths(&server.config) != 0)
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
    hub_log_memory(&server.hub.log, &server.bus);
    server.hub.config.command_timeout_ms = (uint32_t)server.config.command_timeout_ms;
    server.hub.config.runner_queue_bytes = server.config.runner_queue_bytes;
    server.hub.config.max_report_sessions = (uint32_t)server.config.max_report_sessions;
    server.hub.config.max_account_sessions = (uint32_t)server.config.max_account_sessions;

    server.base = event_base_new();
    if (!server.base)
        goto fail;
    if (log_attach(server.base) != 0)
        log_warn("cannot reopen stderr without blocking; a stalled stderr will stall the server");
    if (server.config.cluster && start_cluster(&server) != 0)
        goto fail;
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
    server.rpc.config.has_runner_seam = server.config.runner_listen != NULL;
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
        web_wire_install(public_door, server.config.web_off ? &no_web : &web_embedded_site);
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
    return 0;

fail:
    server_free(&server);
    return exit_code;
}
