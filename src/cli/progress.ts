/**
 * A one-line progress bar on stderr, only when stderr is a terminal: a script or a pipe sees
 * nothing of it. Redrawn at most every 200 ms; cleared when done.
 */

export interface Progress {
  tick(amount?: number): void;
  done(): void;
}

export function progressBar(
  what: string,
  total: number,
  stream: NodeJS.WriteStream = process.stderr,
): Progress {
  if (!stream.isTTY) return { tick: () => undefined, done: () => undefined };
  let count = 0;
  let drawnAt = 0;
  const draw = (): void => {
    const share = total > 0 ? Math.min(1, count / total) : 0;
    const width = 30;
    const bar = '#'.repeat(Math.round(share * width)).padEnd(width, '.');
    stream.write(`\r${what} [${bar}] ${count.toLocaleString('en')} of ~${total.toLocaleString('en')}`);
  };
  return {
    tick: (amount = 1) => {
      count += amount;
      const now = performance.now();
      if (now - drawnAt >= 200) {
        drawnAt = now;
        draw();
      }
    },
    done: () => {
      draw();
      stream.write('\n');
    },
  };
}
