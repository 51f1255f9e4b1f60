// Opens an xsp-trace HTML report (a local file) in headless chromium and reports, as JSON on
// stdout, what its DOM shows: text that overflows its box (SVG labels outside their plot or
// over the bars, overlapping SVG texts, table cells whose content is wider than the cell), each
// plot's ticks and axis labels, the shortened names and their hover text, and the notes' style.
// Writes a full-page screenshot and one of the first screen.
//
// Usage: node report_dom_check.js REPORT.html FULL.png TOP.png [ID=SECTION.png ...]
//   ID=SECTION.png  a screenshot of the first 900 px from the element with that id (a section)
// Environment: CHROMIUM (default /usr/bin/chromium), VIEWPORT_WIDTH (default 1400).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [report, fullShot, topShot, ...sectionShots] = process.argv.slice(2);
const width = Number(process.env.VIEWPORT_WIDTH || 1400);
const CHROMIUM_FLAGS = ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-dev-shm-usage'];

function inspect() {
  const TOL = 0.5;
  const r2o = (r) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
  const overflows = [];
  const overlaps = [];
  const plots = [];
  for (const svg of document.querySelectorAll('svg.plot')) {
    const box = svg.getBoundingClientRect();
    const plotLeft = svg.dataset.plotLeft === undefined ? null : box.left + Number(svg.dataset.plotLeft);
    const texts = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim() !== '');
    const rects = texts.map((t) => t.getBoundingClientRect());
    const title = texts.length ? texts[0].textContent : '';
    texts.forEach((t, i) => {
      const r = rects[i];
      const label = t.childNodes[0] ? t.childNodes[0].textContent : t.textContent;
      if (r.left < box.left - TOL || r.right > box.right + TOL || r.top < box.top - TOL || r.bottom > box.bottom + TOL) {
        overflows.push({ where: 'svg', plot: title, text: label, rect: r2o(r), box: r2o(box) });
      }
      if (t.classList.contains('label') && plotLeft !== null && r.right > plotLeft - 1) {
        overflows.push({ where: 'label over the bars', plot: title, text: label, right: r.right, plotLeft });
      }
      for (let j = i + 1; j < texts.length; j++) {
        const q = rects[j];
        const w = Math.min(r.right, q.right) - Math.max(r.left, q.left);
        const h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
        if (w > 1 && h > 1) overlaps.push({ plot: title, a: label, b: texts[j].textContent });
      }
    });
    plots.push({
      kind: [...svg.classList].filter((c) => c !== 'plot').join(' '),
      title,
      ticks: [...svg.querySelectorAll('.axis text.tick')].map((t) => t.textContent),
      units: [...svg.querySelectorAll('.axis text.unit')].map((t) => t.textContent),
      labels: [...svg.querySelectorAll('text.label')].map((t) => ({
        shown: t.childNodes[0].textContent,
        hover: t.querySelector('title') ? t.querySelector('title').textContent : null,
      })),
    });
  }
  for (const cell of document.querySelectorAll('td, th')) {
    if (cell.scrollWidth > cell.clientWidth + 1 || cell.scrollHeight > cell.clientHeight + 1) {
      overflows.push({ where: 'cell', text: cell.textContent, scrollWidth: cell.scrollWidth, clientWidth: cell.clientWidth });
    }
  }
  // A cell whose text runs over more than one line: a wrapped name or number.
  const lines = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
  };
  const wrapped = [...document.querySelectorAll('td.name, td.num')].filter((td) => lines(td) > 1).map((td) => td.textContent);
  const tables = [...document.querySelectorAll('.table-wrap')].map((wrap) => {
    let h = wrap.previousElementSibling;
    while (h && h.tagName !== 'H2') h = h.previousElementSibling;
    const table = wrap.querySelector('table');
    const box = table.getBoundingClientRect();
    return { id: h ? h.id : null, top: box.top + window.scrollY, width: box.width, scrolls: wrap.scrollWidth > wrap.clientWidth + 1 };
  });
  const note = document.querySelector('.note');
  const noteStyle = note ? { color: getComputedStyle(note).color, background: getComputedStyle(note).backgroundColor, text: note.textContent } : null;
  return {
    viewport: window.innerWidth,
    pageWidth: document.documentElement.scrollWidth,
    overflows,
    overlaps,
    plots,
    tables,
    wrapped,
    shortNames: [...document.querySelectorAll('span.short')].map((s) => ({ shown: s.textContent, hover: s.title })),
    notes: noteStyle,
    notInThisTrace: [...document.querySelectorAll('#not-in-this-trace ~ ul li')].map((li) => li.id),
    headings: [...document.querySelectorAll('h2')].map((h) => h.textContent),
    intro: document.querySelector('h1 + p') ? document.querySelector('h1 + p').textContent : '',
  };
}

(async () => {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'xsp-report-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width, height: 1000 },
  });
  try {
    // A local file and nothing else: the report must need no network.
    const requests = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (!url.startsWith('file://') && !url.startsWith('data:')) { requests.push(url); return route.abort(); }
      return route.continue();
    });
    const page = context.pages()[0] || (await context.newPage());
    await page.goto('file://' + path.resolve(report));
    await page.waitForLoadState('load');
    const result = await page.evaluate(inspect);
    await page.screenshot({ path: fullShot, fullPage: true });
    await page.screenshot({ path: topShot });
    for (const spec of sectionShots) {
      const [id, file] = spec.split('=');
      const y = await page.evaluate((i) => document.getElementById(i).getBoundingClientRect().top + window.scrollY, id);
      await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: Math.max(y - 10, 0), width, height: 900 } });
    }
    result.requests = requests;
    process.stdout.write(JSON.stringify(result));
  } finally {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
})().catch((e) => {
  process.stderr.write(`report_dom_check: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
