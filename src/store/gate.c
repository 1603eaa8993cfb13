/* gate: see gate.h. */
#include <string.h>

#include "store/gate.h"

const char GATE_NOT_FOUND_MESSAGE[] = "session not found";
const char GATE_NOT_BOUND_MESSAGE[] = "session is not bound to this runner";
const char GATE_NOT_PRODUCER_MESSAGE[] = "NOT_PRODUCER: caller may not produce into this resource";
const char GATE_RESOURCE_NOT_FOUND_MESSAGE[] = "resource not found";
const char GATE_FAULT_MESSAGE[] = "ownership store unavailable";

static const struct gate_refusal refuse_not_found = {GRPC_STATUS_NOT_FOUND, GATE_NOT_FOUND_MESSAGE};
static const struct gate_refusal refuse_not_bound = {GRPC_STATUS_FAILED_PRECONDITION,
                                                     GATE_NOT_BOUND_MESSAGE};
static const struct gate_refusal refuse_fault = {GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE};
static const struct gate_refusal refuse_not_producer = {GRPC_STATUS_PERMISSION_DENIED,
                                                        GATE_NOT_PRODUCER_MESSAGE};
static const struct gate_refusal refuse_no_resource = {GRPC_STATUS_NOT_FOUND,
                                                       GATE_RESOURCE_NOT_FOUND_MESSAGE};

const struct gate_refusal *gate_refusal(enum gate_result result)
{
    switch (result) {
    case GATE_ALLOWED:
    case GATE_BOUND:
        return NULL;
    case GATE_NOT_BOUND:
        return &refuse_not_bound;
    case GATE_FAULT:
        return &refuse_fault;
    case GATE_NOT_FOUND:
    case GATE_NOT_PRODUCER:
        break;
    }
    /* Anything else refuses like an unknown session. */
    return &refuse_not_found;
}

const struct gate_refusal *gate_produce_refusal(enum gate_result result)
{
    switch (result) {
    case GATE_ALLOWED:
        return NULL;
    case GATE_NOT_PRODUCER:
        return &refuse_not_producer;
    case GATE_FAULT:
        return &refuse_fault;
    case GATE_NOT_FOUND:
    case GATE_BOUND:
    case GATE_NOT_BOUND:
        break;
    }
    return &refuse_no_resource;
}

static int is_account(const struct store_subject *subject)
{
    return subject && subject->kind == STORE_SUBJECT_ACCOUNT && subject->id[0] != '\0';
}

/* Reads SESSION_ID for a gate: ALLOWED with *S filled, NOT_FOUND or FAULT. */
static enum gate_result load_session(struct store *s, const char *session_id,
                                     struct store_session *sess)
{
    int rc;

    if (!session_id || session_id[0] == '\0')
        return GATE_NOT_FOUND;
    rc = store_session_get(s, session_id, sess);
    if (rc == STORE_OK)
        return GATE_ALLOWED;
    return rc == STORE_NOT_FOUND ? GATE_NOT_FOUND : GATE_FAULT;
}

/* A refusal must not depend on whether the session exists, not even while
 * membership reads are failing: a refusal that needed no membership read
 * still makes one, so a fault answers FAULT (UNAVAILABLE) either way. */
static enum gate_result membership_probe(struct store *s, const struct store_subject *subject)
{
    int rv = s->ops->member_check(s->impl, subject->id, subject->id);
    return rv == STORE_FAULT ? GATE_FAULT : GATE_NOT_FOUND;
}

/* The membership half of a view decision, SESS already read. */
static enum gate_result may_view_session(struct store *s, const struct store_subject *subject,
                                         const struct store_session *sess)
{
    int rv;

    if (subject->is_admin)
        return GATE_ALLOWED;
    /* An agent without a home channel is visible to admins only. */
    if (sess->home_channel_id[0] == '\0')
        return membership_probe(s, subject);
    rv = s->ops->member_check(s->impl, subject->id, sess->home_channel_id);
    if (rv == STORE_OK)
        return GATE_ALLOWED;
    return rv == STORE_NOT_FOUND ? GATE_NOT_FOUND : GATE_FAULT;
}

/* The walk of gate_may_view, inside one read scope. */
static enum gate_result may_view(struct store *s, const struct store_subject *subject,
                                 const char *session_id, struct store_session *out)
{
    struct store_session sess;
    int rv;

    rv = load_session(s, session_id, &sess);
    if (rv == GATE_ALLOWED)
        rv = may_view_session(s, subject, &sess);
    else if (rv == GATE_NOT_FOUND && !subject->is_admin)
        rv = membership_probe(s, subject);
    if (rv == GATE_ALLOWED && out)
        *out = sess;
    return rv;
}

