/* libFuzzer target for the Runner's agent-stdout reader
 * (src/runner/agent_frames.c), in both formats; the first byte picks one.
 * json: each line (as host.c splits them) parses or is refused with a
 * reason; a frame it yields is a valid compass.v1 AgentFrame and wraps into
 * a valid PublishEventsRequest.  pb: the varint-delimited splitter never
 * reads past its input and each frame is classified cleanly. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compass/v1/frames.pb-c.h"
#include "compass/v1/services.pb-c.h"
#include "runner/agent_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(struct agent_line *line)
{
    Compass__V1__AgentFrame *frame;
    Compass__V1__PublishEventsRequest *request;
    uint8_t *packed;
    size_t len;

    if (line->kind == AGENT_LINE_FRAME) {
        frame = compass__v1__agent_frame__unpack(NULL, line->frame_len, line->frame);
        if (!frame)
            abort();
        compass__v1__agent_frame__free_unpacked(frame, NULL);
        if (agent_frames_publish_request(7, "sess-1", line->frame, line->frame_len, &packed,
                                         &len) != 0)
            abort();
        request = compass__v1__publish_events_request__unpack(NULL, len, packed);
        if (!request || request->runner_seq != 7)
            abort();
        compass__v1__publish_events_request__free_unpacked(request, NULL);
        free(packed);
    } else if (line->kind == AGENT_LINE_TRANSCRIPT || line->kind == AGENT_LINE_RESUME) {
        if (!line->entry)
            abort();
    } else {
        abort();
    }
}

static void json_lines(const uint8_t *data, size_t size)
{
    const uint8_t *end = data + size;

    while (data < end) {
        const uint8_t *nl = memchr(data, '\n', (size_t)(end - data));
        size_t raw = nl ? (size_t)(nl - data) : (size_t)(end - data), n = raw;
        char *text = malloc(n + 1), err[256];
        struct agent_line line;
        if (!text)
            abort();
        memcpy(text, data, n);
        text[n] = '\0';
        if (n > 0 && text[n - 1] == '\r')
            text[--n] = '\0';
        err[0] = '\0';
        if (n > 0) {
            if (agent_line_parse_json(text, n, 1700000000000, &line, err, sizeof(err)) == 0) {
                check_line(&line);
                agent_line_clear(&line);
            } else if (err[0] == '\0') {
                abort();
            }
        }
        free(text);
        data += raw + (nl ? 1 : 0);
    }
}

static void pb_frames(const uint8_t *data, size_t size)
{
    while (size > 0) {
        const uint8_t *frame;
        size_t frame_len, consumed;
        struct agent_line line;
        char err[256] = "";
        int rv = agent_frames_pb_next(data, size, &consumed, &frame, &frame_len);
        if (rv <= 0)
            return;
        if (consumed == 0 || consumed > size || frame < data ||
            frame + frame_len > data + consumed || frame_len > AGENT_FRAMES_MAX)
            abort();
        if (agent_line_from_pb(frame, frame_len, &line, err, sizeof(err)) == 0) {
            check_line(&line);
            agent_line_clear(&line);
        } else if (err[0] == '\0') {
            abort();
        }
        data += consumed;
        size -= consumed;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        pb_frames(data + 1, size - 1);
    else
        json_lines(data + 1, size - 1);
    return 0;
}
