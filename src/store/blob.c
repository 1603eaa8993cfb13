#include "store/blob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/auth.h"

#define MAX_CONTENT_TYPE 255

/* OUT = the SHA-256 of DATA in lowercase hex.  Returns 0, or -1 when
 * OpenSSL fails. */
static int hex_digest(const void *data, size_t len, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t digest[STORE_HASH_LEN];

    if (auth_sha256(data, len, digest) != 0)
        return -1;
    for (int i = 0; i < STORE_HASH_LEN; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
    return 0;
}

/* 1 when REF is "sha256:" and 64 lowercase hex digits. */
static int ref_valid(const char *ref)
{
    if (strncmp(ref, "sha256:", 7) != 0 || strlen(ref) != 71)
        return 0;
    for (int i = 7; i < 71; i++)
        if (!((ref[i] >= '0' && ref[i] <= '9') || (ref[i] >= 'a' && ref[i] <= 'f')))
            return 0;
    return 1;
}

static int write_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

enum blob_rc blob_put(const char *dir, const char *session_id, const char *content_type,
                      const uint8_t *data, size_t len, size_t max_len, char ref[BLOB_REF_SIZE])
{
    char session_hash[65], content_hash[65];
    char session_dir[4096], path[4200], temp[4300];
    static unsigned counter;
    size_t type_len = strlen(content_type);
    uint8_t header[4];
    struct stat st;
    int fd, dir_fd;

    if (len > max_len)
        return BLOB_TOO_LARGE;
    if (type_len > MAX_CONTENT_TYPE)
        type_len = MAX_CONTENT_TYPE;
    if (hex_digest(session_id, strlen(session_id), session_hash) != 0 ||
        hex_digest(data, len, content_hash) != 0)
        return BLOB_FAULT;
    snprintf(ref, BLOB_REF_SIZE, "sha256:%s", content_hash);
    snprintf(session_dir, sizeof(session_dir), "%s/%s", dir, session_hash);
    snprintf(path, sizeof(path), "%s/%s", session_dir, content_hash);
    if (stat(path, &st) == 0)
        return BLOB_OK; /* content-addressed: already stored */
    if (mkdir(session_dir, 0700) != 0 && errno != EEXIST)
        return BLOB_FAULT;
    snprintf(temp, sizeof(temp), "%s/.tmp.%ld.%u", session_dir, (long)getpid(), counter++);
    fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return BLOB_FAULT;
    header[0] = (uint8_t)(type_len >> 24);
    header[1] = (uint8_t)(type_len >> 16);
    header[2] = (uint8_t)(type_len >> 8);
    header[3] = (uint8_t)type_len;
    if (write_all(fd, header, 4) != 0 || write_all(fd, content_type, type_len) != 0 ||
        write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        close(fd);
        unlink(temp);
        return BLOB_FAULT;
    }
    close(fd);
    if (rename(temp, path) != 0) {
        unlink(temp);
        return BLOB_FAULT;
    }
    /* Make the rename itself durable. */
    dir_fd = open(session_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
        fsync(dir_fd);
        close(dir_fd);
    }
    return BLOB_OK;
}

enum blob_rc blob_get(const char *dir, const char *session_id, const char *ref, char **content_type,
                      uint8_t **data, size_t *len)
{
    char session_hash[65], path[4200];
    uint8_t header[4];
    struct stat st;
    size_t type_len, data_len;
    char *type = NULL;
    uint8_t *bytes = NULL;
    FILE *file;

    if (!ref_valid(ref))
        return BLOB_NOT_FOUND;
    if (hex_digest(session_id, strlen(session_id), session_hash) != 0)
        return BLOB_FAULT;
    snprintf(path, sizeof(path), "%s/%s/%s", dir, session_hash, ref + 7);
    file = fopen(path, "rb");
    if (!file)
        return errno == ENOENT ? BLOB_NOT_FOUND : BLOB_FAULT;
    if (fstat(fileno(file), &st) != 0 || st.st_size < 4 || fread(header, 1, 4, file) != 4)
        goto fault;
    type_len =
        (size_t)header[0] << 24 | (size_t)header[1] << 16 | (size_t)header[2] << 8 | header[3];
    if (type_len > MAX_CONTENT_TYPE || (size_t)st.st_size < 4 + type_len)
        goto fault;
    data_len = (size_t)st.st_size - 4 - type_len;
    type = malloc(type_len + 1);
    bytes = malloc(data_len ? data_len : 1);
    if (!type || !bytes || fread(type, 1, type_len, file) != type_len ||
        fread(bytes, 1, data_len, file) != data_len)
        goto fault;
    type[type_len] = '\0';
    fclose(file);
    *content_type = type;
    *data = bytes;
    *len = data_len;
    return BLOB_OK;
fault:
    free(type);
    free(bytes);
    fclose(file);
    return BLOB_FAULT;
}

int blob_dir_check(const char *dir, char *err, size_t err_size)
{
    char probe[4200];
    struct stat st;
    int fd;

    if (stat(dir, &st) != 0) {
        snprintf(err, err_size, "%s", strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "not a directory");
        return -1;
    }
    if ((size_t)snprintf(probe, sizeof(probe), "%s/.agenthubd-probe-XXXXXX", dir) >=
        sizeof(probe)) {
        snprintf(err, err_size, "path too long");
        return -1;
    }
    fd = mkstemp(probe);
    if (fd < 0) {
        snprintf(err, err_size, "not writable: %s", strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}
