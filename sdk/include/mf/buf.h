/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file mf/buf.h
 * @brief Caller-owned input and output buffers for streaming calls.
 *
 * A streaming call reads from `in->src + in->pos`, writes to `out->dst + out->pos`, and
 * advances both `pos` fields by what it consumed and produced. It keeps no pointer into
 * either buffer between calls, so the caller may move or reuse them freely.
 */
#ifndef MF_BUF_H
#define MF_BUF_H

#include "mf/common.h"

MF_BEGIN_DECLS

typedef struct mf_inbuf {
    const void *src; /**< start of input */
    size_t size;     /**< bytes available at src */
    size_t pos;      /**< bytes already consumed; 0 <= pos <= size */
} mf_inbuf;

typedef struct mf_outbuf {
    void *dst;   /**< start of output room */
    size_t size; /**< bytes of room at dst */
    size_t pos;  /**< bytes already written; 0 <= pos <= size */
} mf_outbuf;

MF_END_DECLS

#endif /* MF_BUF_H */
