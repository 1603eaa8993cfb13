/* server_config: agenthubd's flag table and the checks across flags
 * (server_config.h). */
#include "server/server_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/session.h"
#include "store/blob.h"

/* Descriptors kept for everything but client connections: the store, blobs,
 * stdio, listeners, the event loop. */
#define FD_RESERVE 64
/* --max-connections never defaults higher. */
#define DEFAULT_MAX_CONNECTIONS_CAP 10000

#define AT(field) offsetof(struct server_config, field)

/* --cors-origin: one more origin a page may call the public door from.
 * Returns FLAG_OK, or FLAG_USAGE with why. */
static enum flag_rc set_cors_origin(void *arg, const char *value, char *why, size_t why_size)
{
    struct server_config *config = arg;

    if (config->cors_origin_count == CORS_ORIGINS_MAX) {
        snprintf(why, why_size, "at most %d origins", CORS_ORIGINS_MAX);
        return FLAG_USAGE;
    }
    if (!grpc_cors_origin_valid(value)) {
        snprintf(why, why_size,
                 "'%.128s' is not an origin (scheme://host[:port], http or https, no path)", value);
        return FLAG_USAGE;
    }
    config->cors_origins[config->cors_origin_count++] = value;
    return FLAG_OK;
}

/* Rows of the common shapes.  A byte count or a duration that reaches a
 * size_t; one that reaches a uint32_t; each positive but SIZE0_ROW's. */
#define SIZE_ROW(name_, field, default_, help_)                                                    \
    {                                                                                              \
        .name = (name_), .type = FLAG_SIZE, .arg = "N", .offset = AT(field), .min = 1,             \
        .max = FLAG_SIZE_LIMIT, .def = (default_), .help = (help_)                                 \
    }
#define SIZE0_ROW(name_, field, default_, help_)                                                   \
    {                                                                                              \
        .name = (name_), .type = FLAG_SIZE, .arg = "N", .offset = AT(field), .min = 0,             \
        .max = FLAG_SIZE_LIMIT, .def = (default_), .help = (help_)                                 \
    }
#define U32_ROW(name_, field, default_, help_)                                                     \
    {                                                                                              \
        .name = (name_), .type = FLAG_U32, .arg = "N", .offset = AT(field), .min = 1,              \
        .max = UINT32_MAX, .def = (default_), .help = (help_)                                      \
    }
#define STRING_ROW(name_, arg_, field, help_)                                                      \
    {                                                                                              \
        .name = (name_), .type = FLAG_STRING, .arg = (arg_), .offset = AT(field), .help = (help_)  \
    }

