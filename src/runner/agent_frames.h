/* agent_frames: what an agent writes on stdout, turned into compass.v1
 * AgentFrames, and the frames the Runner makes itself.
 *
 * Two agent formats:
 *  - json (default): one JSON object per line; see AGENT_FRAMES_HELP.
 *  - pb: compass.v1 AgentFrame messages in protobuf's varint-delimited
 *    format (a varint length, then the message).
 *
 * Pure: no I/O, no event loop.  Packed frames are malloc'd byte strings. */
#ifndef AGENTHUB_RUNNER_AGENT_FRAMES_H
#define AGENTHUB_RUNNER_AGENT_FRAMES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Longest agent stdout line / pb frame the Runner accepts. */
#define AGENT_FRAMES_MAX (1024 * 1024)

#define AGENT_FRAMES_HELP                                                                          \
    "Agent protocol (--agent-format json, the default): the agent writes one JSON\n"               \
    "object per line on stdout; each line becomes one compass.v1 AgentFrame.\n"                    \
    "  {\"assistant_text\":{\"text\":\"hi\",\"message_id\":\"m1\"}}\n"                             \
    "  {\"thinking\":{\"text\":\"...\"}}\n"                                                        \
    "  {\"tool_call\":{\"tool_call_id\":\"t1\",\"title\":\"Read "                                  \
    "a.c\",\"status\":\"IN_PROGRESS\"}}\n"                                                         \
    "  "                                                                                           \
    "{\"tool_call_update\":{\"tool_call_id\":\"t1\",\"status\":\"COMPLETED\",\"output\":\"..\"}}"  \
    "\n"                                                                                           \
    "  {\"plan\":{\"entries\":[{\"content\":\"write tests\",\"status\":\"PENDING\"}]}}\n"          \
    "  {\"notice\":{\"text\":\"...\"}}\n"                                                          \
    "  {\"record\":{\"type\":\"ask\",\"data\":{\"tool_name\":\"Bash\"}}}  (AgentEventsJsonlV1)\n"  \
    "  {\"state\":\"WORKING\"}  (alone or next to one event; READY, WORKING, BLOCKED,\n"           \
    "     DONE, IDLE, ...; READY/IDLE/DONE mean idle for the batch window)\n"                      \
    "  {\"transcript_entry\":{\"entry\":{...},\"checkpoint\":false,\"entry_seq\":1}}\n"            \
    "     (or \"entry_json\":\"<JSON text>\"); base64 images inside, i.e.\n"                       \
    "     {\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\n"     \
    "     \"data\":\"...\"}}, are uploaded and become\n"                                           \
    "     {\"type\":\"blob\",\"blob_ref\":\"...\",\"media_type\":\"image/png\"}\n"                 \
    "  {\"resume_entry\":{\"id\":\"r1\",\"entry\":{...}}}  asks the Runner to fetch the\n"         \
    "     blobs an entry references; the answer comes back on stdin as the same\n"                 \
    "     shape, each image inlined, or left as its reference when the fetch fails.\n"             \
    "  Optional top-level \"event_id\" and \"at_unix_ms\" (default: now). Enum values\n"           \
    "  take the short (\"COMPLETED\") or the full compass.v1 name.\n"                              \
    "The Runner writes one line per fired batch window on the agent's stdin:\n"                    \
    "  {\"batch\":[\"first message\",\"second message\"]}\n"                                       \
    "Unparseable lines are logged and skipped.\n"

enum agent_line_kind {
    AGENT_LINE_FRAME = 1,      /* FRAME is a packed AgentFrame to relay */
    AGENT_LINE_TRANSCRIPT = 2, /* ENTRY goes through the uploader, then relays */
    AGENT_LINE_RESUME = 3      /* ENTRY's blob refs are resolved for the agent */
};

struct agent_line {
    enum agent_line_kind kind;
    int state;      /* the AgentSessionState the line carries, 0 when none */
    uint8_t *frame; /* FRAME */
    size_t frame_len;
    json_t *entry;  /* TRANSCRIPT, RESUME (a reference we own) */
    int checkpoint; /* TRANSCRIPT */
    uint64_t entry_seq;
    char id[128]; /* RESUME: the agent's request id */
};

/* Parses one JSON line (without its newline).  NOW_MS stamps events that
 * carry no at_unix_ms.  Returns 0, or -1 with a reason in ERR. */
int agent_line_parse_json(const char *text, size_t len, int64_t now_ms, struct agent_line *out,
                          char *err, size_t err_size);

/* Classifies one packed AgentFrame from a pb agent: a transcript entry whose
 * entry_json parses becomes TRANSCRIPT, anything else a FRAME (copied).
 * Returns 0, or -1 with a reason in ERR when it is not an AgentFrame. */
int agent_line_from_pb(const uint8_t *data, size_t len, struct agent_line *out, char *err,
                       size_t err_size);

void agent_line_clear(struct agent_line *line);

/* Splits a varint-delimited stream.  Returns 1 with *FRAME, *FRAME_LEN and
 * *CONSUMED set, 0 when more bytes are needed, -1 when the length prefix is
 * malformed or over AGENT_FRAMES_MAX. */
int agent_frames_pb_next(const uint8_t *data, size_t len, size_t *consumed, const uint8_t **frame,
                         size_t *frame_len);

/* The AgentSessionState for a word (e.g. "working", "WORKING" or
 * "AGENT_SESSION_STATE_WORKING"), or -1. */
int agent_frames_state_from_word(const char *word);

/* Frames the Runner itself emits.  Each returns 0 with a malloc'd *OUT, or -1
 * when memory runs out. */
int agent_frames_transcript(const char *entry_json, int checkpoint, uint64_t entry_seq,
                            uint8_t **out, size_t *out_len);
int agent_frames_batch_pending(uint32_t count, uint64_t fires_at_ms, int64_t now_ms, uint8_t **out,
                               size_t *out_len);
int agent_frames_state(int state, uint8_t **out, size_t *out_len);

/* Encodes PublishEventsRequest { runner_seq, session_id, frame }.  Returns 0
 * with a malloc'd *OUT, or -1. */
int agent_frames_publish_request(uint64_t runner_seq, const char *session_id, const uint8_t *frame,
                                 size_t frame_len, uint8_t **out, size_t *out_len);

#endif
