/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/manifest.h
 * @brief Deprecated umbrella: mf/trust.h (verify, device) plus mf/sign.h (sign, server and
 * tools). Kept compiling for one release; include the one you link instead. Removed in 0.2.
 */
#ifndef MF_MANIFEST_H
#define MF_MANIFEST_H

#include "mf/trust.h"
#include "mf/sign.h"

#endif /* MF_MANIFEST_H */
