/* RunnerService (the Runner door): Enroll, PublishEvents, the agent relays
 * (UploadSessionBlob, FetchSessionBlob, ReportEvidence); Sessions lives in
 * runner_control.c.
 *
 * Every relay checks, in this order: the Runner's credential
 * (UNAUTHENTICATED), blob storage for blob calls (UNIMPLEMENTED), the
 * session's binding (FAILED_PRECONDITION, one constant for unknown and
 * foreign), a binding read fault (UNAVAILABLE), then the target (NOT_FOUND).
 * Nothing is delegated before the binding is verified. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/container_of.h"
#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "grpc/grpc.h"
#include "hub/hub.h"
#include "rpc/rpc.h"
#include "hub/runner_control.h"
#include "hub/hub_relay.h"
#include "hub/hub_session.h"
#include "hub/runner_seq.h"
#include "store/blob.h"
#include "store/gate.h"
#include "store/store.h"

#define RUNNER_SEQ_RANGE_MESSAGE "runner_seq must be 1 to 9223372036854775807"
#define STALE_STREAM_MESSAGE                                                                       \
    "the runner enrolled again without resuming: this PublishEvents stream belongs to its "        \
    "previous run"

/* Authenticates and checks SESSION_ID's binding to the calling Runner.
 * Returns 0, or -1 after finishing the call with the refusal. */
static int relay_precheck(struct grpc_call *call, const char *session_id, int needs_blobs,
                          struct store_subject *subject)
{
    struct hub *ctx = rpc_hub(call);
    int rv;

    if (rpc_authenticate(call, subject) != 0)
        return -1;
    if (needs_blobs && !rpc_config(call)->blob_dir) {
        grpc_call_finish(call, GRPC_STATUS_UNIMPLEMENTED, "this server has no blob storage");
        return -1;
    }
    rv = gate_session_bound(ctx->store, subject->id, session_id);
    if (rv != GATE_BOUND) {
        rpc_finish_gate_refusal(call, rv);
        return -1;
    }
    return 0;
}

/* --- Enroll -------------------------------------------------------------- */

/* An Enroll waiting for the session log (a cluster node reading what other
 * nodes wrote for the Runner): answered from enroll_synced, freed by
 * enroll_on_close. */
struct enroll_pending {
    struct hub_log_wait w; /* first: done gets it */
    struct grpc_call *call;
    int resume;
    char runner_id[STORE_ID_MAX];
    char version[65];
};