static const struct flag_def flags[] = {
    STRING_ROW("db", "PATH|URI", db_path,
               "The ownership store: a SQLite file, or a PostgreSQL connection URI "
               "(postgres://...) that several agenthubd nodes share. Required."),
    STRING_ROW("listen", "HOST:PORT", listen,
               "The public door (CompassService; port 0 picks one). Required."),
    STRING_ROW("runner-listen", "HOST:PORT", runner_listen,
               "The Runner door (RunnerService); without it the server has no Runner door."),
    STRING_ROW("metrics-listen", "HOST:PORT", metrics_listen,
               "Prometheus text at GET /metrics, and GET /healthz."),
    STRING_ROW("blob-dir", "DIR", blob_dir, "Session blob storage (none without it)."),
    SIZE_ROW("agent-log-bytes", agent_log_bytes, 4 * 1024 * 1024, "Per-session ring bound."),
    SIZE_ROW("bus-bytes", bus_bytes, 16 * 1024 * 1024, "Event bus bound."),
    SIZE_ROW("subscriber-buffer-bytes", subscriber_buffer_bytes, 1024 * 1024,
             "Per-subscriber outbound bound."),
    SIZE_ROW("max-blob-bytes", max_blob_bytes, 4 * 1024 * 1024, "Largest session blob."),
    SIZE_ROW("session-log-budget-bytes", session_log_budget, (uint64_t)512 * 1024 * 1024,
             "Memory for every session's log together, at least --agent-log-bytes; past it "
             "the oldest entries of the least recently active sessions are evicted, nothing "
             "is refused."),
    SIZE0_ROW("ended-log-bytes", ended_log_bytes, SESSION_DEFAULT_RETAIN_BYTES,
              "Memory for the logs of sessions whose agent ended, kept readable (0 keeps "
              "none); past it the longest-ended session is evicted."),
    SIZE0_ROW("ended-log-age-ms", ended_log_age_ms, SESSION_DEFAULT_RETAIN_MS,
              "How long an ended session's log stays readable (the default is 24 h; 0 keeps "
              "none)."),
    U32_ROW("max-sessions-per-account", max_account_sessions, 64,
            "Open sessions one agent account may have; past it a new session is refused with "
            "RESOURCE_EXHAUSTED."),
    SIZE_ROW("runner-queue-bytes", runner_queue_bytes, 8 * 1024 * 1024,
             "Control commands waiting for one Runner; past it a command is refused with "
             "UNAVAILABLE at once."),
    U32_ROW("command-timeout-ms", command_timeout_ms, 5000,
            "How long a control command waits to be written and answered."),
    U32_ROW("max-report-sessions", max_report_sessions, 10000,
            "Ids in a Runner's live-sessions report; a bigger report ends its Sessions stream "
            "with RESOURCE_EXHAUSTED."),
    STRING_ROW("tls-cert", "FILE", tls.cert_file,
               "Serve TLS 1.2+ with ALPN h2 with this certificate (with --tls-key)."),
    STRING_ROW("tls-key", "FILE", tls.key_file, "The private key of --tls-cert."),
    STRING_ROW("tls-client-ca", "FILE", tls.client_ca_file,
               "Require client certificates signed by FILE."),
    U32_ROW("max-concurrent-streams", h2.max_concurrent_streams, 100,
            "SETTINGS_MAX_CONCURRENT_STREAMS."),
    {.name = "max-connections",
     .type = FLAG_U32,
     .arg = "N",
     .offset = AT(h2.max_connections),
     .min = 1,
     .max = UINT32_MAX,
     .def = 0,
     .def_text = "from ulimit -n",
     .help = "Open connections per listener; more are closed at accept. The default is what "
             "the open-files limit holds, shared by the listeners, at most 10000."},
    U32_ROW("idle-timeout-ms", h2.idle_timeout_ms, 300000,
            "Close connections where no stream made progress (PINGs do not count)."),
    U32_ROW("header-timeout-ms", h2.header_timeout_ms, H2_DEFAULT_HEADER_TIMEOUT_MS,
            "Close connections whose TLS handshake, preface or request header block is "
            "unfinished."),
    SIZE_ROW("max-recv-bytes", grpc.max_recv_bytes, 4 * 1024 * 1024, "Largest request message."),
    U32_ROW("request-timeout-ms", grpc.request_timeout_ms, GRPC_DEFAULT_REQUEST_TIMEOUT_MS,
            "Cancel a request whose first message is not in."),
    SIZE_ROW("recv-budget-bytes", h2.conn_recv_budget, H2_DEFAULT_CONN_RECV_BUDGET,
             "Request bytes held per connection; over it new streams are refused."),
    SIZE_ROW("total-recv-budget-bytes", h2.server_recv_budget, H2_DEFAULT_SERVER_RECV_BUDGET,
             "The same across the server."),
    SIZE_ROW("metrics-max-connections", metrics.max_connections, 16,
             "Metrics listener connections."),
    U32_ROW("metrics-idle-timeout-ms", metrics.idle_timeout_ms, 10000,
            "Metrics request and answer time."),
    {.name = "cors-origin",
     .type = FLAG_SETTER,
     .arg = "ORIGIN",
     .set = set_cors_origin,
     .help = "Let pages from ORIGIN (scheme://host[:port]) call the public door with gRPC-Web: "
             "CORS preflights answered, Access-Control-* headers on answers. Repeatable, none "
             "by default; the variable takes a comma-separated list."},
    {.name = "web",
     .type = FLAG_CHOICE,
     .arg = "on|off",
     .offset = AT(web),
     .choices = "on|off",
     .def_text = "on",
     .help = "Serve the pane page at GET / on the public door; off answers 404 "
             "(docs/web-page.md)."},
    {.name = "cluster",
     .type = FLAG_STRING,
     .arg = "nats://HOST:PORT[,...]",
     .offset = AT(cluster),
     .help = "Run as a node of a cluster: session logs and the event bus live in NATS "
             "JetStream (streams AGENTHUB_FRAMES, AGENTHUB_HEADS, AGENTHUB_BUS), so every node "
             "serves every session; see docs/cluster.md."},
    {.name = "node-id",
     .type = FLAG_STRING,
     .arg = "NAME",
     .offset = AT(node_id),
     .def_text = "the host name",
     .help = "This node's name in the cluster."},
    {.name = "cluster-replicas",
     .type = FLAG_SIZE,
     .arg = "N",
     .offset = AT(cluster_replicas),
     .min = 1,
     .max = 5,
     .def = 1,
     .help = "Copies JetStream keeps of each stream."},
    {.name = "cluster-read",
     .type = FLAG_CHOICE,
     .arg = "all|on-demand",
     .offset = AT(cluster_read),
     .choices = "all|on-demand",
     .def_text = "on-demand",
     .help = "Which sessions a cluster node reads from JetStream: all of them, or only those "
             "it has a reader or a writer for, so its traffic grows with its own sessions "
             "(docs/cluster.md, \"Reading sessions on demand\")."},
    {.name = "cluster-linger-ms",
     .type = FLAG_U32,
     .arg = "MS",
     .offset = AT(cluster_linger_ms),
     .min = 1,
     .max = 86400000,
     .def = 30000,
     .help = "With --cluster-read on-demand: how long a node keeps reading a session no "
             "reader or writer of it uses."},
    {.name = "log",
     .type = FLAG_CHOICE,
     .arg = "disk|memory",
     .offset = AT(log.mode),
     .choices = "disk|memory",
     .def_text = "disk",
     .help = "Where a single node keeps session logs and the bus: on disk, so a restart keeps "
             "them, or in memory only; docs/durability.md."},
    {.name = "log-db",
     .type = FLAG_STRING,
     .arg = "PATH",
     .offset = AT(log.db),
     .def_text = "beside --db",
     .help = "The session log's file (SQLite, WAL mode); var/agenthub.db puts it in "
             "var/agenthub-log.db."},
    {.name = "log-sync",
     .type = FLAG_CHOICE,
     .arg = "normal|full",
     .offset = AT(log.sync),
     .choices = "normal|full",
     .def_text = "normal",
     .help = "normal: a commit survives a killed process (no fsync per commit); full: an "
             "fsync per commit, it survives a lost machine too."},
    {.name = "log-commit-ms",
     .type = FLAG_SIZE,
     .arg = "N",
     .offset = AT(log.commit_ms),
     .min = 0,
     .max = UINT32_MAX,
     .def = 0,
     .help = "Gather frames this long into one commit (0: those of one event-loop turn)."},
    SIZE_ROW("disk-log-bytes", log.session_bytes, SERVER_LOG_DISK_SESSION_BYTES,
             "A session's frames the disk keeps beyond its ring, about (never less than the "
             "ring holds); docs/durability.md."),
    SIZE_ROW("disk-log-budget-bytes", log.budget_bytes, SERVER_LOG_DISK_BUDGET_BYTES,
             "Every session's frames on disk, about; past it the oldest go first."),
    SIZE0_ROW("disk-log-age-ms", log.age_ms, SERVER_LOG_DISK_AGE_MS,
              "Frames older than this leave the disk (0: no age bound)."),
    {.name = "verbose", .type = FLAG_BOOL, .offset = AT(verbose), .help = "Debug logging."},
    {.name = "version", .type = FLAG_ACTION, .help = "Print the version and exit."},
    {.name = "help", .short_name = 'h', .type = FLAG_ACTION, .help = "Print this and exit."},
};

