/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mf_offload_ask(): score, decide, then answer locally, queue, or ask the teacher with the
 * policy's deadline as libcurl's whole-request timeout (connect included), so the call
 * returns within the deadline plus scheduling slack however slow or dead the server is.
 * A failed sync ask falls back to the local answer and keeps the sample as a queued hard
 * sample, so the data team still gets it.
 */
#include "mf_offload_int.h"
#include "mf_hex.h"

#include <string.h>

int mf_offload__http(mf_offload *o)
{
    struct mf_http_config cfg = {0};
    int err;

    if (o->http_ready)
        return MF_OK;
    cfg.connect_timeout_ms = o->opts.connect_timeout_ms;
    cfg.request_timeout_ms = o->opts.request_timeout_ms;
    cfg.max_body = 64 * 1024 + 24 * MF_OFFLOAD_MAX_CLASSES;
    err = mf_http__init(&o->http, &o->ctx, &cfg);
    if (err < 0)
        return err;
    o->http_ready = 1;
    return MF_OK;
}

/* Upper bound of a sample's JSON size, charged to the byte budget before it is encoded. */
static size_t wire_estimate(const mf_offload_sample *s)
{
    return 4 * ((s->input_len + 2) / 3) + 16 * s->n_classes + 512;
}

static int build_ask(mf_offload *o, struct mf_dynbuf *body, const struct mf_offload_record *r,
                     const char *rid)
{
    int err = mf_dynbuf__appendf(body, "{\"request_id\":\"%s\",\"deadline_ms\":%u,\"sample\":", rid,
                                 (unsigned)o->policy.deadline_ms);
    if (err >= 0)
        err = mf_offload__wire_sample(body, o->model, r);
    if (err >= 0)
        err = mf_dynbuf__append(body, "}", 1);
    if (err < 0)
        return mf_fail(&o->ctx, err, "cannot build the offload request (%s)", mf_strerror(err));
    return MF_OK;
}

int mf_offload__ask_teacher(mf_offload *o, mf_offload_answer *ans, float *probs, int *reason,
                            const struct mf_offload_record *r)
{
    struct mf_http_request req = {0};
    struct mf_http_response resp;
    struct mf_dynbuf body;
    char rid[MF_OFFLOAD_ID_HEX + 1];
    uint64_t t0 = o->plat.monotonic_ms(o->plat.payload);
    mf_offload_telemetry *t = mf_offload__telemetry_slot(o);
    int err;

    *reason = MF_OFFLOAD_REASON_SERVER_ERROR;
    err = mf_offload__http(o);
    if (err < 0)
        return err;
    mf_hex__encode(rid, r->id, MF_OFFLOAD_ID_LEN);
    mf_dynbuf__init(&body, &o->ctx.alloc, 2 * o->max_record + 1024);
    err = build_ask(o, &body, r, rid);
    if (err < 0) {
        mf_dynbuf__free(&body);
        return err;
    }
    o->http.cfg.connect_timeout_ms = (long)o->policy.deadline_ms;
    o->http.cfg.request_timeout_ms = (long)o->policy.deadline_ms;
    req.method = "POST";
    req.url = o->ask_url;
    req.bearer = o->credential[0] ? o->credential : NULL;
    req.content_type = "application/json";
    req.body = body.data;
    req.body_len = body.len;
    mf_http__response_init(&resp, &o->http);
    err = mf_http__perform(&o->http, &resp, &req);
    ans->latency_ms = (uint32_t)(o->plat.monotonic_ms(o->plat.payload) - t0);
    t->bytes_up += body.len;
    t->bytes_down += resp.body.len;
    if (err < 0 && ans->latency_ms >= o->policy.deadline_ms)
        *reason = MF_OFFLOAD_REASON_TIMEOUT;
    if (err >= 0 && resp.status != 200)
        err = mf_http__fail_status(&o->http, &resp, "offload ask");
    if (err >= 0)
        err = mf_offload__wire_parse_answer(&o->ctx, ans, probs, r->n_classes, rid,
                                            (const char *)resp.body.data, resp.body.len);
    mf_http__response_free(&resp);
    mf_dynbuf__free(&body);
    return err;
}

/* Argmax and its softmax probability (at the policy's temperature) of the student. */
static void local_answer(mf_offload_answer *out, const mf_offload_sample *s, float temperature)
{
    size_t best = 0;

    for (size_t i = 1; i < s->n_classes; i++) {
        if (s->output[i] > s->output[best])
            best = i;
    }
    out->label = (int)best;
    if (mf_offload_score(&out->confidence, MF_OFFLOAD_MAX_SOFTMAX, s->output_kind, s->output,
                         s->n_classes, temperature) < 0)
        out->confidence = 0.0f;
}

