// Loads a page in Debian's headless Chromium (through playwright-core) and
// waits until the page sets its title to "done" or "failed"; prints the
// page's #results and exits 0 only for "done".
//   node browser.mjs --page_url=URL [--chromium=/usr/bin/chromium]
//     [--screenshot=FILE] [--timeout_ms=30000]
// Certificates are not checked (the tests' servers use test certificates).
import { chromium } from "playwright-core";
import { parseFlags } from "./descriptors.mjs";

const flags = parseFlags(process.argv.slice(2));
const browser = await chromium.launch({
  executablePath: flags.chromium ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
let ok = false;
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  page.on("console", (m) => console.error(`console: ${m.text()}`));
  page.on("pageerror", (e) => console.error(`pageerror: ${e}`));
  await page.goto(flags.page_url);
  await page.waitForFunction(
      () => document.title === "done" || document.title === "failed", null,
      { timeout: Number(flags.timeout_ms ?? 30000) });
  ok = (await page.title()) === "done";
  console.log(await page.textContent("#results"));
  if (flags.screenshot) await page.screenshot({ path: flags.screenshot });
} finally {
  await browser.close();
}
process.exit(ok ? 0 : 1);
