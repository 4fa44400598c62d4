/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A device for tests/integration/offload_export.sh: the real device library (mf_offload on
 * the POSIX port) against a running mf-server. It enrols, checks in for its policy, asks
 * N_SYNC samples (the teacher must answer each), queues N_ASYNC more (app limits: async),
 * drains them in batches, and writes one line per sample sent to SENT_FILE:
 * "<input sha256 hex> <logit 0> <logit 1> <logit 2>" (inputs from e2e_input()).
 * Usage: test_offload_e2e_client URL ENROLL_TOKEN_FILE STATE_DIR N_SYNC N_ASYNC SENT_FILE
 */
#include "offload_e2e_fixture.h"
#include "mf_hex.h"
#include "mf_sha256.h"
#include "mf/offload.h"
#include "mf/sys/platform_posix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *what, const char *detail)
{
    (void)fprintf(stderr, "test_offload_e2e_client: %s%s%s\n", what, detail ? ": " : "",
                  detail ? detail : "");
    return 1;
}

/* Asks with variant `v`; 0, or 1 when the route is not `want_route`. */
static int ask(mf_offload *o, FILE *sent, uint32_t v, mf_offload_route want_route)
{
    uint8_t in[E2E_INPUT_LEN], d[MF_SHA256_DIGEST_LEN];
    char hex[MF_SHA256_HEX_LEN + 1];
    float logits[E2E_CLASSES];
    mf_offload_sample s = {in, sizeof(in), logits, E2E_CLASSES, MF_OFFLOAD_LOGITS};
    mf_offload_answer a;

    e2e_input(in, v);
    e2e_logits(logits, v);
    if (mf_offload_ask(&a, NULL, o, &s) != MF_OK || a.route != want_route ||
        (want_route == MF_OFFLOAD_ROUTE_SYNC && !a.by_teacher))
        return die("unexpected answer, reason", mf_offload_reason_name(a.reason));
    mf_sha256__digest(d, in, sizeof(in));
    mf_hex__encode(hex, d, sizeof(d));
    (void)fprintf(sent, "%s %.9g %.9g %.9g\n", hex, (double)logits[0], (double)logits[1],
                  (double)logits[2]);
    return 0;
}

static int run(mf_offload_options *opts, const char *policy, FILE *sent, long n_sync, long n_async)
{
    mf_offload_policy limits;
    mf_offload *o = NULL;
    uint32_t v = 0;
    int rc = 0;

    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        if (mf_offload_policy_init(&limits, MF_OFFLOAD_POLICY_VERSION) != MF_OK)
            return die("policy init", NULL);
        limits.mode = MF_OFFLOAD_MODE_ASYNC;
        opts->app_limits = pass ? &limits : NULL;
        if (mf_offload_new(&o, opts) != MF_OK)
            return die("mf_offload_new failed", NULL);
        if (mf_offload_set_policy_json(o, policy, strlen(policy)) != MF_OK)
            rc = die("policy refused", mf_offload_errmsg(o));
        for (long i = 0; rc == 0 && i < (pass ? n_async : n_sync); i++)
            rc = ask(o, sent, v++, pass ? MF_OFFLOAD_ROUTE_QUEUE : MF_OFFLOAD_ROUTE_SYNC);
        if (rc == 0 && pass && mf_offload_drain(o, 1000) != MF_OK)
            rc = die("drain", mf_offload_errmsg(o));
        if (rc == 0 && mf_offload_queue_count(o) != 0)
            rc = die("queue not empty after drain", NULL);
        mf_offload_free(o);
    }
    return rc;
}

int main(int argc, char **argv)
{
    char token[256] = "", cred[256], policy[4096];
    mf_platform_posix posix;
    mf_platform_ops ops;
    mf_offload_options opts;
    FILE *f, *sent;
    int rc;

    if (argc != 7)
        return die("usage: URL ENROLL_TOKEN_FILE STATE_DIR N_SYNC N_ASYNC SENT_FILE", NULL);
    f = fopen(argv[2], "r");
    if (!f || !fgets(token, sizeof(token), f))
        return die("cannot read", argv[2]);
    (void)fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    if (e2e_enroll(cred, sizeof(cred), argv[1], token, "cam-int") != 0)
        return die("enrolment failed", argv[1]);
    if (e2e_checkin_policy(policy, sizeof(policy), argv[1], cred, "digits", "v3") != 0)
        return die("check-in brought no policy for digits", NULL);
    if (mf_platform_posix_init(&ops, &posix, argv[3]) != MF_OK)
        return die("cannot open state dir", argv[3]);
    if (mf_offload_options_init(&opts, MF_OFFLOAD_OPTIONS_VERSION) != MF_OK)
        return die("options init", NULL);
    opts.model = "digits";
    opts.model_version = "v3";
    opts.server_url = argv[1];
    opts.credential = cred;
    opts.platform = &ops;
    opts.batch_max_samples = 64;
    sent = fopen(argv[6], "w");
    if (!sent)
        return die("cannot create", argv[6]);
    rc = run(&opts, policy, sent, strtol(argv[4], NULL, 10), strtol(argv[5], NULL, 10));
    rc = (fclose(sent) != 0) ? 1 : rc;
    mf_platform_posix_close(&posix);
    return rc;
}
