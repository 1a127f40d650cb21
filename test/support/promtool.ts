/**
 * Prometheus's own tool on Baton's alerts (deploy/prometheus/): runs promtool, reads a /metrics
 * scrape, finds what the rules refer to, and turns scrapes into a `promtool test rules` timeline.
 * Nothing here evaluates PromQL: promtool does.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PROMTOOL = '/usr/bin/promtool';

/** promtool with these arguments (and input): its exit code and all it said. */
export function promtool(args: readonly string[], input?: string): { code: number | null; said: string } {
  if (!existsSync(PROMTOOL)) assert.fail(`${PROMTOOL} is absent: install Debian's prometheus package`);
  const run = spawnSync(PROMTOOL, args, { input: input ?? '', encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, said: `${run.stdout}${run.stderr}` };
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** The series as printed: `name{a="b"}`. */
  readonly series: string;
  readonly value: number;
}

/** The samples of a Prometheus text scrape. */
export function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const cut = line.lastIndexOf(' ');
      const series = line.slice(0, cut);
      const brace = series.indexOf('{');
      const labels: Record<string, string> = {};
      for (const match of series.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
        labels[match[1] ?? ''] = match[2] ?? '';
      return {
        name: brace === -1 ? series : series.slice(0, brace),
        labels,
        series,
        value: Number(line.slice(cut + 1)),
      };
    });
}

/** What a rule expression refers to: a metric, and the label matchers written on it. */
export interface Reference {
  readonly name: string;
  readonly matchers: readonly { readonly label: string; readonly values: readonly string[] }[];
}

/** Every `baton_…` selector in the rules text, with its `label="v"` and `label=~"a|b"` matchers. */
export function references(rules: string): Reference[] {
  return [...rules.matchAll(/\b(baton_[a-z_]+)(?:\{([^}]*)\})?/g)].map((match) => ({
    name: match[1] ?? '',
    matchers: [...(match[2] ?? '').matchAll(/(\w+)\s*=(~?)\s*"([^"]*)"/g)].map((matcher) => ({
      label: matcher[1] ?? '',
      values: matcher[2] === '~' ? (matcher[3] ?? '').split('|') : [matcher[3] ?? ''],
    })),
  }));
}

/** The labels each rule groups or matches by (`by (…)`, `on (…)`), with the metrics its expression reads. */
export function groupingLabels(rules: string): { readonly label: string; readonly metrics: string[] }[] {
  return [...rules.matchAll(/expr: (>-\n(?:\s{10}.*\n)+|.*\n)/g)].flatMap((rule) => {
    const expr = rule[1] ?? '';
    const metrics = [...expr.matchAll(/\bbaton_[a-z_]+/g)].map((metric) => metric[0]);
    return [...expr.matchAll(/\b(?:by|on|without|ignoring)\s*\(([^)]*)\)/g)].flatMap((clause) =>
      (clause[1] ?? '')
        .split(',')
        .map((label) => label.trim())
        .filter((label) => label !== '')
        .map((label) => ({ label, metrics })),
    );
  });
}

/** The rules file without its annotations, for tests that assert which alerts fire, not their words. */
export function withoutAnnotations(rules: string): string {
  const out: string[] = [];
  let skipping = false;
  for (const line of rules.split('\n')) {
    if (/^ {8}annotations:/.test(line)) skipping = true;
    else if (skipping && !/^ {9,}\S/.test(line)) skipping = false;
    if (!skipping) out.push(line);
  }
  return out.join('\n');
}

const number = (value: number): string => (Number.isInteger(value) ? String(value) : value.toFixed(6));

/**
 * Two scrapes as a promtool timeline, one minute apart, with `labels` added: `before` at 0, then
 * `after` held for `minutes` more, as if nothing changed after it. A gauge of an age
 * (`…_age_seconds`) above 0 keeps ageing, 60 s a minute, as it does when nothing clears it (0 is
 * "none", which stays none); every other figure stays. A series the first scrape lacks is missing
 * (`_`) at 0.
 */
export function timeline(before: string, after: string, labels: string, minutes: number): string[] {
  const earlier = new Map(samples(before).map((sample) => [sample.series, sample.value]));
  return samples(after)
    .filter((sample) => sample.name.startsWith('baton_') && Number.isFinite(sample.value))
    .map((sample) => {
      const first = earlier.get(sample.series);
      const start = first === undefined || !Number.isFinite(first) ? '_' : number(first);
      const rest =
        sample.name.endsWith('_age_seconds') && sample.value > 0
          ? `${number(sample.value)}+60x${minutes}`
          : `${number(sample.value)}x${minutes}`;
      const series = sample.series.includes('{')
        ? sample.series.replace('{', `{${labels},`)
        : `${sample.series}{${labels}}`;
      return `      - series: '${series.replaceAll("'", "''")}'\n        values: '${start} ${rest}'`;
    });
}

/** Writes files into a new temporary folder and returns it. */
export function folderWith(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-promtool-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
