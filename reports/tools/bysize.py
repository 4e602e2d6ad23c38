"""The fp8 codec by size and the wrapper with its default options: two README sections that show
how close the CPU codec comes to the memory roofline in cache and out of it, and what the
wrapper keeps of the bare codec, from the sweep's rows.

  - "fp8 codec by size": encode and decode of every wide dtype and format at 1, 16 and 256 MiB
    (those of them the sweep has), 1 and 2 threads: GB/s (bytes read + written) and the
    ratio to the in-run memcpy roofline (⚠ where the roofline's spread exceeds the bound).
  - "Wrapper with default options": store and load of 1 MiB bfloat16 chunks through the fp8
    wrapper as a user gets it (lmcache-bench's impl=wrapper), one task at a time, at every
    batch the sweep has: GB/s and × the bare codec on the same batch.
"""
from reportdata import num

SIZES = (1 << 20, 16 << 20, 256 << 20)
THREADS = (1, 2)
DTYPES = ('bfloat16', 'float16', 'float32')
FORMATS = ('float8_e4m3fn', 'float8_e5m2')
WRAPPER_CHUNK = 1 << 20


def _size_text(size):
    return f'{size >> 20} MiB'


def codec_columns(sweep):
    """[(size, threads)] of SIZES x THREADS with at least one SIMD CPU codec row."""
    have = {(num(r['size_bytes']), num(r['threads']))
            for r in sweep.select(suite='codec', impl='simd', device='cpu')}
    return [(s, t) for s in SIZES for t in THREADS if (s, t) in have]


def codec_cell(sweep, op, dtype, fmt, size, threads, spread_bound):
    """'GB/s (ratio×)' of one codec row, '–' when the sweep lacks it."""
    rows = sweep.select(suite='codec', impl='simd', device='cpu', op=op, dtype=dtype,
                        format=fmt, size_bytes=size, threads=threads)
    if not rows:
        return '–'
    values = rows[0].values
    text = f"{values.get('throughput', 0) / 1e9:.1f}"
    ratio = values.get('roofline_ratio')
    if ratio is not None:
        noisy = (values.get('roofline_spread') or 0) > spread_bound
        text += f" ({ratio:.2f}×{' ⚠' if noisy else ''})"
    return text


def wrapper_rows(sweep):
    """[[op, batch, GB/s, × bare codec]] of the default-options wrapper rows, by op and batch."""
    out = []
    for op in ('store', 'load'):
        rows = sweep.select(suite='wrapper', impl='wrapper', serde='fp8', op=op,
                            dtype='bfloat16', format='float8_e4m3fn',
                            size_bytes=WRAPPER_CHUNK, threads=1)
        for r in sorted(rows, key=lambda r: num(r['batch'])):
            ratio = r.values.get('codec_ratio')
            out.append([op, r['batch'], f"{r.values.get('throughput', 0) / 1e9:.2f}",
                        '–' if ratio is None else f'{ratio:.2f}×'])
    return out


def section(sweep, md_table, spread_bound):
    """The README lines of both sections ([] for a section the sweep has no rows for)."""
    out = []
    columns = codec_columns(sweep)
    if columns:
        bound = f'{100 * spread_bound:.0f} %'
        out += ['## fp8 codec by size', '',
                'The SIMD CPU codec (the best target this CPU runs, see [Machine](#machine)) at '
                'a size in cache and two out of it, 1 and 2 threads: GB/s of bytes read + '
                'written, and in brackets × the memcpy roofline of the same bytes and threads '
                f'in the same run (⚠: the roofline\'s samples spread more than {bound}). Sweep '
                'measurements (one each); every row is in [tables/codec.csv](tables/codec.csv).',
                '']
        header = ['op', 'dtype → format'] + [f'{_size_text(s)}, {t} thr' for s, t in columns]
        body = []
        for op in ('encode', 'decode'):
            for dtype in DTYPES:
                for fmt in FORMATS:
                    cells = [codec_cell(sweep, op, dtype, fmt, s, t, spread_bound)
                             for s, t in columns]
                    if all(c == '–' for c in cells):
                        continue
                    short = fmt.replace('float8_', '')
                    pair = f'{dtype} → {short}' if op == 'encode' else f'{short} → {dtype}'
                    body.append([op, pair] + cells)
        out += [md_table(header, body), '']
    wrapper = wrapper_rows(sweep)
    if wrapper:
        out += ['## Wrapper with default options', '',
                'Store and load of 1 MiB bfloat16 chunks through the fp8 e4m3fn serde wrapper '
                'over the mock adapter with the options a user gets (each serde step inline or '
                'on a worker as the adaptive thresholds choose), one task at a time: GB/s of '
                'wide bytes and × the bare codec on the same batch, timed interleaved. Sweep '
                'measurements.', '',
                md_table(['op', 'chunks per task', 'GB/s', '× bare codec'], wrapper), '']
    return out
