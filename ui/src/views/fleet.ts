// SPDX-License-Identifier: Apache-2.0
// Fleet: the server's aggregation (devices by state, per channel, per device class, installed
// versions per model now and over time: GET /v1/admin/models/{name}/installed) and, for ops, the device list a page at a time with search and a state filter.
// Device: one device whole (models and slots, pending and rolled-back versions, pins, groups).
import { api, canOps } from '../api';
import { ago, badge, h, iso, link, table, J, simpleView } from '../dom';
import type { View } from '../main';
import { color, plot } from '../chart';
import { DIMS, figureDims } from './models';

function card(label: string, value: number, testid: string, kind = ''): HTMLElement {
  return h('div', { class: `card ${kind}`, 'data-testid': testid }, h('div', { class: 'num' }, value), h('div', {}, label));
}

// Devices per installed version of each model over time, stacked: the server's bins.
function versionsOverTime(series: J[]): HTMLElement {
  return h(
    'div',
    { class: 'charts', 'data-testid': 'versions-over-time' },
    series.map((m: J) =>
      m.at.length
        ? plot(
            `${m.model}: devices per version (bins of ${m.bin_s} s)`,
            m.at,
            m.versions.map((v: J) => v.devices),
            m.versions.map((v: J, i: number) => ({ label: v.version, color: color(i) })),
            { stacked: true, testid: `installed-${m.model}`, xRange: [Math.max(m.since, m.at[0] - 10 * m.bin_s), m.at[m.at.length - 1] + m.bin_s] },
          )
        : h('p', { class: 'muted' }, `${m.model}: no snapshot yet (one a minute).`),
    ),
  );
}

function versionBars(models: J[]): HTMLElement {
  if (!models.length) return h('p', { class: 'muted' }, 'No device has reported an installed version yet.');
  return h(
    'div',
    { 'data-testid': 'versions' },
    models.map((m: J) => {
      const total = m.versions.reduce((a: number, v: J) => a + v.devices, 0) || 1;
      return h(
        'div',
        { class: 'model-versions' },
        h('h3', {}, m.model),
        m.versions.map((v: J) =>
          h(
            'div',
            { class: 'bar-row' },
            h('span', { class: 'bar-label' }, v.version),
            h('span', { class: 'bar' }, h('span', { class: 'fill', style: `width:${(100 * v.devices) / total}%` })),
            h('span', {}, `${v.devices} (${Math.round((100 * v.devices) / total)} %)`),
          ),
        ),
      );
    }),
  );
}

export function modelsCell(models: J[]): HTMLElement {
  return h(
    'span',
    {},
    models.map((m: J) =>
      h(
        'span',
        { class: 'chip' },
        `${m.name} ${m.running_version || m.version}`,
        m.status !== 'installed' ? badge(m.status, 'bad') : null,
        m.running_version && m.running_version !== m.version ? ` (offered ${m.version})` : null,
      ),
    ),
  );
}

export const fleetView: View = async (el, ctx) => {
  const summary = h('section', {});
  const list = h('section', {});
  el.append(h('h1', {}, 'Fleet'), summary, list);
  let q = '';
  let state = '';
  let cls = '';
  const cursors: string[] = []; // the `after` of each page shown before this one
  let after = '';

  const search = h('input', { type: 'search', placeholder: 'device id contains…', 'data-testid': 'fleet-search' }) as HTMLInputElement;
  const stateSel = h(
    'select',
    { 'data-testid': 'fleet-state' },
    ['', 'online', 'offline', 'stale'].map((s) => h('option', { value: s }, s || 'any state')),
  ) as HTMLSelectElement;
  const classSel = h('select', { 'data-testid': 'fleet-class' }, h('option', { value: '' }, 'any class')) as HTMLSelectElement;
  const rows = h('div', {});
  const pager = h('div', { class: 'pager' });
  if (canOps(ctx.me)) {
    search.addEventListener('input', () => {
      q = search.value.trim();
      after = '';
      cursors.length = 0;
      void refresh();
    });
    stateSel.addEventListener('change', () => {
      state = stateSel.value;
      after = '';
      cursors.length = 0;
      void refresh();
    });
    classSel.addEventListener('change', () => {
      cls = classSel.value;
      after = '';
      cursors.length = 0;
      void refresh();
    });
    list.append(h('h2', {}, 'Devices'), h('div', { class: 'controls' }, search, stateSel, classSel), rows, pager);
  } else {
    list.append(h('p', { class: 'muted' }, 'Device rows are for the ops role; this role sees the fleet aggregated.'));
  }

  const refresh = async () => {
    const s: J = await api('/v1/admin/fleet/summary');
    const over: J[] = await Promise.all(
      s.models.map((m: J) => api(`/v1/admin/models/${encodeURIComponent(m.model)}/installed`)),
    );
    const d = s.devices;
    summary.replaceChildren(
      h(
        'div',
        { class: 'cards' },
        card('devices', d.total, 'fleet-total'),
        card(`online (seen < ${s.online_s} s)`, d.online, 'fleet-online', 'good'),
        card('offline', d.offline, 'fleet-offline', 'warn'),
        card(`stale (not seen ${Math.round(s.stale_s / 3600)} h)`, d.stale, 'fleet-stale', 'bad'),
        card('revoked', d.revoked, 'fleet-revoked'),
      ),
      h('h2', {}, 'Versions per model'),
      versionBars(s.models),
      h('h2', {}, 'Versions per model over time'),
      versionsOverTime(over),
      h('h2', {}, 'Channels'),
      table(['channel', 'devices'], Object.entries(s.channels).map(([k, v]) => [k, v as number]), 'channels'),
      h('h2', {}, 'Device classes'),
      Object.keys(s.classes).length
        ? table(['class', 'devices'], Object.entries(s.classes).map(([k, v]) => [k, v as number]), 'classes')
        : h('p', { class: 'muted' }, 'No device has declared a class in its runtime reports.'),
    );
    // The class filter offers the classes the server counted (kept while the list refreshes).
    const want = ['', ...Object.keys(s.classes)];
    if ([...classSel.options].map((o) => o.value).join() !== want.join())
      classSel.replaceChildren(...want.map((c) => h('option', { value: c, selected: c === cls }, c || 'any class')));
    if (!canOps(ctx.me)) return;
    const qs = new URLSearchParams({ limit: '50' });
    if (q) qs.set('q', q);
    if (state) qs.set('state', state);
    if (cls) qs.set('class', cls);
    if (after) qs.set('after', after);
    const page: J = await api(`/v1/admin/fleet/devices?${qs}`);
    rows.replaceChildren(
      table(
        ['device', 'state', 'last seen', 'channel', 'models (running)'],
        page.devices.map((x: J) => [
          link(`#/devices/${encodeURIComponent(x.device_id)}`, x.device_id),
          badge(x.state),
          ago(x.last_seen, s.now),
          x.channel,
          modelsCell(x.models),
        ]),
        'devices',
      ),
    );
    const first = cursors.length * 50 + 1;
    pager.replaceChildren(
      h('span', { 'data-testid': 'fleet-matched' }, `${page.devices.length ? first : 0}–${first + page.devices.length - 1} of ${page.matched}`),
      h('button', { disabled: !cursors.length, onclick: () => { after = cursors.pop() ?? ''; void refresh(); } }, '‹ previous'),
      h('button', { disabled: !page.next, 'data-testid': 'fleet-next', onclick: () => { cursors.push(after); after = page.next; void refresh(); } }, 'next ›'),
    );
  };
  return refresh;
};

