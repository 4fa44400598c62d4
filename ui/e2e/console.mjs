// SPDX-License-Identifier: Apache-2.0
// The console in real Chromium (Debian's chromium, driven headless by playwright-core), against
// the real mf-server and mf-sim fleet that tests/integration/console_browser.sh starts: sign-in
// with each role, every view renders, a rollout with a P99 regression halts while its page is
// open and the page shows the halt and the breached line within 10 s (its plots from the server's
// history), versions over time and device classes in Fleet, per-class health, a device's pending
// pin apart from what it runs, the Loop's two distillation runs plotted by round and Samples
// showing the uplinked images with the student's and teacher's answers, the ops-only buttons are
// absent for the data role and a forged request with its token is refused (403). A screenshot
// per view is written to MF_SHOTS. Prints "N passed, M failed"; exits 1 on any failure.
import { chromium } from 'playwright-core';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const URL_ = env('MF_URL');
const SHOTS = env('MF_SHOTS');
const READY = env('MF_READY'); // written once the rollout's page is open: the fleet may run
const CLASSES = env('MF_CLASSES'); // written once the fleet reported with device classes
const tokens = { ops: env('MF_TOKEN_OPS'), data: env('MF_TOKEN_DATA'), admin: env('MF_TOKEN_ADMIN') };
const HALT_WITHIN_MS = 10000;
mkdirSync(SHOTS, { recursive: true });

let passed = 0;
let failed = 0;
async function check(what, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   - ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (err) {
    failed++;
    console.log(`FAIL - ${what}: ${err && err.message ? err.message.split('\n')[0] : err}`);
  }
}
const assert = (cond, msg) => {
  if (!cond) throw new Error(msg);
};

async function api(path, token, init = {}) {
  const res = await fetch(URL_ + path, { ...init, headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json().catch(() => null) };
}

async function signIn(browser, role) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log(`page error (${role}): ${e.message}`));
  await page.goto(`${URL_}/ui/`);
  await page.getByTestId('token').fill(tokens[role]);
  await page.getByTestId('signin-submit').click();
  await page.getByTestId('who').filter({ hasText: `role ${role}` }).waitFor({ timeout: 10000 });
  return { context, page };
}

// Opens `hash`, waits for `testid` (the view's data), screenshots it as ROLE-NAME.png.
async function view(page, role, name, hash, testid) {
  await page.goto(`${URL_}/ui/${hash}`);
  await page.getByTestId(testid).first().waitFor({ timeout: 10000 });
  await page.getByTestId('refresh-status').filter({ hasText: 'updated' }).waitFor({ timeout: 10000 });
  await page.screenshot({ path: `${SHOTS}/${role}-${name}.png`, fullPage: true });
}

// Each [name, hash, testid] in turn.
async function views(page, role, list) {
  for (const [name, hash, testid] of list) await view(page, role, name, hash, testid);
}

