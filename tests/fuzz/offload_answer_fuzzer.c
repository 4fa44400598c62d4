/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: what the device parses from the offload routes (sdk/offload/offload_wire.c):
 * the teacher's answer to /v1/offload/ask and the batch ack, plus the queue record decoder
 * that reads bytes back from storage. The first input byte picks the parser.
 */
#include "mf_offload_int.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char rid[] = "00112233445566778899aabbccddeeff";
    struct mf_offload_record r;
    mf_offload_answer ans;
    struct mf_ctx ctx;
    float probs[10];
    int err;

    if (size < 1)
        return 0;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    memset(&ans, 0, sizeof(ans));
    switch (data[0] % 3) {
    case 0:
        err = mf_offload__wire_parse_answer(&ctx, &ans, probs, 10, rid, (const char *)data + 1,
                                            size - 1);
        if (err == MF_OK && (ans.label < 0 || ans.label >= 10 || ans.confidence < 0.0f ||
                             ans.confidence > 1.0f || !ans.teacher_version[0]))
            __builtin_trap();
        break;
    case 1:
        err = mf_offload__wire_parse_ack(&ctx, rid, (const char *)data + 1, size - 1);
        break;
    default:
        err = mf_offload__record_decode(&r, data + 1, size - 1);
        if (err == MF_OK && (r.input + r.input_len > data + size ||
                             r.output + 4 * (size_t)r.n_classes != data + size))
            __builtin_trap();
        return 0;
    }
    if (err < 0 && !ctx.errmsg[0])
        __builtin_trap();
    return 0;
}
