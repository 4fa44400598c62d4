/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the teachers' JSON answers, for the connectors that parse JSON (teacher_command.c,
 * teacher_kserve.c). Apart from the registry (teacher.c), which calls the connectors: with
 * it there, the registry and its connectors called each other.
 */
#include "offload/teacher_int.h"

#include <stdio.h>
#include <string.h>

int mf_teacher__read_floats(float *out, struct mf_ctx *ctx, const cJSON *arr, size_t n,
                            const char *what)
{
    const cJSON *it;
    size_t i = 0;

    if (!cJSON_IsArray(arr))
        return mf_fail(ctx, MF_E_INVALID, "teacher answer: %s is not an array", what);
    cJSON_ArrayForEach(it, arr)
    {
        if (i >= n || !cJSON_IsNumber(it))
            return mf_fail(ctx, MF_E_INVALID, "teacher answer: %s is not %zu numbers", what, n);
        out[i++] = (float)it->valuedouble;
    }
    if (i != n)
        return mf_fail(ctx, MF_E_INVALID, "teacher answer: %s has %zu numbers, not %zu", what, i,
                       n);
    return MF_OK;
}

void mf_teacher__read_version(char version_out[MF_STORE_NAME_SIZE], const cJSON *obj,
                              const char *key)
{
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsString(ver) && ver->valuestring[0] && strlen(ver->valuestring) < MF_STORE_NAME_SIZE)
        (void)snprintf(version_out, MF_STORE_NAME_SIZE, "%s", ver->valuestring);
}
