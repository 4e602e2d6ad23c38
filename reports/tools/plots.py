"""The plots of a report and of the reports index (Debian's python3-matplotlib).

One palette everywhere: dtype by colour (DTYPE_COLOURS, Okabe-Ito, colour-blind safe),
backend by line style and marker (BACKEND_STYLES), the roofline as a grey band. Every figure is
saved as SVG and PNG side by side (plots/<stem>.svg, plots/<stem>.png), with no timestamp in
either, so that a rerun of the same data writes the same files.
"""
import os

from reportdata import human_bytes, num

DTYPES = ('float32', 'float16', 'bfloat16')
DTYPE_COLOURS = {'float32': '#0072B2', 'float16': '#E69F00', 'bfloat16': '#009E73'}
# (impl, several threads) -> (label, line style, marker)
BACKEND_STYLES = {
    ('simd', False): ('SIMD, 1 thread', '-', 'o'),
    ('simd', True): ('SIMD, {threads} threads', '--', 's'),
    ('scalar', False): ('scalar reference', ':', '^'),
    ('cuda', False): ('CUDA', '-.', 'D'),
}
ROOFLINE_COLOUR = '#7f7f7f'
# Systems in the index's comparison plots, in directory order.
SYSTEM_COLOURS = ('#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000',
                  '#F0E442')
# Chunk sizes of the wrapper plot (purples: apart from the dtype colours; larger is darker).
SIZE_COLOURS = {256 << 10: '#9e9ac8', 1 << 20: '#6a51a3', 8 << 20: '#3f007d'}
OTHER_SIZE_COLOURS = ('#bcbddc', '#54278f', '#807dba', '#2d004b')


def size_colour(size, sizes):
    if size in SIZE_COLOURS:
        return SIZE_COLOURS[size]
    others = [s for s in sizes if s not in SIZE_COLOURS]
    return OTHER_SIZE_COLOURS[others.index(size) % len(OTHER_SIZE_COLOURS)]
WRAPPER_STYLES = {'wrapper': ('wrapper, default options, one task at a time', '-', 'o'),
                  'wrapper_submitted': ('wrapper, every step handed off', (0, (1, 1)), 'v'),
                  'wrapper_inline': ('wrapper, serde steps inline', '-.', 'D'),
                  'wrapper_pipelined': ('wrapper, 4 tasks in flight', '--', 's'),
                  'processor': ('AsyncSerdeProcessor alone', ':', '^')}
FORMATS = ('float8_e4m3fn', 'float8_e5m2')


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    plt.rcParams.update({'svg.hashsalt': 'lmcache-report', 'font.size': 10,
                         'axes.titlesize': 11, 'legend.fontsize': 9})
    return plt


def save(fig, out_dir, stem):
    """Writes plots/<stem>.svg and plots/<stem>.png under out_dir; returns the two relative
    paths."""
    os.makedirs(os.path.join(out_dir, 'plots'), exist_ok=True)
    svg = os.path.join('plots', stem + '.svg')
    png = os.path.join('plots', stem + '.png')
    fig.savefig(os.path.join(out_dir, svg), metadata={'Date': None})
    fig.savefig(os.path.join(out_dir, png), dpi=110, metadata={'Software': None})
    return svg, png


def _size_axis(ax, sizes):
    """Log2 size axis with ticks at powers of 4 labelled in KiB / MiB."""
    ax.set_xscale('log', base=2)
    lo, hi = min(sizes), max(sizes)
    ticks = [s for s in (4 ** k for k in range(5, 21)) if lo <= s <= hi] or sorted(set(sizes))
    ax.set_xticks(ticks)
    ax.set_xticklabels([human_bytes(t).replace(' ', '\u2009') for t in ticks])
    ax.minorticks_off()


def _log_axis(axis):
    """Ticks at 1, 2, 5 x 10^k labelled with plain numbers (for an axis made log)."""
    from matplotlib.ticker import FuncFormatter, LogLocator
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f'{v:g}'))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ''))