static void enroll_reply(struct grpc_call *call, const char *runner_id, const char *version,
                         int resume, uint64_t last)
{
    Compass__V1__EnrollResponse response = COMPASS__V1__ENROLL_RESPONSE__INIT;

    log_info("runner %s enrolled (version %.64s, %s, last runner_seq %llu)", runner_id, version,
             resume ? "resumed its run" : "a new run", (unsigned long long)last);
    response.reattached = resume;
    response.runner_id = (char *)runner_id;
    response.last_runner_seq = last;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void enroll_synced(struct hub_log_wait *w, int ok)
{
    struct enroll_pending *p = (struct enroll_pending *)w;
    struct hub *ctx = rpc_hub(p->call);
    struct runner_run *run;

    if (!ok) {
        grpc_call_finish(p->call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    }
    if (runner_run_get(ctx, p->runner_id, &run) != 0) {
        grpc_call_finish(p->call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
    enroll_reply(p->call, p->runner_id, p->version, p->resume, runner_run_enrolled(ctx, run));
}

static void enroll_on_close(struct grpc_call *call)
{
    struct enroll_pending *p = grpc_call_user(call);

    if (!p)
        return;
    hub_log_wait_cancel(&p->w);
    grpc_call_set_user(call, NULL);
    free(p);
}

/* Enroll: a plain one starts a new run of the Runner (its runner_seq starts
 * again), one with resume continues the run the server knows. */
static void enroll_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__EnrollRequest *request = (const Compass__V1__EnrollRequest *)message;
    struct hub *ctx = rpc_hub(call);
    struct store_subject subject;
    struct enroll_pending *p;
    uint64_t last = 0;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    /* The id a Runner names must be its token's: a mismatch is someone
     * else's token. */
    if (request->runner_id[0] && strcmp(request->runner_id, subject.id) != 0) {
        grpc_call_finish(call, GRPC_STATUS_UNAUTHENTICATED,
                         "runner_id is not the runner this token belongs to");
        return;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    p->w.done = enroll_synced;
    p->call = call;
    p->resume = request->resume != 0;
    snprintf(p->runner_id, sizeof(p->runner_id), "%s", subject.id);
    snprintf(p->version, sizeof(p->version), "%s", request->runner_version);
    grpc_call_set_user(call, p);
    switch (runner_run_enroll(ctx, subject.id, request->resume, &last, &p->w)) {
    case RUNNER_ENROLL_DONE:
        enroll_reply(call, p->runner_id, p->version, p->resume, last);
        return;
    case RUNNER_ENROLL_WAIT:
        return; /* enroll_synced answers (maybe it already did) */
    case RUNNER_ENROLL_FAULT:
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
}

/* --- PublishEvents ------------------------------------------------------- */

struct publish_stream {
    struct hub_relay relay; /* the hub decides every frame */
    struct grpc_call *call;
    struct hub_log_wait stored; /* the answer waits for the frames to be stored */
};

static void publish_on_start(struct grpc_call *call)
{
    struct hub *ctx = rpc_hub(call);
    struct store_subject subject;
    struct publish_stream *stream;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    stream = calloc(1, sizeof(*stream));
    if (!stream) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (hub_relay_open(ctx, &stream->relay, rpc_stream(call), &subject) != 0) {
        free(stream);
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    }
    stream->call = call;
    grpc_call_set_user(call, stream);
}

/* The status and message a verdict that ends the stream is answered with. */
static void publish_refuse(struct grpc_call *call, enum hub_relay_verdict verdict)
{
    switch (verdict) {
    case HUB_RELAY_SEQ_RANGE:
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, RUNNER_SEQ_RANGE_MESSAGE);
        return;
    case HUB_RELAY_STALE:
        grpc_call_finish(call, GRPC_STATUS_ABORTED, STALE_STREAM_MESSAGE);
        return;
    case HUB_RELAY_LOG_DOWN:
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
        return;
    case HUB_RELAY_STORE_FAULT:
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    case HUB_RELAY_NOMEM:
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "cannot open the session");
        return;
    case HUB_RELAY_ACCEPTED:
    case HUB_RELAY_RETRY:
    case HUB_RELAY_DUPLICATE:
    case HUB_RELAY_UNKNOWN:
    case HUB_RELAY_UNBOUND:
    case HUB_RELAY_TRANSCRIPT:
    case HUB_RELAY_ACK:
    case HUB_RELAY_ENDED:
    case HUB_RELAY_BAD_RECORD:
        return; /* dealt with (relayed, or counted and dropped): the stream goes on */
    }
}

static void publish_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    struct publish_stream *stream = grpc_call_user(call);

    if (!stream || grpc_call_finished(call))
        return; /* ended (a revoked token): nothing more is accepted */
    publish_refuse(call, hub_relay_frame(&stream->relay,
                                         (const Compass__V1__PublishEventsRequest *)message, NULL));
}

static void publish_answer(struct grpc_call *call)
{
    static const Compass__V1__PublishEventsResponse response =
        COMPASS__V1__PUBLISH_EVENTS_RESPONSE__INIT;

    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void publish_stored(struct hub_log_wait *w, int ok)
{
    struct publish_stream *stream = container_of(w, struct publish_stream, stored);

    if (ok)
        publish_answer(stream->call);
    else
        grpc_call_finish(stream->call, GRPC_STATUS_UNAVAILABLE, HUB_LOG_UNAVAILABLE_MESSAGE);
}

static void publish_on_half_close(struct grpc_call *call)
{
    struct publish_stream *stream = grpc_call_user(call);

    if (stream && !grpc_call_finished(call)) {
        memset(&stream->stored, 0, sizeof(stream->stored));
        stream->stored.done = publish_stored;
        if (!hub_relay_sync(&stream->relay, &stream->stored))
            return; /* publish_stored answers (maybe it already did) */
    }
    publish_answer(call);
}

static void publish_on_close(struct grpc_call *call)
{
    struct publish_stream *stream = grpc_call_user(call);

    if (!stream)
        return;
    hub_relay_close(&stream->relay);
    hub_log_wait_cancel(&stream->stored);
    free(stream);
}

/* --- Blob relays --------------------------------------------------------- */

static void upload_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__UploadSessionBlobRequest *request =
        (const Compass__V1__UploadSessionBlobRequest *)message;
    const struct rpc_config *config = rpc_config(call);
    Compass__V1__UploadSessionBlobResponse response =
        COMPASS__V1__UPLOAD_SESSION_BLOB_RESPONSE__INIT;
    struct store_subject subject;
    char ref[BLOB_REF_SIZE];
    int rv;

    if (relay_precheck(call, request->session_id, 1, &subject) != 0)
        return;
    rv = blob_put(config->blob_dir, request->session_id, request->content_type, request->data.data,
                  request->data.len, config->max_blob_bytes, ref);
    if (rv == BLOB_TOO_LARGE) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "blob larger than the limit");
        return;
    }
    if (rv != BLOB_OK) {
        log_error("blob storage failed for a session of runner %s", subject.id);
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "blob storage failed");
        return;
    }
    response.blob_ref = ref;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void fetch_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__FetchSessionBlobRequest *request =
        (const Compass__V1__FetchSessionBlobRequest *)message;
    const struct rpc_config *config = rpc_config(call);
    Compass__V1__FetchSessionBlobResponse response = COMPASS__V1__FETCH_SESSION_BLOB_RESPONSE__INIT;
    struct store_subject subject;
    char *content_type = NULL;
    uint8_t *data = NULL;
    size_t len = 0;
    int rv;

    if (relay_precheck(call, request->session_id, 1, &subject) != 0)
        return;
    rv = blob_get(config->blob_dir, request->session_id, request->blob_ref, &content_type, &data,
                  &len);
    if (rv == BLOB_NOT_FOUND) {
        grpc_call_finish(call, GRPC_STATUS_NOT_FOUND, "blob not found");
        return;
    }
    if (rv != BLOB_OK) {
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "blob storage failed");
        return;
    }
    response.content_type = content_type;
    response.data.data = data;
    response.data.len = len;
    grpc_call_send(call, &response.base);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
    free(content_type);
    free(data);
}

