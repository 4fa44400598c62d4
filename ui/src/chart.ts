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
export function plot(
  title: string,
  x: number[],
  ys: (number | null)[][],
  series: Series[],
  opts: { width?: number; height?: number; timeAxis?: boolean; testid?: string; xLabel?: string } = {},
): HTMLElement {
  const box = document.createElement('div');
  box.className = 'chart';
  if (opts.testid) box.dataset.testid = opts.testid;
  const o: uPlot.Options = {
    title,
    width: opts.width ?? 520,
    height: opts.height ?? 220,
    scales: { x: { time: opts.timeAxis ?? true } },
    series: [
      { label: opts.xLabel ?? (opts.timeAxis === false ? 'round' : 'time') },
      ...series.map((s) => ({ label: s.label, stroke: s.color, dash: s.dash, width: 2, spanGaps: true })),
    ],
    axes: [{}, { values: (_u, ticks) => ticks.map(compact), size: 60 }],
    legend: { show: true },
  };
  new uPlot(o, [x, ...ys] as uPlot.AlignedData, box);
  return box;
}
