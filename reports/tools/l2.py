"""L2 end to end: KV chunks through real storage (lmcache-bench's l2/ rows: the resp adapter over
a private redis-server, the fs adapter over a temporary directory), raw and through the fp8
serde wrapper, and the break-even storage bandwidth below which fp8 makes them faster.

Break-even (one task at a time, serde and storage one after the other, as the l2/ rows run):
a raw task moves W wide bytes through storage of bandwidth B in W / B; an fp8 task codes them
at the bare codec's rate C (wide bytes per second: the wrapper/ suite's serde_direct row of the
same chunk size and batch) and moves r W bytes (r = the stored bytes per wide byte, measured),
in W / C + r W / B. fp8 is faster when W / C + r W / B < W / B, that is when

    B < C (1 - r)        (the break-even storage bandwidth, per direction)

B here is the raw path's own rate (its row's GB/s of KV), which includes the adapter's work
besides the transfer; the measured fp8 row says what actually happened.
"""
import re

from reportdata import num

ADAPTERS = ('resp', 'fs')
CEILING = 'redis-benchmark'  # the server's own SET/GET rate (lmcache-bench's l2/ rows)
ADAPTER_TEXT = {'resp': 'resp (Redis, private redis-server, 8 workers)',
                'fs': 'fs (one file per object, temporary directory, no checksum)'}
CHUNK = 1 << 20
# lmcache-bench's read-pool load rows: LMCache's read_io_depth readers over an adapter.
READ_POOL = re.compile(r'^(resp|fs)_read_io_depth_(\d+)$')


def _rate(rows):
    return rows[0].values.get('throughput') if rows else None


def points(sweep):
    """[{adapter, op, batch, raw, fp8, ratio, codec, break_even}] (bytes/s) for every batch of
    1 MiB chunks with both a raw and an fp8 row; [] without l2 rows."""
    out = []
    for adapter in ADAPTERS:
        for op in ('store', 'load'):
            batches = sorted({num(r['batch']) for r in sweep.select(
                suite='l2', impl=adapter, op=op, size_bytes=CHUNK)})
            for batch in batches:
                raw = _rate(sweep.select(suite='l2', impl=adapter, op=op, serde='none',
                                         size_bytes=CHUNK, batch=batch))
                fp8_rows = sweep.select(suite='l2', impl=adapter, op=op, serde='fp8',
                                        size_bytes=CHUNK, batch=batch)
                fp8 = _rate(fp8_rows)
                if raw is None or fp8 is None:
                    continue
                ratio = fp8_rows[0].values.get('stored_ratio')
                codec = _rate(sweep.select(suite='wrapper', impl='serde_direct', serde='fp8',
                                           op=op, size_bytes=CHUNK, batch=batch))
                break_even = codec * (1 - ratio) if codec and ratio is not None else None
                out.append({'adapter': adapter, 'op': op, 'batch': batch, 'raw': raw,
                            'fp8': fp8, 'ratio': ratio, 'codec': codec,
                            'break_even': break_even})
    return out


def redis_points(sweep):
    """[{op, batch, ceiling, raw: {impl: bytes/s}}] for every op and batch of 1 MiB chunks with a
    redis-benchmark row: the raw rate of every l2 impl but fs (resp, and a connector plugin's,
    which lmcache-bench measures on the same redis-server when its factory connects there)
    beside the server's own ceiling; [] without redis-benchmark rows."""
    out = []
    for op in ('store', 'load'):
        batches = sorted({num(r['batch']) for r in sweep.select(
            suite='l2', impl=CEILING, op=op, size_bytes=CHUNK)})
        for batch in batches:
            ceiling = _rate(sweep.select(suite='l2', impl=CEILING, op=op, size_bytes=CHUNK,
                                         batch=batch))
            raw = {r['impl']: r.values.get('throughput') for r in sweep.select(
                suite='l2', op=op, serde='none', size_bytes=CHUNK, batch=batch)
                if r['impl'] not in ('fs', CEILING) and not READ_POOL.match(r['impl'])
                and r.values.get('throughput')}
            if ceiling and raw:
                out.append({'op': op, 'batch': batch, 'ceiling': ceiling, 'raw': raw})
    return out


