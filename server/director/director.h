/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director key: the one online signing key, held by mf-server in DATA_DIR/director.key
 * (PKCS#8 PEM, mode 0600), with its public half in DATA_DIR/director.pub.pem for ops to put
 * into the keys document's `director` role. It signs one assignment per device per
 * check-in; it can never sign a release (docs/formats/manifest.md, roles), which is why its
 * theft alone cannot install anything the data team did not release.
 */
#ifndef MF_SERVER_DIRECTOR_DIRECTOR_H
#define MF_SERVER_DIRECTOR_DIRECTOR_H

#include "mf_ctx.h"
#include "mf/sign.h"

#define MF_DIRECTOR_KEY_FILE "director.key"
#define MF_DIRECTOR_PUB_FILE "director.pub.pem"

struct mf_director;

/*
 * Makes sure DATA_DIR/director.key exists: imports `import_pem_path` (a P-256 private key
 * given by ops) or, when NULL, generates one. An existing key is never replaced (MF_E_STATE
 * when an import would replace it). Writes director.pub.pem next to it. *changed is set to
 * 1 when a key was written.
 */
int mf_director__init_key(int *changed, struct mf_ctx *ctx, const char *data_dir,
                          const char *import_pem_path);

/* Loads DATA_DIR/director.key. MF_E_NOTFOUND when missing (run init). Ownership: close it. */
int mf_director__open(struct mf_director **out, struct mf_ctx *ctx, const char *data_dir);
void mf_director__close(struct mf_director *d); /* NULL is a no-op; the key is wiped */

/* Lower-case hex key id (64 digits) of the director key. Borrowed from `d`. */
const char *mf_director__keyid(const struct mf_director *d);

/* Most assignments one signature covers (--sign-batch); the default is 32. The format
 * allows 256, but past 32-64 the cost per assignment stops falling (bench_sign_batch) and
 * the batcher keeps a batch on its leader's stack (director/batcher.h, MF_BATCHER_MAX). */
#define MF_DIRECTOR_BATCH_MAX 64
#define MF_DIRECTOR_BATCH_DEFAULT 32

/*
 * Signs an assignment; safe from several threads. Calls that arrive while a signature is
 * being made wait and are then signed together, as one batch signature (up to the batch
 * size, docs/formats/manifest.md "Batch signatures"); a lone call is signed at once, as a
 * plain signature. MF_OK or MF_E_GENERIC/MF_E_NOMEM with a message (every call of a failed
 * batch gets the failure). Ownership: `*env_out` (NUL-terminated JSON) is released with
 * mf_free(NULL, p).
 */
int mf_director__sign(uint8_t **env_out, size_t *len_out, struct mf_director *d, struct mf_ctx *ctx,
                      const mf_manifest_assignment_spec *spec);

/* Signs `n` assignments under the director key with as few signatures as the batch size
 * allows (one for up to --sign-batch of them), taking the signer once: for a caller that
 * already holds a group (the check-in stage, director/checkin_stage.h). envs_out/lens_out
 * have `n` entries. MF_OK, or the signer's error with the message in ctx; then every
 * envs_out[i] is NULL. Ownership: each envs_out[i], freed with mf_free(NULL, ...). */
int mf_director__sign_many(uint8_t **envs_out, size_t *lens_out, struct mf_director *d,
                           struct mf_ctx *ctx, const mf_manifest_assignment_spec *specs, size_t n);

/* Sets how many queued calls one signature may cover, 1..MF_DIRECTOR_BATCH_MAX (1: every
 * assignment signed alone, as before batching). Call before signing starts. */
void mf_director__set_batch(struct mf_director *d, unsigned max_batch);

/* Batches signed (one ECDSA signature each) and the assignments they carried so far; their
 * ratio is the batch factor. A failed batch counts too. */
void mf_director__stats(struct mf_director *d, uint64_t *signatures, uint64_t *assignments);

#endif /* MF_SERVER_DIRECTOR_DIRECTOR_H */
