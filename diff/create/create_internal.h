/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: pieces of the encoder (server/tools side) shared across diff/create/. */
#ifndef MF_DIFF_CREATE_INTERNAL_H
#define MF_DIFF_CREATE_INTERNAL_H

#include "mf/diff.h"
#include "mf_ctx.h"

#include <stddef.h>
#include <stdint.h>

struct mf_diff {
    struct mf_ctx ctx;
    mf_diff_options opts;
};

/*
 * One bsdiff control entry in absolute coordinates: new[new_pos, +add) = old[old_pos, +add)
 * plus byte differences, then new[new_pos + add, +copy) is literal. Entries tile new.
 */
struct mf_cover {
    uint64_t new_pos;
    uint64_t old_pos;
    uint64_t add;
    uint64_t copy;
};

struct mf_cover_list {
    struct mf_cover *v;
    size_t n, cap;
};

/*
 * A region of new that a container parser aligned with a region of old of the same size
 * (same tensor or file name): a strong candidate for COPY or NUMERIC with `word`.
 */
struct mf_align_hint {
    uint64_t new_pos;
    uint64_t old_pos;
    uint64_t len;
    unsigned int word; /* 1, 2 or 4; 0 when the element type is unknown */
};

struct mf_hint_list {
    struct mf_align_hint *v;
    size_t n, cap;
};

/* bsdiff 4.3 cover search over a divsufsort suffix array of `old`. */
int mf_diff__cover_search(struct mf_cover_list *out, struct mf_ctx *ctx, const uint8_t *old,
                          size_t old_len, const uint8_t *new_img, size_t new_len,
                          unsigned int threads);
void mf_diff__cover_list_free(struct mf_ctx *ctx, struct mf_cover_list *l);

/* Container-aware alignment (safetensors, tar); leaves `out` empty for unknown formats. */
int mf_diff__container_hints(struct mf_hint_list *out, struct mf_ctx *ctx, const uint8_t *old,
                             size_t old_len, const uint8_t *new_img, size_t new_len);
void mf_diff__hint_list_free(struct mf_ctx *ctx, struct mf_hint_list *l);
int mf_diff__hint_push(struct mf_hint_list *l, struct mf_ctx *ctx, const struct mf_align_hint *h);

/*
 * Appends the `elem` bytes at `item` to one of the encoder's lists ({v, n, cap} of
 * `elem`-byte entries), growing a full one to twice its capacity (`first` for an empty
 * list). Returns the list's array, moved or not. NULL after mf_fail() ("`what` of N
 * entries"), with the array freed and *n, *cap zeroed: `l->v = mf_diff__list_push(...)`
 * loses nothing, and every caller drops the list on a failure anyway.
 */
void *mf_diff__list_push(struct mf_ctx *ctx, void *v, size_t *n, size_t *cap, size_t elem,
                         size_t first, const char *what, const void *item);

/* Writes the mf format patch. */
int mf_diff__create_mf(uint8_t **patch_out, size_t *patch_len_out, struct mf_diff *d,
                       const uint8_t *old, size_t old_len, const uint8_t *new_img, size_t new_len);
/* Writes a classic BSDIFF40 patch. */
int mf_diff__create_bsdiff40(uint8_t **patch_out, size_t *patch_len_out, struct mf_diff *d,
                             const uint8_t *old, size_t old_len, const uint8_t *new_img,
                             size_t new_len);

#endif /* MF_DIFF_CREATE_INTERNAL_H */
