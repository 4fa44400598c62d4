// SPDX-License-Identifier: Apache-2.0
// The admin API from the page: same origin, the token from sessionStorage only (it is gone
// when the browser session ends), JSON in and out. The server checks every route's role.
const KEY = 'mf.token';

export type Role = 'ops' | 'data' | 'admin';
export interface Me {
  role: Role;
  token_id: string;
  name: string;
}

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
  ) {
    super(message);
  }
}

export function token(): string | null {
  return sessionStorage.getItem(KEY);
}
export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function api(path: string, init: RequestInit = {}): Promise<any> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token() ?? ''}` };
  if (init.body) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { ...init, headers, cache: 'no-store' });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) throw new ApiError(res.status, body?.message ?? `${res.status} ${res.statusText}`);
  return body;
}

export async function whoami(): Promise<Me> {
  return api('/v1/admin/whoami');
}

export const canOps = (me: Me) => me.role === 'ops' || me.role === 'admin';
export const canData = (me: Me) => me.role === 'data' || me.role === 'admin';
