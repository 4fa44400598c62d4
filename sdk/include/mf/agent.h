/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/agent.h
 * @brief libmf: the device agent app teams embed.
 *
 * The agent keeps named models up to date with what the server assigns. It has no thread
 * of its own: the application calls mf_agent_step() from its own loop, and each step
 *   1. enrolls with the fleet enrollment token when no device credential is stored yet;
 *   2. checks in (installed versions, trusted root and keys versions, a fresh random nonce);
 *   3. verifies, with the trust chain of mf/trust.h and BEFORE downloading anything, the
 *      root rotations and keys document of the answer, then each assignment: signed by the
 *      director for this device and this nonce with a fresh sequence, naming a release
 *      signed by the release keys and at or above the model's security floor;
 *   4. for every verified release whose sha256 differs from the installed model: downloads
 *      the blob into the inactive slot, checking every chunk against the release's signed
 *      chunk hashes as it arrives (aborting at the first bad one) and the total size and
 *      sha256, switches the model's state file atomically, raises the model's security
 *      floor, calls the "model ready" callback, and reports the result to the server.
 * A refused assignment or failed install leaves the previously installed model active and
 * untouched, and is reported as "failed" with the reason.
 *
 * Trust: the device is provisioned with its first root document (`trust_root`); there is
 * no trust on first use. The trusted state (root, keys, floors, director sequence) lives
 * in `trust.state` under the state directory, written crash-safely. Expiry is checked only
 * when the platform's wall clock says it is trustworthy.
 *
 * Storage goes only through the platform port (mf/sys/platform.h). Layout under the state
 * directory: `credential` (mode 0600), `trust.state`, `models/<name>/state.json`,
 * `models/<name>/slot-a`, `models/<name>/slot-b`, and `slot-<x>.part` while downloading;
 * with runtime degradation (options version 8) also `degrade.state`, `degrade.switches`,
 * `models/<name>/fallback` and `models/<name>/fallback.state`.
 *
 * Thread safety: one mf_agent is used by one thread at a time; distinct agents are
 * independent. The application SHOULD call curl_global_init() once before creating agents
 * from several threads.
 */
#ifndef MF_AGENT_H
#define MF_AGENT_H

#include "mf/common.h"
#include "mf/alloc.h"
#include "mf/degrade.h"
#include "mf/log.h"
#include "mf/offload.h"
#include "mf/sys/platform.h"
#include "mf/telemetry.h"

MF_BEGIN_DECLS

/** Version of mf_agent_options described by this header; fields are only appended.
 *  Version 1 ends at `trust_root_len`; version 2 adds health, pins, resume and deltas;
 *  version 3 offload and telemetry handles; version 4 the error buffer of mf_agent_new() and
 *  offload handles the agent owns; version 5 the device's poll interval and idle callback;
 *  version 6 the device class; version 7 the download buffer; version 8 runtime degradation
 *  (the degrade controller's tuning and the squeeze callback). */
#define MF_AGENT_OPTIONS_VERSION 8
/** Largest `download_buffer` (bytes). */
#define MF_AGENT_DOWNLOAD_BUFFER_MAX (4u * 1024u * 1024u)
/** Longest model name, version string or device id, in bytes. */
#define MF_AGENT_NAME_MAX 64
/** Most models one agent tracks. */
#define MF_AGENT_MAX_MODELS 16
/** Default cap on JSON response bodies (check-in, enrollment). A check-in carries one
 * release envelope per assignment (about 90 bytes per chunk hash). */
#define MF_AGENT_DEFAULT_MAX_JSON (1024u * 1024u)

/** Largest RAM or storage a device class declares, in MiB (2^40: an exbibyte). */
#define MF_AGENT_CLASS_MB_MAX (1ull << 40)

/**
 * The device class the check-in declares (docs/protocol.md, "Device class"), by which the
 * server picks the variant of each release this device gets (docs/rollouts.md, "Model
 * variants") and judges red lines per class. Strings are copied by mf_agent_new().
 */
typedef struct mf_agent_device_class {
    const char *tag;         /**< class name [A-Za-z0-9._-]{1,64}, or NULL */
    const char *accelerator; /**< accelerator name, same syntax, or NULL for none */
    uint64_t ram_mb;         /**< RAM, MiB (at most MF_AGENT_CLASS_MB_MAX) */
    uint64_t storage_mb;     /**< storage a model slot may take, MiB (same bound) */
    int int8;                /**< 1: the runtime runs int8 kernels */
    int fp16;                /**< 1: the runtime runs fp16 kernels */
} mf_agent_device_class;