const struct flag_def *server_config_flags(size_t *count)
{
    *count = sizeof(flags) / sizeof(flags[0]);
    return flags;
}

void server_config_usage(FILE *out)
{
    fputs("usage: agenthubd --db PATH|URI --listen HOST:PORT [options]\n"
          "\n"
          "Every flag but --help and --version may also come from the environment\n"
          "variable shown with it; the command line wins, and an empty variable counts\n"
          "as unset.  A number out of its range exits 2 naming the flag and the range.\n"
          "\n",
          out);
    flags_print_help(flags, sizeof(flags) / sizeof(flags[0]), out);
    fputs("\n"
          "Every file and directory a flag names is checked at start; a missing or\n"
          "unusable one exits 2 with a message naming the flag.\n",
          out);
}

/* Connections per HTTP/2 listener the open-files limit can hold: what is
 * left after the reserve and the metrics listener's cap, shared by the
 * public and Runner listeners, at most DEFAULT_MAX_CONNECTIONS_CAP. */
static uint32_t default_max_connections(const struct server_config *config)
{
    struct rlimit rl;
    rlim_t listeners = config->runner_listen ? 2 : 1;
    rlim_t reserve = FD_RESERVE + (config->metrics_listen ? config->metrics.max_connections : 0);
    rlim_t n;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return DEFAULT_MAX_CONNECTIONS_CAP;
    n = rl.rlim_cur > reserve + listeners ? (rl.rlim_cur - reserve) / listeners : 1;
    return n > DEFAULT_MAX_CONNECTIONS_CAP ? DEFAULT_MAX_CONNECTIONS_CAP : (uint32_t)n;
}

