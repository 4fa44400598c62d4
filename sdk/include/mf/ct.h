/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/ct.h
 * @brief Constant-time comparison and secret wiping.
 */
#ifndef MF_CT_H
#define MF_CT_H

#include "mf/common.h"

MF_BEGIN_DECLS

/**
 * @brief Compares `n` bytes in time that depends only on `n`.
 * Use it for digests, MACs, signatures and credentials.
 * @return 1 when equal, 0 otherwise.
 */
MF_EXTERN int mf_ct_memeq(const void *a, const void *b, size_t n);

/** @brief Overwrites `n` bytes with zeros in a way the compiler may not elide. */
MF_EXTERN void mf_secure_zero(void *p, size_t n);

MF_END_DECLS

#endif /* MF_CT_H */