/** The agent handle (opaque). */
typedef struct mf_agent mf_agent;

/**
 * @brief Called after a model version was installed and activated.
 * @param payload the `ready_payload` of the options.
 * @param model model name.
 * @param version installed version.
 * @param path the installed file: state_dir + "/models/<model>/slot-<x>".
 * All strings are valid only during the call.
 */
typedef void (*mf_agent_ready_fn)(void *payload, const char *model, const char *version,
                                  const char *path);

/** Answers of an mf_agent_health_fn. */
typedef enum mf_agent_health {
    MF_AGENT_HEALTHY = 0,      /**< confirm the new version now */
    MF_AGENT_UNHEALTHY = 1,    /**< revert to the previous slot at once */
    MF_AGENT_CONFIRM_LATER = 2 /**< stay pending until mf_agent_confirm() (or too many starts) */
} mf_agent_health;

/**
 * @brief Called after a new version was activated (instead of `ready_fn` when set): the app
 * loads the model at `path`, checks it, and answers with an mf_agent_health value.
 * Also called, with its answer ignored, for a version restored by a rollback.
 * All strings are valid only during the call.
 */
typedef int (*mf_agent_health_fn)(void *payload, const char *model, const char *version,
                                  const char *path);

/**
 * @brief Download progress: `done` of `total` bytes of `model`'s `kind` ("model" for the
 * full blob, "delta" for a patch). Called from inside mf_agent_step(), often.
 */
typedef void (*mf_agent_progress_fn)(void *payload, const char *model, const char *kind,
                                     uint64_t done, uint64_t total);

/**
 * Asked before a new version is installed outside the install window ops set for the
 * device's group (docs/agent.md, "Install window"), each step while the install waits; the
 * download has finished and been verified already.
 * @return nonzero when the device is idle and may switch to `version` of `model` now, 0 to
 * wait for the window (or the next call).
 */
typedef int (*mf_agent_idle_fn)(void *payload, const char *model, const char *version);

/**
 * Reads the device's squeeze signals now (memory pressure, thermal level, battery) for the
 * automatic degrade triggers (docs/agent.md, "Runtime degradation"); on Linux a wrapper of
 * mf_platform_posix_squeeze(). Each unknown signal is -1.
 * @return MF_OK, or a negative mf_err (the reading is then skipped).
 */
typedef int (*mf_agent_squeeze_fn)(void *payload, mf_degrade_signals *out);

