/* agent_frames: agent stdout lines to compass.v1 AgentFrames. */
#include "runner/agent_frames.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "common/pb_validate.h"

#define PLAN_MAX 256

/* Packs MESSAGE into a malloc'd buffer.  Returns 0 or -1. */
static int pack_message(const ProtobufCMessage *message, uint8_t **out, size_t *out_len)
{
    size_t len = protobuf_c_message_get_packed_size(message);
    uint8_t *buf = malloc(len ? len : 1);

    if (!buf)
        return -1;
    protobuf_c_message_pack(message, buf);
    *out = buf;
    *out_len = len;
    return 0;
}

/* Checks a frame's strings as the server will (pb_validate.h): a frame it
 * would refuse is skipped here, or resending it would wedge the relay.
 * Returns 0, or -1 with the reason in ERR. */
static int frame_strings_ok(const uint8_t *frame, size_t len, char *err, size_t err_size)
{
    char why[256];

    if (pb_validate_strings(&compass__v1__agent_frame__descriptor, frame, len, why, sizeof(why)) ==
        0)
        return 0;
    snprintf(err, err_size, "frame refused: %s", why);
    return -1;
}

/* Looks WORD up in ENUM_DESC by its full name, by PREFIX + WORD upper-cased,
 * or as a number.  Returns the value, or -1. */
static int enum_from_word(const ProtobufCEnumDescriptor *desc, const char *prefix, const char *word)
{
    const ProtobufCEnumValue *value;
    char name[128];
    size_t plen = strlen(prefix), i;
    char *end;
    long n;

    if (!word || !word[0])
        return -1;
    n = strtol(word, &end, 10);
    if (*end == '\0')
        return protobuf_c_enum_descriptor_get_value(desc, (int)n) ? (int)n : -1;
    value = protobuf_c_enum_descriptor_get_value_by_name(desc, word);
    if (value)
        return value->value;
    if (plen + strlen(word) >= sizeof(name))
        return -1;
    memcpy(name, prefix, plen);
    for (i = 0; word[i]; i++)
        name[plen + i] = (char)toupper((unsigned char)word[i]);
    name[plen + i] = '\0';
    value = protobuf_c_enum_descriptor_get_value_by_name(desc, name);
    return value ? value->value : -1;
}

/* The enum value of JSON (a string or an integer), or -1. */
static int enum_from_json(const ProtobufCEnumDescriptor *desc, const char *prefix, json_t *json)
{
    char digits[24];

    if (json_is_integer(json)) {
        snprintf(digits, sizeof(digits), "%lld", (long long)json_integer_value(json));
        return enum_from_word(desc, prefix, digits);
    }
    return json_is_string(json) ? enum_from_word(desc, prefix, json_string_value(json)) : -1;
}

int agent_frames_state_from_word(const char *word)
{
    return enum_from_word(&compass__v1__agent_session_state__descriptor, "AGENT_SESSION_STATE_",
                          word);
}

/* A string member of OBJ, or "" (protobuf-c wants non-NULL strings). */
static char *str_member(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_string(v) ? (char *)json_string_value(v) : (char *)"";
}

static int tool_status(json_t *obj, char *err, size_t err_size)
{
    json_t *v = json_object_get(obj, "status");
    int status;

    if (!v)
        return 0;
    status = enum_from_json(&compass__v1__agent_tool_call_status__descriptor,
                            "AGENT_TOOL_CALL_STATUS_", v);
    if (status < 0)
        snprintf(err, err_size, "unknown tool call status");
    return status;
}

/* Fills EVENT from the one event key of ROOT.  Storage for the event's parts
 * lives in PARTS (plan entries in ENTRIES).  Returns 1 when an event was
 * found, 0 when none, -1 on a malformed event. */
struct event_parts {
    Compass__V1__SessionAssistantText text;
    Compass__V1__SessionThinking thinking;
    Compass__V1__SessionToolCall tool_call;
    Compass__V1__SessionToolCallUpdate tool_update;
    Compass__V1__SessionPlan plan;
    Compass__V1__SessionNotice notice;
    Compass__V1__AgentRecord record;
    Compass__V1__AgentPlanEntry entries[PLAN_MAX];
    Compass__V1__AgentPlanEntry *entry_ptrs[PLAN_MAX];
    char *record_data; /* malloc'd */
};

