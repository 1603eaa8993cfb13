/* hub_wire: how the hub's ring and bus entries are laid out on the wire.
 *
 * A ring entry is an AgentSessionFrame encoded without seq and at_unix_ms;
 * a bus entry is a SubscribeEventsResponse encoded without seq, at_unix_ms
 * and instance_epoch.  On delivery a subscriber writes those fields in
 * front of the stored bytes (protobuf fields may come in any order), so no
 * entry is re-encoded per subscriber.  These functions are the only place
 * that knows the field numbers; hub_wire_check ties them to proto/. */
#ifndef AGENTHUB_HUB_WIRE_H
#define AGENTHUB_HUB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common/protowire.h"

/* compass.v1.AgentSessionFrame fields written on delivery, its event and
 * state, and the events of SessionEvent that are agenthub's own. */
#define HUB_FRAME_EVENT                 2
#define HUB_FRAME_STATE                 3
#define HUB_FRAME_SEQ                   100
#define HUB_FRAME_AT_UNIX_MS            101
#define HUB_SESSION_EVENT_BATCH_PENDING 100
#define HUB_SESSION_EVENT_RECORD        101
/* compass.v1.SubscribeEventsResponse fields written on delivery, the
 * session an event belongs to, and agenthub's own payloads. */
#define HUB_EVENT_SEQ                   1
#define HUB_EVENT_AT_UNIX_MS            2
#define HUB_EVENT_INSTANCE_EPOCH        3
#define HUB_EVENT_SESSION_BATCH_PENDING 100
#define HUB_EVENT_AGENT_RECORD          101
#define HUB_EVENT_SESSION_ID            102
/* compass.v1.SubscribeEventsResponse.agent_session_status and its state
 * (compass's numbers). */
#define HUB_EVENT_STATUS    12
#define HUB_STATUS_STATE    2
#define HUB_STATUS_LAST_SEQ 105

/* Room for any prefix below. */
#define HUB_PREFIX_MAX (3 * PROTOWIRE_VARINT_FIELD_MAX)

/* Writes a ring entry's delivery prefix (seq, at_unix_ms) into OUT.
 * Returns its length. */
size_t hub_pane_prefix(uint8_t out[HUB_PREFIX_MAX], uint64_t seq, int64_t at_unix_ms);

/* Writes a bus entry's delivery prefix (seq, at_unix_ms, instance_epoch)
 * into OUT.  Returns its length. */
size_t hub_event_prefix(uint8_t out[HUB_PREFIX_MAX], uint64_t seq, int64_t at_unix_ms,
                        uint64_t epoch);

/* The session id of the bus entry PAYLOAD[0..LEN).  Returns 0 with *ID and
 * *ID_LEN (not NUL-terminated), or -1 when it has none or is malformed. */
int hub_event_session_id(const void *payload, size_t len, const char **id, size_t *id_len);

/* 1 when the bus entry PAYLOAD[0..LEN) carries one of agenthub's own
 * payloads (a compass reader would decode it as an event without one),
 * else 0.  A malformed entry counts as agenthub's: it is not sent to a
 * compass reader. */
int hub_event_agenthub_only(const void *payload, size_t len);

/* 1 when the ring entry FRAME[0..LEN) carries no state and an event of
 * agenthub's own (a compass reader would decode an empty frame), else 0.
 * A malformed entry counts as agenthub's. */
int hub_frame_agenthub_only(const void *frame, size_t len);

/* The AgentSessionState of the bus entry PAYLOAD[0..LEN) when it is an
 * agent_session_status (0 when the status says none), or -1 when it is
 * another event or malformed. */
int hub_event_status_state(const void *payload, size_t len);
/* The same, with *LAST_SEQ the status's last_seq (0 when it has none). */
int hub_event_status(const void *payload, size_t len, uint64_t *last_seq);

/* The state a ring entry FRAME[0..LEN) carries (a state frame), or 0 when
 * it carries none or is malformed. */
int hub_frame_state(const void *frame, size_t len);

/* Checks the field numbers above against the generated descriptors.
 * Returns 0, or -1 naming the first mismatch in WHY. */
int hub_wire_check(char *why, size_t why_size);

#endif
