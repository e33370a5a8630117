// Browser test of the conformance matrix page, in real headless Chromium (Debian's /usr/bin/chromium).
//
// It renders a page with `session-conformance report --html` from the reports in $MATRIX_REPORTS
// (space-separated; default: the two fixture reports of conformance/cli/tests/matrix), opens it from
// disk (file://, no server), and checks that every implementation is a column, that the filter by
// group leaves that group's row, and that a cell opens its cases' divergence reasons and diffs.
// $SESSION_CONFORMANCE names the binary (default: target/release/session-conformance);
// $CHROMIUM the browser; $MATRIX_SCREENSHOT, when set, is where a screenshot goes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";

const root = resolve(import.meta.dirname, "../..");
const bin = process.env.SESSION_CONFORMANCE ?? join(root, "target/release/session-conformance");
const reports = (process.env.MATRIX_REPORTS ?? "conformance/cli/tests/matrix/impl-a.jsonl conformance/cli/tests/matrix/impl-b.jsonl")
	.split(/\s+/)
	.filter(Boolean)
	.map((p) => resolve(root, p));

// The columns the page must show: one per header record of each report.
function expectedColumns() {
	const labels = [];
	for (const file of reports) {
		for (const line of readFileSync(file, "utf8").split("\n")) {
			if (!line.trim()) continue;
			const record = JSON.parse(line);
			if (record.type !== "header") continue;
			const a = record.adapter ?? {};
			labels.push(`${a.implementation ?? "?"} ${a.version ?? "?"} (${record.profile ?? a.profile ?? "?"})`);
		}
	}
	return labels;
}

test("the matrix page works from disk in headless Chromium", async () => {
	const dir = mkdtempSync(join(tmpdir(), "matrix-test-"));
	const page_path = join(dir, "matrix.html");
	execFileSync(bin, ["report", ...reports, "--corpus", join(root, "corpus/cases"), "--html", page_path], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
	const browser = await puppeteer.launch({
		executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
		headless: true,
		args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${join(dir, "profile")}`],
	});
	try {
		const page = await browser.newPage();
		const errors = [];
		page.on("pageerror", (e) => errors.push(String(e)));
		const requests = [];
		page.on("request", (r) => requests.push(r.url()));
		await page.goto(pathToFileURL(page_path).href, { waitUntil: "load" });

		// Every implementation is a column.
		const columns = await page.$$eval("#matrix thead th.column", (ths) => ths.map((th) => th.textContent));
		assert.deepEqual(columns, expectedColumns());
		assert.ok(columns.length >= 2, "at least two implementations");

		// The filter by group: pick the first group; only "all cases" and that group stay visible.
		const group = await page.$eval("#filter optgroup[label=groups] option", (o) => o.value);
		await page.select("#filter", group);
		const visible = await page.$$eval("#matrix tbody tr:not(.hidden)", (trs) => trs.map((tr) => tr.dataset.slug));
		assert.deepEqual(visible, ["all", group]);
		const hidden = await page.$$eval("#matrix tbody tr.hidden", (trs) => trs.length);
		assert.ok(hidden > 0, "other rows are hidden");

		// A cell of that group that holds a divergent or failed case opens its cases, reasons and diffs.
		const cell = await page.evaluateHandle((slug) => {
			const row = document.querySelector(`#matrix tbody tr[data-slug="${slug}"]`);
			return [...row.querySelectorAll("button.cell")].find((b) => b.querySelector(".b-divergent, .b-failed"));
		}, group);
		assert.ok(await cell.evaluate((b) => b !== undefined), `a cell of ${group} with a divergent or failed case`);
		assert.equal(await page.$eval("#details", (d) => d.hidden), true, "no details before a click");
		await cell.click();
		assert.equal(await page.$eval("#details", (d) => d.hidden), false);
		const title = await page.$eval("#details-title", (h) => h.textContent);
		assert.match(title, new RegExp(`: ${group.slice("group:".length)} \\(`));
		await page.$$eval("#details details.case", (ds) => ds.forEach((d) => (d.open = true)));
		const diffs = await page.$$eval("#details pre.diff", (pres) => pres.map((p) => p.textContent));
		assert.ok(diffs.length > 0, "the cell shows diffs");
		assert.ok(diffs.every((d) => d.includes("---") && d.includes("+++")), "unified diffs");
		const reasons = await page.$$eval("#details .reason", (rs) => rs.map((r) => r.textContent));
		assert.ok(reasons.length > 0, "the cell shows notes (divergence reasons, errors)");
		assert.ok(await page.$eval("#details pre.diff", (p) => p.checkVisibility()), "the diff is on screen");

		// The clause view: a row per clause of the specification (docs/spec/), chosen with the same filter.
		const clause = await page.$eval('#filter optgroup[label="clauses of the specification"] option', (o) => o.value);
		assert.match(clause, /^clause:[a-z]+\.\d+$/);
		await page.select("#filter", clause);
		const shown = await page.$$eval("#matrix tbody tr:not(.hidden)", (trs) => trs.map((tr) => tr.dataset.slug));
		assert.deepEqual(shown, ["all", clause]);

		if (process.env.MATRIX_SCREENSHOT) await page.screenshot({ path: process.env.MATRIX_SCREENSHOT, fullPage: true });
		assert.deepEqual(errors, [], "no script errors");
		assert.deepEqual(requests.filter((u) => !u.startsWith("file:")), [], "nothing fetched beyond the file");
	} finally {
		await browser.close();
		rmSync(dir, { recursive: true, force: true });
	}
});
