// Which bars the pod viewer draws for a step. The backend sends, per host, an "all devices"
// column beside each device's column; on a host with one device the two are the same numbers
// and the chart would show every bar twice. DOM-free.

/** The backend's name of a host's aggregate column. */
export const ALL_DEVICES = "all devices";

export interface PodColumnKey {
  host: string;
  device: string;
}

/** A PyTorch rank's number from its trace's host name ("rank1.1795675218821096345" -> 1), else null. */
export function rankOf(host: string): number | null {
  const m = /^rank(\d+)(?:[._-]|$)/.exec(host);
  return m ? Number(m[1]) : null;
}

/** "rank 1" for a PyTorch rank (its full id is in the details), else the host name. */
export function hostLabel(host: string): string {
  const r = rankOf(host);
  return r === null ? host : `rank ${String(r)}`;
}

/**
 * Indices of the columns to draw, in rank order (rank 0 first, whatever order hosts come in): a host's
 * "all devices" column only when it has several devices.
 */
export function shownColumns(columns: readonly PodColumnKey[]): number[] {
  const devicesOf = new Map<string, number>();
  for (const c of columns) if (c.device !== ALL_DEVICES) devicesOf.set(c.host, (devicesOf.get(c.host) ?? 0) + 1);
  const out: number[] = [];
  columns.forEach((c, i) => {
    if (c.device === ALL_DEVICES && (devicesOf.get(c.host) ?? 0) === 1) return;
    out.push(i);
  });
  const rank = (i: number): number => rankOf(columns[i]?.host ?? "") ?? Number.POSITIVE_INFINITY;
  return out.sort((a, b) => rank(a) - rank(b) || a - b);
}

/** A bar's label: host and device on two lines when there are several hosts; "/device:" dropped. */
export function columnLabel(c: PodColumnKey, severalHosts: boolean): string {
  const device = c.device.replace(/^\/device:/, "");
  return severalHosts ? `${hostLabel(c.host)}\n${device}` : device;
}
