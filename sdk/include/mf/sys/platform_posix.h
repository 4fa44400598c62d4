/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/sys/platform_posix.h
 * @brief The POSIX reference port of mf/sys/platform.h (library mf_port_posix, device/port/).
 *
 * Storage names map to files under one state directory, opened once as a directory
 * descriptor so every later call is relative to it (openat and friends). Randomness comes
 * from /dev/urandom, clocks from clock_gettime() and time(). The port never allocates.
 */
#ifndef MF_SYS_PLATFORM_POSIX_H
#define MF_SYS_PLATFORM_POSIX_H

#include "mf/common.h"
#include "mf/degrade.h"
#include "mf/sys/platform.h"

MF_BEGIN_DECLS

/** State of the POSIX port; caller memory, valid until mf_platform_posix_close(). */
typedef struct mf_platform_posix {
    int dirfd; /**< descriptor of the state directory; private */
} mf_platform_posix;

/**
 * @brief Opens (creating it, one level, mode 0700, if missing; a created one is synced into
 * its parent so it survives a power cut) `state_dir` and fills `ops_out` with the POSIX
 * implementation bound to `posix`.
 * @param ops_out receives the ops table; its payload points at `posix`.
 * @param posix caller memory that MUST outlive every use of `ops_out`.
 * @param state_dir path of the state directory.
 * @return MF_OK, MF_E_IO when the directory cannot be created, made durable or opened.
 * Ownership: release with mf_platform_posix_close(posix).
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int
mf_platform_posix_init(mf_platform_ops *ops_out, mf_platform_posix *posix, const char *state_dir);

/** @brief Closes the state directory; calling it again is a no-op. */
MF_EXTERN void mf_platform_posix_close(mf_platform_posix *posix);

/** The Linux powercap counter mf_platform_posix_energy() reads when given no path. */
#define MF_PLATFORM_POSIX_ENERGY_PATH "/sys/class/powercap/intel-rapl:0/energy_uj"

/**
 * @brief An mf_telemetry_energy_fn (mf/telemetry.h) on a Linux powercap `energy_uj` file:
 * reads the cumulative microjoules it holds.
 * @param payload the file's path (const char *), or NULL for MF_PLATFORM_POSIX_ENERGY_PATH.
 * @param out receives the counter.
 * @return MF_OK; MF_E_NOTFOUND when the platform has no such counter or it is not readable
 * by this process (powercap files are root-only on recent kernels): the energy figure is
 * then absent; MF_E_IO when it holds no number.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_platform_posix_energy(void *payload, uint64_t *out);

/** Longest `root` mf_platform_posix_squeeze() takes, in bytes. */
#define MF_PLATFORM_POSIX_ROOT_MAX 128
/** Memory pressure for mf_platform_posix_squeeze(): PSI "some avg10" at or above, in %. */
#define MF_PLATFORM_POSIX_PSI_PRESSURE 10.0

/**
 * @brief The squeeze signals of a Linux device for the degrade controller (mf/degrade.h):
 * memory pressure from PSI (`/proc/pressure/memory`, "some avg10" at or above
 * MF_PLATFORM_POSIX_PSI_PRESSURE), the thermal level from `thermal_zone0/temp` (below 70 °C
 * 0, below 80 °C 1, below 90 °C 2, else 3) and the battery from
 * `/sys/class/power_supply/BAT0/capacity`; each one the platform lacks is -1 (unknown: it
 * triggers nothing).
 * @param root prefix of those paths ("" or NULL: the real ones; tests give a directory), at
 * most MF_PLATFORM_POSIX_ROOT_MAX bytes.
 * @return MF_OK, MF_E_INVALID without `out` or with a longer root.
 */
MF_EXTERN MF_WARN_UNUSED_RESULT int mf_platform_posix_squeeze(mf_degrade_signals *out,
                                                              const char *root);

MF_END_DECLS

#endif /* MF_SYS_PLATFORM_POSIX_H */
