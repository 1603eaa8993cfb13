/* hub_wire: the delivery prefixes of ring and bus entries. */
#include "hub/hub_wire.h"

#include <stdio.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "core/arbiter.h"
#include "hub/hub_stream.h"
#include "store/gate.h"
#include "store/store.h"

/* The numbers core and store share with proto/ (and the gate's statuses,
 * which the hub passes on as its own), checked where both are in sight.  Field numbers are not in
 * the generated headers: hub_wire_check reads them from the descriptors at start-up. */
#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " is " #b)
#define STATE(x)   COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_##x
SAME(ARBITER_UNSPECIFIED, STATE(UNSPECIFIED));
SAME(ARBITER_STARTING, STATE(STARTING));
SAME(ARBITER_READY, STATE(READY));
SAME(ARBITER_WORKING, STATE(WORKING));
SAME(ARBITER_STOPPED, STATE(STOPPED));
SAME(ARBITER_ERRORED, STATE(ERRORED));
SAME(ARBITER_DISCONNECTED, STATE(DISCONNECTED));
SAME(ARBITER_BLOCKED, STATE(BLOCKED));
SAME(ARBITER_DONE, STATE(DONE));
SAME(ARBITER_IDLE, STATE(IDLE));
SAME(ARBITER_STATE_COUNT, STATE(IDLE) + 1);
SAME(ARBITER_WIRE_RANK_PROCESS, COMPASS__V1__EVIDENCE_RANK__EVIDENCE_RANK_PROCESS);
SAME(ARBITER_WIRE_RANK_SCREEN, COMPASS__V1__EVIDENCE_RANK__EVIDENCE_RANK_SCREEN);
SAME(ARBITER_WIRE_TOOL_IN_PROGRESS,
     COMPASS__V1__AGENT_TOOL_CALL_STATUS__AGENT_TOOL_CALL_STATUS_IN_PROGRESS);
SAME(STORE_RESOURCE_TERMINAL, COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_TERMINAL);
SAME(STORE_RESOURCE_AGENT_SESSION, COMPASS__V1__RESOURCE_KIND__RESOURCE_KIND_AGENT_SESSION);
SAME(GRPC_STATUS_NOT_FOUND, GRPC_STATUS_NOT_FOUND);
SAME(GRPC_STATUS_PERMISSION_DENIED, GRPC_STATUS_PERMISSION_DENIED);
SAME(GRPC_STATUS_FAILED_PRECONDITION, GRPC_STATUS_FAILED_PRECONDITION);
SAME(GRPC_STATUS_UNAVAILABLE, GRPC_STATUS_UNAVAILABLE);
#undef STATE
#undef SAME

size_t hub_pane_prefix(uint8_t out[HUB_PREFIX_MAX], uint64_t seq, int64_t at_unix_ms)
{
    size_t n = protowire_put_varint_field(out, HUB_FRAME_SEQ, seq);

    return n + protowire_put_varint_field(out + n, HUB_FRAME_AT_UNIX_MS, (uint64_t)at_unix_ms);
}

size_t hub_event_prefix(uint8_t out[HUB_PREFIX_MAX], uint64_t seq, int64_t at_unix_ms,
                        uint64_t epoch)
{
    size_t n = protowire_put_varint_field(out, HUB_EVENT_SEQ, seq);

    n += protowire_put_varint_field(out + n, HUB_EVENT_AT_UNIX_MS, (uint64_t)at_unix_ms);
    return n + protowire_put_varint_field(out + n, HUB_EVENT_INSTANCE_EPOCH, epoch);
}

int hub_event_session_id(const void *payload, size_t len, const char **id, size_t *id_len)
{
    const uint8_t *data;

    if (protowire_find_len(payload, len, HUB_EVENT_SESSION_ID, &data, id_len) != 0)
        return -1;
    *id = (const char *)data;
    return 0;
}

int hub_event_agenthub_only(const void *payload, size_t len)
{
    struct protowire_reader r;
    struct protowire_field f;
    int rv;

    protowire_reader_init(&r, payload, len);
    while ((rv = protowire_next(&r, &f)) == 1)
        if (f.number == HUB_EVENT_SESSION_BATCH_PENDING || f.number == HUB_EVENT_AGENT_RECORD)
            return 1;
    return rv < 0;
}

/* 1 when the SessionEvent EVENT[0..LEN) is one of agenthub's own (or
 * malformed), else 0. */
static int session_event_agenthub_only(const uint8_t *event, size_t len)
{
    struct protowire_reader r;
    struct protowire_field f;
    int rv;

    protowire_reader_init(&r, event, len);
    while ((rv = protowire_next(&r, &f)) == 1)
        if (f.number == HUB_SESSION_EVENT_BATCH_PENDING || f.number == HUB_SESSION_EVENT_RECORD)
            return 1;
    return rv < 0;
}

