"""Describes the machine a report comes from (system.json). Stdlib only.

Keys: system_id, date, cpu_model, cpu_vendor, cpu_family, cpu_model_number, cpu_uarch,
logical_cores, memory_bytes, simd_targets (what the CPU supports, from /proc/cpuinfo flags),
simd_target (the one the fp8 kernels ran on: lmcache-bench's, else the best of simd_targets),
gpus (name, memory, driver; empty without nvidia-smi or a GPU), compiler, libtorch_version,
git_revision, git_dirty, kernel.

The system id names what distinguishes the hardware, so that two different machines never
share reports/<system-id>/: the CPU model name, its microarchitecture (from the cpuid family
and model: a VM often shows a generic "AMD EPYC" for every generation), the SIMD target, the
logical cores and the first GPU, e.g. "amd-epyc-zen3-avx2-2c". system_id() computes it from
system.json's keys; validate_report.py checks that a report's directory is its id.
"""
import datetime
import json
import os
import platform
import re
import shutil
import subprocess

# x86 SIMD levels the project's Highway kernels can target, best first, with the cpuinfo flags
# each needs.
_X86_TARGETS = [
    ('AVX3_SPR', ['avx512fp16']),
    ('AVX3_ZEN4', ['avx512bf16', 'avx512vnni']),
    ('AVX3', ['avx512f', 'avx512vl', 'avx512dq', 'avx512bw']),
    ('AVX2', ['avx2', 'bmi2', 'fma', 'f16c']),
    ('SSE4', ['sse4_2', 'pclmulqdq', 'aes']),
    ('SSSE3', ['ssse3']),
]


def _run(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ''


# Microarchitectures by cpuid (vendor, family) and model range, for the system id. Models not
# listed fall back to "f<family>m<model>", which still tells generations apart.
_UARCH = {
    ('AuthenticAMD', 0x17): [(0x00, 0x2f, 'zen'), (0x30, 0xff, 'zen2')],
    ('AuthenticAMD', 0x19): [(0x00, 0x0f, 'zen3'), (0x10, 0x1f, 'zen4'), (0x20, 0x5f, 'zen3'),
                             (0x60, 0x7f, 'zen4'), (0xa0, 0xaf, 'zen4')],
    ('AuthenticAMD', 0x1a): [(0x00, 0xff, 'zen5')],
    ('GenuineIntel', 0x6): [(0x4f, 0x4f, 'broadwell'), (0x55, 0x55, 'skylake'),
                            (0x6a, 0x6a, 'icelake'), (0x6c, 0x6c, 'icelake'),
                            (0x8f, 0x8f, 'sapphirerapids'), (0xcf, 0xcf, 'emeraldrapids'),
                            (0xad, 0xad, 'graniterapids'), (0xae, 0xae, 'graniterapids')],
}

# Highway target names -> the short SIMD name in a system id.
_SIMD_SLUG = {'AVX3_SPR': 'avx512spr', 'AVX3_ZEN4': 'avx512zen4', 'AVX3_DL': 'avx512dl',
              'AVX3': 'avx512', 'AVX2': 'avx2', 'SSE4': 'sse4', 'SSSE3': 'ssse3',
              'EMU128': 'emu128', 'SCALAR': 'scalar'}


def _cpuinfo_text():
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            return f.read()
    except OSError:
        return ''


def parse_cpuinfo(text):
    """The first processor of /proc/cpuinfo: model name, vendor, family, model, flags."""
    def field(name):
        m = re.search(r'^' + name + r'\s*:\s*(.*)$', text, re.M)
        return m.group(1).strip() if m else ''

    def integer(name):
        value = field(name)
        try:
            return int(value, 0)
        except ValueError:
            return -1

    model = field('model name') or platform.processor() or 'unknown'
    return {'cpu_model': model, 'cpu_vendor': field('vendor_id') or field('CPU implementer'),
            'cpu_family': integer('cpu family'),
            'cpu_model_number': integer('model') if field('model') else integer('CPU part'),
            'flags': set(field('flags').split())}


def uarch(vendor, family, model):
    """"zen3", "icelake", ... or "f<family>m<model>" (hex) when not in the table; "" when
    cpuinfo gave no family."""
    for lo, hi, name in _UARCH.get((vendor, family), []):
        if lo <= model <= hi:
            return name
    if family < 0:
        return ''
    return f'f{family:x}m{max(model, 0):x}'


def simd_slug(target):
    return _SIMD_SLUG.get(target, slug(target))


def _memory_bytes():
    try:
        with open('/proc/meminfo', encoding='utf-8') as f:
            m = re.search(r'^MemTotal:\s+(\d+) kB', f.read(), re.M)
        return int(m.group(1)) * 1024 if m else 0
    except OSError:
        return 0


def _gpus():
    if not shutil.which('nvidia-smi'):
        return []
    out = _run(['nvidia-smi', '--query-gpu=name,memory.total,driver_version,compute_cap',
                '--format=csv,noheader,nounits'])
    gpus = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(',')]
        if len(parts) >= 3:
            gpus.append({'name': parts[0], 'memory_bytes': int(float(parts[1]) * 2**20),
                         'driver': parts[2],
                         'compute_capability': parts[3] if len(parts) > 3 else ''})
    return gpus


