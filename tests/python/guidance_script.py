#!/usr/bin/env python3
"""One guided-generation script, two runtimes: run with `onnxruntime_genai` and with
`onnx_genai` (only the import differs) on a package, it prints one JSON record per case:
the greedy sequence under that guidance (GeneratorParams.set_guidance). Every case's
guidance is valid, so any difference between the runtimes is a mask or a step that
differs. tests/python/test_guidance.py runs it twice and compares the records.

  guidance_script.py RUNTIME PACKAGE --ids 1,2,3 [--new 24]
"""
import argparse
import importlib
import json

import numpy as np

# (name, guidance type, guidance text): each kind the issue lists, with constructs that
# cross lexeme ends inside tokens (digits then '-', a key then ':', nested objects)
CASES = [
    ("regex_digits_word", "regex", r"[0-9]{3}-[a-z]+"),
    ("regex_choice", "regex", r"(yes|no|maybe)( indeed)?"),
    ("regex_unicode", "regex", r"\w+ \d{2}"),
    ("json_object_schema", "json_schema", json.dumps({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 8},
                       "age": {"type": "integer", "minimum": 0, "maximum": 150},
                       "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                "maxItems": 3}},
        "required": ["name", "age"], "additionalProperties": False})),
    ("json_any_object", "json_schema", json.dumps({"type": "object"})),
    ("json_anyof", "json_schema", json.dumps({
        "anyOf": [{"type": "boolean"}, {"type": "array", "items": {"type": "number"}}]})),
    ("lark_sum", "lark_grammar",
     'start: expr\nexpr: term (("+" | "-") term)*\nterm: NUMBER | "(" expr ")"\n'
     '%import common.NUMBER\n'),
    ("lark_words", "lark_grammar",
     'start: greeting " " NAME "!"\ngreeting: "hello" | "hi"\nNAME: /[A-Z][a-z]{1,6}/\n'),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runtime", choices=["onnxruntime_genai", "onnx_genai"])
    ap.add_argument("package")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--new", type=int, default=24)
    ap.add_argument("--case", action="append", help="only these cases")
    args = ap.parse_args()
    og = importlib.import_module(args.runtime)  # the only difference between the runs
    prompt = [int(x) for x in args.ids.split(",")]
    config = og.Config(args.package)
    config.clear_providers()
    model = og.Model(config)
    for name, kind, text in CASES:
        if args.case and name not in args.case:
            continue
        rec = {"case": name}
        try:
            params = og.GeneratorParams(model)
            params.set_search_options(max_length=len(prompt) + args.new, do_sample=False)
            params.set_guidance(kind, text)
            gen = og.Generator(model, params)
            gen.append_tokens(np.array(prompt, dtype=np.int32))
            while not gen.is_done():
                gen.generate_next_token()
            rec["ids"] = [int(x) for x in np.asarray(gen.get_sequence(0)).reshape(-1)]
        except Exception as e:  # recorded: the test shows it
            rec["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
