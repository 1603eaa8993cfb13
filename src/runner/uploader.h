/* uploader: the blob rules for transcript entries.  A blob storage failure
 * stays distinct from a binding failure: it never stops the relay.
 *
 *  - Upload: each base64 image in an entry, i.e. an object
 *      {"type":"image","source":{"type":"base64","media_type":M,"data":D}}
 *    anywhere in the entry, is uploaded with UploadSessionBlob; on OK its
 *    source becomes {"type":"blob","blob_ref":REF,"media_type":M}.
 *    UNIMPLEMENTED (the server has no blob storage) disables the uploader for
 *    good: later entries go out with their images inline.  Any other error
 *    leaves this entry's remaining images inline and keeps the uploader
 *    enabled, so a later transcript line tries again.
 *  - Resume: each blob source is fetched with FetchSessionBlob; on OK it is
 *    inlined back as base64.  On any error (FAILED_PRECONDITION above all:
 *    it does not mean the blob is gone) the original reference is kept
 *    unchanged, never dropped or rewritten.
 *
 * Pure: the blob calls come through struct uploader_ops, so the rules are
 * tested against a double.  Statuses are gRPC status codes. */
#ifndef AGENTHUB_RUNNER_UPLOADER_H
#define AGENTHUB_RUNNER_UPLOADER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define UPLOADER_REF_MAX 256

struct uploader_ops {
    /* Uploads DATA; on OK (0) writes the blob_ref into REF.  Returns a gRPC
     * status. */
    int (*upload)(void *ctx, const char *session_id, const char *content_type, const uint8_t *data,
                  size_t len, char *ref, size_t ref_size);
    /* Fetches REF; on OK (0) *CONTENT_TYPE and *DATA are malloc'd (the
     * uploader frees them).  Returns a gRPC status. */
    int (*fetch)(void *ctx, const char *session_id, const char *ref, char **content_type,
                 uint8_t **data, size_t *len);
};

struct uploader {
    struct uploader_ops ops;
    void *ctx;
    int disabled;      /* after UNIMPLEMENTED from an upload */
    uint64_t uploaded; /* images rewritten to a blob_ref */
    uint64_t failed;   /* uploads that failed and stay retryable */
    uint64_t resolved; /* references inlined on resume */
    uint64_t kept;     /* references kept because the fetch failed */
    int last_status;   /* of the last blob call */
};

void uploader_init(struct uploader *u, const struct uploader_ops *ops, void *ctx);

/* Uploads ENTRY's inline images and rewrites them in place.  Returns how
 * many were rewritten (0 when disabled or none); never fails the entry. */
int uploader_rewrite_entry(struct uploader *u, const char *session_id, json_t *entry);

/* Inlines ENTRY's blob references in place.  Returns how many were
 * inlined; references whose fetch failed stay as they were. */
int uploader_resume_entry(struct uploader *u, const char *session_id, json_t *entry);

/* Base64 (RFC 4648, with padding).  Encode returns a malloc'd string or
 * NULL; decode returns 0 with a malloc'd *OUT, or -1 on bad input. */
char *uploader_base64_encode(const uint8_t *data, size_t len);
int uploader_base64_decode(const char *text, size_t len, uint8_t **out, size_t *out_len);

#endif