def _rate_axis(ax):
    """Log GB/s axis labelled with plain numbers."""
    ax.set_yscale('log')
    _log_axis(ax.yaxis)
    ax.grid(True, which='major', alpha=0.3)


def roofline_of(row):
    """(median rate, spread) of a codec row's roofline in bytes/s; spread 0 when unmeasured;
    None without a roofline."""
    v = row.values
    rate = v.get('roofline_rate')
    if rate is None and v.get('roofline_ratio') and v.get('throughput'):
        rate = v['throughput'] / v['roofline_ratio']  # older reports: the rate divided by
    if not rate:
        return None
    return rate, v.get('roofline_spread', 0.0)


def _band(ax, rows, label):
    """Fills, per size, the range of the rows' roofline medians +- half their interquartile
    range."""
    by_size = {}
    for r in rows:
        roof = roofline_of(r)
        if roof is None:
            continue
        rate, spread = roof
        lo, hi = rate * (1 - spread / 2) / 1e9, rate * (1 + spread / 2) / 1e9
        old = by_size.get(num(r['size_bytes']))
        by_size[num(r['size_bytes'])] = (min(lo, old[0]), max(hi, old[1])) if old else (lo, hi)
    if not by_size:
        return False
    xs = sorted(by_size)
    ax.fill_between(xs, [by_size[x][0] for x in xs], [by_size[x][1] for x in xs],
                    color=ROOFLINE_COLOUR, alpha=0.25, linewidth=0, label=label, zorder=1)
    return True


def _backend_key(row, multi):
    return (row['impl'], multi and row['impl'] == 'simd' and num(row['threads']) > 1)


def _legend(fig, dtypes, backends, band_labels):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Line2D([], [], color=DTYPE_COLOURS[d], linewidth=3, label=d) for d in dtypes]
    handles += [Line2D([], [], color='black', linestyle=style, marker=marker, markersize=5,
                       label=label) for label, style, marker in backends]
    handles += [Patch(color=ROOFLINE_COLOUR, alpha=0.35, label=b) for b in band_labels]
    fig.legend(handles=handles, loc='lower center', ncol=min(len(handles), 4), frameon=False)


def _panel_title(op, fmt):
    short = fmt.replace('float8_', '')
    return f'encode → {short}' if op == 'encode' else f'decode {short} →'


def codec_vs_size(sweep, device, out_dir):
    """Small multiples, one panel per op x format: GB/s against size. Returns the relative
    paths of the SVG and PNG, or None without codec rows for `device`."""
    rows = [r for r in sweep.select(suite='codec', device=device) if num(r['size_bytes'])]
    if not rows:
        return None
    plt = _pyplot()
    ops = [o for o in ('encode', 'decode') if any(r['op'] == o for r in rows)]
    fmts = [f for f in FORMATS if any(r['format'] == f for r in rows)]
    threads = sorted({num(r['threads']) for r in rows})
    multi = len(threads) > 1
    fig, axes = plt.subplots(len(ops), len(fmts), figsize=(5.2 * len(fmts), 3.9 * len(ops) + 1.1),
                             sharex=True, sharey=True, squeeze=False)
    backends = {}
    bands = []
    for i, op in enumerate(ops):
        for j, fmt in enumerate(fmts):
            ax = axes[i][j]
            panel = [r for r in rows if r['op'] == op and r['format'] == fmt]
            series = {}
            for r in panel:
                if 'throughput' in r.values:
                    key = (r['dtype'], _backend_key(r, multi), num(r['threads']))
                    series.setdefault(key, []).append((num(r['size_bytes']),
                                                       r.values['throughput'] / 1e9))
            for (dtype, bkey, t), pts in sorted(series.items(), key=lambda kv: (
                    DTYPES.index(kv[0][0]) if kv[0][0] in DTYPES else 9, kv[0][1], kv[0][2])):
                label, style, marker = BACKEND_STYLES.get(bkey, (bkey[0], '-', 'x'))
                label = label.format(threads=t)
                backends[label] = (label, style, marker)
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=DTYPE_COLOURS.get(dtype),
                        linestyle=style, marker=marker, markersize=4, linewidth=1.5, zorder=3)
            one = [r for r in panel if num(r['threads']) in (0, 1)]
            label = ('device copy roofline' if device == 'cuda' else
                     'memcpy roofline, 1 thread (median ± ½ IQR)')
            if _band(ax, one, label) and label not in bands:
                bands.append(label)
            ax.set_title(_panel_title(op, fmt))
            _size_axis(ax, [num(r['size_bytes']) for r in rows])
            _rate_axis(ax)
            if j == 0:
                ax.set_ylabel('GB/s, read + written')
            if i == len(ops) - 1:
                ax.set_xlabel('input size')
    fig.suptitle(f'fp8 codec throughput against size, {device.upper()} (higher is better)')
    dtypes = [d for d in DTYPES if any(r['dtype'] == d for r in rows)]
    _legend(fig, dtypes, list(backends.values()), bands)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    paths = save(fig, out_dir, f'codec_vs_size_{device}')
    plt.close(fig)
    return paths


