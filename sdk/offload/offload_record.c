/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue record payload, explicit little-endian so a queue written on one device can be
 * read by tools on any host:
 *   u8 format (1), u8 kind, u8 method, u8 output_kind, u32 n_classes, i64 created_s,
 *   u64 content hash, 16-byte id, f32 score, u8 version length + version,
 *   u32 input_len + input, n_classes x f32 output.
 * Decoding checks every length against the payload size, so a corrupted record that still
 * passes its CRC cannot make a reader overrun.
 */
#include "mf_offload_int.h"

#include <string.h>

#define FIXED_SIZE (4 + 4 + 8 + 8 + MF_OFFLOAD_ID_LEN + 4 + 1 + 4)
#define RECORD_FORMAT 1

size_t mf_offload__record_size(size_t input_len, size_t n_classes, size_t version_len)
{
    return FIXED_SIZE + version_len + input_len + 4 * n_classes;
}

uint8_t *mf_offload__put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 4;
}

uint8_t *mf_offload__put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

static uint8_t *put_f32(uint8_t *p, float f)
{
    uint32_t v;

    memcpy(&v, &f, 4);
    return mf_offload__put_u32(p, v);
}

uint32_t mf_offload__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t mf_offload__get_u64(const uint8_t *p)
{
    return (uint64_t)mf_offload__get_u32(p) | (uint64_t)mf_offload__get_u32(p + 4) << 32;
}

float mf_offload__get_f32(const uint8_t *p)
{
    uint32_t v = mf_offload__get_u32(p);
    float f;

    memcpy(&f, &v, 4);
    return f;
}

int mf_offload__record_encode(uint8_t *buf, size_t cap, size_t *len_out,
                              const struct mf_offload_record *r, const float *outputs)
{
    size_t vlen = strlen(r->model_version);
    size_t need = mf_offload__record_size(r->input_len, r->n_classes, vlen);
    uint8_t *p = buf;

    *len_out = 0;
    if (need > cap || vlen > MF_OFFLOAD_NAME_MAX)
        return MF_E_LIMIT;
    *p++ = RECORD_FORMAT;
    *p++ = (uint8_t)r->kind;
    *p++ = (uint8_t)r->method;
    *p++ = (uint8_t)r->output_kind;
    p = mf_offload__put_u32(p, r->n_classes);
    p = mf_offload__put_u64(p, (uint64_t)r->created_s);
    p = mf_offload__put_u64(p, r->hash);
    memcpy(p, r->id, MF_OFFLOAD_ID_LEN);
    p += MF_OFFLOAD_ID_LEN;
    p = put_f32(p, r->score);
    *p++ = (uint8_t)vlen;
    memcpy(p, r->model_version, vlen);
    p += vlen;
    p = mf_offload__put_u32(p, r->input_len);
    memcpy(p, r->input, r->input_len);
    p += r->input_len;
    for (uint32_t i = 0; i < r->n_classes; i++)
        p = put_f32(p, outputs[i]);
    *len_out = (size_t)(p - buf);
    return MF_OK;
}

int mf_offload__record_decode(struct mf_offload_record *r, const uint8_t *buf, size_t len)
{
    const uint8_t *p = buf, *end = buf + len;
    size_t vlen;

    memset(r, 0, sizeof(*r));
    if (len < FIXED_SIZE || p[0] != RECORD_FORMAT || p[1] > MF_OFFLOAD_KIND_AUDIT ||
        p[2] > MF_OFFLOAD_ENTROPY || p[3] > MF_OFFLOAD_PROBS)
        return MF_E_INVALID;
    r->kind = p[1];
    r->method = p[2];
    r->output_kind = p[3];
    r->n_classes = mf_offload__get_u32(p + 4);
    r->created_s = (int64_t)mf_offload__get_u64(p + 8);
    r->hash = mf_offload__get_u64(p + 16);
    memcpy(r->id, p + 24, MF_OFFLOAD_ID_LEN);
    r->score = mf_offload__get_f32(p + 24 + MF_OFFLOAD_ID_LEN);
    p += 28 + MF_OFFLOAD_ID_LEN;
    vlen = *p++;
    if (vlen == 0 || vlen > MF_OFFLOAD_NAME_MAX || (size_t)(end - p) < vlen + 4)
        return MF_E_INVALID;
    memcpy(r->model_version, p, vlen);
    r->model_version[vlen] = '\0';
    p += vlen;
    r->input_len = mf_offload__get_u32(p);
    p += 4;
    if (r->n_classes < 2 || r->n_classes > MF_OFFLOAD_MAX_CLASSES || r->input_len == 0 ||
        (size_t)(end - p) != (size_t)r->input_len + 4u * r->n_classes)
        return MF_E_INVALID;
    r->input = p;
    r->output = p + r->input_len;
    return MF_OK;
}
