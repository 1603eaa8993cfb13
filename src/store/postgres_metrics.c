/* postgres_metrics: the PostgreSQL store's part of /metrics (the pool,
 * the notification connection, faults and timeouts). */
#include <stdio.h>

#include "store/postgres_internal.h"

void pq_write_metrics(void *impl, FILE *out)
{
    struct pg_store *st = impl;
    int i, open = 0;

    for (i = 0; i < PG_POOL_SIZE; i++)
        open += st->pool[i] != NULL;
    fprintf(out,
            "# HELP agenthub_pg_up 1 when the last contact with PostgreSQL succeeded.\n"
            "# TYPE agenthub_pg_up gauge\n"
            "agenthub_pg_up %d\n"
            "# HELP agenthub_pg_pool_size query connections the pool may hold.\n"
            "# TYPE agenthub_pg_pool_size gauge\n"
            "agenthub_pg_pool_size %d\n"
            "# HELP agenthub_pg_pool_open query connections open now.\n"
            "# TYPE agenthub_pg_pool_open gauge\n"
            "agenthub_pg_pool_open %d\n"
            "# HELP agenthub_pg_listening 1 while the change notification connection is up.\n"
            "# TYPE agenthub_pg_listening gauge\n"
            "agenthub_pg_listening %d\n"
            "# TYPE agenthub_pg_connects_total counter\n"
            "agenthub_pg_connects_total %llu\n"
            "# TYPE agenthub_pg_connect_failures_total counter\n"
            "agenthub_pg_connect_failures_total %llu\n"
            "# HELP agenthub_pg_disconnects_total connections found broken or abandoned.\n"
            "# TYPE agenthub_pg_disconnects_total counter\n"
            "agenthub_pg_disconnects_total %llu\n"
            "# TYPE agenthub_pg_queries_total counter\n"
            "agenthub_pg_queries_total %llu\n"
            "# HELP agenthub_pg_query_faults_total statements answered as a store fault.\n"
            "# TYPE agenthub_pg_query_faults_total counter\n"
            "agenthub_pg_query_faults_total %llu\n"
            "# TYPE agenthub_pg_query_timeouts_total counter\n"
            "agenthub_pg_query_timeouts_total %llu\n"
            "# HELP agenthub_pg_notifications_total other connections' change notifications.\n"
            "# TYPE agenthub_pg_notifications_total counter\n"
            "agenthub_pg_notifications_total %llu\n"
            "# TYPE agenthub_pg_cache_invalidations_total counter\n"
            "agenthub_pg_cache_invalidations_total %llu\n",
            st->up, PG_POOL_SIZE, open, st->listen != NULL, (unsigned long long)st->stats.connects,
            (unsigned long long)st->stats.connect_failures,
            (unsigned long long)st->stats.disconnects, (unsigned long long)st->stats.queries,
            (unsigned long long)st->stats.query_faults, (unsigned long long)st->stats.timeouts,
            (unsigned long long)st->stats.notifications,
            (unsigned long long)st->stats.invalidations);
}