/** Options of mf_agent_new(); initialise with mf_agent_options_init(). */
typedef struct mf_agent_options {
    unsigned int version;            /**< MF_AGENT_OPTIONS_VERSION */
    const char *server_url;          /**< required: "http://host:port" or "https://..." */
    const char *device_id;           /**< required: [A-Za-z0-9._-]{1,64} */
    const char *enrollment_token;    /**< "mfe_..."; NULL when a credential is already stored */
    const char *state_dir;           /**< required: the directory the platform port stores into */
    const char *const *models;       /**< required: names of the tracked models */
    size_t n_models;                 /**< 1..MF_AGENT_MAX_MODELS */
    const mf_allocator *allocator;   /**< NULL: libc */
    mf_log_fn log_fn;                /**< NULL: no logging */
    void *log_payload;               /**< passed to log_fn */
    const mf_platform_ops *platform; /**< required; copied, its payload must outlive the agent */
    long connect_timeout_ms;         /**< default 10000 */
    long request_timeout_ms;         /**< JSON requests; default 30000 */
    long stall_timeout_s;            /**< abort a transfer slower than stall_bytes_per_s ... */
    long stall_bytes_per_s;          /**< ... for this long; defaults 60 s, 1 byte/s */
    size_t max_json_body;            /**< default MF_AGENT_DEFAULT_MAX_JSON */
    const char *ca_file;             /**< PEM bundle for https; NULL: system store */
    mf_agent_ready_fn ready_fn;      /**< NULL: no callback */
    void *ready_payload;             /**< passed to ready_fn */
    /** required: the device's first root document (a DSSE envelope, docs/formats/manifest.md)
     *  as shipped with the image. Used only while no trust.state exists; copied. */
    const void *trust_root;
    size_t trust_root_len;
    /* ---- version 2 ---- */
    mf_agent_health_fn health_fn;        /**< NULL: versions are confirmed at activation */
    void *health_payload;                /**< passed to health_fn */
    unsigned int max_unconfirmed_starts; /**< revert a version still pending at this many
                                              agent starts; default 3, minimum 1 */
    int metered;                         /**< 1: never fall back from a failed delta to the full
                                              blob (report and wait); see mf_agent_set_metered() */
    long long max_recv_bytes_per_s;      /**< download bandwidth cap; 0: none */
    long retry_base_ms;                  /**< first backoff after a failed install; default 2000;
                                              0 disables backoff */
    long retry_max_ms;                   /**< backoff ceiling; default 600000 */
    size_t max_patch_window;             /**< largest delta window accepted (workspace ~1.6x);
                                              default MF_AGENT_DEFAULT_PATCH_WINDOW */
    mf_agent_progress_fn progress_fn;    /**< NULL: none */
    void *progress_payload;              /**< passed to progress_fn */
    int control_only;                    /**< 1: a handle for status/pin/confirm/rollback tools;
                                              its creation does not count as a start */
    /* ---- version 3 ---- */
    /**
     * NULL, or one offload handle per tracked model, in the order of `models` (NULL entries
     * allowed). The agent then carries each handle's telemetry in the check-in, installs the
     * offload policy the server sends for that model (mf_offload_set_policy_json) and tells the
     * handle which version is active (mf_offload_set_model_version); it also hands each
     * handle the device credential (create them with `credential` NULL). Borrowed: the handles
     * MUST outlive the agent and MUST NOT be used from another thread during mf_agent_step().
     * Prefer `offload_options` (version 4), where the agent owns the handles.
     */
    mf_offload *const *offloads;
    /**
     * NULL, or the app's runtime-report handle (mf/telemetry.h): the agent adds install results
     * and rollbacks to it, sends each model's totals with the check-in (`"telemetry"`, read by
     * the server's fleet views and rollout red lines) and acknowledges them when the server
     * answered. The app records latency, memory, health and teacher agreement itself and saves
     * the handle on its own schedule. Borrowed: MUST outlive the agent.
     */
    mf_telemetry *telemetry;
    /* ---- version 4 ---- */
    /**
     * NULL, or a buffer that receives the one-line message (NUL-terminated, truncated to
     * `errbuf_size`) when mf_agent_new() fails: there is no handle yet to read
     * mf_agent_errmsg() from. Untouched on success. MF_AGENT_ERRBUF_SIZE always suffices.
     */
    char *errbuf;
    size_t errbuf_size; /**< bytes of `errbuf`; 0 with NULL */
    /**
     * NULL, or one set of offload options per tracked model, in the order of `models` (NULL
     * entries: no offload for that model). The agent creates and owns these handles
     * (mf_agent_offload() lends them to the app): it fills `model`, `model_version`,
     * `server_url`, `credential` and `platform` itself (the app leaves them NULL), and
     * `allocator`, `log_fn` and `log_payload` from these options where they are NULL. The
     * device credential never passes through the app, and the handle takes part in the first
     * check-in, so the server's policy is installed by the first mf_agent_step(). A model MUST
     * NOT have both an entry here and one in `offloads`. Read during mf_agent_new() only.
     */
    const mf_offload_options *const *offload_options;
    /* ---- version 5 ---- */
    /**
     * The device's own check-in interval in seconds (0..604800; 0: none), which
     * mf_agent_poll_interval_s() returns instead of the server's fleet default. An interval
     * ops set for one of the device's groups (`mfctl groups set-poll`) wins over it, and the
     * server's jitter applies to either (docs/agent.md, "Poll interval").
     */
    long poll_interval_s;
    /** NULL: outside an install window, installs wait for it; else asked (see the type). */
    mf_agent_idle_fn idle_fn;
    void *idle_payload; /**< passed to idle_fn */
    /* ---- version 6 ---- */
    /** The class every check-in declares; NULL: none (each version's own blob, as before). */
    const mf_agent_device_class *device_class;
    /* ---- version 7 ---- */
    /**
     * Bytes a blob download gathers before each write to storage, and libcurl's receive
     * buffer for it (0..MF_AGENT_DOWNLOAD_BUFFER_MAX; 0, the default: libcurl's 16 KiB
     * pieces are written as they come, and the install heap stays under 32 KiB). A larger
     * buffer trades that much heap (plus as much in libcurl) for fewer system calls: 256 KiB
     * (mf-agent's setting) took a loopback download from 2.7 to 1.9 s per 256 MiB
     * (bench/agent/README.md). Verification, resume and durability are the same either way.
     */
    size_t download_buffer;
    /* ---- version 8 ---- */
    /**
     * NULL: no runtime degradation (mf_agent_model_path() always answers the active slot,
     * mf_agent_degrade() is refused). Else the degrade controller's tuning (mf/degrade.h,
     * zeros take its defaults): the agent keeps its state in `degrade.state` under the state
     * directory, feeds it from `squeeze_fn` and mf_agent_inference(), answers each model's
     * fallback variant from mf_agent_model_path() while degraded and reports every switch
     * with its reason in the check-in (docs/agent.md, "Runtime degradation"). Copied.
     */
    const mf_degrade_config *degrade;
    /** NULL: no automatic squeeze triggers; else read by mf_agent_squeeze() and at the start
     *  of every mf_agent_step() (before any network). */
    mf_agent_squeeze_fn squeeze_fn;
    void *squeeze_payload; /**< passed to squeeze_fn */
} mf_agent_options;

