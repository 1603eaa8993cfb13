/* runner: the reference Runner's shared state and the seams between its
 * modules.
 *
 *   main.c    flags, signals, the loop, shutdown
 *   conn.c    the connection: Enroll, the Sessions control stream, reconnect
 *             with jittered exponential backoff, unary calls, blob calls
 *   relay.c   the outbound frame queue on PublishEvents, runner-sequenced
 *   host.c    hosted sessions: the agent processes, their stdout frames,
 *             the batch window, process evidence, the commands
 *   uploader.c, agent_frames.c   pure rules and formats (unit tested) */
#ifndef AGENTHUB_RUNNER_RUNNER_H
#define AGENTHUB_RUNNER_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "compass/v1/services.pb-c.h"
#include "grpc/grpc_client.h"
#include "runner/uploader.h"

#define RUNNER_VERSION "agenthub-runner 0.1.0"

struct event_base;
struct event;
struct conn;
struct host_session;

struct runner_config {
    const char *addr;
    const char *token;
    struct grpc_client_options tls;
    int64_t batch_window_ms;
    const char *agent_cmd;
    int agent_pb; /* --agent-format pb */
    const char **sessions;
    size_t n_sessions;
};

/* A frame waiting for, or past, PublishEvents. */
struct relay_item {
    struct relay_item *next;
    uint64_t seq; /* 0 until sent */
    char *session_id;
    uint8_t *frame;
    size_t frame_len;
};

struct relay {
    struct grpc_client_call *call;             /* the open PublishEvents stream, or NULL */
    uint64_t next_seq;                         /* runner_seq of the next frame sent */
    struct relay_item *pending, *pending_tail; /* not sent yet, in order */
    size_t n_pending;
    struct relay_item *sent, *sent_tail; /* sent, not yet confirmed by Enroll */
    size_t n_sent;
    uint64_t dropped;   /* frames dropped because the queue was full */
    struct event *pace; /* retries a flush paused by a full send queue */
};

struct runner {
    struct runner_config cfg;
    struct event_base *base;
    struct conn *conn;
    struct relay relay;
    struct host_session *sessions;
    struct uploader uploader;
    int stopping;
    int exit_code;
};

/* --- relay.c --------------------------------------------------------------- */

/* Returns 0, or -1 when memory runs out. */
int relay_init(struct relay *relay, struct event_base *base);
void relay_free(struct relay *relay);
/* Queues FRAME (taking it) for SESSION_ID and sends it when a stream is open.
 * Returns 0, or -1 when memory runs out (the frame is freed). */
int relay_enqueue(struct runner *r, const char *session_id, uint8_t *frame, size_t frame_len);
/* A PublishEvents stream opened after an Enroll that reported LAST_SEQ: drops
 * the frames the server has, resends the rest with their runner_seq, then
 * sends the queue.  Returns 0 or -1 (the stream is unusable). */
int relay_attach(struct runner *r, struct grpc_client_call *call, uint64_t last_seq);
/* The stream is gone; frames stay queued. */
void relay_detach(struct runner *r);

/* --- conn.c ---------------------------------------------------------------- */

struct conn *conn_new(struct runner *r);
void conn_free(struct conn *conn);
/* Connects (now) and keeps reconnecting until conn_stop.  Returns 0 or -1. */
int conn_start(struct conn *conn);
/* Half-closes PublishEvents and ends the control stream; DONE runs once both
 * ended or after TIMEOUT_MS. */
void conn_stop(struct conn *conn, int timeout_ms, void (*done)(struct runner *r));
/* 1 while enrolled with the Sessions stream open. */
int conn_ready(const struct conn *conn);
/* Sends the report of the live sessions on the control stream (if open). */
void conn_report_live(struct conn *conn);
/* Fire-and-forget unary call; failures are logged at debug level (the
 * caller re-reports after a reconnect).  Returns 0, or -1 when not sent. */
int conn_unary_async(struct conn *conn, const char *path, const ProtobufCMessage *request);
/* Blocking blob relays on a side connection (struct uploader_ops). */
int conn_blob_upload(void *ctx, const char *session_id, const char *content_type,
                     const uint8_t *data, size_t len, char *ref, size_t ref_size);
int conn_blob_fetch(void *ctx, const char *session_id, const char *ref, char **content_type,
                    uint8_t **data, size_t *len);

/* --- host.c ---------------------------------------------------------------- */

/* Starts the agents of --session.  Returns 0 or -1. */
int host_start(struct runner *r);
/* Stops every agent (SIGTERM, then SIGKILL after a grace period); DONE runs
 * once all have exited and their last frames are queued. */
void host_stop_all(struct runner *r, void (*done)(struct runner *r));
void host_free(struct runner *r);
/* The answer to one command, and the storage its message points into. */
struct host_answer {
    Compass__V1__SessionsRequest msg;
    Compass__V1__RunnerError error;
    Compass__V1__StartAgentSessionResponse start;
    Compass__V1__StopAgentSessionResponse stop;
    Compass__V1__GetAgentStatusResponse status;
    Compass__V1__AgentSessionStatus *statuses; /* malloc'd */
    Compass__V1__AgentSessionStatus **status_ptrs;
    char message[256];
};

/* Carries out one control command and fills ANSWER (request_id included):
 * a RunnerError when it refused, the command's result otherwise (none for
 * deliver_control and start_now).  Free it with host_answer_free. */
void host_command(struct runner *r, const Compass__V1__SessionsResponse *command,
                  struct host_answer *answer);
void host_answer_free(struct host_answer *answer);
/* Fills IDS with the sessions whose agent is alive.  Returns the count. */
size_t host_live_sessions(struct runner *r, char **ids, size_t max);
/* After a (re)connect: re-reports each session's process evidence. */
void host_on_connected(struct runner *r);

#endif
