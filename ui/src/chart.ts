// SPDX-License-Identifier: Apache-2.0
// Time-series plots with uPlot (no hand-written chart code): one chart per series group.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  color: string;
  dash?: number[];
}

// 3070.5 -> "3071", 44040192 -> "44.0M": axis labels that fit.
export function compact(n: number): string {
  if (n === null || n === undefined) return '';
  const a = Math.abs(n);
  if (a >= 1e9) return `${(n / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(1)}k`;
  if (a >= 10 || Number.isInteger(n)) return String(Math.round(n));
  return n.toFixed(2);
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];
export const color = (i: number) => COLORS[i % COLORS.length];

// x: Unix seconds (time axis) or round numbers (timeAxis false); ys: one array per series.
// stacked: each series is drawn filled on top of the ones before it (devices per version),
// the legend still showing each series' own value.
export function plot(
  title: string,
  x: number[],
  ys: (number | null)[][],
  series: Series[],
  opts: { width?: number; height?: number; timeAxis?: boolean; testid?: string; xLabel?: string; stacked?: boolean; xRange?: [number, number] } = {},
): HTMLElement {
  const box = document.createElement('div');
  box.className = 'chart';
  if (opts.testid) box.dataset.testid = opts.testid;
  box.dataset.points = String(x.length);
  // Stacked: series i is drawn at the sum of series 0..i, and the wider sums first, so each
  // band shows above the one below it.
  let data = ys;
  let order = series.map((_, i) => i);
  if (opts.stacked) {
    data = ys.map((_, i) => x.map((_, k) => ys.slice(0, i + 1).reduce((a, y) => a + (y[k] ?? 0), 0)));
    order = order.reverse();
  }
  const o: uPlot.Options = {
    title,
    width: opts.width ?? 520,
    height: opts.height ?? 220,
    // xRange: a fixed span (a first point alone would otherwise get a span of years).
    scales: { x: { time: opts.timeAxis ?? true, ...(opts.xRange ? { range: opts.xRange } : {}) } },
    series: [
      { label: opts.xLabel ?? (opts.timeAxis === false ? 'round' : 'time') },
      ...order.map((i) => ({
        label: series[i].label,
        stroke: series[i].color,
        dash: series[i].dash,
        width: 2,
        spanGaps: true,
        ...(opts.stacked ? { fill: `${series[i].color}99`, value: (_u: uPlot, _v: number, _s: number, k: number | null) => (k === null ? '-' : String(ys[i][k] ?? '-')) } : {}),
      })),
    ],
    axes: [{}, { values: (_u, ticks) => ticks.map(compact), size: 60 }],
    legend: { show: true },
  };
  new uPlot(o, [x, ...order.map((i) => data[i])] as uPlot.AlignedData, box);
  return box;
}
