/* uploader: blob upload and resume rules for transcript entries. */
#include "runner/uploader.h"

#include "common/base64.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

char *uploader_base64_encode(const uint8_t *data, size_t len)
{
    size_t size = base64_encoded_length(len) + 1;
    char *out = malloc(size);

    if (out)
        base64_encode(data, len, out, size);
    return out;
}

int uploader_base64_decode(const char *text, size_t len, uint8_t **out, size_t *out_len)
{
    /* Images come padded, in the standard alphabet (the Messages API's). */
    uint8_t *buf = malloc(base64_decoded_max_length(len));

    if (!buf)
        return -1;
    if (base64_decode(text, len, BASE64_STRICT, buf, out_len) != BASE64_OK) {
        free(buf);
        return -1;
    }
    *out = buf;
    return 0;
}

void uploader_init(struct uploader *u, const struct uploader_ops *ops, void *ctx)
{
    memset(u, 0, sizeof(*u));
    u->ops = *ops;
    u->ctx = ctx;
}

/* The source object of an image node with a source of type WANT, or NULL. */
static json_t *image_source(json_t *node, const char *want)
{
    json_t *type = json_object_get(node, "type");
    json_t *source = json_object_get(node, "source");
    json_t *stype = json_object_get(source, "type");

    if (!json_is_string(type) || strcmp(json_string_value(type), "image") != 0 ||
        !json_is_object(source) || !json_is_string(stype) ||
        strcmp(json_string_value(stype), want) != 0)
        return NULL;
    return source;
}

struct walk {
    struct uploader *u;
    const char *session_id;
    int rewritten;
    int stop; /* the rest of this entry stays as it is */
};

/* Uploads one base64 SOURCE and rewrites it. */
static void upload_one(struct walk *w, json_t *source)
{
    json_t *media = json_object_get(source, "media_type");
    json_t *data = json_object_get(source, "data");
    const char *content_type = json_is_string(media) ? json_string_value(media) : "";
    char ref[UPLOADER_REF_MAX];
    uint8_t *bytes;
    size_t len;
    int status;

    if (!json_is_string(data) ||
        uploader_base64_decode(json_string_value(data), json_string_length(data), &bytes, &len) !=
            0)
        return; /* not ours to judge: relayed as the agent wrote it */
    ref[0] = '\0';
    status = w->u->ops.upload(w->u->ctx, w->session_id, content_type, bytes, len, ref, sizeof(ref));
    free(bytes);
    w->u->last_status = status;
    if (status == GRPC_STATUS_OK && ref[0]) {
        json_t *media_copy = json_string(content_type);
        json_object_clear(source);
        json_object_set_new(source, "type", json_string("blob"));
        json_object_set_new(source, "blob_ref", json_string(ref));
        json_object_set_new(source, "media_type", media_copy);
        w->u->uploaded++;
        w->rewritten++;
        return;
    }
    if (status == GRPC_STATUS_UNIMPLEMENTED)
        w->u->disabled = 1; /* no blob storage on this server: for good */
    else
        w->u->failed++; /* retryable: a later transcript line tries again */
    w->stop = 1;
}

/* Fetches one blob SOURCE and inlines it; keeps it on any failure. */
static void resume_one(struct walk *w, json_t *source)
{
    json_t *ref = json_object_get(source, "blob_ref");
    char *content_type = NULL;
    uint8_t *data = NULL;
    size_t len = 0;
    char *text;
    int status;

    if (!json_is_string(ref))
        return;
    status = w->u->ops.fetch(w->u->ctx, w->session_id, json_string_value(ref), &content_type, &data,
                             &len);
    w->u->last_status = status;
    text = status == GRPC_STATUS_OK ? uploader_base64_encode(data, len) : NULL;
    if (text) {
        json_t *media = json_object_get(source, "media_type");
        json_t *media_copy = json_string(
            content_type && content_type[0]
                ? content_type
                : (json_is_string(media) ? json_string_value(media) : "application/octet-stream"));
        json_object_clear(source);
        json_object_set_new(source, "type", json_string("base64"));
        json_object_set_new(source, "media_type", media_copy);
        json_object_set_new(source, "data", json_string(text));
        w->u->resolved++;
        w->rewritten++;
    } else {
        /* FAILED_PRECONDITION (binding), NOT_FOUND, UNAVAILABLE, ...: the
         * reference stays exactly as the transcript had it. */
        w->u->kept++;
    }
    free(text);
    free(content_type);
    free(data);
}

static void walk(struct walk *w, json_t *node, int resume)
{
    json_t *source, *child;
    const char *key;
    size_t i;

    if (w->stop)
        return;
    if (json_is_object(node)) {
        source = image_source(node, resume ? "blob" : "base64");
        if (source) {
            if (resume)
                resume_one(w, source);
            else
                upload_one(w, source);
            return;
        }
        json_object_foreach(node, key, child)
        {
            walk(w, child, resume);
        }
    } else if (json_is_array(node)) {
        json_array_foreach(node, i, child)
        {
            walk(w, child, resume);
        }
    }
}

int uploader_rewrite_entry(struct uploader *u, const char *session_id, json_t *entry)
{
    struct walk w = {u, session_id, 0, 0};

    if (u->disabled || !u->ops.upload)
        return 0;
    walk(&w, entry, 0);
    return w.rewritten;
}

int uploader_resume_entry(struct uploader *u, const char *session_id, json_t *entry)
{
    struct walk w = {u, session_id, 0, 0};

    if (!u->ops.fetch)
        return 0;
    walk(&w, entry, 1);
    return w.rewritten;
}