const browser = await chromium.launch({
  executablePath: process.env.MF_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
console.log(`     chromium up after ${(performance.now() / 1000).toFixed(1)} s`);
try {
  await check('a wrong token is refused at sign-in', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${URL_}/ui/`);
    await page.getByTestId('token').fill('mfa_notatoken');
    await page.getByTestId('signin-submit').click();
    await page.getByTestId('signin-error').waitFor({ timeout: 5000 });
    assert((await page.evaluate(() => sessionStorage.getItem('mf.token'))) === null, 'token kept');
    await context.close();
  });

  // ops: the rollout's page is open while the fleet runs v2 with twice v1's latency.
  const ops = await signIn(browser, 'ops');
  const { page } = ops;
  await check('ops: the token is in sessionStorage only', async () => {
    const where = await page.evaluate(() => ({ s: sessionStorage.getItem('mf.token'), l: localStorage.length, c: document.cookie }));
    assert(where.s === tokens.ops && where.l === 0 && where.c === '', JSON.stringify(where));
  });
  await check('ops: the rollout page shows it running with its ops buttons', async () => {
    await view(page, 'ops', 'rollout-running', '#/rollouts/1', 'red-lines');
    assert((await page.getByTestId('rollout-state').textContent()) === 'running', 'not running');
    for (const a of ['pause', 'abort', 'rollback']) assert(await page.getByTestId(`act-${a}`).isVisible(), `no ${a} button`);
  });
  await check('ops: pause asks first, naming what will happen; cancel changes nothing', async () => {
    await page.getByTestId('act-pause').click();
    const text = await page.getByTestId('confirm-text').textContent();
    assert(/Pause rollout #1 of det v2: it stays in wave 1/.test(text), text);
    await page.screenshot({ path: `${SHOTS}/ops-rollout-confirm.png` });
    await page.getByTestId('confirm-no').click();
    const r = await api('/v1/admin/rollouts/1', tokens.ops);
    assert(r.body.state === 'running', `state ${r.body.state}`);
  });
  await check('ops: fleet rollback asks first, naming the version the fleet goes back to', async () => {
    await page.getByTestId('act-rollback').click();
    const text = await page.getByTestId('confirm-text').textContent();
    assert(/every device of the fleet is sent back to det v1/.test(text), text);
    await page.getByTestId('confirm-no').click();
  });

  writeFileSync(READY, 'open\n');
  await check(`ops: the halt and the breached P99 line show on the open page within ${HALT_WITHIN_MS / 1000} s`, async () => {
    const start = Date.now();
    const serverHalt = (async () => {
      for (;;) {
        const r = await api('/v1/admin/rollouts/1', tokens.ops);
        if (r.body && r.body.state === 'halted') return Date.now();
        if (Date.now() - start > 120000) throw new Error('the rollout did not halt within 120 s');
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const pageHalt = page
      .waitForFunction(
        () =>
          document.querySelector('[data-testid=rollout-state]')?.textContent === 'halted' &&
          /p99_latency_us/.test(document.querySelector('[data-testid=rollout-breach]')?.textContent ?? '') &&
          /breached/.test(document.querySelector('[data-testid=line-state-p99_latency_us]')?.textContent ?? ''),
        null,
        { timeout: 130000, polling: 100 },
      )
      .then(() => Date.now());
    const [tServer, tPage] = await Promise.all([serverHalt, pageHalt]);
    console.log(`     halted on the server after ${((tServer - start) / 1000).toFixed(1)} s, on the page ${((tPage - tServer) / 1000).toFixed(1)} s later`);
    assert(tPage - tServer <= HALT_WITHIN_MS, `the page took ${tPage - tServer} ms`);
    await page.screenshot({ path: `${SHOTS}/ops-rollout-halted.png`, fullPage: true });
  });
  await check('ops: the red-line plots hold the server\'s history (a page opened now sees every evaluation)', async () => {
    const hist = await api('/v1/admin/rollouts/1/history', tokens.ops);
    assert(hist.status === 200 && hist.body.at.length >= 2, `history of ${hist.body?.at?.length} evaluations`);
    const p99 = hist.body.lines.find((l) => l.metric === 'p99_latency_us');
    assert(p99 && p99.state[p99.state.length - 1] === 'breached', 'the last evaluation is not the breach');
    assert(p99.value.some((v, i) => v !== null && p99.control[i] !== null), 'no canary beside control');
    // A new session (the token lives in one tab's sessionStorage): it has seen nothing.
    const { context: freshContext, page: fresh } = await signIn(browser, 'data');
    await fresh.goto(`${URL_}/ui/#/rollouts/1`);
    const chart = fresh.getByTestId('chart-p99_latency_us');
    await chart.waitFor({ timeout: 10000 });
    const points = Number(await chart.getAttribute('data-points'));
    assert(points >= 2, `a fresh page plots ${points} points`);
    assert(/canary.*bound.*control/s.test(await chart.textContent()), 'no canary, bound and control series');
    await fresh.screenshot({ path: `${SHOTS}/data-rollout-history.png`, fullPage: true });
    await freshContext.close();
  });
  await check('ops: a halted rollout offers no pause, resume or abort', async () => {
    for (const a of ['pause', 'resume', 'abort']) assert((await page.getByTestId(`act-${a}`).count()) === 0, `${a} offered`);
  });
  await check('ops: fleet view (counts, versions over time, device classes, the device list)', async () => {
    for (let i = 0; i < 600 && !existsSync(CLASSES); i++) await new Promise((res) => setTimeout(res, 100));
    assert(existsSync(CLASSES), 'the fleet never reported its classes');
    await view(page, 'ops', 'fleet', '#/fleet', 'devices');
    await page.getByTestId('installed-det').waitFor({ timeout: 10000 });
    assert(Number(await page.getByTestId('installed-det').getAttribute('data-points')) >= 1, 'no bin plotted');
    assert(/v1/.test(await page.getByTestId('installed-det').textContent()), 'no v1 series');
    await page.getByTestId('classes').filter({ hasText: 'cam-pro' }).waitFor({ timeout: 10000 });
    const classes = await page.getByTestId('classes').textContent();
    assert(/cam-lite\s*10/.test(classes) && /cam-pro\s*10/.test(classes), `classes: ${classes}`);
    await page.getByTestId('fleet-class').selectOption('cam-pro');
    await page.getByTestId('fleet-matched').filter({ hasText: 'of 10' }).waitFor({ timeout: 5000 });
    const ids = await page.locator('[data-testid=devices] tbody tr td:first-child').allTextContents();
    assert(ids.length === 10 && ids.every((d) => Number(d.slice(4)) >= 10), `cam-pro rows: ${ids}`);
    await page.screenshot({ path: `${SHOTS}/ops-fleet-class.png`, fullPage: true });
    await page.getByTestId('fleet-class').selectOption('');
    // 20 mf-sim devices and the one that uplinked the loop's samples.
    assert((await page.getByTestId('fleet-total').textContent()).startsWith('21'), 'not 21 devices');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=devices] tbody tr').length === 21, null, { timeout: 5000 });
    await page.getByTestId('fleet-search').fill('sim-0001');
    await page.getByTestId('fleet-matched').filter({ hasText: 'of 10' }).waitFor({ timeout: 5000 });
  });
  await check('ops: device view (installed, pending apart from it, pins, scorecard)', async () => {
    const d = (await api('/v1/admin/devices/sim-00000', tokens.ops)).body;
    const runs = d.models.find((m) => m.name === 'det').running_version;
    const other = runs === 'v1' ? 'v2' : 'v1';
    const pin = await fetch(`${URL_}/v1/admin/pins/device/sim-00000/det`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${tokens.ops}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ version: other }),
    });
    assert(pin.status === 200, `pin: ${pin.status}`);
    await view(page, 'ops', 'device', '#/devices/sim-00000', 'device-models');
    assert(new RegExp(`det\\s*${runs}`).test(await page.getByTestId('device-models').textContent()), 'no det model');
    const pending = await page.getByTestId('device-pending').textContent();
    assert(new RegExp(`det\\s*${runs}\\s*${other}`).test(pending), `pending: ${pending}`);
    const card = await page.getByTestId('device-scorecard').textContent();
    assert(/P99 latency/.test(card) && /det\s*v1/.test(card), `no v1 scorecard: ${card}`);
    await fetch(`${URL_}/v1/admin/pins/device/sim-00000/det`, { method: 'DELETE', headers: { Authorization: `Bearer ${tokens.ops}` } });
  });
  await check('ops: rollouts list', () => view(page, 'ops', 'rollouts', '#/rollouts', 'rollouts'));
  await check('ops: models view', () => view(page, 'ops', 'models', '#/models', 'models'));
  await check('ops: model versions and the delta v1 -> v2 the rollout made', async () => {
    await view(page, 'ops', 'model', '#/models/det', 'versions');
    const row = page.getByTestId('deltas').locator('tbody tr', { hasText: 'v1' });
    await row.first().waitFor({ timeout: 10000 });
    assert(/v1\s*v2.*mfdelta/.test(await row.first().textContent()), 'no v1 -> v2 mfdelta row');
  });
  await check('ops: model health', async () => {
    await view(page, 'ops', 'health', '#/health/det', 'scorecard');
    const card = await page.getByTestId('scorecard').textContent();
    assert(/P99 latency/.test(card), 'no P99 row');
    // Every red-line figure the reports carry, beside the classic rows (the stats' figures).
    assert(/error rate/.test(card) && /sustained p99 from minute 0/.test(card), `no figure rows: ${card}`);
    await page.getByTestId('confidence').waitFor({ timeout: 10000 });
    const legend = await page.getByTestId('confidence').textContent();
    assert(/v1 calibration \(max_softmax, 10 scores\)/.test(legend), `no v1 calibration histogram: ${legend}`);
    const classes = await page.getByTestId('health-classes').textContent();
    assert(/class cam-lite/.test(classes) && /class cam-pro/.test(classes) && /P99 latency/.test(classes) && /error rate/.test(classes), `per class: ${classes}`);
  });
  await check('ops: loop view plots the two distillation runs round by round', async () => {
    await view(page, 'ops', 'loop', '#/loop', 'runs');
    const runs = await page.locator('[data-testid=runs] tbody tr').allTextContents();
    assert(runs.length === 2 && runs.every((r) => /fashion/.test(r)), `runs: ${runs}`);
    assert(/d1/.test(runs.join()) && /manual/.test(runs.join()), `no seed run: ${runs}`);
    for (const c of ['loop-accuracy', 'loop-samples']) {
      const chart = page.getByTestId(c);
      assert(Number(await chart.getAttribute('data-points')) === 2, `${c}: not two rounds`);
    }
    assert(/hard/.test(await page.getByTestId('loop-samples').textContent()), 'no hard samples series');
  });
  await check('ops: audit view', async () => {
    await view(page, 'ops', 'audit', '#/audit', 'audit');
    assert(/rollout\.halted/.test(await page.getByTestId('audit').textContent()), 'no halt row');
  });
  await check('ops: samples is not offered (data role)', async () => {
    assert((await page.locator('nav a', { hasText: 'Samples' }).count()) === 0, 'Samples in nav');
  });
  await ops.context.close();

  const data = await signIn(browser, 'data');
  await check('data: fleet view shows the aggregation, no device rows', async () => {
    await view(data.page, 'data', 'fleet', '#/fleet', 'versions');
    assert((await data.page.getByTestId('devices').count()) === 0, 'device rows shown');
  });
  await check('data: the rollout page has no ops buttons', async () => {
    await view(data.page, 'data', 'rollout', '#/rollouts/1', 'red-lines');
    assert((await data.page.locator('[data-testid^=act-]').count()) === 0, 'an ops button is shown');
    assert((await data.page.locator('nav a', { hasText: 'Audit' }).count()) === 0, 'Audit in nav');
  });
  await check('data: a forged rollback with its token is refused by the server (403)', async () => {
    const status = await data.page.evaluate(async () => {
      const res = await fetch('/v1/admin/rollouts/1/rollback', {
        method: 'POST',
        headers: { Authorization: `Bearer ${sessionStorage.getItem('mf.token')}`, 'Content-Type': 'application/json' },
        body: '{}',
      });
      return res.status;
    });
    assert(status === 403, `status ${status}`);
    const r = await api('/v1/admin/rollouts/1', tokens.data);
    assert(r.body.state === 'halted', `state ${r.body.state}`);
  });
  await check('data: models, health, loop and samples views', () =>
    views(data.page, 'data', [['models', '#/models', 'models'], ['health', '#/health/det', 'scorecard'],
      ['loop', '#/loop', 'runs'], ['samples', '#/samples/fashion', 'samples']]));
  await check('data: samples show the uplinked images with the student\'s and the teacher\'s answers', async () => {
    const rows = data.page.locator('[data-testid=samples] tbody tr');
    assert((await rows.count()) === 50, `${await rows.count()} rows (a page is 50)`);
    assert((await data.page.locator('[data-testid=samples] canvas.sample-img').count()) === 50, 'not an image per sample');
    const first = await rows.first().textContent();
    assert(/cam-uplink/.test(first) && /fashion d1/.test(first) && /class \d+ \(\d+ %\)\s*·\s*t1/.test(first), `row: ${first}`);
    const px = await data.page.locator('[data-testid=samples] canvas.sample-img').first().evaluate((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let lit = 0;
      for (let i = 0; i < d.length; i += 4) lit += d[i] > 0;
      return { w: c.width, lit };
    });
    assert(px.w === 28 && px.lit > 50, `image ${JSON.stringify(px)}`);
  });
  await data.context.close();

  const admin = await signIn(browser, 'admin');
  await check('admin: every view opens', () =>
    views(admin.page, 'admin', [['fleet', '#/fleet', 'devices'], ['rollout', '#/rollouts/1', 'events'],
      ['samples', '#/samples/fashion', 'samples'], ['audit', '#/audit', 'audit']]));
  await admin.context.close();
} finally {
  await browser.close();
}
console.log(`     done after ${(performance.now() / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
