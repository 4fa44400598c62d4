// SPDX-License-Identifier: Apache-2.0
// Models and versions (sizes, release state, security floors, provenance from the loop) and
// Model health (the server's per-version scorecard, each version beside the one before it).
import { api } from '../api';
import { badge, bytes, h, iso, link, table, J, simpleView } from '../dom';
import type { View } from '../main';
import { color, plot } from '../chart';

export const modelsView: View = simpleView('Models', async (body) => {
    const m: J = await api('/v1/admin/models');
    body.replaceChildren(
      m.models.length
        ? table(
            ['model', 'versions', 'promoted', 'newest', 'health'],
            m.models.map((x: J) => {
              const promoted = x.versions.filter((v: J) => v.promoted).pop();
              const newest = x.versions[x.versions.length - 1];
              return [
                link(`#/models/${encodeURIComponent(x.name)}`, x.name),
                x.versions.length,
                promoted ? promoted.version : '-',
                newest ? `${newest.version} (${iso(newest.created_at)})` : '-',
                link(`#/health/${encodeURIComponent(x.name)}`, 'scorecard'),
              ];
            }),
            'models',
          )
        : h('p', { class: 'muted' }, 'No model published yet (mfctl publish).'),
    );
});

function provenance(p: J): string {
  if (!p) return 'published by hand';
  const parts = [`run ${p.id ?? p.run ?? ''}`];
  for (const k of ['parent', 'trainer', 'teacher', 'samples', 'gate']) if (p[k] !== undefined) parts.push(`${k} ${typeof p[k] === 'object' ? JSON.stringify(p[k]) : p[k]}`);
  return parts.join(' · ');
}

export const modelView: View = simpleView(([name]) => ['Model ', h('code', {}, name), ' ', link(`#/health/${encodeURIComponent(name)}`, '(health)')], async (body, [name]) => {
    const m: J = await api(`/v1/admin/models/${encodeURIComponent(name)}`);
    const all: J[] = m.models[0]?.versions ?? [];
    const versions: J[] = all.slice(-20).reverse();
    const [prov, deltas] = await Promise.all([
      Promise.all(
        versions.map((v) => api(`/v1/admin/models/${encodeURIComponent(name)}/versions/${encodeURIComponent(v.version)}`).catch(() => null)),
      ),
      api(`/v1/admin/models/${encodeURIComponent(name)}/deltas`),
    ]);
    // Deltas name their ends by blob digest: the version of each, from the listing.
    const bySha = new Map<string, J>(all.map((v) => [v.sha256, v]));
    const end = (sha: string) => bySha.get(sha)?.version ?? h('code', {}, sha.slice(0, 12));
    body.replaceChildren(
      table(
        ['version', 'state', 'size', 'sequence', 'security floor', 'created', 'sha256', 'release digest', 'provenance'],
        versions.map((v, i) => [
          v.version,
          v.promoted ? badge('promoted', 'good') : v.released ? badge('released') : badge('staged'),
          bytes(v.size),
          v.sequence ?? '-',
          v.security_floor ?? '-',
          iso(v.created_at),
          h('code', {}, v.sha256.slice(0, 12)),
          v.release_sha256 ? h('code', {}, v.release_sha256.slice(0, 12)) : '-',
          provenance(prov[i]?.provenance),
        ]),
        'versions',
      ),
      h('h2', {}, 'Deltas'),
      deltas.deltas.length
        ? table(
            ['from', 'to', 'size', 'of the full model', 'format', 'made'],
            deltas.deltas.map((d: J) => {
              const to = bySha.get(d.to_sha256);
              return [
                end(d.from_sha256),
                end(d.to_sha256),
                bytes(d.size),
                to?.size ? `${((100 * d.size) / to.size).toFixed(1)} %` : '-',
                d.format,
                iso(d.created_at),
              ];
            }),
            'deltas',
          )
        : h('p', { class: 'muted' }, 'No delta made yet (the server makes them when a release has devices on an older version).'),
    );
});

// The scorecard dimensions (Model health for the fleet, the Device view for one device).
export const DIMS: [string, string, (n: number) => string][] = [
  ['p50_us', 'P50 latency', (n) => `${n} µs`],
  ['p95_us', 'P95 latency', (n) => `${n} µs`],
  ['p99_us', 'P99 latency', (n) => `${n} µs`],
  ['peak_memory', 'peak memory', bytes],
  ['offload_rate', 'offload rate', (n) => `${(100 * n).toFixed(1)} %`],
  ['teacher_agreement', 'teacher agreement', (n) => `${(100 * n).toFixed(1)} %`],
  ['unhealthy_devices', 'unhealthy devices', String],
  ['install_failed', 'install failures', String],
  ['devices_reporting', 'devices reporting', String],
  ['devices_running', 'devices running', String],
];

