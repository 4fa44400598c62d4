// SPDX-License-Identifier: Apache-2.0
// Rollouts: the list, and one rollout whole: waves with their devices, every red line's value
// against its bound (the canary beside the control group), plotted over the rollout's
// evaluations (the server keeps them: GET /v1/admin/rollouts/{id}/history), the events, and for ops pause / resume / abort / fleet rollback behind a
// confirmation that says what will happen.
import { api, canOps } from '../api';
import { badge, h, iso, link, table, J, simpleView } from '../dom';
import { color, plot } from '../chart';
import type { View } from '../main';

export const rolloutsView: View = simpleView('Rollouts', async (body) => {
    const r: J = await api('/v1/admin/rollouts');
    body.replaceChildren(
      r.rollouts.length
        ? table(
            ['id', 'model', 'version', 'previous', 'state', 'wave', 'created', 'breach'],
            r.rollouts.map((x: J) => [
              link(`#/rollouts/${x.id}`, `#${x.id}`),
              x.model,
              x.version,
              x.previous,
              badge(x.state),
              x.wave + 1,
              iso(x.created_at),
              x.breach || '',
            ]),
            'rollouts',
          )
        : h('p', { class: 'muted' }, 'No rollout yet (mfctl rollout create MODEL VERSION PLAN).'),
    );
});

// What each action does, in the words the confirmation shows.
function consequence(action: string, r: J): string {
  const what = `rollout #${r.id} of ${r.model} ${r.version}`;
  switch (action) {
    case 'pause':
      return `Pause ${what}: it stays in wave ${r.wave + 1}; devices keep what they run and no further wave is admitted until it is resumed.`;
    case 'resume':
      return `Resume ${what}: the engine evaluates its red lines again and admits the next wave when wave ${r.wave + 1} has soaked.`;
    case 'abort':
      return `Abort ${what}: it is frozen where it is. Devices keep what the admitted waves gave them; nothing advances and nothing is rolled back.`;
    default:
      return `Roll back ${what}: every device of the fleet is sent back to ${r.model} ${r.previous} at its next check-in (a fleet rollback directive, kept until ops clear it).`;
  }
}

const ACTIONS: [string, string, string[]][] = [
  ['pause', 'Pause', ['running']],
  ['resume', 'Resume', ['paused']],
  ['abort', 'Abort', ['running', 'paused']],
  ['rollback', 'Fleet rollback', ['running', 'paused', 'aborted', 'done']],
];

function confirmDialog(text: string, label: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dlg = h('dialog', { 'data-testid': 'confirm' }) as HTMLDialogElement;
    const done = (ok: boolean) => {
      dlg.close();
      dlg.remove();
      resolve(ok);
    };
    dlg.append(
      h('p', { 'data-testid': 'confirm-text' }, text),
      h(
        'div',
        { class: 'controls' },
        h('button', { class: 'danger', 'data-testid': 'confirm-yes', onclick: () => done(true) }, label),
        h('button', { 'data-testid': 'confirm-no', onclick: () => done(false) }, 'Cancel'),
      ),
    );
    document.body.append(dlg);
    dlg.showModal();
  });
}

