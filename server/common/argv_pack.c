/* SPDX-License-Identifier: Apache-2.0 */
/* Command lines from configuration (see argv_pack.h): the teacher's and the trainer's. */
#include "common/argv_pack.h"

#include <string.h>

int mf_argv__pack(const char **argv, char *store, size_t store_size, const cJSON *arr)
{
    const cJSON *it;
    size_t n = 0, used = 0;

    cJSON_ArrayForEach(it, arr)
    {
        size_t len = cJSON_IsString(it) ? strlen(it->valuestring) : 0;

        /* An empty argument is refused: it is a typo in a config, never a wanted "". */
        if (!len || used + len + 1 > store_size)
            return -1;
        memcpy(store + used, it->valuestring, len + 1);
        argv[n++] = store + used;
        used += len + 1;
    }
    argv[n] = NULL;
    return 0;
}