// The red-line figures beyond DIMS (the stats' "figures": cold and sustained P99, steady
// memory, energy per inference, the robustness rates, the stratified accuracy), every one any
// of `vs` has data for, in the server's order, as dimensions keyed `fig:<name>`: each value is
// copied onto its version so that the tables read them as they read DIMS.
const IN_DIMS = new Set(['p99_latency_us', 'peak_memory', 'offload_rate', 'teacher_agreement']);

function figureUnit(name: string): (n: number) => string {
  const metric = name.split('@')[0];
  if (metric.endsWith('_us')) return (n) => `${Math.round(n)} µs`;
  if (metric.endsWith('_memory')) return bytes;
  if (metric.endsWith('_uj')) return (n) => `${(n / 1000).toFixed(3)} mJ`;
  if (metric === 'sustained_rate') return (n) => `${n.toFixed(1)} /s`;
  return (n) => `${(100 * n).toFixed(1)} %`;
}

function figureLabel(name: string): string {
  const [metric, after] = name.split('@');
  const words = metric.replace(/_(us|uj)$/, '').replace(/_/g, ' ');
  return after === undefined ? words : `${words} from minute ${after}`;
}

export function figureDims(vs: J[]): typeof DIMS {
  const names: string[] = [];
  for (const v of vs) {
    for (const [k, f] of Object.entries((v.figures ?? {}) as Record<string, J>)) {
      if (IN_DIMS.has(k)) continue;
      if (!names.includes(k)) names.push(k);
      v[`fig:${k}`] = f.value;
    }
  }
  return names.map((n) => [`fig:${n}`, figureLabel(n), figureUnit(n)]);
}

// The score histograms per version (the server's bins: the fleet's, and the calibration set
// uploaded with a release), as the share of each one's scores per bin so that versions with
// more traffic compare with the rest.
function confidence(rows: J[]): HTMLElement {
  if (!rows.length) return h('p', { class: 'muted', 'data-testid': 'confidence-empty' }, 'No confidence scores reported for this model.');
  const n: number = rows[0].bins.length;
  const x = Array.from({ length: n }, (_, i) => (i + 0.5) / n);
  return plot(
    'Confidence score histogram (share of scores per bin)',
    x,
    rows.map((r) => r.bins.map((b: number) => b / r.scores)),
    rows.map((r, i) => ({ label: `${r.version} ${r.source} (${r.method}, ${r.scores} scores)`, color: color(i) })),
    { timeAxis: false, xLabel: 'score', testid: 'confidence', width: 720 },
  );
}

// Versions side by side, each figure with its change against the version before it.
function scorecard(vs: J[], dims: typeof DIMS, testid: string): HTMLElement {
  return table(
    ['dimension', ...vs.map((v) => v.version)],
    dims.map(([k, label, f]) => [
      label,
      ...vs.map((v, i) => {
        const x = v[k];
        if (x === undefined || x === null) return '-';
        const prev = i > 0 ? vs[i - 1][k] : undefined;
        const delta = prev ? ` (${x >= prev ? '+' : ''}${(((x - prev) / prev) * 100).toFixed(0)} % vs ${vs[i - 1].version})` : '';
        return `${f(x)}${delta}`;
      }),
    ]),
    testid,
  );
}

export const healthView: View = simpleView('Model health', async (body, [name]) => {
    const models: J = await api('/v1/admin/models');
    const pick = h(
      'p',
      { class: 'controls' },
      models.models.map((m: J) => link(`#/health/${encodeURIComponent(m.name)}`, m.name)),
    );
    const model = name ?? models.models[0]?.name;
    if (!model) {
      body.replaceChildren(h('p', { class: 'muted' }, 'No model published yet.'));
      return;
    }
    const [s, rates]: J[] = await Promise.all([
      api(`/v1/admin/models/${encodeURIComponent(model)}/stats`),
      api(`/v1/admin/offload/rates?model=${encodeURIComponent(model)}`),
    ]);
    const vs: J[] = s.versions;
    body.replaceChildren(
      pick,
      h('h2', {}, model),
      scorecard(vs, [...DIMS, ...figureDims(vs)], 'scorecard'),
      h('p', { class: 'muted' }, `Reports skipped (malformed or unknown version): ${s.skipped_reports}`),
      h('h2', {}, 'Per device class'),
      s.classes.length
        ? h(
            'div',
            { 'data-testid': 'health-classes' },
            s.classes.map((c: J) =>
              h('section', {}, h('h3', {}, `class ${c.class}`), scorecard(c.versions, [...DIMS.filter(([k]) => k !== 'devices_running'), ...figureDims(c.versions)], `scorecard-${c.class}`)),
            ),
          )
        : h('p', { class: 'muted' }, 'No device declared a class with its reports.'),
      h('h2', {}, 'Confidence'),
      confidence(rates.rates.filter((r: J) => r.scores > 0)),
    );
});
