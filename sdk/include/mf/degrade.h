/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file degrade.h
 * @brief The way down on the device (docs/agent.md, "Runtime degradation"): a controller that
 * says whether the app should run its lighter fallback variant instead of the active one.
 *
 * Fed by the app or the platform port with the squeeze signals (memory pressure, thermal
 * level, battery) and with each inference's latency (repeated deadline misses), it switches
 * with hysteresis: after any switch, no automatic switch back within `hold_ms` (a switch it
 * had to hold back is counted, `suppressed`), and battery restores only above the low mark
 * plus a 5-point band. A manual degrade (mf_degrade_set()) acts at once and only a manual
 * restore ends it. Every switch is kept with its reason in a bounded list the report drains
 * (mf_degrade_events()). Never uses the network; the state (degraded or not, why, how many
 * switches) is saved crash-safely through the platform port at every switch and survives a
 * restart, after which the hold window counts from the first call. Bounded: one fixed-size
 * handle, no allocation after mf_degrade_new().
 */
#ifndef MF_DEGRADE_H
#define MF_DEGRADE_H

#include "mf/common.h"
#include "mf/sys/platform.h"

#include <stddef.h>
#include <stdint.h>

MF_BEGIN_DECLS

/** Switches kept for the report until drained (older ones are dropped and counted). */
#define MF_DEGRADE_EVENTS 8

/** Why a switch happened. */
typedef enum mf_degrade_reason {
    MF_DEGRADE_NONE = 0,     /**< never switched */
    MF_DEGRADE_MANUAL = 1,   /**< mf_degrade_set() */
    MF_DEGRADE_MEMORY = 2,   /**< memory pressure */
    MF_DEGRADE_THERMAL = 3,  /**< thermal level at or above `thermal_hot` */
    MF_DEGRADE_BATTERY = 4,  /**< battery at or below `battery_low_pct` */
    MF_DEGRADE_DEADLINE = 5, /**< `deadline_misses` latencies in a row above `deadline_us` */
    MF_DEGRADE_RECOVERED = 6 /**< every trigger clear again (a restore) */
} mf_degrade_reason;

/** Tuning; zeros take the defaults in brackets. */
typedef struct mf_degrade_config {
    uint32_t hold_ms;         /**< no automatic switch within this after a switch [60000] */
    uint32_t deadline_us;     /**< latency deadline; 0: no deadline trigger */
    uint32_t deadline_misses; /**< misses in a row that degrade [5] */
    int battery_low_pct;      /**< degrade at or below [15]; restore above it + 5 */
    int thermal_hot;          /**< degrade at this platform thermal level or above [2] */
} mf_degrade_config;

/** The squeeze signals at one moment; -1: the platform does not know. */
typedef struct mf_degrade_signals {
    int memory_pressure; /**< 1: under pressure (e.g. Linux PSI), 0: none, -1: unknown */
    int thermal;         /**< 0 normal .. 3 critical, -1 unknown */
    int battery_pct;     /**< 0..100, -1 unknown or on mains */
} mf_degrade_signals;

/** One switch. */
typedef struct mf_degrade_event {
    uint64_t at_ms; /**< the caller's monotonic clock */
    int degraded;   /**< 1: to the fallback, 0: back to the active variant */
    int reason;     /**< mf_degrade_reason */
} mf_degrade_event;

/** What the controller says now. */
typedef struct mf_degrade_status {
    int degraded;        /**< 1: run the fallback variant */
    int manual;          /**< 1: degraded by mf_degrade_set() */
    int reason;          /**< of the last switch */
    uint64_t switches;   /**< every switch since the state was first saved */
    uint64_t suppressed; /**< automatic switches the hold window held back (this run) */
    uint64_t dropped;    /**< events dropped before a drain (this run) */
} mf_degrade_status;

typedef struct mf_degrade mf_degrade;

/**
 * @brief A controller whose state lives in storage object `name` of `platform` (loaded now:
 * a missing object is a fresh state; a damaged one is refused with MF_E_INVALID, nothing is
 * made). `config` may be NULL (defaults).
 * @return MF_OK, MF_E_INVALID (bad arguments, damaged state), MF_E_NOMEM, or the port's error.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_degrade_new(mf_degrade **out,
                                                   const mf_degrade_config *config,
                                                   const mf_platform_ops *platform,
                                                   const char *name);
/** @brief Releases a controller; NULL is a no-op. */
MF_EXTERN void mf_degrade_free(mf_degrade *d);

/**
 * @brief The signals at `now_ms`: degrades on the first trigger that holds, restores when
 * none holds, each only outside the hold window.
 * @return 1 switched (and saved), 0 nothing to do or held back, a negative mf_err when the
 * switch could not be saved (the switch still holds in memory).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_degrade_feed(mf_degrade *d, const mf_degrade_signals *s,
                                                    uint64_t now_ms);
/** @brief One inference's latency (the deadline trigger); then as mf_degrade_feed() with
 *  the last signals given. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_degrade_latency(mf_degrade *d, uint32_t latency_us,
                                                       uint64_t now_ms);
/** @brief Manual degrade (1) or restore (0), at once, whatever the hold window. */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_degrade_set(mf_degrade *d, int degraded, uint64_t now_ms);
/** @brief The controller's answer now. Borrowed; valid until the next call. */
MF_EXTERN const mf_degrade_status *mf_degrade_status_get(const mf_degrade *d);
/** @brief Moves up to `n` switches not yet drained, oldest first, into `out`.
 *  @return how many. */
MF_EXTERN size_t mf_degrade_events(mf_degrade *d, mf_degrade_event *out, size_t n);
/** @return the reason's name ("memory", "thermal", ...) for logs and reports. */
MF_EXTERN const char *mf_degrade_reason_name(int reason);

MF_END_DECLS

#endif /* MF_DEGRADE_H */
