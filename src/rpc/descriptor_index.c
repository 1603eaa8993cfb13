/* descriptor_index: see descriptor_index.h.
 *
 * The wire reader knows the four protobuf wire types that descriptor.proto
 * uses (varint, fixed64, length-delimited, fixed32) and treats groups, field
 * number 0, truncated values and lengths past the end as malformed.  It reads
 * only these fields, skipping the rest after checking their framing:
 *
 *   FileDescriptorSet        file=1
 *   FileDescriptorProto      name=1 package=2 dependency=3 message_type=4
 *                            enum_type=5 service=6
 *   DescriptorProto          name=1 field=2 nested_type=3 enum_type=4
 *   FieldDescriptorProto     name=1
 *   EnumDescriptorProto      name=1 value=2
 *   EnumValueDescriptorProto name=1
 *   ServiceDescriptorProto   name=1 method=2
 *   MethodDescriptorProto    name=1
 *
 * Enum values are scoped like protoc scopes them: as siblings of their enum. */
#include <stdlib.h>
#include <string.h>

#include "common/protowire.h"
#include "rpc/descriptor_index.h"

#define MAX_NESTING 32

#define WIRE_LEN PROTOWIRE_LEN

struct span {
    const uint8_t *data;
    size_t len;
};

struct wire {
    struct protowire_reader r;
};

struct entry {
    const char *name;
    size_t file;
    enum descriptor_kind kind;
};

struct table {
    struct entry *entries;
    size_t count;
    size_t cap;
};

struct file {
    char *name;
    struct span bytes;
    char **dep_names; /* until resolve_deps turns them into deps */
    size_t *deps;
    size_t dep_count;
};

struct descriptor_index {
    struct file *files;
    size_t file_count;
    struct table by_file_name; /* names borrowed from files */
    struct table symbols;      /* names owned */
};

/* --- Wire reader ---------------------------------------------------------- */

/* Reads the next field: its number, wire type and, for a length-delimited
 * field, its bytes in VALUE.  Returns 1 for a field, 0 at the end, -1 when
 * the framing is malformed (common/protowire.h). */
static int wire_next(struct wire *w, uint32_t *field, int *type, struct span *value)
{
    struct protowire_field f;
    int rv = protowire_next(&w->r, &f);

    if (rv != 1)
        return rv;
    *field = f.number;
    *type = (int)f.type;
    value->data = f.data;
    value->len = f.len;
    return 1;
}

static void wire_init(struct wire *w, struct span s)
{
    protowire_reader_init(&w->r, s.data, s.data ? s.len : 0);
}

/* Copies S as a NUL-terminated string.  Returns NULL when memory is short or
 * S holds a NUL. */
static char *span_strdup(struct span s)
{
    char *out;

    if (s.len && memchr(s.data, '\0', s.len))
        return NULL;
    out = malloc(s.len + 1);
    if (!out)
        return NULL;
    if (s.len)
        memcpy(out, s.data, s.len);
    out[s.len] = '\0';
    return out;
}

/* Scans MSG for string field FIELD (the last one wins, as in protobuf) and
 * checks MSG's framing on the way.  Sets *OUT to the string and *FOUND to
 * whether there was one.  Returns 0, or -1 when malformed (also a wrong wire
 * type or an embedded NUL). */
static int read_string(struct span msg, uint32_t field, struct span *out, int *found)
{
    struct wire w;
    struct span value;
    uint32_t number;
    int type, rv;

    *found = 0;
    wire_init(&w, msg);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number != field)
            continue;
        if (type != WIRE_LEN || (value.len && memchr(value.data, '\0', value.len)))
            return -1;
        *out = value;
        *found = 1;
    }
    return rv;
}

/* --- Tables ---------------------------------------------------------------- */

/* Returns 0, or -1 when memory is short. */
static int table_add(struct table *t, const char *name, size_t file, enum descriptor_kind kind)
{
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct entry *entries;
        if (cap > SIZE_MAX / sizeof(*entries))
            return -1;
        entries = realloc(t->entries, cap * sizeof(*entries));
        if (!entries)
            return -1;
        t->entries = entries;
        t->cap = cap;
    }
    t->entries[t->count].name = name;
    t->entries[t->count].file = file;
    t->entries[t->count].kind = kind;
    t->count++;
    return 0;
}

