/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/trust.h
 * @brief Signed manifests and the device trust chain, device side (library
 * mf_manifest_verify, mbedTLS; docs/formats/manifest.md).
 *
 * Every trust document (root, keys, release, assignment) travels as a DSSE envelope signed
 * with ECDSA P-256 / SHA-256 over DSSE's PAE encoding. ::mf_trust holds the trusted state
 * (root, keys document, security floors per model, last director sequence) and verifies new
 * documents against it. It is an I/O-free state machine: bytes in, verdict out; the caller
 * fetches documents and persists mf_trust_save() output crash-safely. Signing is in
 * mf/sign.h (server and tools only).
 *
 * Time: functions taking `now` expect Unix seconds from a trustworthy clock, or
 * #MF_TRUST_TIME_UNKNOWN (0) when the device has none; expiry is then not checked and
 * freshness rests on the check-in nonce alone.
 */
#ifndef MF_TRUST_H
#define MF_TRUST_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/log.h"

MF_BEGIN_DECLS

/** `now` value meaning "no trustworthy time": expiry checks are skipped. */
#define MF_TRUST_TIME_UNKNOWN 0u

/** DSSE payload types, one per document type. */
#define MF_MANIFEST_TYPE_ROOT "application/vnd.modelferry.root+json"
#define MF_MANIFEST_TYPE_KEYS "application/vnd.modelferry.keys+json"
#define MF_MANIFEST_TYPE_RELEASE "application/vnd.modelferry.release+json"
#define MF_MANIFEST_TYPE_ASSIGNMENT "application/vnd.modelferry.assignment+json"

/** Byte length of a SHA-256 digest and of a key id in binary form. */
#define MF_MANIFEST_DIGEST_LEN 32
/** Longest model name, version, device id (characters, without NUL). */
#define MF_MANIFEST_NAME_MAX 64
/** Longest assignment reason (characters, without NUL). */
#define MF_MANIFEST_REASON_MAX 256

/** One delta a release offers: apply blob `sha256` to a model whose digest is `from_sha256`. */
typedef struct mf_manifest_delta {
    uint8_t from_sha256[MF_MANIFEST_DIGEST_LEN];
    uint8_t sha256[MF_MANIFEST_DIGEST_LEN]; /**< digest of the delta blob */
    uint64_t size;                          /**< byte size of the delta blob */
} mf_manifest_delta;

/** A verified release manifest. Read-only; every pointer lives as long as the struct. */
typedef struct mf_manifest_release {
    const char *name;    /**< model name */
    const char *version; /**< human version string ("v7"); not used for ordering */
    uint64_t sequence;   /**< publisher's monotonic sequence number for this model */
    uint8_t sha256[MF_MANIFEST_DIGEST_LEN]; /**< digest of the full model blob */
    uint64_t size;                          /**< byte size of the model blob */
    uint32_t chunk_size;                    /**< bytes per chunk; the last may be shorter */
    size_t chunk_count;                     /**< ceil(size / chunk_size) */
    /** SHA-256 of each chunk, in order, when the release carries the flat list; NULL for a
     *  chunk-tree release (the list is a blob checked by mf_trust_check_chunk_list()). */
    const uint8_t (*chunks)[MF_MANIFEST_DIGEST_LEN];
    int has_chunks_root; /**< 1: chunks_root is the signed RFC 9162 root over the hashes */
    uint8_t chunks_root[MF_MANIFEST_DIGEST_LEN];
    size_t delta_count;
    const mf_manifest_delta *deltas;
    uint64_t security_floor; /**< security counter; devices refuse releases below their floor */
    uint64_t created;        /**< Unix seconds */
    uint64_t expires;        /**< Unix seconds */
    /** SHA-256 of the signed payload bytes: the value assignments name. */
    uint8_t digest[MF_MANIFEST_DIGEST_LEN];
} mf_manifest_release;

/** A verified director assignment plus the verified release it names. Read-only. */
typedef struct mf_manifest_assignment {
    const char *device_id;
    const char *model;
    uint8_t release_sha256[MF_MANIFEST_DIGEST_LEN]; /**< equals release->digest */
    const char *nonce;                              /**< check-in nonce it answers */
    uint64_t sequence;                              /**< per-device director sequence */
    int pin;                                        /**< 1: hold this release until unpinned */
    const char *reason;                 /**< operator's reason ("rollback: ..."); NULL */
    const mf_manifest_release *release; /**< owned by the assignment */
} mf_manifest_assignment;

/** Releases a release from mf_trust_verify_release(). NULL is a no-op. */
MF_EXTERN void mf_manifest_release_free(mf_manifest_release *r);
/** Releases an assignment and its release. NULL is a no-op. */
MF_EXTERN void mf_manifest_assignment_free(mf_manifest_assignment *a);

/* ---------------------------------------------------------------------------------------- */
/* Device side: the trust state (library mf_manifest_verify)                                */
/* ---------------------------------------------------------------------------------------- */

typedef struct mf_trust mf_trust;