int hub_frame_agenthub_only(const void *frame, size_t len)
{
    struct protowire_reader r;
    struct protowire_field f;
    int own = 0, rv;

    protowire_reader_init(&r, frame, len);
    while ((rv = protowire_next(&r, &f)) == 1) {
        if (f.number == HUB_FRAME_STATE)
            return 0;
        if (f.number == HUB_FRAME_EVENT && f.type == PROTOWIRE_LEN)
            own |= session_event_agenthub_only(f.data, f.len);
    }
    return rv < 0 || own;
}

int hub_event_status(const void *payload, size_t len, uint64_t *last_seq)
{
    struct protowire_reader r;
    struct protowire_field f;
    const uint8_t *status;
    size_t status_len;
    int state = 0;

    *last_seq = 0;
    if (protowire_find_len(payload, len, HUB_EVENT_STATUS, &status, &status_len) != 0)
        return -1;
    protowire_reader_init(&r, status, status_len);
    for (int rv; (rv = protowire_next(&r, &f)) != 0;) {
        if (rv < 0)
            return -1;
        /* The last occurrence wins, as when protobuf-c decodes it. */
        if (f.number == HUB_STATUS_STATE && f.type == PROTOWIRE_VARINT)
            state = f.varint <= 64 ? (int)f.varint : 0;
        else if (f.number == HUB_STATUS_LAST_SEQ && f.type == PROTOWIRE_VARINT)
            *last_seq = f.varint;
    }
    return state;
}

int hub_event_status_state(const void *payload, size_t len)
{
    uint64_t last_seq;

    return hub_event_status(payload, len, &last_seq);
}

int hub_frame_state(const void *frame, size_t len)
{
    struct protowire_reader r;
    struct protowire_field f;

    protowire_reader_init(&r, frame, len);
    while (protowire_next(&r, &f) == 1)
        if (f.number == HUB_FRAME_STATE && f.type == PROTOWIRE_VARINT)
            return f.varint <= 64 ? (int)f.varint : 0;
    return 0;
}

/* 0 when field NAME of TYPE has NUMBER, else -1 with WHY. */
static int check_field(const ProtobufCMessageDescriptor *type, const char *name, unsigned number,
                       char *why, size_t why_size)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(type, name);

    if (f && f->id == number)
        return 0;
    snprintf(why, why_size, "%s.%s is not field %u", type->name, name, number);
    return -1;
}

int hub_wire_check(char *why, size_t why_size)
{
    const ProtobufCMessageDescriptor *frame = &compass__v1__agent_session_frame__descriptor;
    const ProtobufCMessageDescriptor *event = &compass__v1__subscribe_events_response__descriptor;
    const ProtobufCMessageDescriptor *typed = &compass__v1__session_event__descriptor;
    const ProtobufCMessageDescriptor *status = &compass__v1__agent_session_status__descriptor;

    if (check_field(frame, "event", HUB_FRAME_EVENT, why, why_size) != 0 ||
        check_field(frame, "state", HUB_FRAME_STATE, why, why_size) != 0 ||
        check_field(typed, "batch_pending", HUB_SESSION_EVENT_BATCH_PENDING, why, why_size) != 0 ||
        check_field(typed, "record", HUB_SESSION_EVENT_RECORD, why, why_size) != 0 ||
        check_field(frame, "seq", HUB_FRAME_SEQ, why, why_size) != 0 ||
        check_field(frame, "at_unix_ms", HUB_FRAME_AT_UNIX_MS, why, why_size) != 0 ||
        check_field(event, "seq", HUB_EVENT_SEQ, why, why_size) != 0 ||
        check_field(event, "at_unix_ms", HUB_EVENT_AT_UNIX_MS, why, why_size) != 0 ||
        check_field(event, "instance_epoch", HUB_EVENT_INSTANCE_EPOCH, why, why_size) != 0 ||
        check_field(event, "session_batch_pending", HUB_EVENT_SESSION_BATCH_PENDING, why,
                    why_size) != 0 ||
        check_field(event, "agent_record", HUB_EVENT_AGENT_RECORD, why, why_size) != 0 ||
        check_field(event, "session_id", HUB_EVENT_SESSION_ID, why, why_size) != 0 ||
        check_field(event, "agent_session_status", HUB_EVENT_STATUS, why, why_size) != 0 ||
        check_field(status, "state", HUB_STATUS_STATE, why, why_size) != 0 ||
        check_field(status, "last_seq", HUB_STATUS_LAST_SEQ, why, why_size) != 0)
        return -1;
    return 0;
}
