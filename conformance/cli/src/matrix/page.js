"use strict";
// The conformance matrix page: a filter over the rows, and a cell's cases on click.
// Data comes from the JSON element #matrix-data; everything is written with textContent.
(function () {
	const data = JSON.parse(document.getElementById("matrix-data").textContent);
	const filter = document.getElementById("filter");
	const details = document.getElementById("details");
	const title = document.getElementById("details-title");
	const body = document.getElementById("details-body");
	const order = { failed: 0, unsafe: 1, divergent: 2, skipped: 3, passed: 4 };

	function el(tag, text, cls) {
		const node = document.createElement(tag);
		if (text !== undefined) node.textContent = text;
		if (cls) node.className = cls;
		return node;
	}

	function applyFilter() {
		const want = filter.value;
		for (const tr of document.querySelectorAll("#matrix tbody tr")) {
			const show = want === "" || tr.dataset.slug === want || tr.dataset.slug === "all";
			tr.classList.toggle("hidden", !show);
		}
	}

	function diffBlock(text) {
		const pre = el("pre", undefined, "diff");
		for (const line of text.split("\n")) {
			const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : undefined;
			pre.appendChild(el("span", line + "\n", cls));
		}
		return pre;
	}

	function open(button) {
		for (const b of document.querySelectorAll("button.cell.open")) b.classList.remove("open");
		button.classList.add("open");
		const row = data.rows[Number(button.dataset.row)];
		const col = Number(button.dataset.col);
		const cases = row.cells[col].cases.map((i) => data.cases[col][i]);
		cases.sort((a, b) => (order[a.bucket] ?? 0) - (order[b.bucket] ?? 0) || a.id.localeCompare(b.id));
		title.textContent = `${data.columns[col].label}: ${row.label} (${cases.length} cases)`;
		body.replaceChildren();
		const passed = cases.filter((c) => c.bucket === "passed");
		for (const c of cases) {
			if (c.bucket === "passed") continue;
			const box = el("details", undefined, "case");
			box.dataset.id = c.id;
			const summary = el("summary");
			summary.appendChild(el("span", `${c.id} ${c.name} `));
			summary.appendChild(el("span", c.status, `b-${c.bucket}`));
			if (c.pointer) summary.appendChild(el("span", ` at ${c.pointer}`));
			box.appendChild(summary);
			for (const note of c.notes ?? []) box.appendChild(el("div", note, "reason"));
			if (c.diff) box.appendChild(diffBlock(c.diff));
			if (c.diffCut) box.appendChild(el("div", `(diff cut at 20000 of ${c.diffCut} bytes; see the report)`, "reason"));
			body.appendChild(box);
		}
		if (cases.length - passed.length === 1) body.querySelector("details").open = true;
		if (passed.length > 0) {
			body.appendChild(el("p", `${passed.length} passed: ${passed.map((c) => c.id).join(" ")}`, "b-passed"));
		}
		details.hidden = false;
		details.scrollIntoView({ block: "nearest" });
	}

	filter.addEventListener("change", applyFilter);
	document.getElementById("matrix").addEventListener("click", (event) => {
		const button = event.target.closest("button.cell");
		if (button) open(button);
	});
	applyFilter();
})();
