// Byte axes on binary-friendly ticks: 16, 32, 48 MiB rather than the decimal
// "nice" steps a chart library picks (20 MB shown as 19.07 MiB, 38.15 MiB, ...). The step is
// a power of two bytes, so every tick is a whole number of KiB, MiB or GiB.

/** Step and top of a byte axis from 0 to at least `maxBytes`, with at most `maxTicks` steps. */
export function byteAxis(maxBytes: number, maxTicks = 6): { interval: number; max: number } {
  if (!Number.isFinite(maxBytes) || maxBytes <= 0) return { interval: 1024, max: 1024 };
  // The smallest power of two whose multiples reach maxBytes within maxTicks steps.
  let step = 2 ** Math.max(0, Math.ceil(Math.log2(maxBytes / maxTicks)));
  while (Math.ceil(maxBytes / step) > maxTicks) step *= 2;
  return { interval: step, max: Math.ceil(maxBytes / step) * step };
}