/** A size of mf_agent_options.errbuf that holds every message untruncated. */
#define MF_AGENT_ERRBUF_SIZE 256

/** Default largest delta window: the encoder's default (MF_PATCH_DEFAULT_WINDOW, mf/patch.h). */
#define MF_AGENT_DEFAULT_PATCH_WINDOW (512u * 1024u)

/** Version of mf_agent_model_status described by this header; fields are only appended.
 *  Version 1 ends at `release_sequence`; version 2 adds pins, rollbacks and downloads;
 *  version 3 the install deferred to the install window; version 4 the fallback variant and
 *  the degraded state. */
#define MF_AGENT_STATUS_VERSION 4

/**
 * What one tracked model runs, as returned by mf_agent_status(). The caller sets
 * `struct_version` (`version` names the model version)
 * (mf_agent_status_init() or MF_AGENT_MODEL_STATUS_INIT) and the library writes only the
 * fields of that version, so an app built against an older header keeps working with a newer
 * library whose struct grew.
 */
typedef struct mf_agent_model_status {
    unsigned int struct_version;         /**< MF_AGENT_STATUS_VERSION; never written by the SDK */
    int installed;                       /**< 1 when a version is installed */
    char version[MF_AGENT_NAME_MAX + 1]; /**< installed version, "" when none */
    char sha256[65];                     /**< lower-case hex, "" when none */
    uint64_t size;                       /**< bytes of the installed file */
    char slot;                           /**< 'a' or 'b'; 0 when none */
    int up_to_date;        /**< 1 when the last check-in assigned what is installed (or nothing) */
    int last_error;        /**< mf_err of the last failed install of this model, MF_OK if none */
    char last_errmsg[256]; /**< its message, "" if none */
    uint64_t security_floor;   /**< the model's trusted security floor (0: none yet) */
    uint64_t release_sequence; /**< sequence of the last verified release assigned, 0 if none */
    /* ---- version 2 ---- */
    int pending;                                  /**< installed version not yet confirmed */
    unsigned int unconfirmed_starts;              /**< starts while pending */
    char pinned[MF_AGENT_NAME_MAX + 1];           /**< pinned version, "" when not pinned */
    char previous_version[MF_AGENT_NAME_MAX + 1]; /**< kept in the other slot, "" if none */
    char previous_slot;                           /**< 'a', 'b' or 0 */
    int held;                                     /**< the last assignment is held back */
    char hold_reason[128];                        /**< why ("pinned to v1", "rolled back: ...") */
    size_t rolled_back;                           /**< versions remembered as rolled back */
    char last_rollback[128];                      /**< reason of the newest rollback, "" if none */
    uint64_t download_done;                       /**< bytes of the running/interrupted download */
    uint64_t download_total;                      /**< its size, 0 when none */
    char download_kind[8];                        /**< "model", "delta" or "" */
    /* ---- version 3 ---- */
    int install_deferred; /**< a downloaded, verified version waits for the install window */
    char deferred_version[MF_AGENT_NAME_MAX + 1]; /**< that version, "" when none */
    int window_start_min; /**< the window ops set, minutes of the UTC day [start, end) ... */
    int window_end_min;   /**< ... (end < start: past midnight); both -1 when none */
    /* ---- version 4 ---- */
    int fallback_installed; /**< a fallback variant of the active version is installed */
    char fallback_variant[MF_AGENT_NAME_MAX + 1]; /**< its variant name, "" when none */
    uint64_t fallback_size;                       /**< its bytes, 0 when none */
    int degraded;       /**< 1: mf_agent_model_path() answers the fallback now */
    int degrade_reason; /**< mf_degrade_reason of the controller's last switch */
} mf_agent_model_status;

