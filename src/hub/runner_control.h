/* runner_control: the connected Runners and the commands sent to them over
 * their Sessions control streams.
 *
 * One Sessions stream per Runner; a second replaces the first.  Commands
 * wait in the Runner's own queue, bounded by --runner-queue-bytes, until
 * the stream can take one: the stream is a pull-style producer that writes
 * the next command only when its send queue is empty and HTTP/2 wants
 * bytes, so a Runner that stops reading holds at most one command in the
 * transport.  Every command carries a request_id; the Runner answers with a
 * SessionsRequest of the same request_id: a RunnerError when it refused,
 * anything else when it carried the command out.
 *
 * A Runner reports the sessions it hosts when its stream opens: with
 * live_sessions, or, when its first message says nothing (no request_id,
 * no result, no sessions), in its answer to the status command the server
 * then sends it.  Either report re-announces each of those sessions that is
 * bound to it.
 *
 * What a waiter learns (enum runner_outcome) is exact about delivery: a
 * command still queued when its waiter gives up, times out or the stream
 * ends is withdrawn and never written later (RUNNER_NOT_SENT); a command
 * already written but not answered is reported as such (RUNNER_UNANSWERED,
 * RUNNER_LOST), and an answer that arrives after that is logged and counted
 * as late, never passed on silently. */
#ifndef AGENTHUB_RUNNER_CONTROL_H
#define AGENTHUB_RUNNER_CONTROL_H

#include <stdint.h>
#include <stdio.h>

#include "compass/v1/services.pb-c.h"
#include "hub/hub.h"
#include "hub/hub_stream.h"

struct event_base;
struct runner_command;

enum runner_outcome {
    RUNNER_ACKED = 0,      /* the Runner answered: carried out */
    RUNNER_REFUSED = 1,    /* the Runner answered RunnerError: not carried out */
    RUNNER_NOT_SENT = 2,   /* withdrawn unwritten: the Runner never saw it */
    RUNNER_UNANSWERED = 3, /* written, no answer within the timeout: may have been carried out */
    RUNNER_LOST = 4,       /* written, the stream ended before an answer: the same */
};

/* DETAIL is the Runner's error text (REFUSED) or why (the others); CODE is
 * the RunnerErrorCode of a refusal, else 0. */
typedef void (*runner_command_done)(void *arg, enum runner_outcome outcome, int code,
                                    const char *detail);

enum runner_send_rc {
    RUNNER_SEND_QUEUED = 0,
    RUNNER_SEND_NOT_CONNECTED = 1, /* no Sessions stream from that Runner */
    RUNNER_SEND_QUEUE_FULL = 2,    /* its queue is at --runner-queue-bytes */
    RUNNER_SEND_NOMEM = 3,
};

struct runner_registry *runner_registry_new(struct event_base *base);
void runner_registry_free(struct runner_registry *runners);

/* 1 when RUNNER_ID has a Sessions stream open. */
int runner_connected(const struct runner_registry *runners, const char *runner_id);

/* Queues COMMAND for RUNNER_ID, encoded at once with its request_id (and a
 * deliver_control's control_seq) filled in, so the message may be freed on
 * return.  With DONE, DONE
 * runs exactly once, later, with the outcome, unless the command is
 * abandoned first; an unwritten command is withdrawn at
 * config.command_timeout_ms.  Without DONE (the Runner learns of a start
 * or stop; nobody waits) it stays queued until written or the stream ends.
 * Returns RUNNER_SEND_QUEUED with *HANDLE set (HANDLE may be NULL), or why
 * nothing was queued (DONE will not run). */
enum runner_send_rc runner_command_send(struct hub *ctx, const char *runner_id,
                                        Compass__V1__SessionsResponse *command,
                                        runner_command_done done, void *arg,
                                        struct runner_command **handle);

/* The waiter went away: DONE will not run.  A command not yet written is
 * withdrawn; a written one is remembered until its answer, which is then
 * counted as late. */
void runner_command_abandon(struct hub *ctx, struct runner_command *command);

/* Reaching a Runner whose Sessions stream is on another node of a cluster
 * (hub/runner_remote.h); without it a Runner not connected here is not
 * connected at all. */
struct runner_remote_ops {
    /* Sends the encoded command BYTES to the node holding RUNNER_ID.  With
     * DONE, DONE runs once, later, with the outcome that node reports (or
     * RUNNER_NOT_SENT when no node holds the Runner), unless abandoned
     * first.  Returns 0 with *HANDLE set, or -1: nothing sent, DONE will
     * not run. */
    int (*send)(void *impl, const char *runner_id, const uint8_t *bytes, size_t len,
                runner_command_done done, void *arg, void **handle);
    /* DONE of HANDLE will not run. */
    void (*abandon)(void *impl, void *handle);
    /* This node now holds RUNNER_ID's Sessions stream (ON 1), or no more. */
    void (*hold)(void *impl, const char *runner_id, int on);
};
void runner_registry_set_remote(struct runner_registry *runners,
                                const struct runner_remote_ops *ops, void *impl);

/* Every Runner's place in its runner_seq (hub/runner_seq.h). */
struct runner_runs *runner_registry_runs(const struct runner_registry *runners);

/* Prometheus text: queued commands and bytes, refusals, withdrawals,
 * unanswered commands, late answers, refused reports, enrollments. */
void runner_registry_write_metrics(const struct runner_registry *runners, FILE *out);

/* --- A Runner's control stream (RunnerService/Sessions) ------------------ */

struct runner_link;
struct store_subject;

/* Registers STREAM as the control stream of Runner SUBJECT (authenticated),
 * replacing (ABORTED) any earlier one of the same Runner, and guards it
 * against revocation.  STREAM's user pointer is the link from here on.
 * Returns the link, or NULL when memory is short (nothing changed). */
struct runner_link *runner_link_open(struct hub *ctx, struct hub_stream stream,
                                     const struct store_subject *subject);

/* The Runner id of LINK. */
const char *runner_link_id(const struct runner_link *link);

/* A SessionsRequest from LINK's Runner: an answer to a command, or a report
 * of the sessions it hosts; a first message that says neither is answered
 * with a status command.  A report over --max-report-sessions ends the
 * stream (RESOURCE_EXHAUSTED) and frees LINK. */
void runner_link_message(struct hub *ctx, struct runner_link *link,
                         const Compass__V1__SessionsRequest *request);

/* Writes LINK's oldest queued command if the Runner may take one more.
 * Called when the stream's send queue is empty and HTTP/2 wants bytes. */
void runner_link_write_next(struct runner_link *link);

/* LINK's stream is over: its commands end (WHY), and every session its
 * Runner hosts is announced unreachable (except those whose agent already
 * stopped).  Frees LINK. */
void runner_link_close(struct hub *ctx, struct runner_link *link, const char *why);

#endif