def codec_vs_threads(sweep, device, out_dir):
    """Small multiples, one panel per op x format: SIMD GB/s against threads at the largest
    size. None when only one thread count was measured."""
    rows = [r for r in sweep.select(suite='codec', device=device, impl='simd')
            if num(r['size_bytes'])]
    threads = sorted({num(r['threads']) for r in rows})
    if len(threads) < 2:
        return None
    size = max(num(r['size_bytes']) for r in rows)
    rows = [r for r in rows if num(r['size_bytes']) == size]
    plt = _pyplot()
    ops = [o for o in ('encode', 'decode') if any(r['op'] == o for r in rows)]
    fmts = [f for f in FORMATS if any(r['format'] == f for r in rows)]
    fig, axes = plt.subplots(len(ops), len(fmts), figsize=(4.6 * len(fmts), 3.4 * len(ops) + 1.0),
                             sharex=True, sharey=True, squeeze=False)
    for i, op in enumerate(ops):
        for j, fmt in enumerate(fmts):
            ax = axes[i][j]
            panel = [r for r in rows if r['op'] == op and r['format'] == fmt]
            for dtype in DTYPES:
                pts = sorted((num(r['threads']), r.values['throughput'] / 1e9) for r in panel
                             if r['dtype'] == dtype and 'throughput' in r.values)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], color=DTYPE_COLOURS[dtype],
                            linestyle='-', marker='o', markersize=4, linewidth=1.5, zorder=3)
            lo, hi = [], []
            for t in threads:
                roofs = [roofline_of(r) for r in panel if num(r['threads']) == t]
                roofs = [x for x in roofs if x]
                if roofs:
                    lo.append((t, min(rate * (1 - s / 2) for rate, s in roofs) / 1e9))
                    hi.append((t, max(rate * (1 + s / 2) for rate, s in roofs) / 1e9))
            if lo:
                ax.fill_between([p[0] for p in lo], [p[1] for p in lo], [p[1] for p in hi],
                                color=ROOFLINE_COLOUR, alpha=0.25, linewidth=0, zorder=1)
            ax.set_title(_panel_title(op, fmt))
            ax.set_xticks(threads)
            ax.grid(True, alpha=0.3)
            if j == 0:
                ax.set_ylabel('GB/s, read + written')
            if i == len(ops) - 1:
                ax.set_xlabel('threads per call')
    top = max([r.values.get('throughput', 0) for r in rows]
              + [rate * (1 + s / 2) for rate, s in filter(None, map(roofline_of, rows))])
    axes[0][0].set_ylim(0, top / 1e9 * 1.08)
    fig.suptitle(f'SIMD fp8 codec against threads, {human_bytes(size)} input, '
                 f'{device.upper()}')
    dtypes = [d for d in DTYPES if any(r['dtype'] == d for r in rows)]
    _legend(fig, dtypes, [], ['memcpy roofline, same threads (median ± ½ IQR)'])
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    paths = save(fig, out_dir, f'codec_vs_threads_{device}')
    plt.close(fig)
    return paths


