/* server_log: which session log agenthubd runs on, from its flags: the
 * durable one on disk (the default of a single node), the in-memory one
 * (--log memory), or JetStream (--cluster, set up by main). */
#ifndef AGENTHUB_SERVER_LOG_H
#define AGENTHUB_SERVER_LOG_H

#include <stddef.h>

#include "hub/hub_log_disk.h"

struct event_base;

struct server_log_config {
    const char *mode; /* --log: "disk", "memory", or NULL (the default) */
    const char *db;   /* --log-db, or NULL: beside the store */
    const char *sync; /* --log-sync: "normal", "full", or NULL */
    size_t commit_ms; /* --log-commit-ms */
    size_t pending_bytes;
    size_t memory_bytes;  /* --agent-log-bytes: what a ring holds */
    size_t session_bytes; /* --disk-log-bytes */
    size_t budget_bytes;  /* --disk-log-budget-bytes */
    size_t age_ms;        /* --disk-log-age-ms (0: no age bound) */
};

/* The defaults of the disk's own retention. */
#define SERVER_LOG_DISK_SESSION_BYTES ((size_t)64 * 1024 * 1024)
#define SERVER_LOG_DISK_BUDGET_BYTES  ((size_t)4 * 1024 * 1024 * 1024)
#define SERVER_LOG_DISK_AGE_MS        ((size_t)7 * 24 * 3600 * 1000)

/* Checks the flags of CONFIG (DB_PATH the --db flag, CLUSTER 1 with
 * --cluster).  Returns 0, or -1 after a message. */
int server_log_check(const struct server_log_config *config, const char *db_path, int cluster);

/* Opens the durable log CONFIG asks for into LOG, over REG and BUS.
 * Returns 0 with *OUT the backend, or NULL when the log stays in memory
 * (--log memory, or a PostgreSQL store without --log-db); -1 after a
 * message naming the file and what is wrong with it. */
int server_log_open(const struct server_log_config *config, const char *db_path,
                    struct hub_log *log, struct event_base *base, struct session_registry *reg,
                    struct bus *bus, struct hub_log_disk **out);

#endif