static int event_from_json(json_t *root, Compass__V1__SessionEvent *event, struct event_parts *p,
                           char *err, size_t err_size)
{
    json_t *v;
    int status;

    if ((v = json_object_get(root, "assistant_text")) || (v = json_object_get(root, "thinking"))) {
        int thought = json_object_get(root, "assistant_text") == NULL;
        if (!json_is_object(v))
            goto malformed;
        if (thought) {
            compass__v1__session_thinking__init(&p->thinking);
            p->thinking.text = str_member(v, "text");
            p->thinking.message_id = str_member(v, "message_id");
            event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_THINKING;
            event->thinking = &p->thinking;
        } else {
            compass__v1__session_assistant_text__init(&p->text);
            p->text.text = str_member(v, "text");
            p->text.message_id = str_member(v, "message_id");
            event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_ASSISTANT_TEXT;
            event->assistant_text = &p->text;
        }
        return 1;
    }
    if ((v = json_object_get(root, "tool_call"))) {
        if (!json_is_object(v) || (status = tool_status(v, err, err_size)) < 0)
            goto malformed;
        compass__v1__session_tool_call__init(&p->tool_call);
        p->tool_call.tool_call_id = str_member(v, "tool_call_id");
        p->tool_call.title = str_member(v, "title");
        p->tool_call.status = (Compass__V1__AgentToolCallStatus)status;
        event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL;
        event->tool_call = &p->tool_call;
        return 1;
    }
    if ((v = json_object_get(root, "tool_call_update"))) {
        if (!json_is_object(v) || (status = tool_status(v, err, err_size)) < 0)
            goto malformed;
        compass__v1__session_tool_call_update__init(&p->tool_update);
        p->tool_update.tool_call_id = str_member(v, "tool_call_id");
        p->tool_update.output = str_member(v, "output");
        p->tool_update.status = (Compass__V1__AgentToolCallStatus)status;
        event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_TOOL_CALL_UPDATE;
        event->tool_call_update = &p->tool_update;
        return 1;
    }
    if ((v = json_object_get(root, "plan"))) {
        json_t *entries = json_object_get(v, "entries"), *e;
        size_t i;
        if (!json_is_array(entries) || json_array_size(entries) > PLAN_MAX)
            goto malformed;
        compass__v1__session_plan__init(&p->plan);
        json_array_foreach(entries, i, e)
        {
            json_t *s = json_object_get(e, "status");
            int st = s ? enum_from_json(&compass__v1__agent_plan_entry_status__descriptor,
                                        "AGENT_PLAN_ENTRY_STATUS_", s)
                       : 0;
            if (!json_is_object(e) || st < 0)
                goto malformed;
            compass__v1__agent_plan_entry__init(&p->entries[i]);
            p->entries[i].content = str_member(e, "content");
            p->entries[i].status = (Compass__V1__AgentPlanEntryStatus)st;
            p->entry_ptrs[i] = &p->entries[i];
        }
        p->plan.n_entries = json_array_size(entries);
        p->plan.entries = p->entry_ptrs;
        event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_PLAN;
        event->plan = &p->plan;
        return 1;
    }
    if ((v = json_object_get(root, "notice"))) {
        if (!json_is_object(v))
            goto malformed;
        compass__v1__session_notice__init(&p->notice);
        p->notice.text = str_member(v, "text");
        event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_NOTICE;
        event->notice = &p->notice;
        return 1;
    }
    if ((v = json_object_get(root, "record"))) {
        json_t *data = json_object_get(v, "data");
        if (!json_is_object(v) || !json_is_string(json_object_get(v, "type")) ||
            (data && !json_is_object(data)))
            goto malformed;
        compass__v1__agent_record__init(&p->record);
        p->record.type = str_member(v, "type");
        p->record_data = data ? json_dumps(data, JSON_COMPACT) : strdup("{}");
        if (!p->record_data)
            goto malformed;
        p->record.data_json = p->record_data;
        event->event_case = COMPASS__V1__SESSION_EVENT__EVENT_RECORD;
        event->record = &p->record;
        return 1;
    }
    return 0;
malformed:
    if (!err[0])
        snprintf(err, err_size, "malformed event object");
    return -1;
}

/* Takes ENTRY ("entry" object or "entry_json" text) from OBJ into OUT->entry.
 * Returns 0 or -1. */
