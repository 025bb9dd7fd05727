// make browser: `tidepool playground` in a real browser. Debian's chromium,
// driven by playwright-core (pinned in package-lock.json), loads the page from
// a playground on a free loopback port and checks, as a student would see it:
//   - no request leaves loopback (every other URL is aborted, and counted);
//   - the page breaks none of its own Content-Security-Policy;
//   - lesson attacks in both languages, each run under strict, standard and
//     kernel-only (the page's default choice): each card lights the layer the
//     lesson expects (examples/lessons.json's expect[policy].layer; none lit,
//     "allowed", when it expects none);
//   - the policy checker shows examples/broken-policy.json's errors with the
//     lines, columns and messages `tidepool policy check` prints.
// Screenshots go to SHOTS_DIR (default build/browser; `make browser-shots`
// writes docs/playground-*.png). Where chromium is missing or cannot start,
// the test is skipped with the reason, and exits 0.
//
// usage: node playground.test.mjs TIDEPOOL
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const bin = resolve(process.argv[2] || join(root, "build/tidepool"));
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = resolve(root, process.env.SHOTS_DIR || "build/browser");
const POLICIES = ["strict", "standard", "kernel-only"];
// Every lesson of examples/lessons.json (read below), in both languages.
let LESSONS = null;

let failures = 0;
let checks = 0;
function check(what, ok, detail) {
  checks++;
  if (ok) {
    console.log("ok   " + what);
  } else {
    failures++;
    console.log("FAIL " + what + (detail ? ": " + detail : ""));
  }
}

function skip(why) {
  console.log("# skip: make browser: " + why);
  process.exit(0);
}

// ---- the playground ---------------------------------------------------------------

function startPlayground() {
  const p = spawn(bin, ["playground", "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  p.stderr.on("data", (d) => (err += d));
  return new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error("no URL in 10 s; stderr:\n" + err)), 10000);
    p.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/^playground on (http:\/\/127\.0\.0\.1:\d+\/)$/m);
      if (m) {
        clearTimeout(timer);
        ok({ proc: p, url: m[1], stderr: () => err });
      }
    });
    p.on("exit", (code) => fail(new Error("tidepool playground exited " + code + ":\n" + err)));
  });
}