/** Static initialiser (C99) of an mf_agent_model_status of this header's version. */
#define MF_AGENT_MODEL_STATUS_INIT                                                                 \
    {                                                                                              \
        .struct_version = MF_AGENT_STATUS_VERSION                                                  \
    }

/** Version of mf_agent_counters described by this header; fields are only appended. */
#define MF_AGENT_COUNTERS_VERSION 1

/**
 * Transfer counters since mf_agent_new(), from mf_agent_stats(). Versioned like
 * mf_agent_model_status: the caller sets `struct_version` (mf_agent_counters_init() or
 * MF_AGENT_COUNTERS_INIT) and the library writes only the fields of that version.
 */
typedef struct mf_agent_counters {
    unsigned int struct_version; /**< MF_AGENT_COUNTERS_VERSION; never written by the SDK */
    uint64_t blob_requests;      /**< blob GETs sent (first requests and resumes) */
    uint64_t blob_bytes;         /**< blob body bytes received, re-sent ones included */
    uint64_t delta_installs;     /**< versions built from a delta */
    uint64_t full_installs;      /**< versions downloaded whole */
    uint64_t delta_fallbacks;    /**< failed deltas followed by a full download */
    uint64_t resumes;            /**< downloads that resumed a verified prefix */
} mf_agent_counters;
/** @deprecated old tag of mf_agent_counters; removed in the next release. */
#define mf_agent_counters_public mf_agent_counters

/** Static initialiser (C99) of an mf_agent_counters of this header's version. */
#define MF_AGENT_COUNTERS_INIT                                                                     \
    {                                                                                              \
        .struct_version = MF_AGENT_COUNTERS_VERSION                                                \
    }

/** Version of mf_agent_trust_state described by this header; fields are only appended. */
#define MF_AGENT_TRUST_STATE_VERSION 1

/**
 * The device's trust state, as returned by mf_agent_trust_status(); versioned like
 * mf_agent_counters (mf_agent_trust_state_init() or MF_AGENT_TRUST_STATE_INIT).
 */
typedef struct mf_agent_trust_state {
    unsigned int struct_version;  /**< MF_AGENT_TRUST_STATE_VERSION; never written by the SDK */
    uint64_t root_version;        /**< trusted root version */
    uint64_t keys_version;        /**< trusted keys document version, 0 when none yet */
    uint64_t assignment_sequence; /**< last accepted director sequence */
} mf_agent_trust_state;

/** Static initialiser (C99) of an mf_agent_trust_state of this header's version. */
#define MF_AGENT_TRUST_STATE_INIT                                                                  \
    {                                                                                              \
        .struct_version = MF_AGENT_TRUST_STATE_VERSION                                             \
    }