static int take_entry(json_t *obj, struct agent_line *out, char *err, size_t err_size)
{
    json_t *entry = json_object_get(obj, "entry");
    json_t *text = json_object_get(obj, "entry_json");

    if (!json_is_object(obj))
        goto bad;
    if (entry) {
        out->entry = json_incref(entry);
        return 0;
    }
    if (json_is_string(text)) {
        out->entry = json_loads(json_string_value(text), JSON_DECODE_ANY, NULL);
        if (out->entry)
            return 0;
    }
bad:
    snprintf(err, err_size, "an entry needs \"entry\" (JSON) or \"entry_json\" (JSON text)");
    return -1;
}

int agent_line_parse_json(const char *text, size_t len, int64_t now_ms, struct agent_line *out,
                          char *err, size_t err_size)
{
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__SessionFrame session = COMPASS__V1__SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    struct event_parts *parts = NULL;
    json_error_t jerr;
    json_t *root, *v;
    int rv = -1, found;

    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        snprintf(err, err_size, "not JSON: %s", jerr.text);
        return -1;
    }
    if (!json_is_object(root)) {
        snprintf(err, err_size, "not a JSON object");
        goto cleanup;
    }
    if ((v = json_object_get(root, "transcript_entry"))) {
        if (take_entry(v, out, err, err_size) != 0)
            goto cleanup;
        out->kind = AGENT_LINE_TRANSCRIPT;
        out->checkpoint = json_is_true(json_object_get(v, "checkpoint"));
        if (json_is_integer(json_object_get(v, "entry_seq")))
            out->entry_seq = (uint64_t)json_integer_value(json_object_get(v, "entry_seq"));
        rv = 0;
        goto cleanup;
    }
    if ((v = json_object_get(root, "resume_entry"))) {
        if (take_entry(v, out, err, err_size) != 0)
            goto cleanup;
        out->kind = AGENT_LINE_RESUME;
        snprintf(out->id, sizeof(out->id), "%s", str_member(v, "id"));
        rv = 0;
        goto cleanup;
    }
    if ((v = json_object_get(root, "state"))) {
        int state = json_is_string(v)
                        ? agent_frames_state_from_word(json_string_value(v))
                        : enum_from_json(&compass__v1__agent_session_state__descriptor,
                                         "AGENT_SESSION_STATE_", v);
        if (state <= 0) {
            snprintf(err, err_size, "unknown state");
            goto cleanup;
        }
        out->state = state;
        session.state = (Compass__V1__AgentSessionState)state;
    }
    parts = calloc(1, sizeof(*parts));
    if (!parts) {
        snprintf(err, err_size, "out of memory");
        goto cleanup;
    }
    found = event_from_json(root, &event, parts, err, err_size);
    if (found < 0)
        goto cleanup;
    if (found == 0 && out->state == 0) {
        snprintf(err, err_size, "no known frame key");
        goto cleanup;
    }
    if (found) {
        event.event_id = str_member(root, "event_id");
        v = json_object_get(root, "at_unix_ms");
        event.at_unix_ms = json_is_integer(v) ? json_integer_value(v) : now_ms;
        session.typed_event = &event;
    }
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    frame.session = &session;
    if (pack_message(&frame.base, &out->frame, &out->frame_len) != 0) {
        snprintf(err, err_size, "out of memory");
        goto cleanup;
    }
    if (frame_strings_ok(out->frame, out->frame_len, err, err_size) != 0)
        goto cleanup;
    out->kind = AGENT_LINE_FRAME;
    rv = 0;
cleanup:
    if (parts)
        free(parts->record_data);
    free(parts);
    json_decref(root);
    if (rv != 0)
        agent_line_clear(out);
    return rv;
}

int agent_line_from_pb(const uint8_t *data, size_t len, struct agent_line *out, char *err,
                       size_t err_size)
{
    Compass__V1__AgentFrame *frame;

    memset(out, 0, sizeof(*out));
    if (frame_strings_ok(data, len, err, err_size) != 0)
        return -1;
    frame = compass__v1__agent_frame__unpack(NULL, len, data);
    if (!frame) {
        snprintf(err, err_size, "not a compass.v1 AgentFrame");
        return -1;
    }
    if (frame->frame_case == COMPASS__V1__AGENT_FRAME__FRAME_TRANSCRIPT_ENTRY) {
        out->entry = json_loads(frame->transcript_entry->entry_json, JSON_DECODE_ANY, NULL);
        if (out->entry) {
            out->kind = AGENT_LINE_TRANSCRIPT;
            out->checkpoint = frame->transcript_entry->checkpoint;
            out->entry_seq = frame->transcript_entry->entry_seq;
            compass__v1__agent_frame__free_unpacked(frame, NULL);
            return 0;
        }
    }
    if (frame->frame_case == COMPASS__V1__AGENT_FRAME__FRAME_SESSION)
        out->state = (int)frame->session->state;
    compass__v1__agent_frame__free_unpacked(frame, NULL);
    out->frame = malloc(len ? len : 1);
    if (!out->frame) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    if (len)
        memcpy(out->frame, data, len);
    out->frame_len = len;
    out->kind = AGENT_LINE_FRAME;
    return 0;
}

