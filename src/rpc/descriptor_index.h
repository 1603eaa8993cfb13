/* descriptor_index: a read-only index over a serialized FileDescriptorSet
 * (protoc --include_imports --descriptor_set_out), for gRPC reflection.
 *
 * It maps fully-qualified symbols (messages, nested messages, enums, enum
 * values, fields, services, methods) to the file that defines them, and file
 * names to the file's serialized FileDescriptorProto, without a descriptor.proto
 * code generator: a small bounds-checked wire reader walks only the fields it
 * needs.  The index never copies the set: the bytes must outlive it. */
#ifndef AGENTHUB_DESCRIPTOR_INDEX_H
#define AGENTHUB_DESCRIPTOR_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct descriptor_index;

enum descriptor_kind {
    DESCRIPTOR_MESSAGE,
    DESCRIPTOR_FIELD,
    DESCRIPTOR_ENUM,
    DESCRIPTOR_ENUM_VALUE,
    DESCRIPTOR_SERVICE,
    DESCRIPTOR_METHOD,
};

/* Indexes the FileDescriptorSet in DATA[0..LEN).  Returns NULL when memory is
 * short or the set is malformed: bad wire framing, a file without a name, a
 * duplicate file or symbol, a dependency missing from the set, or nesting
 * deeper than the reader allows.  An empty set is valid (no files). */
struct descriptor_index *descriptor_index_new(const uint8_t *data, size_t len);
void descriptor_index_free(struct descriptor_index *index);

size_t descriptor_index_file_count(const struct descriptor_index *index);

/* The file (0 .. file_count-1) named NAME ("compass/v1/services.proto"), or
 * -1 when there is none. */
long descriptor_index_find_file(const struct descriptor_index *index, const char *name);

/* The file defining SYMBOL ("compass.v1.CompassService.WhoAmI"; one leading
 * dot is allowed), or -1 when there is none.  KIND, when not NULL, receives
 * the symbol's kind. */
long descriptor_index_find_symbol(const struct descriptor_index *index, const char *symbol,
                                  enum descriptor_kind *kind);

/* FILE's name and serialized FileDescriptorProto (pointing into the set). */
const char *descriptor_index_file_name(const struct descriptor_index *index, size_t file);
const uint8_t *descriptor_index_file_bytes(const struct descriptor_index *index, size_t file,
                                           size_t *len);

/* FILE then its transitive dependencies, each once, into OUT (room for
 * descriptor_index_file_count entries).  Returns how many were written. */
size_t descriptor_index_closure(const struct descriptor_index *index, size_t file, size_t *out);

#endif
