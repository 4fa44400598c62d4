/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz target: envelope and document parsing and verification for every document type.
 * The first input byte picks the entry point, the rest is its input:
 *   0 envelope      1 root payload   2 keys payload   3 release payload
 *   4 assignment payload             5 bootstrap a root envelope
 *   6 load a saved trust state       7 verify a release envelope
 *   8 verify "assignment-envelope \n release-envelope"      9 update keys
 * Modes 7-9 run against the golden trust of tests/data/manifest/ (root + keys, fuzz_golden.c),
 * so the corpus can carry real signatures past the crypto checks, batch signatures
 * (verify_assignment_batch*) included.
 */
#include "manifest_common.h"
#include "fuzz_golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_only(int mode, const uint8_t *p, size_t n)
{
    struct mf_ctx ctx;
    struct mf_menvelope *env = NULL;
    struct mf_mkeyset *ks = malloc(sizeof(*ks));
    mf_manifest_release *r = NULL;
    mf_manifest_assignment *a = NULL;

    mf_ctx__init(&ctx, NULL, NULL, NULL, "fuzz");
    if (!ks)
        return;
    switch (mode) {
    case 0:
        (void)mf_manifest__envelope_parse(&env, &ctx, p, n, 1 << 20);
        mf_manifest__envelope_free(&ctx, env);
        break;
    case 1:
        (void)mf_manifest__parse_root(ks, &ctx, p, n);
        break;
    case 2:
        (void)mf_manifest__parse_keys(ks, &ctx, p, n);
        break;
    case 3:
        (void)mf_manifest__parse_release(&r, &ctx, p, n, 4096);
        mf_manifest_release_free(r);
        break;
    default:
        (void)mf_manifest__parse_assignment(&a, &ctx, p, n);
        mf_manifest_assignment_free(a);
        break;
    }
    free(ks);
}

/* Invariants on every answer: a failure names a reason and a message; success yields an
 * object exactly when one was asked for. */
static void check(const mf_trust *t, int rc, const void *out, int wants_out)
{
    if (rc < 0 && (mf_trust_last_reason(t) == MF_TRUST_R_NONE || !mf_trust_errmsg(t)[0]))
        abort();
    if (rc >= 0 && mf_trust_last_reason(t) != MF_TRUST_R_NONE)
        abort();
    if (wants_out && (rc >= 0) != (out != NULL))
        abort();
}

static void verify(int mode, const uint8_t *p, size_t n)
{
    mf_trust *t = mf_fuzz__golden_trust(mode == 9);
    mf_manifest_release *r = NULL;
    mf_manifest_assignment *a = NULL;
    const uint8_t *nl;
    int rc;

    if (!t)
        return;
    if (mode == 7) {
        rc = mf_trust_verify_release(&r, t, p, n, 0);
        check(t, rc, r, 1);
        mf_manifest_release_free(r);
    } else if (mode == 8) {
        nl = memchr(p, '\n', n);
        if (nl) {
            rc = mf_trust_verify_assignment(&a, t, MF_FUZZ_GOLDEN_DEVICE, MF_FUZZ_GOLDEN_NONCE, p,
                                            (size_t)(nl - p), nl + 1, n - (size_t)(nl - p) - 1, 0);
            check(t, rc, a, 1);
        }
        mf_manifest_assignment_free(a);
    } else {
        check(t, mf_trust_update_keys(t, p, n, 0), NULL, 0);
    }
    mf_trust_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mf_trust *t = NULL;
    int mode;

    if (size < 1)
        return 0;
    mode = data[0] % 10;
    data++;
    size--;
    if (mode <= 4) {
        parse_only(mode, data, size);
    } else if (mode <= 6) {
        if (mf_trust_new(&t, NULL, NULL) < 0)
            return 0;
        if (mode == 5)
            check(t, mf_trust_bootstrap(t, data, size, 0), NULL, 0);
        else
            check(t, mf_trust_load(t, data, size), NULL, 0);
        mf_trust_free(t);
    } else {
        verify(mode, data, size);
    }
    return 0;
}