def overheads(sweep, out_dir):
    """Processor latency against the hand-off floor, and the wrapper's throughput as a ratio
    to the bare codec against the batch. None without processor or wrapper rows."""
    lat = [(r, r.values) for r in sweep.select(suite='processor', op='latency')
           if 'p50' in r.values]
    wrap = [r for r in sweep.select(suite='wrapper', serde='fp8') if 'codec_ratio' in r.values
            and r['impl'] in WRAPPER_STYLES]
    if not lat and not wrap:
        return None
    plt = _pyplot()
    ops = [o for o in ('store', 'load') if any(r['op'] == o for r in wrap)]
    fig, axes = plt.subplots(1, 1 + len(ops), figsize=(4.6 * (1 + len(ops)), 4.4), squeeze=False)
    ax = axes[0][0]
    if lat:
        def name(r):
            if r['impl'] == 'handoff':
                return 'hand-off floor'
            workers = f"{r['threads']} worker{'s' if r['threads'] != '1' else ''}"
            size = human_bytes(num(r['size_bytes'])) if num(r['size_bytes']) else ''
            return f"processor, {r['serde']} {size}, {workers}".replace('  ', ' ')
        lat.sort(key=lambda rv: (rv[0]['impl'] != 'handoff', rv[0]['serde'] != 'noop',
                                 rv[0]['serde'], num(rv[0]['threads'])))
        ys = list(range(len(lat)))[::-1]
        for y, (r, v) in zip(ys, lat):
            colour = ROOFLINE_COLOUR if r['impl'] == 'handoff' else '#0072B2'
            if 'p99' in v:
                ax.plot([v['p50'] * 1e6, v['p99'] * 1e6], [y, y], color=colour, linewidth=1.5)
                ax.plot([v['p99'] * 1e6], [y], marker='|', markersize=14, color=colour)
            ax.plot([v['p50'] * 1e6], [y], marker='o', markersize=8, color=colour)
            ax.annotate(f"{v['p50'] * 1e6:.1f}", (v['p50'] * 1e6, y), textcoords='offset points',
                        xytext=(0, 8), ha='center', fontsize=8)
        ax.set_yticks(ys)
        ax.set_yticklabels([name(r) for r, _ in lat])
        ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
        ax.set_xscale('log')
        _log_axis(ax.xaxis)
        ax.set_xlabel('µs per task, one in flight: ● p50, | p99')
        ax.set_title('processor round trip vs hand-off floor')
        ax.grid(True, axis='x', which='major', alpha=0.3)
    else:
        ax.set_axis_off()
    sizes = sorted({num(r['size_bytes']) for r in wrap})
    batches = sorted({num(r['batch']) for r in wrap})
    for k, op in enumerate(ops):
        ax = axes[0][1 + k]
        for size in sizes:
            for impl, (_, style, marker) in WRAPPER_STYLES.items():
                pts = sorted((batches.index(num(r['batch'])), r.values['codec_ratio'])
                             for r in wrap if r['op'] == op and r['impl'] == impl
                             and num(r['size_bytes']) == size)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style,
                            marker=marker, markersize=4, linewidth=1.5,
                            color=size_colour(size, sizes))
        ax.axhline(1.0, color=ROOFLINE_COLOUR, linewidth=1)
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([str(b) for b in batches])
        ax.set_xlabel('chunks per task')
        ax.set_ylabel('× the bare codec (1 = no overhead)')
        ax.set_ylim(0, max(1.1, max(r.values['codec_ratio'] for r in wrap) * 1.05))
        ax.set_title(f'fp8 wrapper {op}, bfloat16 chunks')
        ax.grid(True, alpha=0.3)
    if ops:
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color=size_colour(s, sizes), linewidth=3,
                          label=f'{human_bytes(s)} chunks') for s in sizes]
        handles += [Line2D([], [], color='black', linestyle=style, marker=marker, label=label)
                    for label, style, marker in WRAPPER_STYLES.values()]
        fig.legend(handles=handles, loc='lower center', ncol=min(len(handles), 6),
                   frameon=False)
    fig.tight_layout(rect=(0, 0.1 if ops else 0, 1, 1))
    paths = save(fig, out_dir, 'overheads')
    plt.close(fig)
    return paths


