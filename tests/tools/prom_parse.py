#!/usr/bin/env python3
"""prom_parse.py — the Prometheus text exposition read by the Prometheus
Python client's own parser (Debian's python3-prometheus-client), as JSON
for a test's jq: {"families": {NAME: {"type": T, "help": H, "samples":
[[SAMPLE_NAME, {LABELS}, VALUE], ...]}}}.  A text the parser refuses exits
1 with its error; so does a family without HELP or TYPE, a sample whose
name is not its family's, or a duplicate series.

usage: prom_parse.py < metrics.txt
"""
import json, math, re, sys
from prometheus_client.parser import text_string_to_metric_families

text = sys.stdin.read()
out, seen = {}, set()
try:
    for fam in text_string_to_metric_families(text):
        if not fam.documentation or fam.type == "unknown":
            sys.exit(f"prom_parse: family {fam.name}: no HELP or TYPE")
        samples = []
        for s in fam.samples:
            if not s.name.startswith(fam.name):
                sys.exit(f"prom_parse: sample {s.name} outside its family {fam.name}")
            key = (s.name, tuple(sorted(s.labels.items())))
            if key in seen:
                sys.exit(f"prom_parse: duplicate series {s.name}{s.labels}")
            seen.add(key)
            v = s.value
            samples.append([s.name, s.labels, "+Inf" if math.isinf(v) else v])
        out[fam.name] = {"type": fam.type, "help": fam.documentation, "samples": samples}
except ValueError as e:
    sys.exit(f"prom_parse: the parser refused the text: {e}")
# the client strips _total from a counter's family name: say which it was
for line in text.splitlines():
    m = re.match(r"# TYPE (\S+) (\S+)$", line)
    if m and m.group(2) == "counter" and not m.group(1).endswith("_total"):
        sys.exit(f"prom_parse: counter {m.group(1)} does not end in _total")
json.dump({"families": out}, sys.stdout)
