/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The way down in the agent (docs/agent.md, "Runtime degradation"): one degrade controller
 * (mf/degrade.h) per agent, its state in `degrade.state`, fed by the app's squeeze callback
 * (mf_agent_squeeze(), and first thing in every step), by inference latencies
 * (mf_agent_inference()) and by the app's own mf_agent_degrade() / mf_agent_restore(). While
 * it says degraded, mf_agent_model_path() answers each model's fallback variant when one of
 * the active version is installed (agent_fallback.c). Nothing here uses the network.
 * Every switch is kept with its reason until a check-in answer acknowledges it: at most
 * MF_DEGRADE_EVENTS (older ones are dropped; the switch count says how many there were), in
 * `degrade.switches` (written atomically at each switch, so a restart before the next
 * check-in still reports them), and sent as the check-in's "degrade" member.
 */
#include "mf_agent_int.h"

#include <stdio.h>
#include <string.h>

#define DEGRADE_STATE "degrade.state"
#define SWITCHES_FILE "degrade.switches"
#define SWITCH_LINE_MAX 48 /* "%llu %lld %d %d\n" is at most 46 */

static uint64_t now_ms(const struct mf_agent *a)
{
    return a->plat.monotonic_ms(a->plat.payload);
}

static int64_t wall_s(const struct mf_agent *a)
{
    int64_t t = a->plat.wall_clock_s ? a->plat.wall_clock_s(a->plat.payload) : 0;

    return t > 0 ? t : 0;
}

/* "<seq> <at_s> <degraded> <reason>\n" per switch, oldest first. */
static int save_switches(struct mf_agent *a)
{
    char text[MF_DEGRADE_EVENTS * SWITCH_LINE_MAX];
    size_t len = 0;

    for (size_t i = 0; i < a->dg->n_switches; i++) {
        const struct mf_agent_switch *s = &a->dg->switches[i];

        len += (size_t)snprintf(text + len, sizeof(text) - len, "%llu %lld %d %d\n",
                                (unsigned long long)s->seq, (long long)s->at_s, s->degraded,
                                s->reason);
    }
    return mf_agent__store_write(a, SWITCHES_FILE, text, len, 0);
}

static void load_switches(struct mf_agent *a)
{
    struct mf_dynbuf text;
    const char *p;

    a->dg->n_switches = 0;
    if (mf_agent__store_read(a, &text, SWITCHES_FILE, sizeof(a->dg->switches) * 8) < 0) {
        mf_ctx__clear(&a->ctx); /* none yet */
        return;
    }
    if (mf_dynbuf__append(&text, "", 1) < 0) {
        mf_dynbuf__free(&text);
        return;
    }
    for (p = (const char *)text.data; *p && a->dg->n_switches < MF_DEGRADE_EVENTS;) {
        struct mf_agent_switch *s = &a->dg->switches[a->dg->n_switches];
        unsigned long long seq = 0;
        long long at = 0;
        int used = 0;

        if (sscanf(p, "%llu %lld %d %d\n%n", &seq, &at, &s->degraded, &s->reason, &used) != 4 ||
            used == 0 || s->reason < MF_DEGRADE_MANUAL || s->reason > MF_DEGRADE_RECOVERED ||
            (s->degraded != 0 && s->degraded != 1)) {
            MF_LOG_WARN(&a->ctx, "damaged %s: its switches are not reported", SWITCHES_FILE);
            a->dg->n_switches = 0;
            break;
        }
        s->seq = seq;
        s->at_s = at;
        a->dg->n_switches++;
        p += used;
    }
    mf_dynbuf__free(&text);
}

int mf_agent__degrade_open(struct mf_agent *a, const mf_agent_options *o)
{
    size_t size = sizeof(*a->dg) + (a->n_models - 1) * sizeof(a->dg->fb[0]);
    int err;

    if (o->version < 8 || !o->degrade)
        return MF_OK;
    a->dg = mf_ctx__alloc(&a->ctx, size);
    if (!a->dg)
        return mf_fail(&a->ctx, MF_E_NOMEM, "no memory for runtime degradation");
    memset(a->dg, 0, size);
    a->dg->squeeze_fn = o->squeeze_fn;
    a->dg->squeeze_payload = o->squeeze_payload;
    err = mf_degrade_new(&a->dg->ctl, o->degrade, &a->plat, DEGRADE_STATE);
    if (err < 0)
        return mf_fail(&a->ctx, err, "cannot open the degrade state %s", DEGRADE_STATE);
    load_switches(a);
    for (size_t i = 0; i < a->n_models; i++)
        mf_agent__fallback_load(a, &a->models[i]);
    return MF_OK;
}

void mf_agent__degrade_close(struct mf_agent *a)
{
    if (!a->dg)
        return;
    mf_degrade_free(a->dg->ctl);
    mf_ctx__free(&a->ctx, a->dg);
    a->dg = NULL;
}

