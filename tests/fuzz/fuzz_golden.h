/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz helper: the golden trust of tests/data/manifest/ (root + keys signed with the
 * published test keys), so a corpus can carry real signatures past the crypto checks. */
#ifndef MF_FUZZ_GOLDEN_H
#define MF_FUZZ_GOLDEN_H

#include "mf/trust.h"

/* The nonce and device the golden assignments answer. */
#define MF_FUZZ_GOLDEN_NONCE "00112233445566778899aabbccddeeff"
#define MF_FUZZ_GOLDEN_DEVICE "cam-0001"

/* A fresh trust with the golden root (and keys unless root_only); NULL without the files.
 * Release with mf_trust_free(). */
mf_trust *mf_fuzz__golden_trust(int root_only);

#endif /* MF_FUZZ_GOLDEN_H */
