#!/usr/bin/env python3
"""Random templates, rendered by jinja2 (transformers' environment, jinja_env.py) and by
the engine (chat-cases), must agree: the same bytes, or both raising (ours naming
jinja2's exception class). Two generators with fixed seeds: expressions, filters, tests,
methods and statements over a fixed set of variables; and whitespace control (text of
spaces, tabs and newlines around tags with random -/+ markers, comments and raw blocks).
A case where jinja2 renders and ours refuses with "not implemented" is counted and listed
(no wrong text), never passed silently.

Usage: differential_test.py CHAT_CASES_BINARY WORK_DIR [CASES_PER_SEED]
(seeds OG_DIFF_SEED, +1, +2; OG_DIFF_SEED defaults to 1)"""
import copy
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

VARS = {"s": "Hello, World", "u": "héllo wörld ß", "n": 7, "m": -3, "f": 2.5, "z": 0, "e": "",
        "l": [3, 1, 2], "ls": ["b", "A", "c"], "d": {"b": 2, "a": 1}, "t": True, "no": None,
        "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "x": 1}],
        "nested": {"a": {"b": [1, {"c": "deep"}]}}, "ws": "  pad\n\tme  "}
ATOMS = ["s", "u", "n", "m", "f", "z", "e", "l", "ls", "d", "t", "no", "msgs", "nested", "ws", "undef",
         "1", "0", "-1", "2.5", "'a'", "'xy'", "''", "[1, 2]", "[]", "{'k': 1}", "(1, 'a')", "none", "true",
         "false", "l[0]", "l[-1]", "s[1:4]", "s[::-1]", "d.a", "d['b']", "msgs[0].role", "msgs[1]['content']",
         "nested.a.b[1].c", "range(3)", "namespace(a=1).a", "dict(x=1)", "'%s-%d'"]
FILTERS = ["upper", "lower", "title", "capitalize", "trim", "length", "first", "last", "list", "string", "int",
           "float", "abs", "tojson", "tojson(indent=2)", "reverse|list", "sort", "unique|list", "join(',')",
           "join", "default('D')", "default('D', true)", "items|list", "dictsort", "select|list",
           "reject|list", "map('string')|list", "wordcount", "center(9)", "indent(2)", "replace('l', 'L')",
           "truncate(5)", "round", "round(1)", "sum", "max", "min", "count", "safe", "e", "format('x', 1)",
           "batch(2)|list", "slice(2)|list", "selectattr('role')|list", "map(attribute='role')|list",
           "attr('a')", "dictsort(by='value')", "sort(reverse=true)", "select('odd')|list"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "sequence",
         "iterable", "boolean", "true", "false", "even", "odd", "divisibleby(2)", "callable", "lower",
         "upper", "eq 1", "in [1, 2]", "sameas none", "escaped", "gt 1", "le 0"]
OPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "and", "or"]
METHODS = ["upper()", "lower()", "strip()", "split()", "split(',')", "startswith('H')", "endswith('d')",
           "replace('o', '0')", "title()", "find('o')", "count('l')", "items()|list", "keys()|list",
           "values()|list", "get('a')", "get('q', 5)", "capitalize()", "lstrip(' ')", "rstrip()",
           "isdigit()", "format(1)", "zfill(5)", "join(['a','b'])", "index(1)", "splitlines()",
           "rsplit(',', 1)", "partition(',')"]


def expr(r, d=0):
    x = r.random()
    if d > 2 or x < 0.3:
        return r.choice(ATOMS)
    if x < 0.45:
        return f"({expr(r, d + 1)} {r.choice(OPS)} {expr(r, d + 1)})"
    if x < 0.6:
        return f"{expr(r, d + 1)}|{r.choice(FILTERS)}"
    if x < 0.7:
        return f"({expr(r, d + 1)} is {r.choice(['', 'not '])}{r.choice(TESTS)})"
    if x < 0.8:
        return f"{r.choice(['s', 'u', 'd', 'l', 'ws', 'e'])}.{r.choice(METHODS)}"
    if x < 0.87:
        return f"(not {expr(r, d + 1)})"
    if x < 0.93:
        return f"({expr(r, d + 1)} if {expr(r, d + 1)} else {expr(r, d + 1)})"
    return f"[{expr(r, d + 1)}, {expr(r, d + 1)}]"