// `tidepool policy check FILE`'s errors: [{line, column, message}].
function cliErrors(file) {
  let text = "";
  try {
    execFileSync(bin, ["policy", "check", file], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    text = String(e.stderr);
  }
  const esc = file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp("^tidepool: " + esc + ":(\\d+):(\\d+): (.*)$", "gm");
  return [...text.matchAll(re)].map((m) => ({ line: +m[1], column: +m[2], message: m[3] }));
}

// ---- the run ------------------------------------------------------------------------

async function main() {
  if (!existsSync(chromiumPath)) skip(chromiumPath + " is not installed (Debian: apt-get install chromium)");
  if (!existsSync(bin)) {
    console.log("FAIL " + bin + " does not exist");
    process.exit(1);
  }
  const lessons = JSON.parse(readFileSync(join(root, "examples/lessons.json"), "utf8")).lessons;
  mkdirSync(shots, { recursive: true });

  let browser;
  try {
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      // Chromium's own sandbox needs user namespaces it cannot have as root
      // (CI, containers): headless chromium as root needs --no-sandbox. It
      // loads only our own loopback page, and every other URL is aborted.
      args: [
        ...(process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : []),
        "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
      ],
      timeout: 30000,
    });
  } catch (e) {
    skip("chromium did not start: " + String(e.message).split("\n")[0]);
  }

  const pg = await startPlayground();
  const base = new URL(pg.url);
  const context = await browser.newContext({ viewport: { width: 1600, height: 940 }, deviceScaleFactor: 1 });
  const outside = [];
  const requested = [];
  await context.route("**/*", (route) => {
    const u = new URL(route.request().url());
    if (u.protocol === "http:" && u.hostname === "127.0.0.1" && u.port === base.port) return route.continue();
    outside.push(u.href);
    return route.abort();
  });
  const page = await context.newPage();
  const console_errors = [];
  page.on("console", (m) => m.type() === "error" && console_errors.push(m.text()));
  page.on("pageerror", (e) => console_errors.push(String(e)));
  page.on("request", (r) => requested.push(r.url()));
  page.setDefaultTimeout(30000);

  try {
    await page.goto(pg.url);
    await page.waitForSelector("body[data-ready=true]");
    const on = await page.$$eval("#policies input:checked", (xs) => xs.map((x) => x.value));
    check("the page's default policies are strict, standard and kernel-only",
      JSON.stringify(on.slice().sort()) === JSON.stringify(POLICIES.slice().sort()), on.join(","));

    LESSONS = lessons.map((l) => l.id);
    check("at least ten lessons, in both languages", LESSONS.length >= 10 &&
      new Set(lessons.map((l) => l.lang)).size === 2);
    for (const id of LESSONS) {
      const lesson = lessons.find((l) => l.id === id);
      check("lesson " + id + " is in examples/lessons.json", lesson != null);
      if (lesson == null) continue;
      await page.selectOption("#lesson", id);
      check(id + ": the editor holds its code and its language is chosen",
        (await page.inputValue("#code")) === lesson.code &&
        (await page.$eval('input[name="lang"]:checked', (x) => x.value)) === lesson.lang);
      await page.click("#run");
      await page.waitForFunction((n) => {
        const cards = document.querySelectorAll("#results .card");
        return cards.length === n && [...cards].every((c) => c.dataset.state === "done");
      }, POLICIES.length);
      for (const policy of POLICIES) {
        const card = page.locator(`#results .card[data-policy="${policy}"]`);
        const shown = await card.getAttribute("data-layer");
        const lit = await card.locator(".layer.lit").evaluateAll((xs) => xs.map((x) => x.dataset.name));
        const kind = await card.getAttribute("data-kind");
        const rule = await card.locator('[data-field="rule"]').textContent();
        const want = lesson.expect[policy] && lesson.expect[policy].layer ? lesson.expect[policy].layer : "none";
        check(`${id} under ${policy}: the card shows layer ${want}`,
          shown === want && (want === "none" ? lit.length === 0 : lit.length === 1 && lit[0] === want),
          `shown ${shown}, lit [${lit}], kind ${kind}, rule ${rule}`);
        // A refusal or a limit names its rule (error.rule); an allowed run has none.
        check(`${id} under ${policy}: the card names the rule`,
          want === "none" ? rule.trim() === "\u2014" || rule.trim() === "-" || rule.trim() === "–"
            : /^[A-Za-z0-9_.:\/-]+$/.test(rule.trim()), `rule ${rule}`);
      }
      if (id === "py-read-secret") {
        // The lesson and its three cards: the page down to the lower of the two panels.
        const a = await page.locator("#code-panel").boundingBox();
        const b = await page.locator("#results-panel").boundingBox();
        const height = Math.ceil(Math.max(a.y + a.height, b.y + b.height) + 16);
        await page.screenshot({ path: join(shots, "playground-compare.png"), fullPage: true,
          clip: { x: 0, y: 0, width: 1600, height } });
      }
    }

    // The policy checker: a broken policy's errors, placed as policy check places them.
    const want = cliErrors("examples/broken-policy.json");
    check("tidepool policy check reports examples/broken-policy.json's errors", want.length >= 1);
    await page.selectOption("#policy-view", "standard");
    await page.waitForFunction(() => document.querySelector("#policy-json").textContent.includes('"name": "standard"'));
    await page.fill("#policy-edit", readFileSync(join(root, "examples/broken-policy.json"), "utf8"));
    await page.waitForSelector('#policy-status[data-ok="false"]');
    const got = await page.$$eval("#policy-errors li[data-line]", (xs) =>
      xs.map((x) => ({ line: +x.dataset.line, column: +x.dataset.column, message: x.querySelector(".msg").textContent })));
    check("the page shows each error with policy check's line, column and message",
      JSON.stringify(got) === JSON.stringify(want), JSON.stringify(got) + " vs " + JSON.stringify(want));
    const locs = await page.$$eval("#policy-errors li .loc", (xs) => xs.map((x) => x.textContent));
    check("each error names its line and column", locs.length > 0 && locs.every((t) => /^line \d+, column \d+$/.test(t)), locs.join("; "));
    await page.locator("#policy-panel").screenshot({ path: join(shots, "playground-policy.png") });

    await page.fill("#policy-edit", '{"name": "mine", "extends": "strict", "limits": {"cpu_ms": 500}}\n');
    await page.waitForSelector('#policy-status[data-ok="true"]');
    check("a good policy is shown valid", (await page.locator("#policy-errors li").count()) === 0);

    check("no request left loopback (none was attempted)", outside.length === 0, outside.join(", "));
    const foreign = requested.filter((u) => !u.startsWith(pg.url) && !u.startsWith("data:"));
    check("every request went to the playground itself", foreign.length === 0, foreign.join(", "));
    check("the page logged no error (no Content-Security-Policy violation)", console_errors.length === 0,
      console_errors.join(" | "));
  } catch (e) {
    check("the browser session ran to its end", false, e.stack || String(e));
  } finally {
    await browser.close();
    pg.proc.kill("SIGTERM");
  }
  console.log(`browser: ${checks} checks, ${failures} failures (screenshots in ${shots})`);
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.log("FAIL " + (e.stack || e));
  process.exit(1);
});
