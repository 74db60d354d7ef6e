// Loads a page in Debian's headless Chromium (through playwright-core) and
// waits until the page sets its title to "done" or "failed"; prints the
// page's #results, then the HTTP versions of the responses from
// --api_origin as Chromium's network log names them ({"api_protocols":
// ["h2"]}), and exits 0 only for "done". --disable_http2: Chromium speaks
// HTTP/1.1 only.
//   node browser.mjs --page_url=URL --api_origin=URL
//     [--chromium=/usr/bin/chromium] [--disable_http2]
//     [--screenshot=FILE] [--timeout_ms=30000]
// Certificates are not checked (the tests' servers use test certificates).
import { chromium } from "playwright-core";
import { parseFlags } from "./descriptors.mjs";

const flags = parseFlags(process.argv.slice(2));
const browser = await chromium.launch({
  executablePath: flags.chromium ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         ...(flags.disable_http2 ? ["--disable-http2"] : [])],
});
const apiProtocols = new Set();
let ok = false;
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const devtools = await context.newCDPSession(page);
  await devtools.send("Network.enable");
  devtools.on("Network.responseReceived", ({ response }) => {
    if (response.url.startsWith(flags.api_origin)) {
      apiProtocols.add(response.protocol);
    }
  });
  page.on("console", (m) => console.error(`console: ${m.text()}`));
  page.on("pageerror", (e) => console.error(`pageerror: ${e}`));
  await page.goto(flags.page_url);
  await page.waitForFunction(
      () => document.title === "done" || document.title === "failed", null,
      { timeout: Number(flags.timeout_ms ?? 30000) });
  ok = (await page.title()) === "done";
  console.log(await page.textContent("#results"));
  console.log(JSON.stringify({ api_protocols: [...apiProtocols].sort() }));
  if (flags.screenshot) await page.screenshot({ path: flags.screenshot });
} finally {
  await browser.close();
}
process.exit(ok ? 0 : 1);