def systems_comparison(systems, out_dir, stem='compare_systems'):
    """The index's comparison: one bar per system for each summary metric. `systems`:
    [(system id, {summary key: SummaryRow})]. Returns the relative paths, or None."""
    if not systems:
        return None
    plt = _pyplot()
    codec_keys = [k for k in ('codec/cpu/encode/float8_e4m3fn', 'codec/cpu/encode/float8_e5m2',
                              'codec/cpu/decode/float8_e4m3fn', 'codec/cpu/decode/float8_e5m2',
                              'codec/cuda/encode/float8_e4m3fn', 'codec/cuda/decode/float8_e4m3fn')
                  if any(k in rows for _, rows in systems)]
    wrap_keys = [k for k in ('wrapper/mock/store', 'wrapper/mock/load')
                 if any(k in rows for _, rows in systems)]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8))
    width = 0.8 / len(systems)

    def bars(ax, keys, value, labels, spread):
        for s, (sid, rows) in enumerate(systems):
            xs, ys, err = [], [], [[], []]
            for i, k in enumerate(keys):
                row = rows.get(k)
                v = value(row) if row else None
                if v is None:
                    continue
                xs.append(i + (s - (len(systems) - 1) / 2) * width)
                ys.append(v)
                err[0].append(max(v - row.q1, 0) if spread and row.q1 is not None else 0)
                err[1].append(max(row.q3 - v, 0) if spread and row.q3 is not None else 0)
            ax.bar(xs, ys, width=width * 0.95, color=SYSTEM_COLOURS[s % len(SYSTEM_COLOURS)],
                   yerr=err if spread else None, capsize=3, label=sid)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.grid(True, axis='y', alpha=0.3)

    bars(axes[0], codec_keys, _headline, [_codec_label(k) for k in codec_keys], True)
    axes[0].set_ylabel('GB/s, read + written (bfloat16, largest size)')
    axes[0].set_title('fp8 codec (higher is better)')
    # Processor: floor and own cost stacked, per system.
    ax = axes[1]
    for s, (sid, rows) in enumerate(systems):
        floor = rows.get('processor/handoff_floor')
        proc = rows.get('processor/round_trip')
        colour = SYSTEM_COLOURS[s % len(SYSTEM_COLOURS)]
        if floor:
            ax.bar(s, floor.value, color=colour, alpha=0.45, width=0.6)
        if proc:
            base = floor.value if floor else 0
            ax.bar(s, max(proc.value - base, 0), bottom=base, color=colour, width=0.6,
                   hatch='//', edgecolor='white')
        if floor or proc:
            top = max(r.value for r in (floor, proc) if r)
            text = (f'{proc.value:.1f} µs' if proc else '') + (
                f'\nfloor {floor.value:.1f} µs' if floor else '')
            ax.annotate(text.strip(), (s, top), textcoords='offset points', xytext=(0, 3),
                        ha='center', va='bottom', fontsize=8)
    ax.set_xticks(range(len(systems)))
    ax.set_xticklabels([sid for sid, _ in systems], fontsize=8, rotation=10)
    ax.set_ylabel('µs, p50, one task in flight')
    ax.margins(y=0.15)
    ax.set_title('processor round trip: floor (light) + own cost (hatched)')
    ax.grid(True, axis='y', alpha=0.3)
    bars(axes[2], wrap_keys, lambda r: r.ratio, [k.split('/')[-1] for k in wrap_keys], False)
    axes[2].axhline(1.0, color=ROOFLINE_COLOUR, linewidth=1)
    axes[2].set_ylabel('× the bare codec')
    axes[2].set_title(f'fp8 wrapper over the mock, {human_bytes(1 << 20)} × 8')
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc='lower center', ncol=min(len(systems), 4), frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    paths = save(fig, out_dir, stem)
    plt.close(fig)
    return paths


def _headline(row):
    return row.value


def _codec_label(key):
    _, device, op, fmt = key.split('/')
    return f"{op}\n{fmt.replace('float8_', '')}" + ('' if device == 'cpu' else f' ({device})')