// Per device: every dimension but the fleet's count of devices running the version.
const DEVICE_DIMS = DIMS.filter(([k]) => k !== 'devices_running');

function deviceScorecard(rows: J[]): HTMLElement {
  const dims = [...DEVICE_DIMS, ...figureDims(rows)];
  return table(
    ['model', 'version', ...dims.map(([, label]) => label)],
    rows.map((v: J) => [v.model, v.version, ...dims.map(([k, , f]) => (v[k] === undefined ? '-' : f(v[k])))]),
    'device-scorecard',
  );
}

export const deviceView: View = simpleView(([id]) => ['Device ', h('code', {}, id)], async (body, [id]) => {
    const d: J = await api(`/v1/admin/devices/${encodeURIComponent(id)}`);
    // Pending: a pin the device does not run yet (it installs it at its next check-in).
    const pending = d.pins
      .map((p: J) => [p, d.models.find((m: J) => m.name === p.model)])
      .filter(([p, m]: J[]) => !m || (m.running_version || '') !== p.version)
      .map(([p, m]: J[]) => [p.model, m?.running_version || '-', h('strong', {}, p.version), `pinned ${iso(p.created_at)}`]);
    body.replaceChildren(
      h(
        'dl',
        { 'data-testid': 'device-facts' },
        h('dt', {}, 'state'), h('dd', {}, badge(d.state)),
        h('dt', {}, 'last seen'), h('dd', {}, `${ago(d.last_seen)} (${iso(d.last_seen)})`),
        h('dt', {}, 'enrolled'), h('dd', {}, iso(d.enrolled_at)),
        h('dt', {}, 'channel'), h('dd', {}, d.channel),
        h('dt', {}, 'groups'), h('dd', {}, d.groups.length ? d.groups.join(', ') : 'none'),
        h('dt', {}, 'credential'), h('dd', {}, d.revoked ? badge('revoked', 'bad') : 'valid'),
      ),
      h('h2', {}, 'Installed'),
      table(
        ['model', 'runs', 'last report', 'reported', 'sha256'],
        d.models.map((m: J) => [
          m.name,
          h('strong', {}, m.running_version || '-'),
          m.status === 'installed' ? badge('installed', 'good') : `${m.version}: ${m.status}`,
          ago(m.reported_at),
          h('code', {}, m.sha256.slice(0, 12)),
        ]),
        'device-models',
      ),
      h('h2', {}, 'Pending'),
      pending.length
        ? table(['model', 'runs', 'to install', 'why'], pending, 'device-pending')
        : h('p', { class: 'muted', 'data-testid': 'device-pending-none' }, 'Nothing pending: the device runs what it is held at.'),
      h('h2', {}, 'Rolled back and failed versions'),
      d.failures.length
        ? table(
            ['model', 'version', 'what', 'reason', 'when'],
            d.failures.map((f: J) => [f.model, f.version, badge(f.rolled_back ? 'rolled back' : 'failed', 'bad'), f.detail || '-', iso(f.at)]),
            'device-failures',
          )
        : h('p', { class: 'muted' }, 'No version of this device rolled back or failed.'),
      h('h2', {}, 'Pins'),
      d.pins.length
        ? table(['model', 'held at', 'since'], d.pins.map((p: J) => [p.model, p.version, iso(p.created_at)]), 'device-pins')
        : h('p', { class: 'muted' }, 'No pin on this device.'),
      h('h2', {}, 'Scorecard'),
      d.scorecard.length
        ? deviceScorecard(d.scorecard)
        : h('p', { class: 'muted' }, 'No runtime report from this device yet.'),
    );
});