/* --- ReportEvidence ------------------------------------------------------ */

static void evidence_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Compass__V1__ReportEvidenceRequest *request =
        (const Compass__V1__ReportEvidenceRequest *)message;
    struct hub *ctx = rpc_hub(call);
    static const Compass__V1__ReportEvidenceResponse response =
        COMPASS__V1__REPORT_EVIDENCE_RESPONSE__INIT;
    struct store_subject subject;
    enum arbiter_rank rank;
    int evidence;

    if (relay_precheck(call, request->session_id, 0, &subject) != 0)
        return;
    if (request->rank == COMPASS__V1__EVIDENCE_RANK__EVIDENCE_RANK_PROCESS) {
        rank = ARBITER_RANK_PROCESS;
    } else if (request->rank == COMPASS__V1__EVIDENCE_RANK__EVIDENCE_RANK_SCREEN) {
        rank = ARBITER_RANK_SCREEN;
    } else {
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, "rank must be PROCESS or SCREEN");
        return;
    }
    if (request->state < 0 || (int)request->state >= (int)ARBITER_STATE_COUNT) {
        grpc_call_finish(call, GRPC_STATUS_INVALID_ARGUMENT, "unknown state");
        return;
    }
    evidence = request->state == 0 ? ARBITER_RETRACT : (int)request->state;
    switch (hub_report_evidence(ctx, request->session_id, subject.id, rank, evidence,
                                request->live_child ? 1 : 0)) {
    case HUB_LIVE:
    case HUB_ENDED: /* evidence about an ended session changes nothing */
        grpc_call_send(call, &response.base);
        grpc_call_finish(call, GRPC_STATUS_OK, NULL);
        return;
    case HUB_FAULT:
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
        return;
    case HUB_NOMEM:
        break;
    }
    grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "cannot open the session");
}