/**
 * @brief Fills `opts` with defaults.
 * @param opts options to initialise.
 * @param version MUST be MF_AGENT_OPTIONS_VERSION.
 * @return MF_OK, MF_E_INVALID for an unknown version.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_options_init(mf_agent_options *opts,
                                                          unsigned int version);

/**
 * @brief Creates an agent and loads its stored credential and model states. No network.
 * @param out receives the agent.
 * @param opts options; strings are copied.
 * @return MF_OK; MF_E_INVALID for bad options or a damaged state file; MF_E_SIGNATURE for a
 * trust root or trust.state that does not verify; MF_E_NOMEM, MF_E_IO.
 * On failure the message is copied into `opts->errbuf` (when set) and sent to `opts->log_fn`
 * at MF_LOG_ERROR (there is no handle to read it from), and `*out` is NULL.
 * Ownership: `*out` belongs to the caller; release with mf_agent_free().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_new(mf_agent **out, const mf_agent_options *opts);

/**
 * @brief Lends the app the offload handle of `model`: the one the agent created from
 * `offload_options`, or the app's own from `offloads`.
 * @param out receives the handle. Borrowed: owned by the agent, valid until mf_agent_free();
 * MUST NOT be used from another thread during mf_agent_step().
 * @param agent the agent.
 * @param model a tracked model name.
 * @return MF_OK, MF_E_NOTFOUND when `model` is not tracked or has no offload handle.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_offload(mf_offload **out, const mf_agent *agent,
                                                     const char *model);

/** @brief Releases the agent and wipes its credential. mf_agent_free(NULL) is a no-op. */
MF_EXTERN void mf_agent_free(mf_agent *agent);

/**
 * @brief Runs one enroll / check-in / install / report cycle.
 * @param agent the agent.
 * @return MF_OK when every assignment is installed; MF_E_AUTH (wrong enrollment token or
 * revoked credential), MF_E_SIGNATURE (a trust document or assignment refused, or a blob
 * chunk that does not match its signed hash), MF_E_NET
 * (network or server failure; retry later), or another mf_err. Details: mf_agent_errmsg().
 * Models that failed keep running their previous version.
 * The requests of one step share a connection; the step closes it before returning, so an
 * agent holds no connection (and no descriptor) between steps.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_step(mf_agent *agent);

/**
 * @brief Prepares a status of `version` for mf_agent_status(): zeroes the fields of that
 * version (and nothing beyond them) and sets `struct_version`.
 * @param status the status to prepare.
 * @param version MUST be 1..MF_AGENT_STATUS_VERSION (normally MF_AGENT_STATUS_VERSION).
 * @return MF_OK, MF_E_INVALID for an unknown version (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_status_init(mf_agent_model_status *status,
                                                         unsigned int version);

/**
 * @brief Reports what one tracked model runs.
 * @param status_out receives the status; its `struct_version` MUST be set (mf_agent_status_init()
 * or MF_AGENT_MODEL_STATUS_INIT). Only the fields of that version are written.
 * @param agent the agent.
 * @param model a tracked model name.
 * @return MF_OK, MF_E_NOTFOUND when `model` is not tracked, MF_E_INVALID for a status version
 * this library does not know (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_status(mf_agent_model_status *status_out,
                                                    const mf_agent *agent, const char *model);

/**
 * @brief Seconds until the agent wants its next step: the poll interval of the last check-in
 * (a group's interval set by ops, else the options' poll_interval_s, else the server's
 * default), moved at random within the server's jitter, drawn anew at each check-in; or
 * less when a failed download's backoff ends earlier.
 * @return seconds, or 0 when no check-in has answered yet (or none sent one).
 */
MF_EXTERN long mf_agent_poll_interval_s(const mf_agent *agent);

