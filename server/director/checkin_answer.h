/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A check-in answer written as JSON text while the director decides, rather than built as a
 * cJSON tree and printed: the answer carries kilobytes of envelopes (the release, roots,
 * keys) that a tree copied three times and freed again per check-in. An assignment whose
 * envelope the group's signature makes later gets a hole, filled by mf_answer__finish.
 *
 * Members are written each followed by a comma; closing an object or array replaces the
 * last one, and mf_answer__finish drops the outermost's. Keys are the writer's own literals;
 * string values are escaped.
 */
#ifndef MF_SERVER_CHECKIN_ANSWER_H
#define MF_SERVER_CHECKIN_ANSWER_H

#include "mf_dynbuf.h"

#include <stddef.h>
#include <stdint.h>

/* Holes one answer may have: an assignment per model of the request. */
#define MF_ANSWER_HOLES_MAX 64

struct mf_answer {
    struct mf_dynbuf text;
    size_t hole[MF_ANSWER_HOLES_MAX]; /* offsets in text where the holes are */
    size_t n_holes;
};

void mf_answer__init(struct mf_answer *a);
void mf_answer__free(struct mf_answer *a);

/* Each returns MF_OK or the dynbuf's error (MF_E_NOMEM, MF_E_LIMIT). key NULL: an array
 * element. */
int mf_answer__open(struct mf_answer *a, const char *key, char bracket); /* '{' or '[' */
int mf_answer__close(struct mf_answer *a, char bracket);                 /* '}' or ']' */
int mf_answer__str(struct mf_answer *a, const char *key, const char *s);
int mf_answer__str_n(struct mf_answer *a, const char *key, const char *s, size_t n);
int mf_answer__count(struct mf_answer *a, const char *key, uint64_t v);
/* The member's value is JSON text the caller appends (to a->text) next, then mf_answer__end. */
int mf_answer__raw_begin(struct mf_answer *a, const char *key);
int mf_answer__end(struct mf_answer *a);
/* A string member whose value comes later: envs[i] of mf_answer__finish for the i-th hole. */
int mf_answer__hole(struct mf_answer *a, const char *key);

/* The release of one assignment (docs/protocol.md, "Check-ins that send only what
 * changed"). */
struct mf_answer_release {
    const char *model, *version, *sha256; /* the hints beside the envelope */
    uint64_t size;
    const char *variant; /* a hint for logs, as version is ("" or NULL: none) */
    const char *digest;  /* the release digest, 64 hex */
    const char *held;    /* the release digest the device holds (and runs), or NULL */
    /* Appends the release envelope to `text` as a quoted JSON string. */
    int (*quoted_fn)(struct mf_dynbuf *text, void *payload);
    void *quoted_payload;
};

/* Opens an assignment object (an array element) with its release: model, the hints, the
 * blob path and the envelope, or only model and version when the device holds this very
 * release (`held` equals `digest`): then *held_out = 1 and the caller leaves out what only a
 * download needs (the deltas). The caller writes the assignment envelope and closes it.
 * MF_OK, the dynbuf's error or quoted_fn's. */
int mf_answer__release(int *held_out, struct mf_answer *a, const struct mf_answer_release *r);

/* "chunk_list": the blob of a chunk-tree release's chunk hashes (docs/protocol.md), beside
 * the release of an assignment the device downloads. MF_OK or the dynbuf's error. */
int mf_answer__chunk_list(struct mf_answer *a, const char *sha256);

/* The answer's text with hole i holding envs[i] (lens[i] bytes) as a JSON string (envs may
 * be NULL without holes); NULL when out of memory. a->text is taken or left as it was; free
 * `a` either way. Release the text with mf_free(NULL, p). */
char *mf_answer__finish(size_t *len_out, struct mf_answer *a, uint8_t *const *envs,
                        const size_t *lens);

#endif /* MF_SERVER_CHECKIN_ANSWER_H */
