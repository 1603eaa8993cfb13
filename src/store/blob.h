/* blob: content-addressed session blobs under --blob-dir.
 *
 * A blob lives at DIR/<sha256(session_id)>/<sha256(content)>, so a ref from
 * one session names nothing in another.  Files are written to a temporary
 * name, fsynced and renamed: a reader never sees half a blob. */
#ifndef AGENTHUB_BLOB_H
#define AGENTHUB_BLOB_H

#include <stddef.h>
#include <stdint.h>

enum blob_rc {
    BLOB_OK = 0,
    BLOB_NOT_FOUND = 1, /* no such blob in this session (or a malformed ref) */
    BLOB_TOO_LARGE = 2,
    BLOB_FAULT = 3, /* the file system failed */
};

/* "sha256:" + 64 hex digits + NUL */
#define BLOB_REF_SIZE 72

/* Stores DATA for SESSION_ID.  REF receives "sha256:<hex>".  Storing the
 * same bytes twice is one file. */
enum blob_rc blob_put(const char *dir, const char *session_id, const char *content_type,
                      const uint8_t *data, size_t len, size_t max_len, char ref[BLOB_REF_SIZE]);

/* Reads REF of SESSION_ID.  On BLOB_OK, *CONTENT_TYPE and *DATA are heap
 * copies the caller frees. */
enum blob_rc blob_get(const char *dir, const char *session_id, const char *ref, char **content_type,
                      uint8_t **data, size_t *len);

/* Checks that DIR is a directory a blob can be written into (by creating
 * and removing a probe file there), so a bad --blob-dir is found at start,
 * not at the first upload.  Returns 0, or -1 with the reason in ERR. */
int blob_dir_check(const char *dir, char *err, size_t err_size);

#endif
