#!/usr/bin/env python3
"""Writes tests/guide/json_cases.inc: JSON schemas and texts with llguidance's verdict on
each, for tests/unit/test_guide_json.c, which checks our JSON Schema front end and matcher
on a vocabulary of single bytes against this table without running Python.

llguidance (PyPI) is the oracle, with the options onnxruntime-genai's `json_schema`
guidance uses (LLMatcher.grammar_from_json_schema, defaults). Each text is fed one byte
at a time (GPT-2's tokenizer has a token for every byte but 0xFF); the verdict is the
index of the first byte refused, or -1 when the whole text is accepted as complete, or
-2 when it is a proper prefix of the language only. Schemas llguidance refuses are
written with verdict -3 (our front end must refuse them too). A case with a third item
is one we refuse on purpose (the item says why): the table marks it, and the C test
checks that we refuse it while llguidance does not.

Run: python3 tests/guide/json_cases.py [--check]   (--check: exit 1 when the checked-in
table differs from what llguidance says now; 77 when llguidance or the tokenizer is
missing).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "json_cases.inc")
TOKENIZER = os.path.join(HERE, "..", "..", "..", "shared", "models", "ortgenai",
                         "hf-internal-testing", "tiny-random-gpt2-fp32", "tokenizer.json")

def LIST(n):
    """A JSON array of n zeros."""
    return "[" + ",".join(["0"] * n) + "]"


def PROPS(n):
    """A JSON object of n members (the same key, which llguidance allows)."""
    return "{" + ",".join(['"k":0'] * n) + "}"


OBJ_AB = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
STR_ESC = ['"abc"', '"\\/"', '"\\n\\r\\t\\b\\f\\\\\\""', '"\\u00e9"', '"\\u001f"', '"\\u001F"',
           '"\\u007f"', '"\\u0020"', '"\\ud800"', '"\\a"', '"\x01"', '"\x7f"', '"\t"', '"é"',
           '"😀"', '""', '"a', '"\\u00']
CASES = [
    ({"type": "string"}, STR_ESC),
    ({"type": "integer"}, ["0", "-0", "00", "01", "-", "-01", "123", "1.0", "1e2", "+1", " 1",
                           "1 "]),
    ({"type": "number"}, ["0", "-0", "0.5", ".5", "1.", "1e5", "1E5", "1e+5", "1e-5", "1.5e05",
                          "1e", "-0.0", "00.1", "-1"]),
    ({"type": "boolean"}, ["true", "false", "tru", "null"]),
    ({"type": "null"}, ["null", "nul", "nulll"]),
    (OBJ_AB, ['{"a":1}', ' {"a":1}', '{"a":1} ', '{ "a" : 1 }', '{\n\t"a"\r:1}',
              '{"a":1,"b":"x"}', '{"b":"x","a":1}', '{"a":1,"c":2}', '{"c":2,"a":1}',
              '{"a":1,"a":2}', '{}', '{ }', '{"a":1,}', '{"a":1 , "b" : "" , "z" : [ ] }',
              '{"ab":1}', '{"b":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "required": ["b"]}, ['{"b":1}', '{"a":1,"b":1}', '{"b":1,"a":1}', '{"a":1}',
                           '{"b":1,"c":2}', '{}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["z"]},
     ['{"z":1}', '{"a":1,"z":true}', '{"z":1,"a":1}', '{"a":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}},
      "additionalProperties": False}, ['{}', '{"a":1}', '{"b":1}', '{"a":1,"b":1}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}},
     ['{"b":1,"c":2}', '{"b":"x"}', '{"b":1,"b":2}']),
    ({"type": "array"}, ['[]', '[ ]', '[1,"a",[{}],null,true,false,1.5e3]', '[1,]', '[,1]',
                         '[1 , 2 ]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3},
     ['[1]', '[1,2]', '[1,2,3]', '[1,2,3,4]', '[]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
     ['[1]', '[1,"a"]', '[1,"a",true]', '["a"]', '[]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
     ['[1]', '[1,2]', '[]']),
    ({"type": "array", "items": {"type": "boolean"}, "minItems": 1},
     ['[]', '[true]', '[true,false,true]']),
    ({"enum": [1, "a", None, [1, 2], {"x": 1}]},
     ['1', '"a"', 'null', '[1,2]', '[1, 2]', '{"x":1}', '{"x": 1}', '2', '1.0']),
    ({"const": {"x": [1, "y"]}}, ['{"x":[1,"y"]}', '{ "x" : [ 1 , "y" ] }', '{"x":[1]}']),
    ({"const": "a\nb\"/\u00e9\u0001"}, ['"a\\nb\\"/é\\u0001"', '"a\\u000ab\\"/é\\u0001"',
                                         '"a\\nb\\"\\/é\\u0001"']),
    ({"enum": [100.0, 1.5, 0, 0.1]}, ['100', '100.0', '1e2', '1.5', '1.50', '-0', '0', '0.1']),
    ({"type": ["integer", "null"]}, ['1', 'null', '"a"']),
    ({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
     ['1', '"ab"', '"abc"', 'true']),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, ['1', '"a"', 'null']),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, ['1']),
    ({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
                 "required": ["kind"]},
                {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}},
                 "required": ["kind"]}]},
     ['{"kind":"a","x":1}', '{"kind":"b","y":"z"}', '{"kind":"b","x":1}', '{"kind":"c"}']),
    ({"oneOf": [{"const": "a"}, {"const": "b"}]}, ['"a"', '"c"']),
    ({"oneOf": [{"const": 1}, {"const": 2}]}, ['1']),
    ({"oneOf": [{"enum": ["a", "b"]}, {"enum": ["b", "c"]}]}, ['"a"']),
    ({"oneOf": [{"$ref": "#/$defs/a"}, {"type": "null"}], "$defs": {"a": {"type": "string"}}},
     ['null']),
    ({"oneOf": [{"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
                {"type": "object", "properties": {"k": {"type": "integer"}}}]},
     ['{}', '{"k":1}', '{"k":"s"}']),
    ({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]}]},
     ['{"b":"x"}', '{"a":1,"b":"x"}', '{"a":1}', '{"b":"x","a":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array"}},
      "x-guidance": {"whitespace_flexible": False}},
     ['{"a":1,"b":[1,2]}', '{ "a":1}', '{"a": 1}', '{"b":[1 ]}', '{}', '{ }']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "array"}},
      "x-guidance": {"item_separator": ", ", "key_separator": ": "}},
     ['{"a": 1, "b": [1, 2]}', '{"a":1}', '{"a" : 1}', '{ "a": 1 ,  "b": []}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}},
      "x-guidance": {"whitespace_pattern": "[ ]{0,2}"}},
     ['{  "a"  :  1  }', '{   "a":1}', '{"a":1\n}', '{  }', '{   }']),
    ({"type": "array", "x-guidance": {"whitespace_pattern": " "}},
     ['[  ]', '[ ]', '[ 1 , 2 ]', '[1  ]']),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}], "x-guidance": {"coerce_one_of": True}},
     ['1', '2.5']),
    ({"type": "string", "format": "foo", "not": {}, "x-guidance": {"lenient": True}}, ['"x"']),
    ({"type": "integer", "x-guidance": {"foo": 1}}, ['1']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}},
     ['{"\\u00e9":1}', '{"\\uD83D\\uDE00":1}', '{"\\uDC00":1}', '{"\\u0061":1}', '{"\\/":1}']),
    ({"type": "object"}, ['{"\\u00e9":1}', '{"\\u0001":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, ['{}', '{ }', '{  }']),
    (True, ['1', '{"a":[]}', ' 1', '"x"']),
    ({}, ['1', '{"a":[{"b":null}]}', '[1,2', '{"a" 1}']),
    (False, ['1']),
    ({"type": "string", "enum": ["a", "b", 1]}, ['"a"', '1']),
    # lengths past 10,000 characters (one copy of a character and virtual copies)
    ({"type": "string", "minLength": 12000, "maxLength": 12002},
     ['"' + "x" * 11999 + '"', '"' + "x" * 12000 + '"', '"' + "é" * 12002 + '"',
      '"' + "ab" * 6002 + '"']),
    ({"type": "string", "maxLength": 1000000}, ['"abc"', '""']),
    ({"type": "string", "maxLength": 2147483647}, ['"abc"', '""']),  # no maximum in effect
    # a large Unicode class counted (its template thousands of states, public schemas)
    ({"type": "string", "pattern": "^\\P{C}*$", "maxLength": 1000}, ['"abc"', '"\\u0001"', '""']),
    ({"type": "string", "minLength": 2, "maxLength": 3},
     ['"a"', '"ab"', '"abc"', '"abcd"', '"\\n\\n\\n"', '"\\n\\n\\n\\n"', '"ééé"', '"😀😀😀😀"']),
    ({"type": "string", "pattern": "a+b"}, ['"ab"', '"aab"', '"xab"', '"abx"', '"b"',
                                            '"\\nab"']),
    ({"type": "string", "pattern": "^a+b$"}, ['"ab"', '"xab"', '"abb"']),
    ({"type": "string", "pattern": "^a|b$"}, ['"a"', '"ax"', '"xb"', '"xa"', '"bx"']),
    ({"type": "string", "pattern": "a.b"}, ['"a\\nb"', '"a\\"b"', '"a\\\\b"', '"a/b"',
                                            '"a\\u0001b"']),
    ({"type": "string", "pattern": "(?s)a.b"}, ['"a\\nb"']),
    ({"type": "string", "pattern": "^a\\\\b$"}, ['"a\\\\b"', '"a\\b"']),
    ({"type": "string", "pattern": "^a\"b$"}, ['"a\\"b"', '"a"b"']),
    ({"type": "string", "pattern": "^a\\nb$"}, ['"a\\nb"', '"a\\u000ab"', '"anb"']),
    ({"type": "string", "pattern": "^[\\s]$"}, ['"\\u000b"', '"\\t"', '" "', '"a"']),
    ({"type": "string", "pattern": "^[^a]$"}, ['"b"', '"a"', '"\\""', '"\\n"']),
    ({"type": "string", "pattern": "^\\w+\\d?$"}, ['"ab1"', '"a b"']),
    ({"type": "integer", "minimum": 0}, ['-0', '0', '5', '-1', '123456']),
    ({"type": "integer", "minimum": -5}, ['-0', '0', '-5', '-6']),
    ({"type": "integer", "maximum": 5}, ['-0', '0', '-5', '6', '5', '-100000']),
    ({"type": "integer", "minimum": -10, "maximum": 10}, ['-0', '-10', '-11', '10', '11', '7']),
    ({"type": "integer", "minimum": -5.5, "maximum": 7.2}, ['-5', '-6', '7', '8']),
    ({"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 7},
     ['-5', '-4', '6', '7']),
    ({"type": "integer", "minimum": 25, "maximum": 86}, ['24', '25', '81', '86', '87', '8']),
    ({"type": "integer", "minimum": 100, "maximum": 12345},
     ['99', '100', '999', '1000', '12345', '12346', '9999']),
    ({"type": "number", "minimum": 0.5, "maximum": 10},
     ['0.5', '0.4', '0.50', '5e-1', '10', '10.0', '10.01', '1', '9.9999999']),
    ({"type": "number", "exclusiveMinimum": 0}, ['0', '0.01', '1', '-0', '12.5']),
    ({"type": "integer", "minimum": 5, "maximum": 1}, ['1']),
    ({"type": "number", "minimum": 0, "maximum": 0.001},
     ['0', '0.0', '0.00', '0.000', '0.001', '0.0005', '0.0010', '0.01']),
    ({"type": "number", "minimum": -0.25, "maximum": 0},
     ['0', '0.0', '-0', '-0.0', '-0.1', '-0.25', '-0.250', '-1']),
    ({"type": "number", "minimum": -1, "maximum": 3},
     ['-0', '-0.0', '-0.250', '-1.0', '-1.1', '3.0', '3.01', '2.999']),
    ({"type": "number", "minimum": -42, "maximum": 0}, ['-0.6760', '-0.676', '0', '0.0']),
    ({"type": "number", "maximum": -1.5}, ['-1.5', '-1.4', '-2', '-1.50', '-100.25']),
    ({"type": "number", "minimum": 2.5}, ['2.5', '2.49', '3', '10', '1e3', '100.5']),
    ({"type": "number", "minimum": 1.5, "maximum": 1.5}, ['1.5', '1.50', '1']),
    ({"$ref": "#/$defs/x", "$defs": {"x": {"type": "integer"}}}, ['1', '"a"']),
    ({"$ref": "#/$defs/y", "$defs": {"x": {"type": "integer"}}}, ['1']),
    ({"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"},
                                                      {"type": "null"}]}},
        "required": ["v", "next"], "additionalProperties": False}},
      "$ref": "#/$defs/node"},
     ['{"v":1,"next":null}', '{"v":1,"next":{"v":2,"next":null}}', '{"v":1}',
      '{"v":1,"next":{"v":2}}']),
    ({"type": "object", "properties": {"a": {"type": "integer", "if": {}}}}, ['{}']),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
      "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
     ['{"a":"s","xa":1}', '{"xa":1}', '{"a":"s","ya":1}', '{"a":"s","xa":"t"}',
      '{"a":"s","xa":1,"xb":2}']),
    ({"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
     ['{"ya":"s"}', '{"xa":1}', '{"xa":"s"}', '{"axb":"s"}', '{"ya":1,"xb":2,"z":[]}',
      '{"x\u0061":"s"}']),
    ({"type": "object", "patternProperties": {"^x": {"type": "integer"}, "^y": {"type": "string"}},
      "additionalProperties": False},
     ['{"xa":1,"yb":"s"}', '{"yb":1}', '{"za":1}', '{"x":1,"y":"","x":2}']),
    ({"type": "object", "patternProperties": {"^x": {"type": "integer"}, "^y": {"type": "string"}},
      "additionalProperties": {"type": "boolean"}},
     ['{"xa":1,"yb":"s","z":true}', '{"z":1}', '{"zx":true}', '{"yx":"s"}']),
    ({"type": "object", "patternProperties": {"x": {"type": "integer"}, "y": {"type": "string"}}},
     ['{}']),
    ({"type": "object", "patternProperties": {"^a+$": {}, "^(?:aa)+$": {}}}, ['{}']),
    ({"type": "object", "patternProperties": {"^[0-9]+$": {"type": "integer"},
                                              "^[a-z]+$": {"type": "string"}}},
     ['{"12":3,"ab":"c","_":null}', '{"12":"c"}', '{"ab":3}']),
    ({"type": "object", "properties": {"xa": {"type": "number"}, "b": {"type": "string"}},
      "patternProperties": {"^x": {"type": "integer"}}},
     ['{"xa":1}', '{"xa":1.5}', '{"xb":1.5}', '{"xa":1,"xa":2}', '{"b":"s","xc":3}']),
    ({"type": "object", "required": ["xq"], "patternProperties": {"^x": {"type": "integer"}},
      "additionalProperties": False}, ['{"xq":1}', '{"xq":"s"}', '{}']),
    ({"type": "object", "patternProperties": {"^x": False}}, ['{"xa":1}', '{"ya":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "required": ["a", "b"], "minProperties": 3},
     ['{"a":1,"b":2}', '{"a":1,"b":2,"c":3}', '{"a":1,"b":2,"c":3,"d":4}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "minProperties": 1}, ['{}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "minProperties": 1, "additionalProperties": False},
     ['{}', '{"a":1}', '{"a":1,"b":2}', '{"b":2}', '{ }']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                       "c": {"type": "integer"}},
      "maxProperties": 1, "additionalProperties": False},
     ['{}', '{"a":1}', '{"a":1,"b":2}', '{"b":2}', '{"c":3}', '{"b":2,"c":3}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "required": ["a"], "minProperties": 1, "maxProperties": 2, "additionalProperties": False},
     ['{"a":1}', '{"a":1,"b":2}', '{"b":2}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "required": ["a"], "minProperties": 2, "additionalProperties": False},
     ['{"a":1}', '{"a":1,"b":2}', '{"b":2,"a":1}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "maxProperties": 2, "additionalProperties": False}, ['{}']),
    ({"type": "object", "minProperties": 1, "maxProperties": 2},
     ['{}', '{"a":1}', '{"a":1,"b":2}', '{"a":1,"b":2,"c":3}', '{ }']),
    ({"type": "object", "maxProperties": 0}, ['{}', '{"a":1}', '{ }']),
    ({"type": "object", "minProperties": 0}, ['{}', '{"a":1}']),
    ({"type": "object", "minProperties": 2, "maxProperties": 1}, ['{}']),
    ({"type": "object", "minProperties": 1.5}, ['{}']),
    ({"type": "object", "required": ["a"], "minProperties": 2, "maxProperties": 3},
     ['{"a":1}', '{"a":1,"b":2}', '{"b":2,"a":1}', '{"a":1,"b":2,"c":3,"d":4}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "maxProperties": 1}, ['{"a":1}', '{"a":1,"b":2}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "minProperties": 2, "additionalProperties": False}, ['{"a":1}']),
    ({"type": "object", "minProperties": 2, "patternProperties": {"^x": {"type": "integer"}},
      "additionalProperties": False}, ['{"xa":1}', '{"xa":1,"xb":2}', '{"xa":1,"y":2}']),
    ({"type": "object", "minProperties": 1, "x-guidance": {"lenient": True},
      "properties": {"a": {"type": "integer"}}}, ['{}', '{"a":1}', '{"b":1}']),
    ({"type": "array", "uniqueItems": True}, ['[]']),
    ({"type": "object", "format": "foo"}, ['{}']),
    ({"$ref": "#/$defs/a", "format": "foo", "$defs": {"a": {"type": "object"}}}, ['{}']),
    ({"type": "string", "format": "foo"}, ['"a"']),
    ({"type": "string", "format": "date"}, ['"2024-01-01"', '"2024-02-30"', '"2023-02-29"',
                                            '"2024-04-31"', '"2024-13-01"', '"2024-1-01"']),
    ({"type": "string", "format": "time"}, ['"12:00:00Z"', '"12:00:00"', '"23:59:60z"',
                                            '"12:00:00.5+01:00"', '"24:00:00Z"']),
    ({"type": "string", "format": "date-time"}, ['"2024-01-01T12:00:00Z"',
                                                 '"2024-01-01t12:00:00.25-05:30"',
                                                 '"2024-01-01 12:00:00Z"']),
    ({"type": "string", "format": "uuid"}, ['"123e4567-e89b-12d3-a456-426614174000"',
                                            '"123E4567-E89B-12D3-A456-42661417400"',
                                            '"123e4567e89b12d3a456426614174000"']),
    ({"type": "string", "format": "duration"}, ['"P1Y2M3DT4H5M6S"', '"P3W"', '"PT"', '"P1W2D"']),
    ({"type": "string", "format": "email"}, ['"a.b@c-d.e"', '"a@[1.2.3.4]"', '"a..b@c"',
                                             '"a@b-.c"']),
    ({"type": "string", "format": "hostname"}, ['"a-b.c"', '"-a"', '"%s"' % ("a" * 64)]),
    ({"type": "string", "format": "ipv4"}, ['"1.2.3.4"', '"256.1.1.1"', '"01.2.3.4"']),
    ({"type": "string", "format": "ipv6"}, ['"::"', '"1::8"', '"1:2:3:4:5:6:7:8"',
                                            '"1:2:3:4:5:6::7:8"', '"::ffff:1.2.3.4"']),
    ({"type": "string", "format": "uri"}, ['"http://user@[::1]:80/p?q#f"', '"a:"', '"1a:b"',
                                           '"http://%zz"']),
    ({"type": "string", "format": "unknown"}, ['"x\\ny"', '""']),
    ({"type": "object", "properties": {"when": {"type": "string", "format": "date"},
                                       "id": {"type": "string", "format": "uuid"}},
      "required": ["when"]}, ['{"when":"2024-05-06"}', '{"id":"x"}']),
    ({"type": "string", "pattern": "^[a-z]{2,3}-[0-9]+$"}, ['"ab-1"', '"abcd-1"', '"ab-"']),
    ({"type": "string", "pattern": "^[\\x20-\\x7e]+$"}, ['"a b"', '"\\"', '"\\""',
                                                         '"\u007f"']),
    ({"type": "string", "pattern": "^\\S+$"}, ['"ab"', '"a b"', '"\\u0001"', '"\\n"']),
    ({"type": "string", "pattern": '^[^"]+$'}, ['"\\""', '"\\\\"', '"\\n"', '"a"']),
    ({"type": "string", "pattern": "^[^\\\\\\n]$"}, ['"\\""', '"\\\\"', '"\\n"']),
    ({"type": "string", "pattern": "^[a]+$"}, ['"\\""', '"aa"']),
    ({"type": "string", "pattern": "^[\\w\\-]+$", "maxLength": 3},
     ['"a-b"', '"a-bc"', '""', '"\\n"']),
    ({"type": "string", "pattern": "^([a-z]*)$", "minLength": 2, "maxLength": 4},
     ['"a"', '"ab"', '"abcd"', '"abcde"']),
    ({"type": "string", "pattern": "^[0-9]{12}$", "minLength": 1}, ['"123456789012"', '"1"']),
    ({"type": "string", "pattern": "(?s).*", "maxLength": 2}, ['"a\\n"', '"abc"']),
    ({"type": "string", "pattern": "^[0-9]{12}$", "maxLength": 3}, ['"1"']),
    ({"type": "string", "pattern": "^ab?c{2,5}d$", "maxLength": 5},
     ['"abccd"', '"acccd"', '"accccd"', '"abcccd"', '"acd"']),
    ({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 3, "maxLength": 6},
     ['"ab"', '"abc"', '"a-b"', '"ab-cd"', '"abcdef"', '"abcdefg"', '"a--b"', '"a-bc-de"']),
    ({"type": "string", "pattern": "x", "minLength": 2}, ['"x"', '"xa"', '"ax"', '"aa"',
                                                         '"\\nx"']),
    ({"type": "string", "pattern": "^\\d+$", "maxLength": 2}, ['"12"', '"123"', '"٣"']),
    ({"type": "string", "format": "date", "maxLength": 9}, ['"2024-01-01"']),
    ({"type": "string", "format": "date", "minLength": 10, "maxLength": 12},
     ['"2024-01-01"', '"2024-1-1"']),
    ({"type": "string", "format": "email", "maxLength": 6},
     ['"a@b.co"', '"a@b.com"', '"ab@c.d"']),
    ({"type": "string", "format": "uuid", "pattern": "^0"},
     ['"023e4567-e89b-12d3-a456-426614174000"', '"123e4567-e89b-12d3-a456-426614174000"']),
    ({"type": "string", "format": "date", "pattern": "^1999"},
     ['"1999-12-31"', '"2000-01-01"']),
    ({"type": "string", "pattern": "^a$", "minLength": 2}, ['"a"']),
    ({"type": "string", "pattern": "^[0-9a-f]{8}$", "minLength": 8, "maxLength": 8},
     ['"0123abcd"', '"0123abc"']),
    ({"type": "array", "maxItems": 20000}, ['[1,2]', '[]']),
    ({"type": "array", "minItems": 20000}, ['[1,2]', '[]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1002, "maxItems": 1005},
     [LIST(1001), LIST(1002), LIST(1003), LIST(1005), LIST(1006), '[]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 1500},
     [LIST(1), LIST(1499), LIST(1500), LIST(1501)]),
    ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}],
      "items": {"type": "integer"}, "minItems": 1345},
     ['["a",null,1]', '["a",1]', '[' + '"a",null,' + LIST(1343)[1:], '[' + '"a",null,' +
      LIST(1342)[1:]]),
    ({"type": "array", "prefixItems": [{"type": "string"}, False], "maxItems": 20000},
     ['["a"]', '["a",1]']),
    ({"type": "object", "maxProperties": 1003, "minProperties": 1001},
     [PROPS(1000), PROPS(1001), PROPS(1003), PROPS(1004), '{}']),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "minProperties": 1100}, ['{"a":1,' + PROPS(1099)[1:], '{"a":1,' + PROPS(1098)[1:]]),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "maxProperties": 100000}, ['{"a":1,"b":2}', '{"b":2}']),
    ({"type": "integer", "multipleOf": 3},
     ['0', '3', '6', '4', '-3', '30', '33', '12', '123', '-0', '-', '1e1', '3.0', '999999']),
    ({"type": "integer", "multipleOf": 3, "minimum": 5, "maximum": 20},
     ['6', '3', '21', '18', '9', '-3']),
    ({"type": "integer", "multipleOf": 7, "exclusiveMinimum": 7, "maximum": 14}, ['14', '7']),
    ({"type": "integer", "multipleOf": 10, "minimum": 1, "maximum": 9}, ['5']),
    ({"type": "integer", "multipleOf": 0.5}, ['1', '2', '-7', '1.5']),
    ({"type": "integer", "multipleOf": 0}, ['0']),
    ({"type": "integer", "multipleOf": -2}, ['2', '3', '-4']),
    ({"type": "number", "multipleOf": -0.5}, ['2.5', '2.25']),
    ({"type": "integer", "multipleOf": 25}, ['25', '50', '75', '100', '125', '10', '1000']),
    ({"type": "number", "multipleOf": 0.5},
     ['0', '0.5', '1', '1.5', '1.25', '1e2', '-2.5', '2.50', '2.0', '2.', '0.05']),
    ({"type": "number", "multipleOf": 3}, ['3', '3.0', '4', '6e1', '-9']),
    ({"type": "number", "multipleOf": 0.25}, ['0.25', '0.5', '0.50', '0.75', '1.25', '1.2',
                                              '0.0', '0.00', '1']),
    ({"type": "number", "multipleOf": 1.25}, ['1.25', '2.5', '2.50', '3.75', '0', '0.0',
                                              '0.00', '5']),
    ({"type": "number", "multipleOf": 0.01}, ['1.23', '1.2', '1.234', '0.1', '7']),
    ({"type": "number", "multipleOf": 0.1, "minimum": 0, "maximum": 1},
     ['0.1', '0.5', '1', '1.0', '1.1', '0.55', '-0.1']),
    ({"type": "number", "multipleOf": 0.3, "minimum": 0.1, "maximum": 0.2}, ['0.15']),
    ({"type": "number", "multipleOf": 2, "exclusiveMinimum": 0}, ['2', '0', '4.0', '10']),
    ({"type": ["integer", "string"], "multipleOf": 4}, ['8', '"x"', '6']),
    ({"type": "string", "pattern": "^\\w\\d$"}, ['"é1"', '"a٣"', '"a1"']),
    ({"type": "string", "pattern": "^[\\w\\-][^\\d]\\s$"}, ['"é-\\u00a0"', '"a-\\t"', '"_1 "',
                                                          '"-é\u0085"']),
    ({"type": "string", "pattern": "^\\p{Lu}+$"}, ['"ÀB"', '"a"']),
    ({"type": "foo"}, ['1']),
    ({"anyOf": []}, ['1']),
    ({"type": "object", "properties": {"a": {"type": "integer", "title": "A",
                                             "description": "d", "default": 1}}},
     ['{"a":1}']),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    try:
        import llguidance as L
    except ImportError:
        print("SKIP: llguidance is not installed")
        return 77
    if not os.path.exists(TOKENIZER):
        print("SKIP: no tokenizer at " + TOKENIZER)
        return 77
    tok = L.LLTokenizer(open(TOKENIZER, encoding="utf-8").read())
    byte_tok = {}
    for i in range(tok.vocab_size):
        b = tok.decode_bytes([i])
        if len(b) == 1 and b[0] not in byte_tok:
            byte_tok[b[0]] = i

    def verdict(schema, text):
        try:
            g = L.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        except Exception:
            return -3
        m = L.LLMatcher(tok, g, log_level=0)
        if m.is_error():
            return -3
        for k, b in enumerate(text.encode("utf-8")):
            if not m.consume_token(byte_tok[b]) or m.is_error():
                return k
        return -1 if m.is_accepting() else -2

    def c_str(s):
        out = '"'
        for b in s.encode("utf-8"):
            c = chr(b)
            if c in '"\\':
                out += "\\" + c
            elif 32 <= b < 127:
                out += c
            else:
                out += '\\%03o' % b
        return out + '"'

    lines = ["/* Generated by tests/guide/json_cases.py from llguidance's verdicts: do not edit.",
             " * { schema, text, verdict: first byte refused, -1 accepted, -2 a proper prefix,",
             " *   -3 schema refused; we refuse it on purpose (see json_cases.py) } */"]
    for case in CASES:
        schema, texts = case[0], case[1]
        for t in texts:
            lines.append("{%s, %s, %d, %d}," % (c_str(json.dumps(schema)), c_str(t),
                                                verdict(schema, t), len(case) > 2))
    text = "\n".join(lines) + "\n"
    if args.check:
        old = open(OUT, encoding="utf-8").read() if os.path.exists(OUT) else ""
        if old != text:
            print("json_cases.inc differs from llguidance's verdicts: rerun without --check")
            return 1
        print("json_cases.inc: up to date")
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %d cases to %s" % (len(lines) - 3, OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
