// Min/max decimation of a time series (uPlot's rule: decimate when points are at least 4x the
// pixels): per bucket of x, the first point, the lowest and the highest, in time order, so a
// 16,000-point queue length keeps every spike a pixel can show.

/** [x, y] points, x ascending. */
export type Series = [number, number][];

export function decimate(points: Series, buckets: number): Series {
  if (points.length <= 4 * buckets || buckets < 1) return points;
  const first = points[0];
  const last = points[points.length - 1];
  if (first === undefined || last === undefined) return points;
  const x0 = first[0];
  const span = last[0] - x0 || 1;
  const out: Series = [];
  let bucket = -1;
  let lo: [number, number] | null = null;
  let hi: [number, number] | null = null;
  let head: [number, number] | null = null;
  const flush = (): void => {
    if (head === null || lo === null || hi === null) return;
    const keep = [head, lo, hi].filter((p, i, all) => all.indexOf(p) === i).sort((a, b) => a[0] - b[0]);
    out.push(...keep);
  };
  for (const p of points) {
    const b = Math.min(buckets - 1, Math.floor(((p[0] - x0) / span) * buckets));
    if (b !== bucket) {
      flush();
      bucket = b;
      head = lo = hi = p;
      continue;
    }
    if (lo === null || p[1] < lo[1]) lo = p;
    if (hi === null || p[1] > hi[1]) hi = p;
  }
  flush();
  const tail = out[out.length - 1];
  if (tail !== last) out.push(last);
  return out;
}