/**
 * @brief Reports the device's trust state.
 * @param out receives root/keys versions and the last director sequence; its
 * `struct_version` MUST be set. Only the fields of that version are written.
 * @param agent the agent.
 * @return MF_OK, MF_E_INVALID for a version this library does not know (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_trust_status(mf_agent_trust_state *out,
                                                          const mf_agent *agent);

/**
 * @brief Prepares a trust state of `version` for mf_agent_trust_status(): zeroes the fields of
 * that version (and nothing beyond them) and sets `struct_version`.
 * @param state the trust state to prepare.
 * @param version MUST be 1..MF_AGENT_TRUST_STATE_VERSION.
 * @return MF_OK, MF_E_INVALID for an unknown version (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_trust_state_init(mf_agent_trust_state *state,
                                                              unsigned int version);

/**
 * @brief Confirms the pending version of `model` as healthy (it stops counting starts).
 * @return MF_OK (also when nothing is pending), MF_E_NOTFOUND (not tracked), MF_E_IO.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_confirm(mf_agent *agent, const char *model);

/**
 * @brief Reverts `model` to its previous slot now and remembers the abandoned version as
 * rolled back (not installed again until the server assigns a release with a higher
 * sequence). `reason` (NULL: "manual rollback") is reported to the server.
 * @return MF_OK, MF_E_NOTFOUND (not tracked), MF_E_STATE (no previous version), MF_E_IO.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_rollback(mf_agent *agent, const char *model,
                                                      const char *reason);

/**
 * @brief Pins `model` to `version` (NULL: the installed one). A pinned model ignores
 * assignments of other versions unless they raise the security floor; the pin survives
 * restarts and is sent in the check-in.
 * @return MF_OK, MF_E_NOTFOUND (not tracked), MF_E_STATE (NULL and nothing installed),
 * MF_E_INVALID (bad version name), MF_E_IO.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_pin(mf_agent *agent, const char *model,
                                                 const char *version);

/** @brief Removes the pin of `model`. @return MF_OK, MF_E_NOTFOUND, MF_E_IO. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_unpin(mf_agent *agent, const char *model);

/**
 * @brief Re-reads every model's state file (and interrupted download progress) from
 * storage: for a daemon whose state directory tools changed (pin, rollback, confirm from
 * another process, under the caller's own lock).
 * @return MF_OK, MF_E_INVALID (a damaged state file), MF_E_IO.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_reload(mf_agent *agent);

/** @brief Switches metered mode (no delta-to-full fallback) at run time. */
MF_EXTERN void mf_agent_set_metered(mf_agent *agent, int metered);

/**
 * @brief Reports the transfer counters since mf_agent_new().
 * @param out receives the counters; its `struct_version` MUST be set (mf_agent_counters_init()
 * or MF_AGENT_COUNTERS_INIT). Only the fields of that version are written.
 * @param agent the agent.
 * @return MF_OK, MF_E_INVALID for a version this library does not know (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_stats(mf_agent_counters *out, const mf_agent *agent);

/**
 * @brief Prepares counters of `version` for mf_agent_stats(), as mf_agent_trust_state_init().
 * @return MF_OK, MF_E_INVALID for an unknown version (nothing written).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_counters_init(mf_agent_counters *counters,
                                                           unsigned int version);

/**
 * @brief The model file the app loads now: the fallback variant's file
 * (state_dir + "/models/<model>/fallback") while the agent is degraded and a fallback of the
 * active version is installed, else the active slot's. No network.
 * @param out receives the NUL-terminated path; `size` its bytes.
 * @param fallback_out NULL, or receives 1 when the path is the fallback's.
 * @return MF_OK, MF_E_NOTFOUND (not tracked, or nothing installed), MF_E_LIMIT (`size` too
 * small; `out` is then "").
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_model_path(char *out, size_t size, int *fallback_out,
                                                        const mf_agent *agent, const char *model);

/**
 * @brief Degrades now (the app's own decision, reason "manual"): every model with an
 * installed fallback runs it until mf_agent_restore(), whatever the automatic triggers say.
 * No network; saved before it returns, so it survives a restart. The switch is reported in
 * the next check-in.
 * @return MF_OK, MF_E_STATE (options without `degrade`), or the storage's error (the switch
 * still holds in memory).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_degrade(mf_agent *agent);

/** @brief Restores the active variants now (ends a manual or automatic degrade); as
 *  mf_agent_degrade(). */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_restore(mf_agent *agent);

/**
 * @brief The automatic triggers: reads `squeeze_fn` and feeds the controller (with its
 * hysteresis, mf/degrade.h). mf_agent_step() calls it first; a squeezed device calls it as
 * often as it wants to react (it costs a few file reads on Linux, no network).
 * @return 1 switched, 0 nothing to do, MF_E_STATE (options without `degrade`), or a
 * negative mf_err from the callback or the storage.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_squeeze(mf_agent *agent);

/**
 * @brief One inference's latency, for the deadline trigger (mf_degrade_config.deadline_us).
 * @return as mf_agent_squeeze().
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_agent_inference(mf_agent *agent, uint32_t latency_us);

/** @return the degrade controller's state (borrowed, valid until the next call), NULL
 *  without `degrade` in the options. */
MF_EXTERN const mf_degrade_status *mf_agent_degrade_status(const mf_agent *agent);

/** @return the message of the last failure, "" if none. Borrowed; valid until the next call. */
MF_EXTERN const char *mf_agent_errmsg(const mf_agent *agent);

MF_END_DECLS

#endif /* MF_AGENT_H */
