// SPDX-License-Identifier: Apache-2.0
// A few DOM helpers: elements from tags and children, text never parsed as HTML.
type Child = Node | string | number | null | undefined | false;

export function h(
  tag: string,
  attrs: Record<string, string | number | boolean | ((e: Event) => void)> = {},
  ...children: (Child | Child[])[]
): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (v === false) continue;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function table(head: string[], rows: Child[][], testid?: string): HTMLElement {
  return h(
    'table',
    testid ? { 'data-testid': testid } : {},
    h('thead', {}, h('tr', {}, head.map((c) => h('th', {}, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))),
  );
}

export function ago(unix: number, now = Date.now() / 1000): string {
  if (!unix) return 'never';
  const s = Math.max(0, Math.round(now - unix));
  if (s < 90) return `${s} s ago`;
  if (s < 5400) return `${Math.round(s / 60)} min ago`;
  if (s < 129600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function iso(unix: number): string {
  return unix ? new Date(unix * 1000).toISOString().replace('.000', '') : '-';
}

export function bytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(1)} KiB`;
  return `${n} B`;
}

export function link(hash: string, text: string): HTMLElement {
  return h('a', { href: hash }, text);
}

export function badge(text: string, kind = text): HTMLElement {
  return h('span', { class: `badge ${kind}` }, text);
}

// A JSON answer of the admin API, read field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type J = any;

// A view of a heading and one section that `fill` redraws at every refresh.
export function simpleView(
  title: string | ((params: string[]) => (Node | string)[]),
  fill: (body: HTMLElement, params: string[]) => Promise<void>,
) {
  return async (el: HTMLElement, _ctx: unknown, params: string[]) => {
    const body = h('section', {});
    el.append(h('h1', {}, ...(typeof title === 'string' ? [title] : title(params))), body);
    return () => fill(body, params);
  };
}
