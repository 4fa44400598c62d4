/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: the device request body parsers (enroll, check-in, report) behind the
 * server's JSON routes. The first byte picks the parser, the rest is the body, parsed
 * with the strict reader the router uses.
 */
#include "common/req_parse.h"
#include "common/names.h"
#include "mf_json.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mf_checkin_req checkin;
    struct mf_enroll_req enroll;
    struct mf_report_req report;
    struct mf_ctx ctx;
    cJSON *root;

    if (size < 1)
        return 0;
    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (mf_json__parse_object(&root, &ctx, data + 1, size - 1, size - 1, MF_JSON_DEPTH_DEFAULT,
                              "request body") < 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        if (mf_reqparse__enroll(&enroll, &ctx, root) == 0 && !mf_names__valid_id(enroll.device_id))
            abort();
        break;
    case 1:
        if (mf_reqparse__checkin(&checkin, &ctx, root) == 0) {
            for (size_t i = 0; i < checkin.n_models; i++) {
                const struct mf_checkin_model *m = &checkin.models[i];

                if (!mf_names__valid_id(m->name) || (m->pin && !mf_names__valid_id(m->pin)) ||
                    m->n_rolled_back > MF_CHECKIN_MAX_ROLLED_BACK)
                    abort();
                for (size_t k = 0; k < m->n_rolled_back; k++) {
                    if (!mf_names__valid_sha256(m->rolled_back[k]))
                        abort();
                }
            }
        }
        break;
    default:
        if (mf_reqparse__report(&report, &ctx, root) == 0 && !mf_names__valid_sha256(report.sha256))
            abort();
        break;
    }
    cJSON_Delete(root);
    return 0;
}