/** Why the last call on an ::mf_trust failed; finer than the mf_err it returned. */
typedef enum mf_trust_reason {
    MF_TRUST_R_NONE = 0,      /**< the last call succeeded */
    MF_TRUST_R_MALFORMED,     /**< envelope or document does not follow the format */
    MF_TRUST_R_TOO_LARGE,     /**< input exceeds a configured bound */
    MF_TRUST_R_WRONG_TYPE,    /**< payloadType is not the one expected here */
    MF_TRUST_R_NO_SIGNATURE,  /**< the envelope carries no signature */
    MF_TRUST_R_UNKNOWN_KEY,   /**< no signature by a key of the required role (or revoked) */
    MF_TRUST_R_BAD_SIGNATURE, /**< a role key's signature does not verify */
    MF_TRUST_R_THRESHOLD,     /**< valid signatures from fewer distinct keys than required */
    MF_TRUST_R_EXPIRED,       /**< document past its expiry at the given trustworthy time */
    MF_TRUST_R_ROLLBACK,      /**< root/keys version older than the trusted one */
    MF_TRUST_R_BELOW_FLOOR,   /**< release security_floor below the model's stored floor */
    MF_TRUST_R_WRONG_NONCE,   /**< assignment does not echo the nonce just sent */
    MF_TRUST_R_REPLAY,        /**< assignment sequence not above the last accepted */
    MF_TRUST_R_WRONG_DEVICE,  /**< assignment addressed to another device */
    MF_TRUST_R_MISMATCH,      /**< assignment names another release or model */
    MF_TRUST_R_NO_KEYS,       /**< no trusted keys document yet */
    MF_TRUST_R_WALK_LIMIT,    /**< root chain longer than max_root_walk */
    MF_TRUST_R_STATE_CORRUPT, /**< saved state fails its checksum or re-verification */
    MF_TRUST_R_RESOURCE       /**< out of memory, or another internal failure */
} mf_trust_reason;

#define MF_TRUST_OPTIONS_VERSION 1

/** Bounds of an ::mf_trust; mf_trust_options_init() fills the defaults. */
typedef struct mf_trust_options {
    unsigned int version;        /**< MF_TRUST_OPTIONS_VERSION; fields are only appended */
    size_t max_root_bytes;       /**< root envelope cap (default 32 KiB) */
    size_t max_keys_bytes;       /**< keys envelope cap (default 32 KiB) */
    size_t max_release_bytes;    /**< release envelope cap (default 1 MiB) */
    size_t max_assignment_bytes; /**< assignment envelope cap (default 8 KiB) */
    size_t max_chunks;           /**< chunk hashes per release (default 8192) */
    unsigned int max_root_walk;  /**< root versions per mf_trust_update_root() (default 16) */
    mf_log_fn log_fn;            /**< NULL: no logging */
    void *log_payload;
} mf_trust_options;

/** A byte string (an envelope in a root chain). */
typedef struct mf_manifest_blob {
    const void *data;
    size_t size;
} mf_manifest_blob;

/**
 * @brief Fills `opts` with defaults.
 * @return MF_OK, or MF_E_INVALID when `version` is not one this library knows.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_options_init(mf_trust_options *opts,
                                                          unsigned int version);

/**
 * @brief Creates an empty trust state; give it a root with mf_trust_bootstrap() or
 * mf_trust_load() before verifying anything.
 * @param opts NULL for defaults.
 * @param alloc NULL for the libc allocator.
 * @return MF_OK, MF_E_NOMEM or MF_E_INVALID (bad options).
 * Ownership: `*out` belongs to the caller; release with mf_trust_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_new(mf_trust **out, const mf_trust_options *opts,
                                                 const mf_allocator *alloc);

/** Releases `t` (key material is wiped). NULL is a no-op. */
MF_EXTERN void mf_trust_free(mf_trust *t);

/** @return the message of the last failure ("" after success). Borrowed from `t`. */
MF_EXTERN const char *mf_trust_errmsg(const mf_trust *t);

/** @return the reason of the last failure, MF_TRUST_R_NONE after success. */
MF_EXTERN mf_trust_reason mf_trust_last_reason(const mf_trust *t);

/** @return a static name for `reason` ("expired", ...), never NULL. */
MF_EXTERN const char *mf_trust_reason_name(mf_trust_reason reason);

