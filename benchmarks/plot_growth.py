#!/usr/bin/env python3
"""Draws benchmarks/checkpoint_growth.svg from the CSVs of checkpoint_growth.sh (standard
library only: one line per run, file size in MiB over elapsed seconds)."""
import os
import sys

out_dir, svg = sys.argv[1], sys.argv[2]
runs = []
for name, label, colour in (("keep_last_0", "keep every checkpoint", "#c0392b"),
                            ("keep_last_2", "[checkpoint] keep_last = 2", "#2471a3")):
    points = []
    with open(os.path.join(out_dir, name + ".csv")) as f:
        for line in f:
            t, size = line.split()
            points.append((float(t), int(size) / 2**20))
    runs.append((label, colour, points))
W, H, L, B = 640, 360, 60, 40
tmax = max(p[0] for _, _, pts in runs for p in pts)
smax = max(p[1] for _, _, pts in runs for p in pts) * 1.05
x = lambda t: L + (W - L - 20) * t / tmax
y = lambda s: H - B - (H - B - 20) * s / smax
parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="black"/>',
         f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="black"/>',
         f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">elapsed seconds</text>',
         f'<text x="14" y="{(H - B) / 2}" transform="rotate(-90 14 {(H - B) / 2})" text-anchor="middle">results file, MiB</text>']
for i in range(6):
    s, t = smax * i / 5, tmax * i / 5
    parts.append(f'<text x="{L - 6}" y="{y(s) + 4:.1f}" text-anchor="end">{s:.0f}</text>')
    parts.append(f'<text x="{x(t):.1f}" y="{H - B + 16}" text-anchor="middle">{t:.0f}</text>')
for k, (label, colour, pts) in enumerate(runs):
    path = " ".join(f"{x(t):.1f},{y(s):.1f}" for t, s in pts)
    parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
    parts.append(f'<text x="{L + 12}" y="{34 + 16 * k}" fill="{colour}">{label}: {pts[-1][1]:.1f} MiB at the end</text>')
parts.append("</svg>")
with open(svg, "w") as f:
    f.write("\n".join(parts) + "\n")
print("wrote", svg)
