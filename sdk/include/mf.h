/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf.h
 * @brief Umbrella header: every public module a device app links. The server and tools
 * headers (mf/sign.h: signing, mf/diff.h: patch creation) are included on their own.
 */
#ifndef MF_H
#define MF_H

#include "mf/common.h"
#include "mf/version.h"
#include "mf/error.h"
#include "mf/alloc.h"
#include "mf/log.h"
#include "mf/buf.h"
#include "mf/ct.h"
#include "mf/patch.h"
#include "mf/trust.h"
#include "mf/sys/platform.h"
#include "mf/agent.h"
#include "mf/offload.h"
#include "mf/telemetry.h"
#include "mf/degrade.h"

#endif /* MF_H */
