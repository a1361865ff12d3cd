#!/usr/bin/env python3
"""Fetches a Prometheus text exposition and prints what prometheus_client's own parser reads, as JSON:

  metrics-read.py URL

{"types": {family: type}, "samples": {"name{label="value",...}": value}}, labels sorted by name.
A body the parser rejects prints {"error": "..."} and exits 1: the format itself is under test.
"""
import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
            text = response.read().decode()
            content_type = response.headers.get("Content-Type", "")
        out = {"content_type": content_type, "types": {}, "samples": {}}
        for family in text_string_to_metric_families(text):
            out["types"][family.name] = family.type
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                out["samples"][s.name + ("{" + labels + "}" if labels else "")] = s.value
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
