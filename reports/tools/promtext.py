"""Minimal parser for the Prometheus text exposition format (what lmcache-bench writes).

Only what the report tools need: samples with their labels; HELP/TYPE lines are kept as
metadata. Stdlib only.
"""
import re

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Returns (samples, types): samples = [(name, {label: value}, float)], types = {name: type}."""
    samples, types = [], {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith('#'):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == 'TYPE':
                types[parts[2]] = parts[3]
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError(f'line {lineno}: not a Prometheus sample: {line!r}')
        labels = {k: bytes(v, 'utf-8').decode('unicode_escape') for k, v in _LABEL.findall(m.group(3) or '')}
        value = m.group(4)
        samples.append((m.group(1), labels, float(value.replace('Inf', 'inf'))))
    return samples, types


def load(path):
    with open(path, encoding='utf-8') as f:
        return parse(f.read())