export const rolloutView: View = async (el, ctx, [id]) => {
  const head = h('section', {});
  const actions = h('div', { class: 'controls', 'data-testid': 'rollout-actions' });
  const message = h('p', { 'data-testid': 'action-result' });
  const waves = h('section', {});
  const lines = h('section', {});
  const charts = h('div', { class: 'charts' });
  const events = h('section', {});
  el.append(head, actions, message, waves, lines,
    h('h2', {}, 'Red lines over time (every evaluation of the rollout, kept by the server)'), charts, events);
  let r: J;

  const act = async (action: string, label: string) => {
    if (!(await confirmDialog(consequence(action, r), label))) return;
    try {
      r = await api(`/v1/admin/rollouts/${id}/${action}`, { method: 'POST', body: '{}' });
      message.textContent = `${label}: done, rollout is ${r.state}.`;
      message.className = '';
    } catch (err) {
      message.textContent = `${label} refused: ${err instanceof Error ? err.message : String(err)}`;
      message.className = 'error';
    }
    await refresh();
  };

  const refresh = async () => {
    let hist: J;
    [r, hist] = await Promise.all([api(`/v1/admin/rollouts/${id}`), api(`/v1/admin/rollouts/${id}/history`)]);
    const breached = r.red_lines.filter((l: J) => l.breached);
    head.replaceChildren(
      h('h1', {}, `Rollout #${r.id}: ${r.model} ${r.version} `, badge(r.state, r.state), ' '),
      h(
        'p',
        { 'data-testid': 'rollout-summary' },
        `State `,
        h('strong', { 'data-testid': 'rollout-state' }, r.state),
        ` · wave ${r.wave + 1} of ${r.waves.length} · previous ${r.previous} · ${r.reporting} devices reporting` +
          ` · control group ${r.control_devices} devices` +
          (r.state !== 'running' ? '' : r.soak_started_at ? ` · soaking since ${iso(r.soak_started_at)} (${r.soak_s} s)` : ' · waiting for devices to report'),
      ),
    );
    if (r.breach)
      head.append(
        h('p', { class: 'halt', 'data-testid': 'rollout-breach' }, `Halted by ${r.breach}`,
          breached.length ? `: ${breached.map((l: J) => `${l.metric} ${fmt(l.value)} > bound ${fmt(l.bound)}`).join('; ')}` : ''),
      );
    actions.replaceChildren();
    if (canOps(ctx.me))
      for (const [a, label, from] of ACTIONS)
        if (from.includes(r.state))
          actions.append(h('button', { class: a === 'pause' || a === 'resume' ? '' : 'danger', 'data-testid': `act-${a}`, onclick: () => act(a, label) }, label));
    waves.replaceChildren(
      h('h2', {}, 'Waves'),
      table(
        ['wave', 'kind', 'target', 'devices', 'state'],
        r.waves.map((w: J, i: number) => [i + 1, w.kind, w.kind === 'percent' ? `${w.percent} %` : w.group ?? '', w.devices, badge(i === r.wave ? 'current' : w.state)]),
        'waves',
      ),
    );
    lines.replaceChildren(
      h('h2', {}, 'Red lines (canary against bound; control group beside it)'),
      table(
        ['metric', 'rule', 'canary', 'bound', 'control', 'canary devices', 'control devices', 'state'],
        r.red_lines.map((l: J) => [
          h('span', { 'data-testid': `line-${l.metric}` }, l.metric),
          l.kind === 'relative' ? `≤ ${l.limit} × control` : `≤ ${l.limit}`,
          l.evaluated ? fmt(l.value) : `waiting: ${l.waiting_for}`,
          l.evaluated ? fmt(l.bound) : '-',
          l.kind === 'relative' && l.evaluated ? fmt(l.control) : '-',
          l.devices,
          l.kind === 'relative' ? l.control_devices : '-',
          h('span', { 'data-testid': `line-state-${l.metric}` }, badge(l.state, l.state === 'breached' ? 'bad' : l.state === 'clean' ? 'good' : '')),
        ]),
        'red-lines',
      ),
    );
    charts.replaceChildren(
      ...(hist.at.length
        ? hist.lines.map((l: J) =>
            plot(`${l.metric} (${l.kind === 'relative' ? 'canary, bound, control' : 'canary, bound'})`, hist.at, l.kind === 'relative' ? [l.value, l.bound, l.control] : [l.value, l.bound], [
              { label: 'canary', color: color(0) },
              { label: 'bound', color: '#dc2626', dash: [6, 4] },
              { label: 'control', color: '#6b7280' },
            ].slice(0, l.kind === 'relative' ? 3 : 2), { testid: `chart-${l.metric}`, xRange: [r.created_at, Math.max(hist.at[hist.at.length - 1], r.created_at + 60)] }),
          )
        : [h('p', { class: 'muted', 'data-testid': 'history-empty' }, 'No evaluation yet.')]),
    );
    events.replaceChildren(
      h('h2', {}, 'Events'),
      table(['at', 'event', 'detail'], r.events.map((e: J) => [iso(e.at), badge(e.kind), e.detail]), 'events'),
    );
  };
  return refresh;
};

function fmt(n: number): string {
  if (n === undefined || n === null) return '-';
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(2)}M`;
  if (Math.abs(n) >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(3);
}