def stmt(r):
    x, e = r.random(), expr(r)
    if x < 0.4:
        return "{{ " + e + " }}"
    if x < 0.55:
        seq = r.choice(["l", "ls", "d", "s", "msgs", "range(3)", "[]"])
        cond = r.choice(["", " if x", " if loop is defined"])
        return ("{% for x in " + seq + cond + " %}{{ loop.index }}{{ x }}{{ " + expr(r) + " }}"
                "{% if loop.last %}!{% endif %}{% else %}E{% endfor %}")
    if x < 0.68:
        return "{% if " + e + " %}T{% elif " + expr(r) + " %}M{% else %}F{% endif %}"
    if x < 0.76:
        return "{% set v = " + e + " %}{{ v }}"
    if x < 0.82:
        return ("{% set ns = namespace(k=0) %}{% for x in l %}{% set ns.k = ns.k + x %}{% endfor %}"
                "{{ ns.k }}{{ " + e + " }}")
    if x < 0.88:
        return "{% macro mm(a, b=" + r.choice(ATOMS) + ") %}[{{ a }}|{{ b }}]{% endmacro %}{{ mm(" + e + ") }}"
    if x < 0.94:
        return "{% set blk %}" + "{{ " + e + " }}" + "{% endset %}{{ blk|length }}"
    return "{% filter upper %}{{ " + e + " }}{% endfilter %}"


def ws_template(r):
    """Text of spaces, tabs and newlines around tags with random whitespace markers."""
    parts = []
    for _ in range(r.randint(2, 8)):
        parts.append("".join(r.choice([" ", "  ", "\t", "\n", "\n\n", "x", "y ", " z", "\r\n"])
                             for _ in range(r.randint(0, 4))))
        a, b = r.choice(["", "-", "+"]), r.choice(["", "-", "+"])
        k = r.random()
        if k < 0.3:
            parts.append("{{" + r.choice(["", "-"]) + " 'v' " + r.choice(["", "-"]) + "}}")
        elif k < 0.55:
            parts.append("{%" + a + " if true " + b + "%}" + r.choice(["", "\n", " in ", "\n  "]) +
                         "{%" + r.choice(["", "-", "+"]) + " endif " + r.choice(["", "-", "+"]) + "%}")
        elif k < 0.75:
            parts.append("{%" + a + " for i in [1, 2] " + b + "%}" + r.choice(["\n  i", "{{ i }}", " \n"]) +
                         "{%" + r.choice(["", "-"]) + " endfor " + r.choice(["", "-"]) + "%}")
        elif k < 0.9:
            parts.append("{#" + a + " c " + b.replace("+", "") + "#}")
        else:
            parts.append("{%" + a + " raw " + b.replace("+", "") + "%}" + r.choice([" {{ x }} ", "\n", ""]) +
                         "{%" + r.choice(["", "-"]) + " endraw " + r.choice(["", "-"]) + "%}")
    parts.append(r.choice(["", "\n", "\n\n", "  "]))
    return "".join(parts)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    per_seed = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    try:
        import jinja_env
    except ImportError as e:
        print(f"SKIP: the jinja2 oracle cannot be imported ({e}); install tools/requirements.txt")
        return 77
    os.environ["CHAT_TEMPLATE_NOW"] = "2025-07-10T12:00:00"
    env = jinja_env.make_env()
    templates = []
    first = int(os.environ.get("OG_DIFF_SEED", "1"))
    for seed in range(first, first + 3):
        r = random.Random(seed)
        templates += ["".join(stmt(r) for _ in range(r.randint(1, 2))) for _ in range(per_seed)]
        templates += [ws_template(r) for _ in range(per_seed)]
    payload, want = [], []
    var_json = {k: json.dumps(v) for k, v in VARS.items()}
    for tpl in templates:
        payload.append({"template": tpl, "vars": var_json})
        try:  # a fresh copy: `list|indent` extends the list in place before it fails
            want.append(("ok", jinja_env.render(env, tpl, copy.deepcopy(VARS))))
        except Exception as e:
            want.append(("error", type(e).__name__, str(e)))
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "differential.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, ensure_ascii=False)
    r = subprocess.run([binary, path], capture_output=True)
    if r.returncode != 0:
        print(f"FAIL: chat-cases exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return 1
    got = json.loads(r.stdout)
    failed, refused = 0, []
    for tpl, w, g in zip(templates, want, got):
        if w[0] == "ok":
            if g["ok"] and g["text"] == w[1]:
                continue
            if not g["ok"] and "not implemented" in g["error"]:
                refused.append((tpl, g["error"]))
                continue
            failed += 1
            print(f"FAIL {tpl!r}\n  jinja2: {w[1]!r}\n  ours:   {g.get('text', g.get('error'))!r}")
        elif g["ok"] or (w[1] + ":" not in g["error"] and "not implemented" not in g["error"]):
            failed += 1
            print(f"FAIL {tpl!r}\n  jinja2 raised {w[1]}: {w[2]}\n  ours:   {g.get('text', g.get('error'))!r}")
    for tpl, err in refused:
        print(f"refused (jinja2 renders it): {tpl!r}: {err}")
    print(f"{len(templates)} random templates: {len(templates) - failed - len(refused)} agree, "
          f"{len(refused)} refused as not implemented, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