enum gate_result gate_may_view_loaded(struct store *s, const struct store_subject *subject,
                                      const struct store_session *sess)
{
    if (!is_account(subject) || !sess)
        return GATE_NOT_FOUND;
    return may_view_session(s, subject, sess);
}

enum gate_result gate_may_view(struct store *s, const struct store_subject *subject,
                               const char *session_id, struct store_session *out)
{
    int rv;

    if (!is_account(subject))
        return GATE_NOT_FOUND;
    /* One decision, one freshness check: the session and the membership
     * are read from state no older than this call's start. */
    s->ops->read_begin(s->impl);
    rv = may_view(s, subject, session_id, out);
    s->ops->read_end(s->impl);
    return rv;
}

enum gate_result gate_may_control(struct store *s, const struct store_subject *subject,
                                  const char *session_id, struct store_session *out)
{
    struct store_session sess;
    int rv;

    if (!is_account(subject))
        return GATE_NOT_FOUND;
    rv = load_session(s, session_id, &sess);
    if (rv != GATE_ALLOWED)
        return rv;
    rv = gate_may_control_loaded(subject, &sess);
    if (rv != GATE_ALLOWED)
        return rv;
    if (out)
        *out = sess;
    return GATE_ALLOWED;
}

enum gate_result gate_may_control_loaded(const struct store_subject *subject,
                                         const struct store_session *sess)
{
    if (!is_account(subject) || !sess)
        return GATE_NOT_FOUND;
    if (!subject->is_admin && strcmp(sess->owner_account_id, subject->id) != 0)
        return GATE_NOT_FOUND;
    return GATE_ALLOWED;
}

enum gate_result gate_may_start(struct store *s, const struct store_subject *subject,
                                const char *container_name, struct store_container *out)
{
    struct store_container c;
    struct store_account agent;
    int rc;

    if (!is_account(subject) || !container_name || !store_id_valid(container_name))
        return GATE_NOT_FOUND;
    rc = s->ops->container_get(s->impl, container_name, &c);
    if (rc == STORE_OK && !subject->is_admin) {
        rc = s->ops->account_get(s->impl, c.agent_account_id, &agent);
        if (rc == STORE_OK)
            rc = agent.home_channel_id[0] == '\0'
                     ? STORE_NOT_FOUND
                     : s->ops->member_check(s->impl, subject->id, agent.home_channel_id);
    }
    if (rc == STORE_NOT_FOUND)
        return GATE_NOT_FOUND;
    if (rc != STORE_OK)
        return GATE_FAULT;
    if (out)
        *out = c;
    return GATE_ALLOWED;
}

enum gate_result gate_session_bound(struct store *s, const char *runner_id, const char *session_id)
{
    char host[STORE_ID_MAX];
    int rc;

    if (!runner_id || runner_id[0] == '\0' || !session_id || session_id[0] == '\0')
        return GATE_NOT_BOUND;
    rc = s->ops->session_runner(s->impl, session_id, host);
    if (rc == STORE_NOT_FOUND)
        return GATE_NOT_BOUND;
    if (rc != STORE_OK)
        return GATE_FAULT;
    return strcmp(host, runner_id) == 0 ? GATE_BOUND : GATE_NOT_BOUND;
}

enum gate_result gate_may_produce(struct store *s, const struct store_subject *subject,
                                  uint64_t resource_id, struct store_resource *out)
{
    struct store_resource res;
    int rc, ok;

    if (!subject || subject->id[0] == '\0' || subject->kind == STORE_SUBJECT_NONE)
        return GATE_NOT_FOUND;
    rc = store_resource_get(s, resource_id, &res);
    if (rc == STORE_NOT_FOUND)
        return GATE_NOT_FOUND;
    if (rc != STORE_OK)
        return GATE_FAULT;
    if (subject->kind == STORE_SUBJECT_RUNNER)
        ok = strcmp(res.runner_id, subject->id) == 0;
    else
        ok = subject->is_admin || strcmp(res.agent_account_id, subject->id) == 0;
    if (!ok)
        return GATE_NOT_PRODUCER;
    if (out)
        *out = res;
    return GATE_ALLOWED;
}
