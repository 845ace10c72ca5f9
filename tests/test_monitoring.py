#!/usr/bin/env python3
"""test_monitoring.py: the names ops/monitoring/ reads, against /metrics.

Every metric name in the Grafana dashboard's expressions and variable
queries and in the Prometheus rule files must be one objlogd exports: a
sample name or a declared family (# TYPE) of one of the scrapes given, a
series a recording rule of these files defines, or one Prometheus makes
itself (`up`). Every label a selector matches on (`{api="s3"}`) and every
label an aggregation keeps (`sum by (api, endpoint)`) must exist on the
series the expression reads, where the scrape has samples of them.

    test_monitoring.py --scrape FILE [--scrape FILE ...] --dashboard JSON RULES.yml...

Exit 0 when every name and label is found, 1 naming each that is not, 2
on bad input. tests/test_monitoring.sh runs it on real scrapes, and once
on a rule file with a name that does not exist, which must fail.
"""
import argparse
import json
import re
import sys

# Series Prometheus adds to every target; labels it adds to every series.
PROMETHEUS_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                     "scrape_samples_post_metric_relabeling", "scrape_series_added"}
TARGET_LABELS = {"instance", "job"}

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "atan2", "inf", "nan"}
GROUPING = ("by", "without", "on", "ignoring", "group_left", "group_right")

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
IDENT = re.compile(r"(?<![\w.:$])([A-Za-z_:][\w:]*)(\s*\()?")
SELECTOR = re.compile(r"(?<![\w.:$])([A-Za-z_:][\w:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
CLAUSE = re.compile(r"\b(" + "|".join(GROUPING) + r")\s*\(([^)]*)\)")
GRAFANA_VAR = re.compile(r"\$\{?\w+\}?")


def load_yaml(path):
    try:
        import yaml
        with open(path) as f:
            return yaml.safe_load(f)
    except ImportError:
        pass
    try:
        from ruamel.yaml import YAML
    except ImportError:
        sys.exit("test_monitoring.py: needs python3-yaml or python3-ruamel.yaml")
    with open(path) as f:
        return YAML(typ="safe").load(f)


def parse_scrape(path, series):
    """series: name -> set of label names seen on its samples."""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# TYPE "):
                parts = line.split()
                name, kind = parts[2], parts[3]
                series.setdefault(name, set())
                if kind in ("histogram", "summary"):
                    for suffix in ("_bucket", "_sum", "_count"):
                        series.setdefault(name + suffix, set())
            elif line and not line.startswith("#"):
                m = re.match(r"([A-Za-z_:][\w:]*)(\{(.*)\})?\s", line)
                if m:
                    labels = series.setdefault(m.group(1), set())
                    labels.update(re.findall(r'([A-Za-z_]\w*)="', m.group(3) or ""))


def label_replace_targets(expr):
    """Labels label_replace()/label_join() write: their first string argument."""
    out = set()
    for m in re.finditer(r"\blabel_(?:replace|join)\s*\(", expr):
        depth, i = 1, m.end()
        while i < len(expr) and not (depth == 1 and expr[i] == ","):
            depth += expr[i] in "([{"
            depth -= expr[i] in ")]}"
            i += 1
        s = STRING.search(expr, i)
        if s:
            out.add(s.group(0)[1:-1])
    return out


def analyse(expr):
    """(metric names, {name: selector label keys}, labels kept or matched on)."""
    made = label_replace_targets(expr)
    e = STRING.sub('""', expr)
    e = GRAFANA_VAR.sub(" ", e)
    selectors = {}
    for m in SELECTOR.finditer(e):
        selectors.setdefault(m.group(1), set()).update(MATCHER.findall(m.group(2)))
    # {__name__=~"..."} alone names no metric here; none of ours uses it.
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    grouping = set()
    for m in CLAUSE.finditer(e):
        if m.group(1) != "without":
            grouping.update(x.strip() for x in m.group(2).split(",") if x.strip())
    e = CLAUSE.sub(" ", e)
    names = set()
    for m in IDENT.finditer(e):
        word = m.group(1)
        if m.group(2) or word.lower() in KEYWORDS:
            continue  # a function or aggregation, or a keyword
        names.add(word)
    return names, selectors, grouping, made


def dashboard_exprs(path):
    with open(path) as f:
        dash = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((f'panel "{p.get("title")}"', t["expr"]))
            walk(p.get("panels", []))

    walk(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query" and q:
            m = re.match(r"\s*(?:label_values|query_result)\s*\((.*)\)\s*$", q)
            body = m.group(1) if m else q
            if m and body.count(",") and "label_values" in q:
                body = body.rsplit(",", 1)[0]  # label_values(metric, label)
            out.append((f'variable "{v.get("name")}"', body))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrape", action="append", required=True)
    ap.add_argument("--dashboard", required=True)
    ap.add_argument("rules", nargs="+")
    a = ap.parse_args()

    series = {}
    for s in a.scrape:
        parse_scrape(s, series)
    if "objlog_build_info" not in series:
        print("test_monitoring.py: the scrapes hold no objlog_build_info: not objlogd's /metrics")
        return 2

    exprs = dashboard_exprs(a.dashboard)
    if not exprs:
        print(f"test_monitoring.py: no expressions in {a.dashboard}")
        return 2
    recorded = {}
    for path in a.rules:
        doc = load_yaml(path) or {}
        for g in doc.get("groups", []):
            for r in g.get("rules", []):
                what = f'{path}: {"record " + r["record"] if "record" in r else "alert " + r.get("alert", "?")}'
                exprs.append((what, str(r.get("expr", ""))))
                if "record" in r:
                    _, _, grouping, made = analyse(str(r["expr"]))
                    recorded[r["record"]] = grouping | made

    problems, used = [], set()
    for where, expr in exprs:
        names, selectors, grouping, made = analyse(expr)
        have = set(TARGET_LABELS) | made
        for n in sorted(names):
            used.add(n)
            if n in recorded:
                have |= recorded[n]
            elif n in PROMETHEUS_SERIES:
                pass
            elif n not in series:
                problems.append(f"{where}: {n} is not in objlogd's /metrics")
            else:
                have |= series[n]
        for n, keys in sorted(selectors.items()):
            if n in series and series[n]:
                for k in sorted(keys - TARGET_LABELS - {"__name__"} - series[n]):
                    problems.append(f"{where}: {n} has no label {k}")
        # Labels are known only when every series read has samples here.
        known = all(n in recorded or n in PROMETHEUS_SERIES or series.get(n) for n in names)
        if names and known:
            for k in sorted(grouping - have):
                problems.append(f"{where}: no series it reads has label {k}")

    print(f"test_monitoring.py: {len(exprs)} expressions, {len(used)} metric names, "
          f"{len(series)} names in the scrapes")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
