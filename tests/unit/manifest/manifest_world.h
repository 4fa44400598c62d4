/* SPDX-License-Identifier: Apache-2.0 */
/* The one signing world a whole test file shares (keys are made once: generation is slow).
 * Its own header, not manifest_fixture.h, because `world` is a common local name there. */
#ifndef MF_MANIFEST_WORLD_H
#define MF_MANIFEST_WORLD_H

#include "manifest_fixture.h"

extern struct fx world;

/* The file's cmocka group set-up and teardown: fx_init and fx_free of `world`. */
int world_setup(void **state);
int world_teardown(void **state);

#endif /* MF_MANIFEST_WORLD_H */
