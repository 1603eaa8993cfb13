/* server_log: see server_log.h. */
#include "server/server_log.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "store/store.h"

int server_log_check(const struct server_log_config *config, const char *db_path, int cluster)
{
    if (config->mode && strcmp(config->mode, "disk") != 0 && strcmp(config->mode, "memory") != 0) {
        fprintf(stderr, "agenthubd: --log: expected disk or memory, got '%s'\n", config->mode);
        return -1;
    }
    if (config->sync && strcmp(config->sync, "normal") != 0 && strcmp(config->sync, "full") != 0) {
        fprintf(stderr, "agenthubd: --log-sync: expected normal or full, got '%s'\n", config->sync);
        return -1;
    }
    if (cluster && (config->mode || config->db || config->sync)) {
        fprintf(stderr, "agenthubd: --log, --log-db and --log-sync are for a single node; a "
                        "cluster node's log is JetStream\n");
        return -1;
    }
    if (config->db && config->mode && strcmp(config->mode, "memory") == 0) {
        fprintf(stderr, "agenthubd: --log-db and --log memory do not go together\n");
        return -1;
    }
    (void)db_path;
    return 0;
}

/* DB's directory and name without ".db", then "-log.db": var/agenthub.db
 * gives var/agenthub-log.db.  Returns 0, or -1 when it does not fit. */
static int default_path(const char *db, char *out, size_t outlen)
{
    size_t len = strlen(db);
    int n;

    if (len > 3 && strcmp(db + len - 3, ".db") == 0)
        len -= 3;
    n = snprintf(out, outlen, "%.*s-log.db", (int)len, db);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int server_log_open(const struct server_log_config *config, const char *db_path,
                    struct hub_log *log, struct event_base *base, struct session_registry *reg,
                    struct bus *bus, struct hub_log_disk **out)
{
    struct hub_log_disk_config dc = {
        .path = config->db,
        .sync =
            config->sync && strcmp(config->sync, "full") == 0 ? LOGDB_SYNC_FULL : LOGDB_SYNC_NORMAL,
        .commit_ms = (uint32_t)config->commit_ms,
        .pending_bytes = config->pending_bytes,
        .memory_bytes = config->memory_bytes,
        .session_bytes = config->session_bytes,
        .budget_bytes = config->budget_bytes,
        .age_ms = config->age_ms,
    };
    char path[4096], err[512];
    enum logdb_rc rc;

    *out = NULL;
    if (config->mode && strcmp(config->mode, "memory") == 0)
        return 0;
    if (!dc.path && store_target_is_postgres(db_path)) {
        log_warn("the session log stays in memory: --db is PostgreSQL and no --log-db names a "
                 "file (a restart forgets every session's log)");
        return 0;
    }
    if (!dc.path) {
        if (default_path(db_path, path, sizeof(path)) != 0) {
            fprintf(stderr, "agenthubd: --db %s: too long to put the session log beside it\n",
                    db_path);
            return -1;
        }
        dc.path = path;
    }
    *out = hub_log_disk_open(log, base, reg, bus, &dc, &rc, err, sizeof(err));
    if (!*out) {
        fprintf(stderr, "agenthubd: --log-db %s: %s: %s\n", dc.path, logdb_rc_name(rc), err);
        return -1;
    }
    return 0;
}