def read_pool_points(sweep):
    """[{adapter, batch, depth, rate, shared}] (bytes/s) for every read-pool load row of 1 MiB
    chunks (impl <adapter>_read_io_depth_<N>); `shared` is the adapter's own load row of the
    same batch, whose gets share its workers (read_io_depth 0), or None."""
    out = []
    for r in sweep.select(suite='l2', op='load', serde='none', size_bytes=CHUNK):
        m = READ_POOL.match(r['impl'])
        if not m or not r.values.get('throughput'):
            continue
        batch = num(r['batch'])
        shared = _rate(sweep.select(suite='l2', impl=m.group(1), op='load', serde='none',
                                    size_bytes=CHUNK, batch=batch))
        out.append({'adapter': m.group(1), 'depth': int(m.group(2)), 'batch': batch,
                    'rate': r.values['throughput'], 'shared': shared})
    return sorted(out, key=lambda p: (ADAPTERS.index(p['adapter']), p['batch'], p['depth']))


def read_pool_table(rpp):
    """(header, rows) of tables/l2_read_pool.csv."""
    header = ['adapter', 'batch', 'read_io_depth', 'load_gb_per_s', 'shared_workers_gb_per_s',
              'over_shared']
    rows = [[p['adapter'], p['batch'], p['depth'], _gb(p['rate'], ''), _gb(p['shared'], ''),
             f"{p['rate'] / p['shared']:.2f}" if p['shared'] else ''] for p in rpp]
    return header, rows


def read_pool_section(rpp, md_table):
    """The read-pool part of the L2 section: loads at LMCache's read_io_depth values."""
    if not rpp:
        return []
    return ['**Read pool** (LMCache\'s `read_io_depth`: that many reader threads for loads, a '
            'connection each for resp, and the default 1536 MiB `read_max_bytes_in_flight`): '
            'raw loads of 1 MiB chunks, beside the same adapter reading on its shared workers '
            '(depth 0). Sweep measurements (one each).', '', md_table(
                ['adapter', 'chunks per task', 'read_io_depth', 'load GB/s',
                 'shared workers GB/s', '× shared'],
                [[p['adapter'], p['batch'], p['depth'], _gb(p['rate']), _gb(p['shared']),
                  f"{p['rate'] / p['shared']:.2f}×" if p['shared'] else '–'] for p in rpp]), '']


def redis_impls(rpts):
    """The impls of redis_points() in table order: connector plugins (by name), then resp."""
    names = {i for p in rpts for i in p['raw']}
    return sorted(names - {'resp'}) + (['resp'] if 'resp' in names else [])


def redis_table(rpts):
    """(header, rows) of tables/l2_redis.csv: one row per op, batch and impl."""
    header = ['op', 'batch', 'impl', 'raw_gb_per_s', 'redis_benchmark_gb_per_s',
              'share_of_ceiling']
    rows = [[p['op'], p['batch'], impl, _gb(p['raw'][impl], ''), _gb(p['ceiling'], ''),
             f"{p['raw'][impl] / p['ceiling']:.2f}"]
            for p in rpts for impl in redis_impls(rpts) if impl in p['raw']]
    return header, rows


def _gb(v, missing='–'):
    return f'{v / 1e9:.2f}' if v is not None else missing


def table(pts):
    """(header, rows) of tables/l2.csv."""
    header = ['adapter', 'op', 'batch', 'raw_gb_per_s', 'fp8_gb_per_s', 'fp8_over_raw',
              'stored_bytes_per_wide_byte', 'bare_codec_gb_per_s', 'break_even_gb_per_s',
              'raw_below_break_even']
    rows = [[p['adapter'], p['op'], p['batch'], _gb(p['raw'], ''), _gb(p['fp8'], ''),
             f"{p['fp8'] / p['raw']:.2f}", f"{p['ratio']:.3f}" if p['ratio'] is not None else '',
             _gb(p['codec'], ''), _gb(p['break_even'], ''),
             '' if p['break_even'] is None else 'yes' if p['raw'] < p['break_even'] else 'no']
            for p in pts]
    return header, rows


def redis_section(rpts, md_table):
    """The side-by-side part of the L2 section: every Redis client beside redis-benchmark."""
    if not rpts:
        return []
    impls = redis_impls(rpts)
    return ['**Side by side on one redis-server** (raw, no serde): each client\'s GB/s of KV '
            'and its share of the server\'s own ceiling, `redis-benchmark` SET (store) and GET '
            '(load) of 1 MiB values with min(chunks, 8) clients against the same private '
            'redis-server. A connector plugin is on this server when its factory reads '
            '`LMCACHE_BENCH_REDIS_HOST` / `LMCACHE_BENCH_REDIS_PORT`; otherwise its row is its '
            'own store\'s. Sweep measurements (one each).', '', md_table(
                ['op', 'chunks per task'] + [f'{i} GB/s (share)' for i in impls]
                + ['redis-benchmark GB/s'],
                [[p['op'], p['batch']]
                 + [f"{_gb(p['raw'][i])} ({p['raw'][i] / p['ceiling']:.2f})" if i in p['raw']
                    else '–' for i in impls]
                 + [_gb(p['ceiling'])] for p in rpts]), '']


