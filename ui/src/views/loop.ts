// SPDX-License-Identifier: Apache-2.0
// Loop: distillation runs round by round (the run's record plotted over runs); Samples
// (data role): uplinked samples with student and teacher outputs, image inputs drawn as
// images, export of the page as JSON lines; Audit: the audit log a page at a time.
import { api } from '../api';
import { badge, h, iso, link, table, J, simpleView } from '../dom';
import { color, plot } from '../chart';
import type { View } from '../main';

// The record's numbers as dotted keys ("gate.student_accuracy": 0.81).
function numbers(o: J, prefix = '', out: Record<string, number> = {}): Record<string, number> {
  if (!o || typeof o !== 'object' || Array.isArray(o)) return out;
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === 'number') out[prefix + k] = v;
    else if (v && typeof v === 'object' && !Array.isArray(v)) numbers(v, `${prefix}${k}.`, out);
  }
  return out;
}

export const loopView: View = simpleView('Loop: distillation runs', async (body) => {
    const r: J = await api('/v1/admin/distill/runs');
    const runs: J[] = r.runs ?? [];
    if (!runs.length) {
      body.replaceChildren(h('p', { class: 'muted', 'data-testid': 'loop-empty' }, 'No distillation run yet (docs/distill.md).'));
      return;
    }
    const nums = runs.map((x) => numbers(x.record));
    const keys = [...new Set(nums.flatMap((n) => Object.keys(n)))];
    const groups: [string, RegExp, string][] = [
      ['accuracy', /accuracy|agreement/, 'loop-accuracy'],
      ['offload (realised vs target)', /offload|rate/, 'loop-offload'],
      ['samples', /samples|hard|audit/, 'loop-samples'],
      ['patch bytes', /bytes|size/, 'loop-bytes'],
    ];
    const x = runs.map((run) => run.id);
    body.replaceChildren(
      table(
        ['run', 'model', 'state', 'trigger', 'version', 'parent', 'rollout', 'created', 'error'],
        runs.map((run) => [
          run.id, run.model, badge(run.state), run.trigger ?? '', run.version ?? '-', run.parent ?? '-',
          run.rollout_id ? link(`#/rollouts/${run.rollout_id}`, `#${run.rollout_id}`) : '-', iso(run.created_at), run.error ?? '',
        ]),
        'runs',
      ),
      h(
        'div',
        { class: 'charts' },
        groups.map(([title, re, testid]) => {
          const ks = keys.filter((k) => re.test(k)).slice(0, 6);
          if (!ks.length) return null;
          return plot(title, x, ks.map((k) => nums.map((n) => n[k] ?? null)), ks.map((k, i) => ({ label: k, color: color(i) })), { timeAxis: false, testid });
        }),
      ),
    );
});

// A grayscale square image (bytes, or float32 in [0, 1]) drawn on a canvas; null otherwise.
function image(b64: string): HTMLElement | null {
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  let px: number[] | null = null;
  const side = (n: number) => (Math.round(Math.sqrt(n)) ** 2 === n && n >= 64 ? Math.round(Math.sqrt(n)) : 0);
  if (side(raw.length)) px = Array.from(raw);
  else if (raw.length % 4 === 0 && side(raw.length / 4)) {
    const f = new Float32Array(raw.buffer, raw.byteOffset, raw.length / 4);
    px = Array.from(f, (v) => Math.max(0, Math.min(255, Math.round(v * 255))));
  }
  if (!px) return null;
  const n = side(px.length);
  const c = document.createElement('canvas');
  c.width = c.height = n;
  c.className = 'sample-img';
  const ctx = c.getContext('2d')!;
  const img = ctx.createImageData(n, n);
  px.forEach((v, i) => img.data.set([v, v, v, 255], i * 4));
  ctx.putImageData(img, 0, 0);
  return c;
}

function top(o: J): string {
  const probs: number[] | undefined = Array.isArray(o) ? o : o?.probs;
  if (!probs || !probs.length) return o === null || o === undefined ? '-' : JSON.stringify(o).slice(0, 40);
  let best = 0;
  probs.forEach((p, i) => (p > probs[best] ? (best = i) : 0));
  return `class ${best} (${(probs[best] * 100).toFixed(0)} %)`;
}

export const samplesView: View = async (el, _ctx, [name]) => {
  const body = h('section', {});
  let rows: J[] = [];
  const exportBtn = h('button', {
    'data-testid': 'samples-export',
    onclick: () => {
      const blob = new Blob([rows.map((r) => JSON.stringify(r)).join('\n') + '\n'], { type: 'application/x-ndjson' });
      const a = h('a', { href: URL.createObjectURL(blob), download: 'samples.jsonl' });
      a.click();
    },
  }, 'Export this page (JSON lines)');
  el.append(h('h1', {}, 'Samples'), h('div', { class: 'controls' }, exportBtn), body);
  return async () => {
    const models: J = await api('/v1/admin/models');
    const model = name ?? models.models[0]?.name;
    const pick = h('p', { class: 'controls' }, models.models.map((m: J) => link(`#/samples/${encodeURIComponent(m.name)}`, m.name)));
    if (!model) {
      body.replaceChildren(h('p', { class: 'muted', 'data-testid': 'samples-empty' }, 'No model published yet.'));
      return;
    }
    const r: J = await api(`/v1/admin/samples?model=${encodeURIComponent(model)}&limit=50`);
    rows = r.samples ?? [];
    body.replaceChildren(
      pick,
      h('h2', {}, model),
      rows.length
        ? table(
            ['input', 'device', 'model', 'kind', 'score', 'student', 'teacher', 'received'],
            rows.map((s) => [
              (s.input && image(s.input)) || h('code', {}, s.input_sha256.slice(0, 12)),
              s.device_id, `${s.model} ${s.model_version}`, s.kind, s.score.toFixed(3), top(s.output),
              s.teacher_version ? `${top(s.teacher_output)} · ${s.teacher_version}` : 'not labelled', iso(s.received_at),
            ]),
            'samples',
          )
        : h('p', { class: 'muted', 'data-testid': 'samples-empty' }, 'No sample uplinked yet.'),
    );
  };
};

export const auditView: View = simpleView('Audit log', async (body) => {
    const a: J = await api('/v1/admin/audit?limit=100');
    body.replaceChildren(
      table(
        ['at', 'actor', 'token', 'action', 'target', 'status', 'detail'],
        a.audit.map((x: J) => [x.at, x.actor || '-', x.token_id, x.action, x.target, x.status || '', x.detail]),
        'audit',
      ),
    );
});