static int entry_compare(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Sorts T by name.  Returns 0, or -1 when a name appears twice. */
static int table_sort(struct table *t)
{
    if (t->count > 1)
        qsort(t->entries, t->count, sizeof(*t->entries), entry_compare);
    for (size_t i = 1; i < t->count; i++)
        if (strcmp(t->entries[i - 1].name, t->entries[i].name) == 0)
            return -1;
    return 0;
}

static const struct entry *table_find(const struct table *t, const char *name)
{
    struct entry key = {name, 0, DESCRIPTOR_MESSAGE};

    if (t->count == 0)
        return NULL;
    return bsearch(&key, t->entries, t->count, sizeof(*t->entries), entry_compare);
}

/* --- Walking descriptors --------------------------------------------------- */

/* Adds SCOPE.NAME (or NAME when SCOPE is empty) as a symbol of FILE.  Returns
 * 0, or -1 when memory is short. */
static int add_symbol(struct descriptor_index *index, size_t file, const char *scope,
                      struct span name, enum descriptor_kind kind)
{
    size_t scope_len = strlen(scope);
    size_t dot = scope_len ? 1 : 0;
    char *full = malloc(scope_len + dot + name.len + 1);

    if (!full)
        return -1;
    if (scope_len) {
        memcpy(full, scope, scope_len);
        full[scope_len] = '.';
    }
    if (name.len)
        memcpy(full + scope_len + dot, name.data, name.len);
    full[scope_len + dot + name.len] = '\0';
    if (table_add(&index->symbols, full, file, kind) != 0) {
        free(full);
        return -1;
    }
    return 0; /* NOLINT(clang-analyzer-unix.Malloc): the table owns FULL now */
}

/* Adds the symbol named by MSG's field 1 (required, non-empty).  Returns 0,
 * or -1 when malformed or memory is short. */
static int add_named(struct descriptor_index *index, size_t file, const char *scope,
                     struct span msg, enum descriptor_kind kind)
{
    struct span name;
    int found;

    if (read_string(msg, 1, &name, &found) != 0 || !found || name.len == 0)
        return -1;
    return add_symbol(index, file, scope, name, kind);
}

/* Indexes an EnumDescriptorProto in SCOPE: the enum and its values, which
 * protoc scopes beside the enum.  Returns 0 or -1 (malformed, memory). */
static int index_enum(struct descriptor_index *index, size_t file, const char *scope,
                      struct span msg)
{
    struct wire w;
    struct span value;
    uint32_t number;
    int type, rv;

    if (add_named(index, file, scope, msg, DESCRIPTOR_ENUM) != 0)
        return -1;
    wire_init(&w, msg);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number != 2)
            continue;
        if (type != WIRE_LEN || add_named(index, file, scope, value, DESCRIPTOR_ENUM_VALUE) != 0)
            return -1;
    }
    return rv;
}

/* Indexes a DescriptorProto in SCOPE with its fields, nested messages and
 * enums, DEPTH levels down.  Returns 0 or -1 (malformed, too deep, memory). */
static int index_message(struct descriptor_index *index, size_t file, const char *scope,
                         struct span msg, int depth)
{
    struct wire w;
    struct span value;
    uint32_t number;
    int type, rv;
    const char *full;

    if (depth > MAX_NESTING || add_named(index, file, scope, msg, DESCRIPTOR_MESSAGE) != 0)
        return -1;
    full = index->symbols.entries[index->symbols.count - 1].name;
    wire_init(&w, msg);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number < 2 || number > 4)
            continue;
        if (type != WIRE_LEN)
            return -1;
        /* Recursion may move the table; FULL points into a string it owns,
         * which stays put. */
        if (number == 2)
            rv = add_named(index, file, full, value, DESCRIPTOR_FIELD);
        else if (number == 3)
            rv = index_message(index, file, full, value, depth + 1);
        else
            rv = index_enum(index, file, full, value);
        if (rv != 0)
            return -1;
    }
    return rv;
}

/* Indexes a ServiceDescriptorProto and its methods.  Returns 0 or -1. */
static int index_service(struct descriptor_index *index, size_t file, const char *scope,
                         struct span msg)
{
    struct wire w;
    struct span value;
    uint32_t number;
    int type, rv;
    const char *full;

    if (add_named(index, file, scope, msg, DESCRIPTOR_SERVICE) != 0)
        return -1;
    full = index->symbols.entries[index->symbols.count - 1].name;
    wire_init(&w, msg);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number != 2)
            continue;
        if (type != WIRE_LEN || add_named(index, file, full, value, DESCRIPTOR_METHOD) != 0)
            return -1;
    }
    return rv;
}

/* Indexes the FileDescriptorProto FILE: its name, dependency names and
 * top-level symbols.  Returns 0 or -1 (malformed, memory). */
static int index_file(struct descriptor_index *index, size_t file)
{
    struct file *f = &index->files[file];
    struct wire w;
    struct span value, package = {NULL, 0};
    uint32_t number;
    int type, rv, found;
    char *scope = NULL;

    if (read_string(f->bytes, 1, &value, &found) != 0 || !found || value.len == 0 ||
        !(f->name = span_strdup(value)))
        return -1;
    if (read_string(f->bytes, 2, &package, &found) != 0)
        return -1;
    if (!(scope = span_strdup(package)))
        return -1;

    wire_init(&w, f->bytes);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number < 3 || number > 6)
            continue;
        if (type != WIRE_LEN)
            goto fail;
        switch (number) {
        case 3: {
            char **names = realloc(f->dep_names, (f->dep_count + 1) * sizeof(*names));
            if (!names)
                goto fail;
            f->dep_names = names;
            if (!(names[f->dep_count] = span_strdup(value)))
                goto fail;
            f->dep_count++;
            rv = 0;
            break;
        }
        case 4:
            rv = index_message(index, file, scope, value, 1);
            break;
        case 5:
            rv = index_enum(index, file, scope, value);
            break;
        default:
            rv = index_service(index, file, scope, value);
            break;
        }
        if (rv != 0)
            goto fail;
    }
    free(scope);
    return rv;

