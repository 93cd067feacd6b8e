// Counts the lines a file change adds and removes, for the one-line diff summaries in the
// chat view ("src/main.rs +3 −1"). A Myers line diff gives exact counts; past a bound on the
// edit distance it falls back to counting the changed middle between the common first and
// last lines, which only over-counts and keeps huge rewrites cheap.

/** Lines added and removed by one change. */
export interface LineCounts {
  added: number;
  removed: number;
}

/** Edit distances beyond this are not searched for; the cost grows with its square. */
const MAX_EDIT_DISTANCE = 2000;

/** Splits text into lines; a trailing newline does not make an extra empty line. */
export function splitLines(text: string): string[] {
  if (text === "") {
    return [];
  }
  const lines = text.split(/\r\n|\n|\r/);
  if (lines[lines.length - 1] === "") {
    lines.pop();
  }
  return lines;
}

/** Counts the lines `newText` adds to and removes from `oldText`. */
export function countLineChanges(oldText: string, newText: string): LineCounts {
  const oldLines = splitLines(oldText);
  const newLines = splitLines(newText);
  // Common first and last lines cost nothing and shrink the search.
  let start = 0;
  while (start < oldLines.length && start < newLines.length && oldLines[start] === newLines[start]) {
    start += 1;
  }
  let oldEnd = oldLines.length;
  let newEnd = newLines.length;
  while (oldEnd > start && newEnd > start && oldLines[oldEnd - 1] === newLines[newEnd - 1]) {
    oldEnd -= 1;
    newEnd -= 1;
  }
  const a = oldLines.slice(start, oldEnd);
  const b = newLines.slice(start, newEnd);
  const distance = editDistance(a, b, MAX_EDIT_DISTANCE);
  if (distance === undefined) {
    return { added: b.length, removed: a.length };
  }
  // With d = removed + added and added - removed = |b| - |a|.
  const removed = (distance - (b.length - a.length)) / 2;
  return { added: distance - removed, removed };
}

/** The number of line insertions plus deletions turning `a` into `b` (Myers' greedy
 * algorithm), or `undefined` when it exceeds `limit`. */
function editDistance(a: string[], b: string[], limit: number): number | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, limit);
  const offset = max + 1;
  // furthest[k + offset]: the furthest x reached on diagonal k = x - y.
  const furthest = new Int32Array(2 * max + 3);
  for (let d = 0; d <= max; d += 1) {
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && (furthest[k - 1 + offset] ?? 0) < (furthest[k + 1 + offset] ?? 0))) {
        x = furthest[k + 1 + offset] ?? 0;
      } else {
        x = (furthest[k - 1 + offset] ?? 0) + 1;
      }
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x += 1;
        y += 1;
      }
      furthest[k + offset] = x;
      if (x >= n && y >= m) {
        return d;
      }
    }
  }
  return undefined;
}
