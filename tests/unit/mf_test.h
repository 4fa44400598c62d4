/* SPDX-License-Identifier: Apache-2.0 */
/* Preamble of every cmocka test binary: cmocka's required includes, then the public API. */
#ifndef MF_TEST_H
#define MF_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mf.h"

#endif /* MF_TEST_H */
