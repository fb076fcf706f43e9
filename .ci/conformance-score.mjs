// Scores one run of the MCP conformance suite's server leg, for
// .ci/conformance.sh.
//
//   node conformance-score.mjs <suite package dir> <revision> <results dir> [leg] [skip prefix]
//
// [leg] is `server` (the default) or `client` (.ci/conformance-client.sh:
// the client leg's results are `<scenario>-<time>/`, under `auth/` for the
// auth scenarios). Scored scenarios whose name starts with [skip prefix]
// (for example `auth/`, left to another issue) are listed as skipped and
// not counted.
//
// <results dir> is the suite's `-o` directory: one `server-<scenario>-<time>/`
// per scenario, holding `checks.json` unless the scenario crashed. The
// scenarios scored are the `server:` list of the suite's own
// `requirements/<revision>.yaml`.
//
// A scored scenario passes only when its checks ran: no FAILURE, and at least
// one SUCCESS among the scenario's own checks. The suite itself ticks a
// scenario whose checks were all WARNING/INFO/SKIPPED ("0 passed, 0 failed"),
// and its `wire-schema-valid` check succeeds even when the server never
// answered (it then validated only the harness's own messages), so neither
// counts as a pass here. A missing checks.json (the scenario threw) is a
// failure.
//
// Prints one line per scored scenario, then `<revision>: N/M scenarios passed`,
// then the not-scored scenarios (for information). Exit status: 0 when every
// scored scenario passed, 1 otherwise, 2 on a usage or input error.

import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';

const [pkgDir, revision, resultsDir, leg = 'server', skipPrefix = ''] = process.argv.slice(2);
if (!pkgDir || !revision || !resultsDir || !['server', 'client'].includes(leg)) {
  console.error(
    'usage: conformance-score.mjs <suite package dir> <revision> <results dir> [server|client] [skip prefix]'
  );
  process.exit(2);
}

// The suite's own YAML parser (a dependency of the suite).
const require = createRequire(resolve(pkgDir, 'package.json'));
const YAML = require('yaml');
const reqFile = join(pkgDir, 'requirements', `${revision}.yaml`);
const requirements = YAML.parse(readFileSync(reqFile, 'utf8'));
const listed = requirements[leg] ?? [];
const skipped = skipPrefix ? listed.filter((s) => s.startsWith(skipPrefix)) : [];
const scored = listed.filter((s) => !skipped.includes(s));
const notScored = (requirements.not_scored ?? []).filter((e) => e.leg === leg);
if (scored.length === 0) {
  console.error(`${reqFile}: no ${leg} scenarios listed`);
  process.exit(2);
}

// server-<scenario>-<ISO time with ':' and '.' as '-'>; the client leg's
// have no prefix, and a scenario `a/b` is `a/b-<time>`.
const DIR =
  leg === 'server'
    ? /^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/
    : /^(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$/;
const runs = new Map();
function scan(dir, prefix) {
  for (const name of existsSync(dir) ? readdirSync(dir, { withFileTypes: true }) : []) {
    if (!name.isDirectory()) continue;
    const m = DIR.exec(name.name);
    if (!m) {
      if (leg === 'client' && !prefix) scan(join(dir, name.name), `${name.name}/`);
      continue;
    }
    const [, bare, time] = m;
    const scenario = prefix + bare;
    const prev = runs.get(scenario);
    if (!prev || prev.time < time) runs.set(scenario, { time, dir: join(dir, name.name) });
  }
}
scan(resultsDir, '');

const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').trim().slice(0, 400);

function judge(scenario) {
  const run = runs.get(scenario);
  if (!run) return { ok: false, summary: 'did not run (no results directory)', problems: [] };
  const file = join(run.dir, 'checks.json');
  if (!existsSync(file)) {
    return { ok: false, summary: 'crashed (no checks.json: see the suite log)', problems: [] };
  }
  let checks;
  try {
    checks = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    return { ok: false, summary: `unreadable checks.json: ${e.message}`, problems: [] };
  }
  const count = (s) => checks.filter((c) => c.status === s).length;
  const passed = count('SUCCESS');
  const failed = count('FAILURE');
  const warnings = checks.filter((c) => c.status === 'WARNING');
  const problems = checks
    .filter((c) => c.status === 'FAILURE')
    .map((c) => `FAILURE [${c.id}] ${oneLine(c.description)}: ${oneLine(c.errorMessage)}`)
    .concat(warnings.map((c) => `warning [${c.id}] ${oneLine(c.errorMessage || c.description)}`));
  const summary = `${passed} passed, ${failed} failed, ${warnings.length} warnings`;
  const ownPassed = checks.filter(
    (c) => c.status === 'SUCCESS' && !String(c.id).startsWith('wire-schema-')
  ).length;
  if (failed > 0) return { ok: false, summary, problems };
  if (ownPassed === 0) {
    return { ok: false, summary: `${summary}: none of its own checks ran`, problems };
  }
  return { ok: true, summary, problems };
}

let ok = 0;
for (const scenario of scored) {
  const v = judge(scenario);
  if (v.ok) ok++;
  console.log(`  ${v.ok ? 'pass' : 'FAIL'} ${scenario}: ${v.summary}`);
  for (const p of v.problems) console.log(`         ${p}`);
}
console.log(`${revision}: ${ok}/${scored.length} scenarios passed`);
if (skipped.length > 0) {
  console.log(`  skipped ${skipped.length} scenarios starting with ${skipPrefix} (not scored here)`);
}

if (notScored.length > 0) {
  console.log(`  not scored for ${revision} (information only):`);
  for (const e of notScored) {
    const v = judge(e.scenario);
    console.log(`    ${v.ok ? 'pass' : 'fail'} ${e.scenario} (${e.reason}): ${v.summary}`);
  }
}
process.exit(ok === scored.length ? 0 : 1);