def _libtorch_version():
    out = _run(['dpkg-query', '-W', '-f=${Version}', 'libtorch-dev'])
    return out or 'unknown'


def _compiler(build_dir):
    cxx = ''
    cache = os.path.join(build_dir, 'CMakeCache.txt') if build_dir else ''
    if cache and os.path.exists(cache):
        with open(cache, encoding='utf-8') as f:
            m = re.search(r'^CMAKE_CXX_COMPILER:\w+=(.+)$', f.read(), re.M)
            cxx = m.group(1).strip() if m else ''
    cxx = cxx or shutil.which('c++') or 'c++'
    return (_run([cxx, '--version']).splitlines() or ['unknown'])[0]


def slug(text):
    text = re.sub(r'\(r\)|\(tm\)|cpu|@.*$', '', text.lower())
    return re.sub(r'[^a-z0-9]+', '-', text).strip('-')


def system_id(system):
    """The id of the hardware system.json describes: CPU model, microarchitecture (unless the
    model name already says it), SIMD target, logical cores, first GPU."""
    parts = [slug(system['cpu_model']) or 'unknown-cpu']
    arch = system.get('cpu_uarch', '')
    if arch and arch not in parts[0]:
        parts.append(arch)
    parts.append(simd_slug(system.get('simd_target') or 'unknown'))
    parts.append(f"{system['logical_cores']}c")
    if system.get('gpus'):
        parts.append(slug(system['gpus'][0]['name']))
    return '-'.join(p for p in parts if p)


# The keys that describe the hardware: a report is replaced only by a run on hardware with the
# same values (make_report.py).
HARDWARE_KEYS = ('cpu_model', 'cpu_vendor', 'cpu_family', 'cpu_model_number', 'simd_target',
                 'logical_cores')


def hardware(system):
    """The hardware fingerprint of system.json: HARDWARE_KEYS and the GPU names."""
    return {**{k: system.get(k) for k in HARDWARE_KEYS},
            'gpus': [g.get('name') for g in system.get('gpus', [])]}


def collect(repo_root, build_dir=None, simd_target=None, cpuinfo_text=None):
    """system.json of this machine. `simd_target`: the Highway target the fp8 kernels ran on
    (lmcache-bench's context); default the best target the CPU flags allow."""
    cpu = parse_cpuinfo(_cpuinfo_text() if cpuinfo_text is None else cpuinfo_text)
    cores = os.cpu_count() or 0
    gpus = _gpus()
    simd = [name for name, need in _X86_TARGETS if all(f in cpu['flags'] for f in need)]
    revision = _run(['git', 'rev-parse', 'HEAD'], cwd=repo_root) or 'unknown'
    dirty = bool(_run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=repo_root))
    system = {
        'system_id': '',
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'cpu_model': cpu['cpu_model'],
        'cpu_vendor': cpu['cpu_vendor'],
        'cpu_family': cpu['cpu_family'],
        'cpu_model_number': cpu['cpu_model_number'],
        'cpu_uarch': uarch(cpu['cpu_vendor'], cpu['cpu_family'], cpu['cpu_model_number']),
        'logical_cores': cores,
        'memory_bytes': _memory_bytes(),
        'simd_targets': simd,
        'simd_target': simd_target or (simd[0] if simd else 'unknown'),
        'gpus': gpus,
        'compiler': _compiler(build_dir),
        'libtorch_version': _libtorch_version(),
        'git_revision': revision,
        'git_dirty': dirty,
        'kernel': platform.release(),
    }
    system['system_id'] = system_id(system)
    return system


if __name__ == '__main__':
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print(json.dumps(collect(root, sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
