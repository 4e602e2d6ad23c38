"""Describes the machine a report comes from (system.json). Stdlib only.

Keys: system_id, date, cpu_model, logical_cores, memory_bytes, simd_targets (what the CPU
supports, from /proc/cpuinfo flags), gpus (name, memory, driver; empty without nvidia-smi or a
GPU), compiler, libtorch_version, git_revision, git_dirty, kernel.
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


def _cpuinfo():
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as f:
            text = f.read()
    except OSError:
        return '', set()
    model = re.search(r'^model name\s*:\s*(.+)$', text, re.M)
    flags = re.search(r'^flags\s*:\s*(.+)$', text, re.M)
    return (model.group(1).strip() if model else platform.processor() or 'unknown',
            set(flags.group(1).split()) if flags else set())


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
                         'driver': parts[2], 'compute_capability': parts[3] if len(parts) > 3 else ''})
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


def collect(repo_root, build_dir=None):
    model, flags = _cpuinfo()
    cores = os.cpu_count() or 0
    gpus = _gpus()
    system_id = f'{slug(model)}-{cores}c'
    if gpus:
        system_id += '-' + slug(gpus[0]['name'])
    simd = [name for name, need in _X86_TARGETS if all(f in flags for f in need)]
    revision = _run(['git', 'rev-parse', 'HEAD'], cwd=repo_root) or 'unknown'
    dirty = bool(_run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=repo_root))
    return {
        'system_id': system_id,
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'cpu_model': model,
        'logical_cores': cores,
        'memory_bytes': _memory_bytes(),
        'simd_targets': simd,
        'gpus': gpus,
        'compiler': _compiler(build_dir),
        'libtorch_version': _libtorch_version(),
        'git_revision': revision,
        'git_dirty': dirty,
        'kernel': platform.release(),
    }


if __name__ == '__main__':
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print(json.dumps(collect(root, sys.argv[1] if len(sys.argv) > 1 else None), indent=2))