def section(pts, md_table, plot, rpts=(), rpp=()):
    """The README's "L2 end to end" section as lines ([] without l2 rows); `rpts` from
    redis_points() adds the side-by-side table, `rpp` from read_pool_points() the read pool's."""
    if not pts:
        return []
    out = ['## L2 end to end', '',
           'Store and load of 1 MiB bfloat16 KV chunks through real storage, one task at a time: '
           'the adapter alone (raw) and the fp8 e4m3fn serde wrapper over it '
           '(`{"type": <adapter>, "serde": {"type": "fp8"}}`). GB/s of KV (the wide bytes the '
           'caller stores or loads). *Break-even*: the storage bandwidth below which fp8 makes '
           'the operation faster end to end, C × (1 − r) from the bare codec rate C (same chunk '
           'and batch, wrapper/ suite) and the stored bytes per wide byte r; the raw rate is the '
           "storage's own, measured here. Where the raw rate is below the break-even, the "
           'model predicts fp8 faster; *fp8 / raw* is what was measured. The model assumes the '
           'codec and the storage do not compete: where the storage server, its client workers '
           'and the codec share a few cores (a local redis-server on a small VM), fp8 gains less '
           'than it predicts. Sweep measurements (one each).', '']
    for adapter in ADAPTERS:
        rows = [p for p in pts if p['adapter'] == adapter]
        if not rows:
            continue
        out += [f'**{ADAPTER_TEXT[adapter]}**', '', md_table(
            ['op', 'chunks per task', 'raw GB/s', 'fp8 GB/s', 'fp8 / raw', 'stored per wide byte',
             'bare codec GB/s', 'break-even GB/s', 'raw below break-even'],
            [[p['op'], p['batch'], _gb(p['raw']), _gb(p['fp8']), f"{p['fp8'] / p['raw']:.2f}×",
              f"{p['ratio']:.3f}" if p['ratio'] is not None else '–', _gb(p['codec']),
              _gb(p['break_even']),
              '–' if p['break_even'] is None else
              'yes' if p['raw'] < p['break_even'] else 'no']
             for p in rows]), '']
    out += redis_section(rpts, md_table)
    out += read_pool_section(rpp, md_table)
    if plot:
        title, svg, png = plot
        out += [f'[![{title}]({png})]({svg})', '']
    return out


def plot(pts, out_dir, plots):
    """plots/l2_end_to_end.{svg,png}: per adapter and op, GB/s against chunks per task, raw and
    fp8, with the break-even bandwidth; None without points."""
    if not pts:
        return None
    plt = plots._pyplot()
    adapters = [a for a in ADAPTERS if any(p['adapter'] == a for p in pts)]
    ops = ('store', 'load')
    fig, axes = plt.subplots(len(adapters), 2, figsize=(9.5, 3.6 * len(adapters)),
                             squeeze=False, sharex=True)
    styles = {'raw': ('raw (adapter alone)', '#0072B2', '-', 'o'),
              'fp8': ('fp8 wrapper over it', '#D55E00', '--', 's'),
              'break_even': ('break-even storage bandwidth', plots.ROOFLINE_COLOUR, ':', None)}
    for i, adapter in enumerate(adapters):
        for j, op in enumerate(ops):
            ax = axes[i][j]
            rows = sorted((p for p in pts if p['adapter'] == adapter and p['op'] == op),
                          key=lambda p: p['batch'])
            xs = [p['batch'] for p in rows]
            for key, (label, colour, line, marker) in styles.items():
                ys = [p[key] / 1e9 if p[key] is not None else float('nan') for p in rows]
                ax.plot(xs, ys, color=colour, linestyle=line, marker=marker, label=label)
            ax.set_xscale('log', base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([str(x) for x in xs])
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.set_title(f'{adapter}: {op}')
            ax.set_ylabel('GB/s of KV')
            if i == len(adapters) - 1:
                ax.set_xlabel('1 MiB chunks per task')
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc='lower center', ncol=3, frameon=False)
    fig.suptitle('L2 end to end through real storage (higher is better)')
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    paths = plots.save(fig, out_dir, 'l2_end_to_end')
    plt.close(fig)
    return ('L2 end to end through real storage', *paths)


def summary_points(pts, batch):
    """The points of the summary rows: per adapter and op, the batch nearest `batch`."""
    out = []
    for adapter in ADAPTERS:
        for op in ('store', 'load'):
            rows = [p for p in pts if p['adapter'] == adapter and p['op'] == op]
            if rows:
                out.append(min(rows, key=lambda p: abs(p['batch'] - batch)))
    return out
