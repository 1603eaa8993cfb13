/* agenthub-runner: the reference Runner.  Flags, signals, the loop and an
 * orderly shutdown; the work is in conn.c, relay.c and host.c. */
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "runner/agent_frames.h"
#include "runner/runner.h"

#define SHUTDOWN_FLUSH_MS 3000

static const char usage_text[] =
    "usage: agenthub-runner --agent CMD [--session ID]... [options]\n"
    "\n"
    "The reference Runner: enrolls with agenthubd's Runner door, keeps the\n"
    "Sessions control stream (reconnecting with jittered exponential backoff),\n"
    "runs CMD for each session it hosts and relays the agent's frames on\n"
    "PublishEvents, runner-sequenced.\n"
    "\n"
    "  --addr HOST:PORT       the Runner door (env AGENTHUB_RUNNER_ADDR; alias\n"
    "                         --runner-addr); a comma-separated list names the\n"
    "                         nodes of a cluster, the next tried after a loss\n"
    "  --token TOKEN          the Runner's token (env AGENTHUB_TOKEN)\n"
    "  --tls                  TLS with ALPN h2;  --ca FILE  verify against FILE\n"
    "  --session ID           a session this Runner hosts, started at once\n"
    "                         (repeatable; the server may also send start)\n"
    "  --agent CMD            the agent program, run per session with /bin/sh -c\n"
    "                         and AGENTHUB_SESSION_ID set (alias --agent-cmd)\n"
    "  --agent-format F       json (default) or pb (varint-delimited AgentFrames)\n"
    "  --batch-window-ms N    the inbound batch window (default 1500)\n"
    "  --verbose              debug logging\n"
    "  --help                 this text\n"
    "\n"
    "Inbound items (SendAgentMessage) wait in the batch window while the agent\n"
    "is idle; each arm, re-arm and close is published as SessionBatchPending,\n"
    "and SkipBatchWindow fires it at once.  Images in transcript entries are\n"
    "uploaded with UploadSessionBlob (disabled only after UNIMPLEMENTED).\n"
    "Process evidence: PROCESS READY with a live child when an agent starts,\n"
    "PROCESS STOPPED without one when it exits.\n"
    "\n" AGENT_FRAMES_HELP "\n"
    "Exit status: 0 after SIGTERM/SIGINT, 1 when the server refuses the token,\n"
    "2 for usage.\n";

static struct runner runner;
static struct event *sig_term, *sig_int;

static void usage(FILE *out, int code)
{
    fputs(usage_text, out);
    exit(code);
}

static void on_conn_stopped(struct runner *r)
{
    event_base_loopexit(r->base, NULL);
}

static void on_agents_stopped(struct runner *r)
{
    conn_stop(r->conn, SHUTDOWN_FLUSH_MS, on_conn_stopped);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runner *r = arg;

    if (r->stopping) {
        /* A group-wide SIGTERM (timeout(1), a supervisor) may arrive twice:
         * only a second SIGINT (Ctrl-C again) skips the orderly stop. */
        if (sig == SIGINT) {
            log_warn("second interrupt: exiting now");
            event_base_loopbreak(r->base);
        }
        return;
    }
    log_info("signal %d: stopping the agents", (int)sig);
    r->stopping = 1;
    host_stop_all(r, on_agents_stopped);
}

/* Parses argv into R's config.  Exits 2 on a usage error. */
static void parse_flags(struct runner *r, int argc, char **argv, int *verbose)
{
    static const struct option options[] = {
        {"addr", required_argument, NULL, 'a'},
        {"runner-addr", required_argument, NULL, 'a'},
        {"token", required_argument, NULL, 't'},
        {"tls", no_argument, NULL, 'T'},
        {"ca", required_argument, NULL, 'c'},
        {"session", required_argument, NULL, 's'},
        {"agent", required_argument, NULL, 'g'},
        {"agent-cmd", required_argument, NULL, 'g'},
        {"agent-format", required_argument, NULL, 'f'},
        {"batch-window-ms", required_argument, NULL, 'b'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct runner_config *cfg = &r->cfg;
    char *end;
    int c;

    cfg->addr = getenv("AGENTHUB_RUNNER_ADDR");
    cfg->token = getenv("AGENTHUB_TOKEN");
    cfg->batch_window_ms = 1500;
    cfg->sessions = calloc((size_t)argc + 1, sizeof(*cfg->sessions));
    if (!cfg->sessions)
        exit(1);
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'a':
            cfg->addr = optarg;
            break;
        case 't':
            cfg->token = optarg;
            break;
        case 'T':
            cfg->tls.tls = 1;
            break;
        case 'c':
            cfg->tls.ca_file = optarg;
            cfg->tls.tls = 1;
            break;
        case 's':
            cfg->sessions[cfg->n_sessions++] = optarg;
            break;
        case 'g':
            cfg->agent_cmd = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "pb") != 0) {
                fprintf(stderr, "agenthub-runner: --agent-format is json or pb\n");
                exit(2);
            }
            cfg->agent_pb = strcmp(optarg, "pb") == 0;
            break;
        case 'b':
            cfg->batch_window_ms = strtoll(optarg, &end, 10);
            if (*end || cfg->batch_window_ms < 0) {
                fprintf(stderr, "agenthub-runner: --batch-window-ms takes milliseconds\n");
                exit(2);
            }
            break;
        case 'v':
            *verbose = 1;
            break;
        case 'h':
            usage(stdout, 0);
            break;
        default:
            usage(stderr, 2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "agenthub-runner: unexpected argument %s\n", argv[optind]);
        exit(2);
    }
    if (!cfg->addr || !cfg->addr[0] || !cfg->agent_cmd || !cfg->agent_cmd[0]) {
        fprintf(stderr, "agenthub-runner: --addr (or AGENTHUB_RUNNER_ADDR) and --agent are "
                        "required; see --help\n");
        exit(2);
    }
    if (!cfg->token)
        cfg->token = "";
}

int main(int argc, char **argv)
{
    static const struct uploader_ops blob_ops = {conn_blob_upload, conn_blob_fetch};
    struct runner *r = &runner;
    int verbose = 0;
    int rv = 1;

    parse_flags(r, argc, argv, &verbose);
    log_setup("agenthub-runner", verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
    signal(SIGPIPE, SIG_IGN);
    r->base = event_base_new();
    if (!r->base || relay_init(&r->relay, r->base) != 0)
        goto cleanup;
    /* Agents write what they like and the Runner logs some of it: a stderr
     * nobody reads must not stop the relay. */
    if (log_attach(r->base) != 0)
        log_warn("cannot reopen stderr without blocking; a stalled stderr will stall the relay");
    r->conn = conn_new(r);
    if (!r->conn)
        goto cleanup;
    uploader_init(&r->uploader, &blob_ops, r->conn);
    sig_term = evsignal_new(r->base, SIGTERM, on_signal, r);
    sig_int = evsignal_new(r->base, SIGINT, on_signal, r);
    if (!sig_term || !sig_int || evsignal_add(sig_term, NULL) != 0 ||
        evsignal_add(sig_int, NULL) != 0)
        goto cleanup;
    if (host_start(r) != 0 || conn_start(r->conn) != 0)
        goto cleanup;
    event_base_dispatch(r->base);
    rv = r->exit_code;
    log_info("stopped");
cleanup:
    host_free(r);
    conn_free(r->conn);
    relay_free(&r->relay);
    if (sig_term)
        event_free(sig_term);
    if (sig_int)
        event_free(sig_int);
    if (r->base) {
        log_detach(500);
        event_base_free(r->base);
    }
    free(r->cfg.sessions);
    return rv;
}
