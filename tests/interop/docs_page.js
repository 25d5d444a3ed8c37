// Loads a documentation page of a running cipherd in headless Chromium with every request to
// any other origin refused, and prints what it rendered as JSON: the operations listed
// ("METHOD /path") and the URLs it was refused.
//
//   node docs_page.js BASE_URL PAGE      (PAGE: docs or redoc)
const { chromium } = require('playwright-core');

const FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

async function operations(page, which) {
  if (which === 'docs') {
    await page.waitForSelector('.opblock', { timeout: 30000 });
    return page.$$eval('.opblock', (blocks) => blocks.map((block) => {
      const method = block.querySelector('.opblock-summary-method').textContent.trim();
      const path = block.querySelector('.opblock-summary-path').getAttribute('data-path');
      return `${method.toUpperCase()} ${path}`;
    }));
  }
  // ReDoc: one heading per operation, its method and path in the right-hand panel.
  await page.waitForSelector('[data-section-id^="operation/"]', { timeout: 30000 });
  return page.$$eval('[data-section-id^="operation/"]', (sections) => sections.map((section) => {
    const method = section.querySelector('.http-verb').textContent.trim().toUpperCase();
    const path = section.querySelector('.http-verb').nextElementSibling.textContent.trim();
    return `${method} ${path}`;
  }));
}

(async () => {
  const [base, which] = process.argv.slice(2);
  const origin = new URL(base).origin;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: FLAGS });
  const refused = [];
  try {
    const context = await browser.newContext({ serviceWorkers: 'block' });
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (new URL(url).origin === origin) return route.continue();
      refused.push(url);
      return route.abort('blockedbyclient');
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(`${origin}/${which}`, { waitUntil: 'load' });
    const listed = await operations(page, which);
    await page.waitForLoadState('networkidle');
    process.stdout.write(JSON.stringify({ operations: listed, refused, errors }));
  } finally {
    await browser.close();
  }
})().catch((error) => { console.error(error); process.exit(1); });
