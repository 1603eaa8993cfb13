/* bench/gate: view decisions per second on one core, on a database of
 * 1,000 channels and 10,000 sessions (1,000 agents with one home channel
 * each, 10 sessions per agent container, 200 human accounts in 10 channels
 * each).  Prints the rate with the read cache (steady state) and without it
 * (every decision walks SQLite), then the rate while another handle commits
 * a change every 1,000 decisions, and while the server's own handle
 * persists a Runner sequence number every 10 decisions.  The callers are 50 of the humans; half
 * the decisions ask about a session in one of the caller's channels.
 *
 * usage: build/bench/gate [DECISIONS [cached | postgres://URI]]
 * (default 2,000,000; "cached" runs only the first measurement, for
 * profiling).  With a PostgreSQL URI (an empty database; bench/gate_pg.sh
 * starts a server for it), the same world is loaded there too and the
 * PostgreSQL store's rates are printed against the SQLite cached rate of
 * the same run: steady state (the gate cache, kept fresh by LISTEN/NOTIFY),
 * with another node committing a change every 1,000 decisions (each one
 * drops every node's cache), and with this node persisting a runner_seq
 * every 10 decisions (a round trip each; no notification). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/gate.h"
#include "store/store.h"

#define CHANNELS  1000
#define SESSIONS  10000
#define HUMANS    200
#define PER_HUMAN 10

static void must(int rc, const char *what)
{
    if (rc != STORE_OK) {
        fprintf(stderr, "bench: %s: %s\n", what, store_rc_name(rc));
        exit(1);
    }
}

static void populate(struct store *s)
{
    const struct store_ops *o = s->ops;
    char id[STORE_ID_MAX], ch[STORE_ID_MAX];
    int i, j;

    must(o->begin(s->impl), "begin");
    must(o->runner_put(s->impl, "runner-0", NULL), "runner");
    for (i = 0; i < CHANNELS; i++) {
        struct store_account a;
        struct store_container c;

        snprintf(ch, sizeof(ch), "chan-%d", i);
        must(o->channel_put(s->impl, ch, NULL), "channel");
        memset(&a, 0, sizeof(a));
        snprintf(a.id, sizeof(a.id), "agent-%d", i);
        a.kind = STORE_ACCOUNT_AGENT;
        snprintf(a.home_channel_id, sizeof(a.home_channel_id), "%s", ch);
        must(o->account_put(s->impl, &a, NULL), "agent");
        memset(&c, 0, sizeof(c));
        snprintf(c.name, sizeof(c.name), "ctr-%d", i);
        snprintf(c.agent_account_id, sizeof(c.agent_account_id), "agent-%d", i);
        snprintf(c.runner_id, sizeof(c.runner_id), "runner-0");
        must(o->container_put(s->impl, &c, NULL), "container");
    }
    for (i = 0; i < HUMANS; i++) {
        struct store_account a;

        memset(&a, 0, sizeof(a));
        snprintf(a.id, sizeof(a.id), "human-%d", i);
        must(o->account_put(s->impl, &a, NULL), "human");
        for (j = 0; j < PER_HUMAN; j++) {
            snprintf(ch, sizeof(ch), "chan-%d", (i * 37 + j * 101) % CHANNELS);
            must(o->member_add(s->impl, a.id, ch, NULL), "member");
        }
    }
    for (i = 0; i < SESSIONS; i++) {
        struct store_session_spec spec;

        memset(&spec, 0, sizeof(spec));
        snprintf(spec.session_id, sizeof(spec.session_id), "sess-%d", i);
        snprintf(spec.container_name, sizeof(spec.container_name), "ctr-%d", i % CHANNELS);
        snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "human-%d", i % HUMANS);
        must(o->session_create(s->impl, &spec, NULL), "session");
    }
    must(o->commit(s->impl), "commit");
    (void)id;
}

/* Runs N view decisions over a fixed pseudo-random sequence of (caller,
 * session) pairs; every K-th decision (0 = never) WRITER commits a runner
 * sequence number (another handle, or the same one). */
