// npm records no lock entry for an optional dependency it could not fetch; `npm ci` then refuses the
// lockfile ("Missing: @oh-my-pi/pi-natives-darwin-arm64@ from lock file"). The registry this project
// can reach has only the linux-x64 build of @oh-my-pi/pi-natives 18.2.3, so after `npm install` we add
// an entry for each missing platform package, with the os/cpu its name states and `optional: true`.
// `npm ci` on linux-x64 skips those entries without fetching them.
// Usage: node add-missing-optional-platform-deps.mjs   (rewrites package-lock.json in place)
import * as fs from "node:fs";

const lockPath = new URL("./package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(lockPath, "utf8"));
const PLATFORM = /-(darwin|linux|win32)-(x64|arm64)$/;
let added = 0;
for (const [key, pkg] of Object.entries({ ...lock.packages })) {
	for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
		const depKey = `node_modules/${dep}`;
		if (lock.packages[depKey]) continue;
		const m = PLATFORM.exec(dep);
		if (!m) throw new Error(`${key}: optional ${dep} is missing from the lock and is not a platform package`);
		lock.packages[depKey] = { version, cpu: [m[2]], license: "MIT", optional: true, os: [m[1]] };
		added++;
	}
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => a.localeCompare(b, "en")));
fs.writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform stub entries`);