/* The rules no single row can say.  Returns 0, or -1 after a message. */
static int check_together(struct server_config *config)
{
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
    return server_log_check(&config->log, config->db_path, config->cluster != NULL);
}

enum server_config_rc server_config_parse(int argc, char **argv, struct server_config *config)
{
    const struct flag_def *action;
    struct flag_error err;
    enum flag_rc rc;

    memset(config, 0, sizeof(*config));
    flags_set_defaults(flags, sizeof(flags) / sizeof(flags[0]), config);
    /* Not flags: what the h2 and gRPC layers and the disk log need besides. */
    config->h2.max_header_list_bytes = 16384;
    config->grpc.send_bound_bytes = 1024 * 1024;
    config->log.pending_bytes = (size_t)256 * 1024 * 1024;
    rc = flags_parse(flags, sizeof(flags) / sizeof(flags[0]), argc, argv, config, &action, &err);
    if (rc == FLAG_NOMEM) {
        fprintf(stderr, "agenthubd: out of memory reading the flags\n");
        return SERVER_CONFIG_NOMEM;
    }
    if (rc == FLAG_USAGE) {
        fprintf(stderr, "agenthubd: %s\n", err.message);
        return SERVER_CONFIG_USAGE;
    }
    if (rc == FLAG_ACTION_ASKED) {
        if (strcmp(action->name, "version") == 0)
            printf("agenthubd %s\n", AGENTHUBD_VERSION);
        else
            server_config_usage(stdout);
        return SERVER_CONFIG_DONE;
    }
    if (check_together(config) != 0)
        return SERVER_CONFIG_USAGE;
    if (config->h2.max_connections == 0) /* not given */
        config->h2.max_connections = default_max_connections(config);
    return SERVER_CONFIG_RUN;
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

int server_config_check_paths(const struct server_config *config)
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
