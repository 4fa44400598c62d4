/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The director's variant rule (docs/rollouts.md, "Model variants"): which variant of the
 * release the precedence (director_policy.h) picked one device gets, from the device class
 * its check-in declares. Pure, like the precedence: tested case by case (test_director_variant).
 *
 * A variant is allowed for a class when every need it states holds:
 *   min_ram_mb <= ram_mb, min_storage_mb <= storage_mb, size <= storage_mb MiB,
 *   accelerator "" or the class's own, int8 / fp16 only where the class has them,
 *   class_tag "" or the class's own tag.
 * The device gets the allowed released variant of the lowest rank (ties: the name in byte
 * order); with none allowed, or no class declared, or a version without variants, the
 * version's own blob (as before variants existed). Pins, rollbacks and waves choose the
 * version; this rule only chooses among that version's variants. The version's fallback
 * variant (published with fallback=1) is never the one picked: it is offered beside the
 * picked one, for the device to degrade to (director/checkin_degrade.h).
 */
#ifndef MF_SERVER_DIRECTOR_VARIANT_H
#define MF_SERVER_DIRECTOR_VARIANT_H

#include "common/req_parse.h"
#include "store/store.h"

/* Whether class `c` may run a variant with `needs` and `size` bytes. */
int mf_variant__allows(const struct mf_store_variant_needs *needs, uint64_t size,
                       const struct mf_device_class *c);

/* The index in `vs` (n of them, every one of one version) of the variant class `c` gets, or
 * -1 for the version's own blob. Staged variants (no release) and the fallback are never
 * picked. */
int mf_variant__pick(const struct mf_store_variant *vs, size_t n, const struct mf_device_class *c);

#endif /* MF_SERVER_DIRECTOR_VARIANT_H */