fail:
    free(scope);
    return -1;
}

/* Turns each file's dependency names into file numbers.  Returns 0, or -1
 * when a dependency is not in the set or memory is short. */
static int resolve_deps(struct descriptor_index *index)
{
    for (size_t i = 0; i < index->file_count; i++) {
        struct file *f = &index->files[i];
        if (f->dep_count == 0)
            continue;
        f->deps = calloc(f->dep_count, sizeof(*f->deps));
        if (!f->deps)
            return -1;
        for (size_t d = 0; d < f->dep_count; d++) {
            const struct entry *e = table_find(&index->by_file_name, f->dep_names[d]);
            if (!e)
                return -1;
            f->deps[d] = e->file;
        }
    }
    return 0;
}

/* Collects the FileDescriptorSet's files (field 1) into INDEX->files.
 * Returns 0, or -1 when malformed or memory is short. */
static int collect_files(struct descriptor_index *index, struct span set)
{
    struct wire w;
    struct span value;
    uint32_t number;
    int type, rv;
    size_t cap = 0;

    wire_init(&w, set);
    while ((rv = wire_next(&w, &number, &type, &value)) == 1) {
        if (number != 1)
            continue;
        if (type != WIRE_LEN)
            return -1;
        if (index->file_count == cap) {
            size_t new_cap = cap ? cap * 2 : 16;
            struct file *files = realloc(index->files, new_cap * sizeof(*files));
            if (!files)
                return -1;
            index->files = files;
            cap = new_cap;
        }
        memset(&index->files[index->file_count], 0, sizeof(struct file));
        index->files[index->file_count].bytes = value;
        index->file_count++;
    }
    return rv;
}

static void free_dep_names(struct file *f)
{
    for (size_t d = 0; f->dep_names && d < f->dep_count; d++)
        free(f->dep_names[d]);
    free(f->dep_names);
    f->dep_names = NULL;
}

struct descriptor_index *descriptor_index_new(const uint8_t *data, size_t len)
{
    struct descriptor_index *index = calloc(1, sizeof(*index));
    struct span set = {data, len};

    if (!index)
        return NULL;
    if ((len && !data) || collect_files(index, set) != 0)
        goto fail;
    for (size_t i = 0; i < index->file_count; i++) {
        if (index_file(index, i) != 0 ||
            table_add(&index->by_file_name, index->files[i].name, i, DESCRIPTOR_MESSAGE) != 0)
            goto fail;
    }
    if (table_sort(&index->by_file_name) != 0 || table_sort(&index->symbols) != 0 ||
        resolve_deps(index) != 0)
        goto fail;
    for (size_t i = 0; i < index->file_count; i++)
        free_dep_names(&index->files[i]);
    return index;

fail:
    descriptor_index_free(index);
    return NULL;
}

void descriptor_index_free(struct descriptor_index *index)
{
    if (!index)
        return;
    for (size_t i = 0; i < index->symbols.count; i++)
        free((char *)index->symbols.entries[i].name);
    free(index->symbols.entries);
    free(index->by_file_name.entries);
    for (size_t i = 0; i < index->file_count; i++) {
        free_dep_names(&index->files[i]);
        free(index->files[i].name);
        free(index->files[i].deps);
    }
    free(index->files);
    free(index);
}

size_t descriptor_index_file_count(const struct descriptor_index *index)
{
    return index->file_count;
}

long descriptor_index_find_file(const struct descriptor_index *index, const char *name)
{
    const struct entry *e = table_find(&index->by_file_name, name);
    return e ? (long)e->file : -1;
}

long descriptor_index_find_symbol(const struct descriptor_index *index, const char *symbol,
                                  enum descriptor_kind *kind)
{
    const struct entry *e;

    if (symbol[0] == '.')
        symbol++;
    e = table_find(&index->symbols, symbol);
    if (!e)
        return -1;
    if (kind)
        *kind = e->kind;
    return (long)e->file;
}

const char *descriptor_index_file_name(const struct descriptor_index *index, size_t file)
{
    return index->files[file].name;
}

const uint8_t *descriptor_index_file_bytes(const struct descriptor_index *index, size_t file,
                                           size_t *len)
{
    *len = index->files[file].bytes.len;
    return index->files[file].bytes.data;
}

size_t descriptor_index_closure(const struct descriptor_index *index, size_t file, size_t *out)
{
    size_t count = 1;

    out[0] = file;
    /* Breadth first over OUT itself; the sets are small, so the linear
     * membership test costs less than a visited array would. */
    for (size_t i = 0; i < count; i++) {
        const struct file *f = &index->files[out[i]];
        for (size_t d = 0; d < f->dep_count; d++) {
            size_t j = 0;
            while (j < count && out[j] != f->deps[d])
                j++;
            if (j == count)
                out[count++] = f->deps[d];
        }
    }
    return count;
}
