/* gate: the authorization decisions every handler asks before acting.
 *
 * Each function answers one of a few outcomes and never says why a caller
 * was refused: "no such session" and "not yours" are the same GATE_NOT_FOUND,
 * an unknown session and another Runner's are the same GATE_NOT_BOUND.  A
 * store read that failed is GATE_FAULT (UNAVAILABLE, retryable), never a
 * refusal.  Handlers must build their refusals only from the constants
 * below, so no code path can make two refusals differ by a byte.
 *
 * SUBJECT is what auth_authenticate() returned; NULL or an empty subject is
 * refused (fail closed).  OUT parameters (may be NULL) are filled on
 * GATE_ALLOWED / GATE_BOUND only. */
#ifndef AGENTHUB_GATE_H
#define AGENTHUB_GATE_H

#include <stdint.h>

#include "common/status.h"
#include "store/store.h"

enum gate_result {
    GATE_ALLOWED = 0,
    GATE_NOT_FOUND = 1, /* unknown, or the caller may not: NOT_FOUND */
    GATE_FAULT = 2,     /* the store could not answer: UNAVAILABLE */
    GATE_BOUND = 3,
    GATE_NOT_BOUND = 4,    /* unknown, or another Runner's: FAILED_PRECONDITION */
    GATE_NOT_PRODUCER = 5, /* the resource exists, the caller may not append */
};

/* One refusal: the gRPC status and grpc-message to answer with. */
struct gate_refusal {
    enum grpc_status status;
    const char *message;
};

extern const char GATE_NOT_FOUND_MESSAGE[];    /* "session not found" */
extern const char GATE_NOT_BOUND_MESSAGE[];    /* "session is not bound to this runner" */
extern const char GATE_NOT_PRODUCER_MESSAGE[]; /* "NOT_PRODUCER: ..." */
extern const char GATE_RESOURCE_NOT_FOUND_MESSAGE[];
extern const char GATE_FAULT_MESSAGE[]; /* "ownership store unavailable" */

/* The refusal for a non-allowed RESULT of a session gate (view, control,
 * bound), or NULL for GATE_ALLOWED / GATE_BOUND. */
const struct gate_refusal *gate_refusal(enum gate_result result);

/* The refusal for a non-allowed result of gate_may_produce (whose
 * NOT_FOUND names the resource, not a session). */
const struct gate_refusal *gate_produce_refusal(enum gate_result result);

/* May SUBJECT watch session SESSION_ID (SubscribeAgentSession, status)?
 * Admins may see every existing session; an account may when it is a
 * member of the home channel of the agent account that owns the session's
 * container.  Runners may not.  ALLOWED / NOT_FOUND / FAULT. */
enum gate_result gate_may_view(struct store *s, const struct store_subject *subject,
                               const char *session_id, struct store_session *out);

/* The same decision for a session already read (from session_list, say,
 * to answer "every session the caller may see"): only the membership is
 * read.  ALLOWED / NOT_FOUND / FAULT. */
enum gate_result gate_may_view_loaded(struct store *s, const struct store_subject *subject,
                                      const struct store_session *sess);

/* May SUBJECT control session SESSION_ID (SkipBatchWindow, Stop, Send)?
 * Only its owner or an admin; membership is not enough.
 * ALLOWED / NOT_FOUND / FAULT. */
enum gate_result gate_may_control(struct store *s, const struct store_subject *subject,
                                  const char *session_id, struct store_session *out);

/* The same decision for a session already read (to tell a caller, beside
 * its status, whether it may control it): reads nothing, so it never
 * faults.  ALLOWED / NOT_FOUND. */
enum gate_result gate_may_control_loaded(const struct store_subject *subject,
                                         const struct store_session *sess);

/* May SUBJECT start a session in container CONTAINER_NAME (and so become
 * its owner)?  Admins may; an account may when it could view the sessions
 * of that container, i.e. is a member of its agent's home channel.  (A
 * policy choice: starting a session makes the caller its owner, so only
 * someone who could already watch that agent may do it.)
 * ALLOWED / NOT_FOUND (unknown and forbidden alike) / FAULT; OUT gets the
 * container on ALLOWED. */
enum gate_result gate_may_start(struct store *s, const struct store_subject *subject,
                                const char *container_name, struct store_container *out);

/* Is SESSION_ID hosted by Runner RUNNER_ID (the Runner of its container)?
 * BOUND / NOT_BOUND / FAULT. */
enum gate_result gate_session_bound(struct store *s, const char *runner_id, const char *session_id);

/* May SUBJECT append into resource RESOURCE_ID (produce input into it)?
 * The agent account of the resource's container, the Runner hosting that
 * container, and admins may.  ALLOWED / NOT_FOUND (no such resource) /
 * NOT_PRODUCER / FAULT.  OUT receives the resource on ALLOWED. */
enum gate_result gate_may_produce(struct store *s, const struct store_subject *subject,
                                  uint64_t resource_id, struct store_resource *out);

#endif
