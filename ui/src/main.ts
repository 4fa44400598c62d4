// SPDX-License-Identifier: Apache-2.0
// The modelferry console (docs/console.md): sign-in, navigation by URL hash (every view is a
// link that can be shared), live refresh by polling every 2 s without reloading the page.
import './style.css';
import { ApiError, Me, canData, canOps, setToken, token, whoami } from './api';
import { h } from './dom';
import { fleetView, deviceView } from './views/fleet';
import { rolloutsView, rolloutView } from './views/rollout';
import { modelsView, modelView, healthView } from './views/models';
import { loopView, samplesView, auditView } from './views/loop';

export const REFRESH_MS = 2000;

export interface Ctx {
  me: Me;
  go(hash: string): void;
}
// A view fills its element once and returns what refreshes its data (called every 2 s).
export type View = (el: HTMLElement, ctx: Ctx, params: string[]) => Promise<() => Promise<void>>;

interface Route {
  re: RegExp;
  view: View;
  nav?: string;
  allowed: (me: Me) => boolean;
}
const all = () => true;
const routes: Route[] = [
  { re: /^#\/fleet$/, view: fleetView, nav: 'Fleet', allowed: all },
  { re: /^#\/devices\/([^/]+)$/, view: deviceView, allowed: canOps },
  { re: /^#\/models$/, view: modelsView, nav: 'Models', allowed: all },
  { re: /^#\/models\/([^/]+)$/, view: modelView, allowed: all },
  { re: /^#\/rollouts$/, view: rolloutsView, nav: 'Rollouts', allowed: all },
  { re: /^#\/rollouts\/(\d+)$/, view: rolloutView, allowed: all },
  { re: /^#\/health$/, view: healthView, nav: 'Model health', allowed: all },
  { re: /^#\/health\/([^/]+)$/, view: healthView, allowed: all },
  { re: /^#\/loop$/, view: loopView, nav: 'Loop', allowed: all },
  { re: /^#\/samples$/, view: samplesView, nav: 'Samples', allowed: canData },
  { re: /^#\/samples\/([^/]+)$/, view: samplesView, allowed: canData },
  { re: /^#\/audit$/, view: auditView, nav: 'Audit', allowed: canOps },
];

const app = document.getElementById('app')!;
let timer: number | undefined;
let generation = 0;

function signIn(message?: string): void {
  window.clearTimeout(timer);
  const input = h('input', {
    type: 'password',
    name: 'token',
    placeholder: 'mfa_…',
    autocomplete: 'off',
    'data-testid': 'token',
  }) as HTMLInputElement;
  const form = h(
    'form',
    { class: 'signin', 'data-testid': 'signin' },
    h('h1', {}, 'modelferry console'),
    h('p', {}, 'Sign in with an admin token (ops, data or admin). It is kept for this browser session only.'),
    input,
    h('button', { type: 'submit', 'data-testid': 'signin-submit' }, 'Sign in'),
    message ? h('p', { class: 'error', 'data-testid': 'signin-error' }, message) : null,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    try {
      await whoami();
      if (!location.hash || location.hash === '#/') location.hash = '#/fleet';
      await start();
    } catch (err) {
      setToken(null);
      signIn(err instanceof ApiError && err.status === 401 ? 'That token is not valid.' : String(err));
    }
  });
  app.replaceChildren(form);
  input.focus();
}

async function start(): Promise<void> {
  let me: Me;
  try {
    me = await whoami();
  } catch (err) {
    setToken(null);
    return signIn(err instanceof ApiError && err.status === 401 ? 'Signed out: the token is no longer valid.' : String(err));
  }
  await render(me);
}

async function render(me: Me): Promise<void> {
  const gen = ++generation;
  window.clearTimeout(timer);
  const hash = location.hash || '#/fleet';
  const route = routes.find((r) => r.re.test(hash));
  const nav = h(
    'nav',
    {},
    h('strong', {}, 'modelferry'),
    routes
      .filter((r) => r.nav && r.allowed(me))
      .map((r) => {
        const target = r.re.source.replace(/^\^|\$$/g, '').replace(/\\\//g, '/');
        return h('a', { href: target, class: hash.startsWith(target) ? 'active' : '' }, r.nav!);
      }),
    h(
      'span',
      { class: 'who', 'data-testid': 'who' },
      `${me.name || me.token_id} · role ${me.role}`,
      h('button', { 'data-testid': 'signout', onclick: () => { setToken(null); signIn(); } }, 'Sign out'),
    ),
  );
  const main = h('main', {});
  const status = h('div', { class: 'status', 'data-testid': 'refresh-status' });
  app.replaceChildren(nav, main, status);
  if (!route) {
    main.append(h('p', { class: 'error' }, `No view at ${hash}.`));
    return;
  }
  if (!route.allowed(me)) {
    main.append(h('p', { class: 'error', 'data-testid': 'forbidden' }, `The ${me.role} role cannot open this view.`));
    return;
  }
  const params = (hash.match(route.re) ?? []).slice(1).map(decodeURIComponent);
  const ctx: Ctx = { me, go: (x) => (location.hash = x) };
  let refresh: () => Promise<void>;
  try {
    refresh = await route.view(main, ctx, params);
  } catch (err) {
    return fail(main, err);
  }
  const tick = async () => {
    if (gen !== generation) return;
    try {
      await refresh();
      status.textContent = `updated ${new Date().toLocaleTimeString()}`;
      status.classList.remove('error');
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return start();
      status.textContent = `refresh failed: ${err instanceof Error ? err.message : String(err)}`;
      status.classList.add('error');
    }
    if (gen === generation) timer = window.setTimeout(tick, REFRESH_MS);
  };
  await tick();
}

function fail(main: HTMLElement, err: unknown): void {
  if (err instanceof ApiError && err.status === 401) {
    void start();
    return;
  }
  main.append(h('p', { class: 'error' }, err instanceof Error ? err.message : String(err)));
}

window.addEventListener('hashchange', () => (token() ? start() : signIn()));
if (token()) void start();
else signIn();
