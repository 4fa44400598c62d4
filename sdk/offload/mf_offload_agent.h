/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libmf (sdk/agent) does to the offload handles it runs: the device credential is the
 * agent's (enrollment, storage, revocation), so the agent hands it to each handle instead of
 * the app reading <state>/credential. Internal: not installed, not for apps.
 */
#ifndef MF_OFFLOAD_AGENT_H
#define MF_OFFLOAD_AGENT_H

#include "mf/offload.h"

/* Replaces the handle's bearer credential (the old one is wiped); NULL or "" clears it. A
 * credential that does not fit is refused with MF_E_LIMIT and leaves none. */
int mf_offload__set_credential(mf_offload *o, const char *credential);

#endif /* MF_OFFLOAD_AGENT_H */
