/* SPDX-License-Identifier: Apache-2.0 */
/* Constant-time compare and secret wiping. */
#include "mf/ct.h"

int mf_ct_memeq(const void *a, const void *b, size_t n)
{
    const volatile unsigned char *pa = a;
    const volatile unsigned char *pb = b;
    unsigned char diff = 0;

    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(pa[i] ^ pb[i]);
    /* Map 0 -> 1 and 1..255 -> 0 without a data-dependent branch. */
    return (int)(1 & (((unsigned)diff - 1) >> 8));
}

void mf_secure_zero(void *p, size_t n)
{
    /* Writes through a volatile pointer cannot be removed as dead stores. */
    volatile unsigned char *v = p;

    while (n--)
        *v++ = 0;
}