/* After a controller call: its new switches join the unacknowledged ones (saved). */
static int collect(struct mf_agent *a, int result)
{
    mf_degrade_event ev[MF_DEGRADE_EVENTS];
    size_t n = mf_degrade_events(a->dg->ctl, ev, MF_DEGRADE_EVENTS);
    uint64_t total = mf_degrade_status_get(a->dg->ctl)->switches;
    int err;

    for (size_t i = 0; i < n; i++) {
        if (a->dg->n_switches == MF_DEGRADE_EVENTS) { /* the oldest goes */
            memmove(a->dg->switches, a->dg->switches + 1,
                    sizeof(a->dg->switches[0]) * (MF_DEGRADE_EVENTS - 1));
            a->dg->n_switches--;
            a->dg->switches_sent = a->dg->switches_sent ? a->dg->switches_sent - 1 : 0;
        }
        a->dg->switches[a->dg->n_switches++] = (struct mf_agent_switch){.seq = total - (n - 1 - i),
                                                                        .at_s = wall_s(a),
                                                                        .degraded = ev[i].degraded,
                                                                        .reason = ev[i].reason};
        MF_LOG_INFO(&a->ctx, "%s (%s)",
                    ev[i].degraded ? "degraded to the fallback variants"
                                   : "back to the active variants",
                    mf_degrade_reason_name(ev[i].reason));
    }
    if (n == 0)
        return result;
    err = save_switches(a);
    return err < 0 ? err : result;
}

/* A manual switch (mf_agent_degrade / mf_agent_restore). */
static int set_manual(mf_agent *a, int degraded)
{
    int err;

    mf_ctx__clear(&a->ctx);
    if (!a->dg)
        return mf_fail(&a->ctx, MF_E_STATE, "runtime degradation is off (options' degrade)");
    err = collect(a, mf_degrade_set(a->dg->ctl, degraded, now_ms(a)));
    return err < 0 ? err : MF_OK;
}

int mf_agent_degrade(mf_agent *a)
{
    return set_manual(a, 1);
}

int mf_agent_restore(mf_agent *a)
{
    return set_manual(a, 0);
}

int mf_agent_squeeze(mf_agent *a)
{
    mf_degrade_signals sig = {-1, -1, -1};
    int err;

    if (!a->dg)
        return mf_fail(&a->ctx, MF_E_STATE, "runtime degradation is off (options' degrade)");
    if (!a->dg->squeeze_fn)
        return 0;
    err = a->dg->squeeze_fn(a->dg->squeeze_payload, &sig);
    if (err < 0)
        return mf_fail(&a->ctx, err, "the squeeze callback failed");
    return collect(a, mf_degrade_feed(a->dg->ctl, &sig, now_ms(a)));
}

int mf_agent_inference(mf_agent *a, uint32_t latency_us)
{
    if (!a->dg)
        return mf_fail(&a->ctx, MF_E_STATE, "runtime degradation is off (options' degrade)");
    return collect(a, mf_degrade_latency(a->dg->ctl, latency_us, now_ms(a)));
}

const mf_degrade_status *mf_agent_degrade_status(const mf_agent *a)
{
    return a->dg ? mf_degrade_status_get(a->dg->ctl) : NULL;
}

int mf_agent__degrade_request(struct mf_agent *a, struct mf_dynbuf *b)
{
    const mf_degrade_status *st;
    int err;

    if (!a->dg)
        return MF_OK;
    st = mf_degrade_status_get(a->dg->ctl);
    err = mf_dynbuf__appendf(b, "\"degrade\":{\"degraded\":%s,\"reason\":\"%s\",\"switches\":[",
                             st->degraded ? "true" : "false", mf_degrade_reason_name(st->reason));
    for (size_t i = 0; i < a->dg->n_switches && err >= 0; i++) {
        const struct mf_agent_switch *s = &a->dg->switches[i];

        err =
            mf_dynbuf__appendf(b, "%s{\"seq\":%llu,\"at\":%lld,\"degraded\":%s,\"reason\":\"%s\"}",
                               i ? "," : "", (unsigned long long)s->seq, (long long)s->at_s,
                               s->degraded ? "true" : "false", mf_degrade_reason_name(s->reason));
    }
    a->dg->switches_sent = a->dg->n_switches;
    return err >= 0 ? mf_dynbuf__append(b, "]},", 3) : err;
}

void mf_agent__degrade_answer(struct mf_agent *a)
{
    size_t sent = a->dg ? a->dg->switches_sent : 0;

    if (sent == 0)
        return;
    memmove(a->dg->switches, a->dg->switches + sent,
            sizeof(a->dg->switches[0]) * (a->dg->n_switches - sent));
    a->dg->n_switches -= sent;
    a->dg->switches_sent = 0;
    if (save_switches(a) < 0) { /* sent again: the server keeps one row per seq */
        MF_LOG_WARN(&a->ctx, "%s", a->ctx.errmsg);
        mf_ctx__clear(&a->ctx);
    }
}

int mf_agent_model_path(char *out, size_t size, int *fallback_out, const mf_agent *a,
                        const char *model)
{
    const struct agent_model *m = NULL;
    int fallback, n;

    for (size_t i = 0; i < a->n_models && !m; i++)
        m = strcmp(a->models[i].name, model) == 0 ? &a->models[i] : NULL;
    if (!m || !m->state.active.slot)
        return MF_E_NOTFOUND;
    fallback =
        a->dg && mf_degrade_status_get(a->dg->ctl)->degraded && mf_agent__fallback_usable(a, m);
    n = fallback ? snprintf(out, size, "%s/models/%s/fallback", a->state_dir, m->name)
                 : snprintf(out, size, "%s/models/%s/slot-%c", a->state_dir, m->name,
                            m->state.active.slot);
    if (n < 0 || (size_t)n >= size) {
        if (size)
            out[0] = '\0';
        return MF_E_LIMIT;
    }
    if (fallback_out)
        *fallback_out = fallback;
    return MF_OK;
}
