/* libFuzzer target for the reflection descriptor index: a malformed
 * FileDescriptorSet fails cleanly, a parsed one answers lookups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/descriptor_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct descriptor_index *index = descriptor_index_new(data, size);

    if (!index)
        return 0;
    for (size_t i = 0; i < descriptor_index_file_count(index); i++)
        if (!descriptor_index_file_name(index, i))
            abort();
    descriptor_index_free(index);
    return 0;
}