void agent_line_clear(struct agent_line *line)
{
    free(line->frame);
    if (line->entry)
        json_decref(line->entry);
    memset(line, 0, sizeof(*line));
}

int agent_frames_pb_next(const uint8_t *data, size_t len, size_t *consumed, const uint8_t **frame,
                         size_t *frame_len)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < len && i < 10; i++) {
        n |= (uint64_t)(data[i] & 0x7f) << (7 * i);
        if (!(data[i] & 0x80)) {
            if (n > AGENT_FRAMES_MAX)
                return -1;
            if (len - i - 1 < n)
                return 0;
            *frame = data + i + 1;
            *frame_len = (size_t)n;
            *consumed = i + 1 + (size_t)n;
            return 1;
        }
    }
    return i >= 10 ? -1 : 0;
}

int agent_frames_transcript(const char *entry_json, int checkpoint, uint64_t entry_seq,
                            uint8_t **out, size_t *out_len)
{
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__TranscriptEntry entry = COMPASS__V1__TRANSCRIPT_ENTRY__INIT;

    entry.entry_json = (char *)entry_json;
    entry.checkpoint = checkpoint ? 1 : 0;
    entry.entry_seq = entry_seq;
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_TRANSCRIPT_ENTRY;
    frame.transcript_entry = &entry;
    return pack_message(&frame.base, out, out_len);
}

int agent_frames_batch_pending(uint32_t count, uint64_t fires_at_ms, int64_t now_ms, uint8_t **out,
                               size_t *out_len)
{
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__SessionFrame session = COMPASS__V1__SESSION_FRAME__INIT;
    Compass__V1__SessionEvent event = COMPASS__V1__SESSION_EVENT__INIT;
    Compass__V1__SessionBatchPending pending = COMPASS__V1__SESSION_BATCH_PENDING__INIT;

    pending.count = count;
    pending.fires_at_unix_ms = count ? fires_at_ms : 0;
    event.at_unix_ms = now_ms;
    event.event_case = COMPASS__V1__SESSION_EVENT__EVENT_BATCH_PENDING;
    event.batch_pending = &pending;
    session.typed_event = &event;
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    frame.session = &session;
    return pack_message(&frame.base, out, out_len);
}

int agent_frames_state(int state, uint8_t **out, size_t *out_len)
{
    Compass__V1__AgentFrame frame = COMPASS__V1__AGENT_FRAME__INIT;
    Compass__V1__SessionFrame session = COMPASS__V1__SESSION_FRAME__INIT;

    session.state = (Compass__V1__AgentSessionState)state;
    frame.frame_case = COMPASS__V1__AGENT_FRAME__FRAME_SESSION;
    frame.session = &session;
    return pack_message(&frame.base, out, out_len);
}

static size_t put_varint(uint8_t *at, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        at[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    at[n++] = (uint8_t)v;
    return n;
}

int agent_frames_publish_request(uint64_t runner_seq, const char *session_id, const uint8_t *frame,
                                 size_t frame_len, uint8_t **out, size_t *out_len)
{
    /* The id is copied as bytes (field 2 carries no terminator). */
    const uint8_t *sid = (const uint8_t *)session_id;
    size_t sid_len = strlen(session_id);
    uint8_t *buf = malloc(3 * 11 + sid_len + frame_len);
    size_t n = 0;

    if (!buf)
        return -1;
    buf[n++] = 0x08; /* field 1, varint */
    n += put_varint(buf + n, runner_seq);
    buf[n++] = 0x12; /* field 2, length-delimited */
    n += put_varint(buf + n, sid_len);
    memcpy(buf + n, sid, sid_len);
    n += sid_len;
    buf[n++] = 0x1a; /* field 3, length-delimited */
    n += put_varint(buf + n, frame_len);
    if (frame_len)
        memcpy(buf + n, frame, frame_len);
    n += frame_len;
    *out = buf;
    *out_len = n;
    return 0;
}
