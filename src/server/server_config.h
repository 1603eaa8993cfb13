/* server_config: agenthubd's settings and its flag table (server_flags.h):
 * every flag, where its value goes, its bounds, default and help text, and
 * the checks that span several flags.  docs/configuration.md lists the
 * same table (tools/flags_doc.py keeps the two equal). */
#ifndef AGENTHUB_SERVER_CONFIG_H
#define AGENTHUB_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "grpc/grpc.h"
#include "h2/h2.h"
#include "server/metrics_http.h"
#include "server/server_flags.h"
#include "server/server_log.h"

#define AGENTHUBD_VERSION "0.1.0"
/* --cors-origin may be given this many times. */
#define CORS_ORIGINS_MAX 32

struct server_config {
    const char *db_path;
    const char *listen;
    const char *runner_listen;
    const char *metrics_listen;
    const char *blob_dir;
    struct h2_tls_config tls;
    const char *web; /* --web: "on", "off", or NULL (on) */
    struct h2_limits h2;
    struct grpc_limits grpc;
    size_t agent_log_bytes;
    size_t bus_bytes;
    size_t subscriber_buffer_bytes;
    size_t max_blob_bytes;
    size_t session_log_budget;
    size_t ended_log_bytes;
    size_t ended_log_age_ms;
    uint32_t max_account_sessions;
    size_t runner_queue_bytes;
    uint32_t command_timeout_ms;
    uint32_t max_report_sessions;
    struct metrics_http_limits metrics;
    const char *cors_origins[CORS_ORIGINS_MAX]; /* --cors-origin, in order */
    size_t cors_origin_count;
    const char *cluster; /* NATS URLs: session logs and the bus on JetStream */
    const char *node_id;
    size_t cluster_replicas;
    const char *cluster_read; /* --cluster-read: "all", "on-demand", or NULL (on-demand) */
    uint32_t cluster_linger_ms;
    struct server_log_config log; /* --log, --log-db, --log-sync, --log-commit-ms */
    int verbose;
};

enum server_config_rc {
    SERVER_CONFIG_RUN,   /* CONFIG is complete: start the server */
    SERVER_CONFIG_DONE,  /* --help or --version printed: exit 0 */
    SERVER_CONFIG_USAGE, /* a usage error, printed: exit 2 */
    SERVER_CONFIG_NOMEM, /* printed: exit 1 */
};

/* agenthubd's flag table, COUNT rows. */
const struct flag_def *server_config_flags(size_t *count);

/* Fills CONFIG (zeroed or not) from ARGV and the environment, and checks
 * the flags that go together.  Returns SERVER_CONFIG_RUN, or what to do
 * instead after a message on stderr (or --help on stdout). */
enum server_config_rc server_config_parse(int argc, char **argv, struct server_config *config);

/* Checks every file and directory a flag names, so a mistake is a usage
 * error at start rather than a failed call later.  Returns 0, or -1 after
 * a message on stderr naming the flag. */
int server_config_check_paths(const struct server_config *config);

/* Writes the whole --help text to OUT. */
void server_config_usage(FILE *out);

#endif