static double run(struct store *s, struct store *writer, long n, long k, long *allowed)
{
    static struct store_subject subj[50];
    static char sid[SESSIONS][16];
    uint64_t t0, t1;
    uint32_t x = 12345;
    long i;

    for (i = 0; i < 50; i++) {
        subj[i].kind = STORE_SUBJECT_ACCOUNT;
        snprintf(subj[i].id, sizeof(subj[i].id), "human-%ld", i);
    }
    for (i = 0; i < SESSIONS; i++)
        snprintf(sid[i], sizeof(sid[i]), "sess-%ld", i);
    *allowed = 0;
    t0 = clock_monotonic_ns();
    for (i = 0; i < n; i++) {
        int rv;

        x = x * 1103515245u + 12345u;
        uint32_t h = (x >> 8) % 50, r = x >> 16;

        /* 50 active callers; half the time a session of one of the
         * caller's channels (allowed), else any of the 10,000 (mostly
         * refused). */
        if (r & 1) {
            uint32_t ch = (h * 37 + ((r >> 1) % PER_HUMAN) * 101) % CHANNELS;
            rv = gate_may_view(s, &subj[h], sid[ch + CHANNELS * ((r >> 5) % 10)], NULL);
        } else {
            rv = gate_may_view(s, &subj[h], sid[(r >> 1) % SESSIONS], NULL);
        }
        if (rv == GATE_FAULT) {
            fprintf(stderr, "bench: fault\n");
            exit(1);
        }
        *allowed += rv == GATE_ALLOWED;
        if (k && writer && i % k == 0)
            must(writer->ops->runner_seq_set(writer->impl, "runner-0", (uint64_t)i), "write");
    }
    t1 = clock_monotonic_ns();
    return (double)n / ((double)(t1 - t0) / 1e9);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000, allowed;
    char dir[] = "/tmp/agenthub-bench-XXXXXX", db[128], err[256];
    struct store *s, *other;
    double rate, cached_rate;

    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(db, sizeof(db), "%s/bench.db", dir);
    if (sqlite_store_open(db, &s, err, sizeof(err)) != STORE_OK ||
        sqlite_store_open(db, &other, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "bench: %s\n", err);
        return 1;
    }
    populate(s);
    printf("gate bench: %d channels, %d sessions, %d human accounts\n", CHANNELS, SESSIONS, HUMANS);

    run(s, NULL, n / 10, 0, &allowed); /* warm up */
    rate = run(s, NULL, n, 0, &allowed);
    cached_rate = rate;
    printf("view decisions/s (cached, steady state): %.0f (%ld of %ld allowed)\n", rate, allowed,
           n);
    if (argc > 2 && strcmp(argv[2], "cached") == 0)
        goto out;
    rate = run(s, other, n / 4, 1000, &allowed);
    printf("view decisions/s (another handle commits every 1000): %.0f\n", rate);
    rate = run(s, s, n / 4, 10, &allowed);
    printf("view decisions/s (this handle persists a runner_seq every 10): %.0f\n", rate);
    sqlite_store_cache_enable(s, 0);
    rate = run(s, NULL, n / 4, 0, &allowed);
    printf("view decisions/s (cache off, every decision reads SQLite): %.0f\n", rate);
    printf("reference (the uncached SQLite walk, same run): cached/reference %.1fx\n",
           cached_rate / rate);

    if (argc > 2 && store_target_is_postgres(argv[2])) {
        struct store *pg, *pg_other;
        int i;

        if (postgres_store_open(argv[2], &pg, err, sizeof(err)) != STORE_OK ||
            postgres_store_open(argv[2], &pg_other, err, sizeof(err)) != STORE_OK) {
            fprintf(stderr, "bench: %s\n", err);
            return 1;
        }
        populate(pg);
        run(pg, NULL, n / 10, 0, &allowed); /* warm up */
        rate = run(pg, NULL, n, 0, &allowed);
        printf("postgres: view decisions/s (cached, steady state): %.0f (%.2fx SQLite cached)\n",
               rate, rate / cached_rate);
        /* A notifying change from another connection every 1000 decisions. */
        {
            long m = n / 20, done = 0;
            uint64_t t0 = clock_monotonic_ns();
            char ch[STORE_ID_MAX];

            for (i = 0; done < m; i++) {
                snprintf(ch, sizeof(ch), "bench-chan-%d", i);
                must(pg_other->ops->channel_put(pg_other->impl, ch, NULL), "change");
                run(pg, NULL, 1000, 0, &allowed);
                done += 1000;
            }
            rate = (double)done / ((double)(clock_monotonic_ns() - t0) / 1e9);
            printf("postgres: view decisions/s (another node commits every 1000): %.0f "
                   "(%.2fx SQLite cached)\n",
                   rate, rate / cached_rate);
        }
        rate = run(pg, pg, n / 200, 10, &allowed);
        printf("postgres: view decisions/s (this node persists a runner_seq every 10): %.0f "
               "(%.3fx SQLite cached)\n",
               rate, rate / cached_rate);
        store_close(pg_other);
        store_close(pg);
    }

out:
    store_close(other);
    store_close(s);
    snprintf(err, sizeof(err), "rm -rf '%s'", dir);
    return system(err) == 0 ? 0 : 1;
}
