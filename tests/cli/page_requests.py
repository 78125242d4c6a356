"""Lists the network requests a page made, from a Chromium net log (--log-net-log): those
whose initiator is an origin (a file:// page's is "null"). Chromium's own requests (update
checks and the like, which some builds make despite the flags) have "not an origin" and are
not the page's. Exits 1 when the page made any.

usage: page_requests.py NET_LOG_JSON"""
import json
import sys

net = json.load(open(sys.argv[1]))
types = {v: k for k, v in net["constants"]["logEventTypes"].items()}
made = []
for e in net.get("events", []):
    p = e.get("params") or {}
    if types.get(e["type"]) == "URL_REQUEST_START_JOB" and p.get("initiator", "not an origin") != "not an origin":
        made.append(f'{p.get("method", "?")} {p.get("url", "?")} (from {p["initiator"]})')
for m in made:
    print(m)
sys.exit(1 if made else 0)
