// Opens a trace in the Perfetto UI (served on 127.0.0.1) in headless chromium, expands every
// track group, looks up slices through the UI's own search box, and reports what the page
// shows as JSON on stdout.
//
// Usage: node perfetto_ui_check.js BASE_URL TRACE_URL SCREENSHOT.png SEARCH1 [SEARCH2 ...]
//   BASE_URL   where the UI's index.html is served (http://127.0.0.1:PORT/)
//   SEARCHn    slice names typed into the omnibox; for each, the selected slice and the text
//              of the details panel are reported.
// Environment: CHROMIUM (default /usr/bin/chromium), UI_TIMEOUT_MS (default 60000).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [baseUrl, traceUrl, screenshot, ...searches] = process.argv.slice(2);
const timeout = Number(process.env.UI_TIMEOUT_MS || 60000);
const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

const bigintSafe = (value) => JSON.parse(JSON.stringify(value, (k, v) => (typeof v === 'bigint' ? Number(v) : v)));

async function selectBySearch(page, name) {
  const omnibox = page.locator('input').first();
  await omnibox.click();
  await omnibox.fill('');
  await page.keyboard.type(name);
  await page.keyboard.press('Enter');  // runs the search
  await page.waitForFunction(() => {
    const s = window.app.trace.search;
    return s && s.searchResults && s.searchResults.totalResults > 0;
  }, null, { timeout: 10000 }).catch(() => {});
  await page.keyboard.press('Enter');  // steps to (and selects) the first match
  await page.waitForFunction((n) => {
    const s = window.app.trace.selection.selection;
    return s && s.kind === 'track_event' && s.name === n;
  }, name, { timeout: 10000 }).catch(() => {});
  await page.waitForTimeout(500);  // the details panel renders after the selection
  return page.evaluate(() => {
    const s = window.app.trace.selection.selection;
    const node = s.trackUri ? window.app.trace.workspace.getTrackByUri(s.trackUri) : undefined;
    const panel = document.querySelector('.pf-details-shell');
    return {
      selection: { kind: s.kind, name: s.name, depth: s.depth, category: s.category, ts: s.ts, dur: s.dur },
      track: node ? node.name : null,
      trackParent: node && node.parent ? node.parent.name : null,
      details: panel ? panel.innerText : '',
    };
  });
}

(async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'xsp-perfetto-ui-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1600, height: 1000 },
    timeout,
  });
  const pageErrors = [];
  try {
    // Nothing but the local server: no analytics, no native-accelerator probe on :9001.
    await context.route('**/*', (route) => (route.request().url().startsWith(baseUrl) ? route.continue() : route.abort()));
    const page = context.pages()[0] || (await context.newPage());
    page.on('pageerror', (e) => pageErrors.push(String(e.message || e)));
    page.setDefaultTimeout(timeout);
    await page.goto(`${baseUrl}#!/viewer?url=${encodeURIComponent(traceUrl)}`);
    await page.waitForFunction(() => window.app && window.app.trace, null, { timeout });
    await page.waitForSelector('.pf-track', { timeout });
    // The workspace fills in as the UI's plugins add tracks: wait until it stops growing.
    const countTracks = () => page.evaluate(() => window.app.trace.workspace.flatTracks.length);
    let previous = -1;
    let current = await countTracks();
    while (current !== previous) {
      await page.waitForTimeout(500);
      previous = current;
      current = await countTracks();
    }
    await page.evaluate(() => {
      for (const n of window.app.trace.workspace.flatTracks) if (n.children.length) n.expand();
      window.raf.scheduleFullRedraw();
    });
    await page.waitForTimeout(1000);

    const tracks = await page.evaluate(() => window.app.trace.workspace.flatTracksOrdered.map((n) => ({
      name: n.name, parent: n.parent ? n.parent.name : null, children: n.children.length,
    })));
    // What the timeline renders: one .pf-track element per shown track, ref = its path of names.
    const shownTitles = await page.$$eval('.pf-track', (els) => els.map((e) => e.getAttribute('ref')));
    const sliceCount = await page.evaluate(async () => {
      const it = (await window.app.trace.engine.query('select count(*) as n from slice')).iter({});
      return it.valid() ? Number(it.get('n')) : -1;
    });
    const found = {};
    for (const name of searches) found[name] = await selectBySearch(page, name);
    await page.screenshot({ path: screenshot });
    const title = await page.title();
    process.stdout.write(JSON.stringify(bigintSafe({ title, tracks, shownTitles, sliceCount, found, pageErrors })));
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
})().catch((e) => {
  process.stderr.write(`perfetto_ui_check: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