/**
 * @brief Installs the first root, as shipped with the device image. It must be signed by a
 * threshold of its own root keys; its origin (the image) is what makes it trusted. Resets
 * keys, floors and sequences.
 * @return MF_OK, MF_E_INVALID/MF_E_LIMIT (malformed/too large) or MF_E_SIGNATURE.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_bootstrap(mf_trust *t, const void *root_env,
                                                       size_t len, uint64_t now);

/**
 * @brief Walks the root chain: each envelope MUST carry version current+1 and be signed by
 * a threshold of the current root AND of itself. Steps that verify are kept even when a later
 * one fails. If the keys document no longer verifies under the new root it is dropped.
 * @return MF_OK, MF_E_LIMIT (n > max_root_walk, nothing done), MF_E_SIGNATURE.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_update_root(mf_trust *t, const mf_manifest_blob *chain,
                                                         size_t n, uint64_t now);

/**
 * @brief Accepts a keys document signed by the root's `keys` role. Its version MUST NOT be
 * lower than the trusted one; an equal version must be the identical document. Keys absent
 * from the new document are revoked. When the document's `director` role no longer holds
 * every key that signed the last accepted assignment, that sequence is dropped: the new
 * director keys start from 0 (docs/formats/manifest.md, "A sequence space belongs to the
 * director keys that signed it").
 * @return MF_OK, MF_E_SIGNATURE, MF_E_STATE (no root yet).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_update_keys(mf_trust *t, const void *keys_env,
                                                         size_t len, uint64_t now);

/**
 * @brief Verifies a release envelope against the `release` role and the model's floor.
 * Does not change the state (see mf_trust_commit_release()).
 * @return MF_OK, MF_E_SIGNATURE, MF_E_STATE (no keys document yet).
 * Ownership: `*out` belongs to the caller; release with mf_manifest_release_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_verify_release(mf_manifest_release **out, mf_trust *t,
                                                            const void *release_env, size_t len,
                                                            uint64_t now);

/**
 * @brief Checks a chunk list (docs/formats/manifest.md §3 "chunk tree": `chunk_count`
 * 32-byte chunk hashes, in order, as served by GET /v1/blobs/<its sha256>) against the
 * signed `chunks_root` of verified release `r`, before any chunk is trusted. Memory: none
 * beyond the stack (log2(chunk_count) small frames).
 * @return MF_OK; MF_E_INVALID (reason MALFORMED) when `len` is not 32 * chunk_count (a
 * truncated or padded list) or `r` has no chunks_root; MF_E_SIGNATURE (reason MISMATCH)
 * when the hashes do not lead to the root (a flipped hash, another release's list).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_trust_check_chunk_list(mf_trust *t, const mf_manifest_release *r, const void *list, size_t len);

/**
 * @brief Verifies a director assignment and the release it names, as received in answer
 * to the check-in that sent `nonce`. The assignment must be signed by the `director` role,
 * address `device_id`, echo `nonce`, carry a sequence above the last accepted one, and name
 * exactly `release_env` (by payload digest), which must verify as mf_trust_verify_release()
 * does. On success the sequence is remembered (save the state afterwards); on failure
 * nothing changes.
 * @return MF_OK, MF_E_SIGNATURE, MF_E_STATE (no keys document yet).
 * Ownership: `*out` belongs to the caller; release with mf_manifest_assignment_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_trust_verify_assignment(mf_manifest_assignment **out, mf_trust *t, const char *device_id,
                           const char *nonce, const void *assignment_env, size_t assignment_len,
                           const void *release_env, size_t release_len, uint64_t now);

/**
 * @brief Records that `r` is installed: raises the model's floor to r->security_floor.
 * Call it once the install is confirmed, then save the state.
 * @return MF_OK or MF_E_LIMIT (too many models tracked).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_commit_release(mf_trust *t,
                                                            const mf_manifest_release *r);

/** @return the trusted root version, 0 before a root is installed. */
MF_EXTERN uint64_t mf_trust_root_version(const mf_trust *t);
/** @return the trusted keys document version, 0 when there is none. */
MF_EXTERN uint64_t mf_trust_keys_version(const mf_trust *t);
/** @return the last accepted assignment sequence (0: none yet, or since the director keys
 * that signed it were rotated out); at most 2^53. */
MF_EXTERN uint64_t mf_trust_assignment_sequence(const mf_trust *t);
/** @return the stored security floor of `model` (0 when unknown). */
MF_EXTERN uint64_t mf_trust_floor(const mf_trust *t, const char *model);

/** @return the exact byte size mf_trust_save() needs for the current state. */
MF_EXTERN size_t mf_trust_state_size(const mf_trust *t);

/**
 * @brief Serialises the state (root and keys envelopes, floors, sequence, checksum) into
 * `out`. The caller persists it crash-safely (write temp, fsync, rename).
 * @return MF_OK, MF_E_LIMIT (out_size too small), MF_E_STATE (no root yet).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_save(void *out, size_t out_size, size_t *written,
                                                  mf_trust *t);

/**
 * @brief Replaces the state with one from mf_trust_save(). The checksum is checked and the
 * root and keys signatures are verified again; on failure the state is unchanged.
 * @return MF_OK, MF_E_INVALID (torn or corrupt), MF_E_SIGNATURE, MF_E_LIMIT.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_trust_load(mf_trust *t, const void *state, size_t len);

/** Wipes `len` bytes of `p` and releases it with `alloc` (NULL: libc). NULL is a no-op. In
 *  mf_manifest_common (both sides): the signer's key PEMs are released with it. */
MF_EXTERN void mf_manifest_secret_free(const mf_allocator *alloc, void *p, size_t len);

MF_END_DECLS

#endif /* MF_TRUST_H */