/* --- RunnerService/Sessions ------------------------------------------------ */

static void sessions_on_start(struct grpc_call *call)
{
    struct hub *ctx = rpc_hub(call);
    struct store_subject subject;

    if (rpc_authenticate(call, &subject) != 0)
        return;
    if (!runner_link_open(ctx, rpc_stream(call), &subject)) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    /* Headers now: the stream is a pull-style producer from here on. */
    grpc_call_start_response(call);
    log_info("runner %s connected its Sessions stream", subject.id);
}

static void sessions_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    struct runner_link *link = grpc_call_user(call);

    if (link)
        runner_link_message(rpc_hub(call), link, (const Compass__V1__SessionsRequest *)message);
}

static void sessions_on_writable(struct grpc_call *call)
{
    struct runner_link *link = grpc_call_user(call);

    if (link)
        runner_link_write_next(link);
}

static void sessions_on_half_close(struct grpc_call *call)
{
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void sessions_on_close(struct grpc_call *call)
{
    struct runner_link *link = grpc_call_user(call);

    if (!link)
        return;
    log_info("runner %s disconnected its Sessions stream", runner_link_id(link));
    runner_link_close(rpc_hub(call), link, "the runner disconnected");
}

static const struct grpc_method runner_sessions_method = {
    .path = "/compass.v1.RunnerService/Sessions",
    .kind = GRPC_METHOD_BIDI_STREAMING,
    .request_type = &compass__v1__sessions_request__descriptor,
    .response_type = &compass__v1__sessions_response__descriptor,
    .on_start = sessions_on_start,
    .on_message = sessions_on_message,
    .on_half_close = sessions_on_half_close,
    .on_writable = sessions_on_writable,
    .on_close = sessions_on_close,
    .needs_caller = 1,
};

static const struct grpc_method runner_methods[] = {
    {
        .path = "/compass.v1.RunnerService/Enroll",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__enroll_request__descriptor,
        .response_type = &compass__v1__enroll_response__descriptor,
        .on_message = enroll_on_message,
        .on_close = enroll_on_close,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.RunnerService/PublishEvents",
        .kind = GRPC_METHOD_CLIENT_STREAMING,
        .request_type = &compass__v1__publish_events_request__descriptor,
        .response_type = &compass__v1__publish_events_response__descriptor,
        .on_start = publish_on_start,
        .on_message = publish_on_message,
        .on_half_close = publish_on_half_close,
        .on_close = publish_on_close,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.RunnerService/UploadSessionBlob",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__upload_session_blob_request__descriptor,
        .response_type = &compass__v1__upload_session_blob_response__descriptor,
        .on_message = upload_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.RunnerService/FetchSessionBlob",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__fetch_session_blob_request__descriptor,
        .response_type = &compass__v1__fetch_session_blob_response__descriptor,
        .on_message = fetch_on_message,
        .needs_caller = 1,
    },
    {
        .path = "/compass.v1.RunnerService/ReportEvidence",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &compass__v1__report_evidence_request__descriptor,
        .response_type = &compass__v1__report_evidence_response__descriptor,
        .on_message = evidence_on_message,
        .needs_caller = 1,
    },
};

int runner_service_register(struct rpc_context *rpc, struct grpc_door *door)
{
    if (grpc_door_register(door, &runner_sessions_method) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(runner_methods) / sizeof(runner_methods[0]); i++)
        if (grpc_door_register(door, &runner_methods[i]) != 0)
            return -1;
    return 0;
}