/* Queues the sample; failures keep the local answer (the message stays in the handle). */
static void enqueue(mf_offload *o, mf_offload_answer *out, const mf_offload_sample *s, int kind,
                    int method)
{
    mf_offload_telemetry *t = mf_offload__telemetry_slot(o);
    struct mf_offload_record r;
    size_t len = 0;
    int err;

    err = mf_offload__record_fill(o, &r, &len, s, kind, method, out->score);
    if (err >= 0)
        err = mf_offload__queue_append(&o->queue, o->scratch, len, r.hash);
    if (err < 0) {
        MF_LOG_WARN(&o->ctx, "sample not queued: %s", o->ctx.errmsg);
        return;
    }
    if (err == MF_AGAIN)
        return; /* an identical input is already queued */
    out->queued = 1;
    t->queued++;
    if (kind == MF_OFFLOAD_KIND_AUDIT)
        t->audit++;
}

static void sync_ask(mf_offload *o, mf_offload_answer *out, float *teacher_probs,
                     const mf_offload_sample *s, int method)
{
    mf_offload_telemetry *t = mf_offload__telemetry_slot(o);
    struct mf_offload_record r;
    mf_offload_answer teacher = *out;
    size_t len = 0;
    int reason = MF_OFFLOAD_REASON_OFFLINE, err = MF_E_STATE;

    if (o->server_url)
        err = mf_offload__record_fill(o, &r, &len, s, MF_OFFLOAD_KIND_HARD, method, out->score);
    if (err >= 0)
        err = mf_offload__ask_teacher(o, &teacher, teacher_probs, &reason, &r);
    if (err >= 0) {
        *out = teacher;
        out->by_teacher = 1;
        out->reason = MF_OFFLOAD_REASON_TEACHER;
        t->teacher++;
        return;
    }
    out->latency_ms = teacher.latency_ms;
    out->reason = reason;
    t->fell_back++;
    enqueue(o, out, s, MF_OFFLOAD_KIND_HARD, method);
}

static int check_sample(mf_offload *o, const mf_offload_sample *s)
{
    if (!s->input || s->input_len == 0 || s->input_len > o->opts.max_input_bytes)
        return mf_fail(&o->ctx, MF_E_INVALID, "sample input of %zu bytes not in 1..%zu",
                       s->input_len, o->opts.max_input_bytes);
    return MF_OK;
}

int mf_offload_ask(mf_offload_answer *out, float *teacher_probs, mf_offload *o,
                   const mf_offload_sample *s)
{
    const mf_offload_policy *p = o->has_policy ? &o->policy : NULL;
    int method = p ? p->method : MF_OFFLOAD_MAX_SOFTMAX;
    float temperature = p ? p->temperature : 1.0f;
    mf_offload_telemetry *t = mf_offload__telemetry_slot(o);
    mf_offload_decision d;
    int err;

    memset(out, 0, sizeof(*out));
    mf_ctx__clear(&o->ctx);
    err = check_sample(o, s);
    if (err >= 0 && mf_offload_score(&out->score, method, s->output_kind, s->output, s->n_classes,
                                     temperature) < 0)
        err = mf_fail(&o->ctx, MF_E_INVALID, "sample output is not %zu finite %s (2..%d classes)",
                      s->n_classes, s->output_kind == MF_OFFLOAD_PROBS ? "probabilities" : "logits",
                      MF_OFFLOAD_MAX_CLASSES);
    if (err < 0)
        return err;
    memcpy(out->model_version, o->model_version, sizeof(out->model_version));
    local_answer(out, s, temperature);
    t->asked++;
    mf_offload__hist_add(t->hist, out->score);
    mf_offload__hist_add(o->calib, out->score);
    if (p && p->model_version[0] && strcmp(p->model_version, o->model_version) != 0) {
        d.route = MF_OFFLOAD_ROUTE_LOCAL;
        d.reason = MF_OFFLOAD_REASON_POLICY_STALE;
    } else {
        float th = mf_offload__threshold(o);

        if (p && th >= 0.0f && out->score < th)
            t->uncertain++;
        mf_offload_decide(&d, p, &o->budget, out->score, th, wire_estimate(s),
                          o->plat.monotonic_ms(o->plat.payload),
                          (uint32_t)(mf_offload__rng_next(&o->rng) >> 32), o->link);
    }
    out->route = d.route;
    out->reason = d.reason;
    if (d.reason == MF_OFFLOAD_REASON_RATE_CAP || d.reason == MF_OFFLOAD_REASON_BYTE_BUDGET)
        t->capped++;
    if (d.route == MF_OFFLOAD_ROUTE_SYNC)
        sync_ask(o, out, teacher_probs, s, method);
    else if (d.route == MF_OFFLOAD_ROUTE_QUEUE || d.route == MF_OFFLOAD_ROUTE_AUDIT)
        enqueue(o, out, s,
                d.route == MF_OFFLOAD_ROUTE_AUDIT ? MF_OFFLOAD_KIND_AUDIT : MF_OFFLOAD_KIND_HARD,
                method);
    return MF_OK;
}
